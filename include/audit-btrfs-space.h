/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_AUDIT_BTRFS_SPACE_H
#define FSTRIM_EXT_AUDIT_BTRFS_SPACE_H

/*
 * btrfs's free space, where it lies on its devices, and which of it FITRIM
 * discards (lib/audit-btrfs-space.c), for the btrfs backend of the audit
 * (lib/audit-btrfs.c). Not an interface of the library.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"

/* Which free space a walk collects. */
enum bt_view {
	BT_ALL, /* all of it */
	/*
	 * What FITRIM over [lo, hi) with @minlen discards: chunk space in
	 * the range, in free extents at least @minlen long, each whole
	 * (btrfs sends them unaligned); and all the space in no chunk.
	 * Not the chunk @lo lies inside: btrfs_trim_fs() begins at the
	 * first block group that starts at or after it. Not a device that
	 * cannot discard: FITRIM passes over it (btrfs_discard_extent(),
	 * btrfs_trim_free_extents()).
	 */
	BT_TRIMMED,
	/*
	 * What it skips: chunk space in the range, in shorter free extents,
	 * all of the chunk @lo lies inside, and what of the range and of the
	 * space in no chunk lies on a device that cannot discard.
	 */
	BT_SHORT,
};

struct bt_device {
	uint64_t devid, total;
	char *path;
	uint64_t gran; /* discard granularity; 0 without discard, or unknown */
	uint64_t align; /* where its first discard unit begins, in bytes */
	bool discard; /* FITRIM discards here (not where the device cannot) */
};

struct bt_chunk {
	uint64_t logical, length, type;
	uint16_t nstripes;
	uint64_t *devid, *offset; /* each stripe: where on which device */
};

/* A free byte range of one device. */
struct bt_range {
	size_t dev; /* index into bt_fs.dev */
	uint64_t start, len;
	bool unallocated; /* in no chunk */
};

struct bt_fs {
	int fd;
	uint32_t nodesize, sectorsize;
	struct bt_device *dev;
	size_t ndev;
	struct bt_chunk *chunk;
	size_t nchunk, chunk_alloc;
	struct bt_range *free;
	size_t nfree, free_alloc;
	size_t cursor; /* the first chunk not yet passed by the extent walk */
	uint64_t pos; /* the logical address up to which the walk has gone */
	struct audit_btrfs *out;
	enum bt_view view;
	uint64_t lo, hi, minlen; /* FITRIM's request, for BT_TRIMMED and BT_SHORT */
	uint64_t gran; /* the smallest discard granularity of the devices, or 0 */
};

/*
 * Fill @bt (its fd, view and request set) with the free ranges of the
 * btrfs open at @bt->fd that its view takes, sorted by device and offset;
 * @data (NULL for none) with the first device's description. Returns 0,
 * or -errno.
 */
int bt_load(struct bt_fs *bt, struct audit_device *data);
void bt_free(struct bt_fs *bt);

/* The free range of @bt that byte @at of device @dev lies in, or NULL. */
const struct bt_range *bt_free_range(const struct bt_fs *bt, size_t dev, uint64_t at);

/*
 * Whether byte @at of device @dev lies in a chunk that begins before
 * @lo and ends after it: FITRIM from @lo passes over its block group.
 */
bool bt_in_passed_chunk(const struct bt_fs *bt, size_t dev, uint64_t at, uint64_t lo);

#endif
