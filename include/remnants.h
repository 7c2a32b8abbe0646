/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_REMNANTS_H
#define FSTRIM_EXT_REMNANTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * What the trim and the journal step cannot reach on an ext4 filesystem,
 * as far as the kernel lets userspace see it. Filled by remnants_check_dev().
 */
struct remnants {
	uint64_t free_bytes; /* free space in the allocator's groups */
	uint64_t small_free_bytes; /* of that, in free chunks smaller than
					 * the discard granularity: FITRIM skips
					 * them (an upper bound, see below) */
	uint32_t discard_granularity; /* bytes; 0 when the device cannot discard */
	uint32_t unit; /* bytes per allocation unit: block,
					 * or cluster with bigalloc */
	uint32_t groups; /* block groups read from mb_groups */
	uint32_t groups_unreadable; /* groups reported with an I/O error or a
					 * corrupt bitmap, not counted above */
	bool dir_index; /* htree directories are possible */
	bool dirent_pack_wipe; /* the kernel zeroes the tail that
					 * dx_pack_dirents() leaves when an
					 * htree leaf block splits */
};

/*
 * Parse the text of /proc/fs/ext4/DEVICE/mb_groups from @stream and add
 * its free space to @out. The kernel lists, per group, the number of free
 * buddy chunks of each order 2^0 .. 2^13 allocation units of @unit bytes;
 * chunks of fewer bytes than @granularity are counted as small. A free
 * extent that starts or ends off a buddy boundary is split into smaller
 * chunks, so small_free_bytes is an upper bound of what FITRIM left.
 * With @granularity <= @unit nothing is small; with @granularity 0 the
 * device cannot discard and nothing is counted as small either.
 * @out->free_bytes, small_free_bytes, groups and groups_unreadable are
 * set; the other fields are left alone. Returns 0, or -EINVAL on text
 * that is not in the mb_groups format, or -errno on a read error.
 */
int remnants_parse_mb_groups(FILE *stream, uint32_t unit, uint32_t granularity,
			     struct remnants *out);

/*
 * Check the mounted ext4 filesystem on the block device @dev (st_dev of
 * any file in it). Reads the discard granularity from sysfs, the
 * allocation unit and features from the device's superblock (@blocksize
 * is used when that cannot be read), the free-chunk histogram from
 * /proc/fs/ext4/NAME/mb_groups, and whether the kernel advertises
 * dirent_pack_wipe. Call it after the trim and the journal step: the
 * histogram is the allocator's state at the time of the call.
 * Returns 0, -ENOENT when the kernel has no mb_groups file for the
 * device (not ext4, or no procfs), or -errno.
 */
int remnants_check_dev(dev_t dev, unsigned int blocksize, struct remnants *out);

/* Whether names of deleted files may remain inside live directory blocks. */
bool remnants_names_may_remain(const struct remnants *r);

#endif /* FSTRIM_EXT_REMNANTS_H */
