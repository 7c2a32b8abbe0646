// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --audit on btrfs: its free space (lib/audit-btrfs-space.c), read back
 * from its devices with O_DIRECT.
 *
 * btrfs has no journal to erase: what a deletion leaves (the deleted
 * files' data extents, the old copies of every tree block the deletion
 * rewrote, old log trees) lies in free space until a discard reaches it.
 * Blocks written since the last commit (new data whose extent item is not
 * inserted yet, a log tree written by fsync) are not in the extent tree
 * and read as free.
 *
 * After --journal's last FITRIM the same reader reads back all of what
 * FITRIM discarded (audit_free_readback() on btrfs), and reads the sectors
 * that held data again after one more commit and FITRIM.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>
#include <linux/magic.h>

#include "audit.h"
#include "audit-btrfs-space.h"
#include "audit-read.h"

/* A free sector that held data when read, and a checksum of what it held. */
struct bt_mark {
	size_t dev;
	uint64_t sector;
	uint32_t sum;
};

struct audit_btrfs_marks {
	struct bt_mark *v;
	size_t count, alloc;
	bool unreached; /* marks of BT_SHORT, then FITRIM's minimum and start */
	uint64_t minlen, lo;
};

/* ---- reading --------------------------------------------------------------- */

static int mark_add(struct audit_btrfs_marks *m, size_t dev, uint64_t sector,
		    const unsigned char *data, size_t len)
{
	if (audit_grow(&m->v, &m->alloc, m->count, sizeof(*m->v), 64))
		return -ENOMEM;
	m->v[m->count++] =
		(struct bt_mark){ dev, sector, ext2fs_crc32c_le(~0U, data, len) };
	return 0;
}

/* What audit_scan's found() needs on btrfs. */
struct bt_found {
	struct audit_free *f;
	struct audit_btrfs_marks *marks; /* or NULL */
	size_t dev;
	uint64_t bsize;
};

static int found_sector(void *arg, uint64_t sector, const unsigned char *data)
{
	struct bt_found *bf = arg;

	bf->f->nonzero_blocks++;
	return bf->marks ? mark_add(bf->marks, bf->dev, sector, data, bf->bsize) : 0;
}

/*
 * Read all the free ranges with O_DIRECT and count the sectors that are
 * not zero, as the ext4 audit reads its free blocks. With @marks, note
 * those sectors and what they held. Told to @progress as the read @what.
 */
static int read_free(struct bt_fs *bt, struct audit_free *f,
		     struct audit_btrfs_marks *marks, const char *what,
		     const struct audit_progress *progress)
{
	uint64_t bsize = bt->sectorsize;
	struct bt_found found = { .f = f, .marks = marks, .bsize = bsize };
	struct audit_scan sc;
	size_t i = 0;
	int rc = 0;

	f->block_size = bt->sectorsize;
	f->free_bytes = 0;
	for (i = 0; i < bt->nfree; i++)
		f->free_bytes += bt->free[i].len / bsize * bsize;
	audit_scan_begin(&sc, bsize, f,
			 &(struct audit_read){ .what = what, .total = f->free_bytes },
			 progress);
	sc.found = found_sector;
	sc.arg = &found;

	/* the ranges are sorted by device: one device open at a time */
	for (i = 0; i < bt->nfree && !rc;) {
		size_t d = bt->free[i].dev;

		/* the last piece of the device before is tested here, as found.dev */
		rc = audit_scan_device(&sc, bt->dev[d].path);
		found.dev = d;
		for (; i < bt->nfree && bt->free[i].dev == d && !rc; i++) {
			const struct bt_range *r = &bt->free[i];
			uint64_t z = (r->start + bsize - 1) / bsize;
			uint64_t s = (r->start + r->len) / bsize;

			if (s > z)
				rc = audit_scan_extent(&sc, z, s);
		}
	}
	return audit_scan_end(&sc, rc);
}

/* ---- the whole -------------------------------------------------------- */

static int audit_btrfs(int fd, struct audit_result *out,
		       const struct audit_progress *progress)
{
	struct bt_fs bt = { .fd = fd, .out = &out->btrfs_space };
	int rc = bt_load(&bt, &out->data);

	if (!rc)
		rc = read_free(&bt, &out->free, NULL, "audit: reading free space",
			       progress);
	out->free.error = -rc;
	out->free.read = rc == 0;
	bt_free(&bt);
	return rc == -ENOMEM ? rc : 0;
}

/*
 * Read the free space of @view for FITRIM over @start, @len with @minlen,
 * told to @progress as @what; with @marks, *@marks the sectors that held
 * data, or NULL.
 */
static int read_view(int fd, enum bt_view view, uint64_t start, uint64_t len,
		     uint64_t minlen, const char *what, struct audit_free *out,
		     struct audit_free_marks **marks,
		     const struct audit_progress *progress)
{
	struct audit_btrfs space = { 0 };
	struct bt_fs bt = { .fd = fd,
			    .out = &space,
			    .view = view,
			    .lo = start,
			    .hi = len > UINT64_MAX - start ? UINT64_MAX : start + len,
			    .minlen = minlen };
	struct audit_btrfs_marks *m = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (marks)
		*marks = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	rc = bt_load(&bt, NULL);
	if (!rc)
		rc = read_free(&bt, out, m, what, progress);
	out->read = rc == 0;
	if (view == BT_SHORT) {
		m->unreached = true;
		m->minlen = bt.minlen;
		m->lo = bt.lo;
		out->short_below = bt.minlen;
		out->short_below_gran = bt.minlen == bt.gran;
	}
	bt_free(&bt);
	if (rc || !m->count || !marks) {
		audit_btrfs_marks_free(m);
		return rc;
	}
	*marks = calloc(1, sizeof(**marks));
	if (!*marks) {
		audit_btrfs_marks_free(m);
		return -ENOMEM;
	}
	(*marks)->backend = &audit_btrfs_backend;
	(*marks)->btrfs = m;
	return 0;
}

/*
 * btrfs's part of audit_free_readback(): all of the free space FITRIM
 * over @start, @len with @minlen discards (space of chunks in the range
 * past the block group @start lies inside, in free extents at least
 * @minlen long, or the smallest discard granularity of the devices when
 * that is larger, each in full; and device space in no chunk).
 */
static int btrfs_readback(int fd, const struct audit_span *span, struct audit_free *out,
			  struct audit_free_marks **marks,
			  const struct audit_progress *progress)
{
	return read_view(fd, BT_TRIMMED, span->start, span->len, span->minlen,
			 "reading back the free space", out, marks, progress);
}

/*
 * btrfs's part of audit_free_unreachable(): the free space FITRIM over
 * @start, @len with @minlen skips (in free extents shorter than its
 * minimum, as btrfs_readback() raises it; in the block group @start lies
 * inside; on a device that cannot discard), read as btrfs_readback() reads.
 */
static int btrfs_unreachable(int fd, const struct audit_span *span,
			     struct audit_free *out, struct audit_free_marks **marks,
			     const struct audit_progress *progress)
{
	return read_view(fd, BT_SHORT, span->start, span->len, span->minlen,
			 "reading the free space FITRIM cannot reach", out, marks,
			 progress);
}

/*
 * A discarded sector at @at of device @d that still holds data: count it
 * in @out->part_unit_blocks when its discard unit is not all inside its
 * free range @r (a device that erases whole units only keeps it), with
 * the unit's size; 0 for that size when devices of other sizes have some.
 */
static void count_part_unit(const struct bt_device *d, uint32_t sectorsize, uint64_t at,
			    const struct bt_range *r, struct audit_free *out)
{
	if (d->gran <= sectorsize ||
	    !audit_in_part_unit(at, d->gran, d->align, r->start, r->start + r->len))
		return;
	out->discard_unit = !out->part_unit_blocks || out->discard_unit == d->gran ?
				    (uint32_t)d->gran :
				    0;
	out->part_unit_blocks++;
}

/*
 * btrfs's part of audit_free_recheck(): the sectors still free with the
 * same data; for marks of btrfs_unreachable(), why FITRIM left them.
 */
static int btrfs_recheck(int fd, struct audit_free_marks *marks, struct audit_free *out)
{
	struct audit_btrfs_marks *m = marks->btrfs;
	struct audit_btrfs space = { 0 };
	struct bt_fs bt = { .fd = fd, .out = &space };
	unsigned char *buf = NULL;
	size_t i, n = 0, open_dev = SIZE_MAX;
	int dev = -1, rc;

	out->unsteady_blocks = 0;
	out->short_blocks = out->held_blocks = out->passed_blocks = 0;
	out->nodiscard_blocks = 0;
	out->part_unit_blocks = out->once_blocks = 0;
	out->discard_unit = 0;
	rc = bt_load(&bt, NULL);
	for (i = 0; i < m->count && !rc; i++) {
		const struct bt_mark *k = &m->v[i];
		uint64_t at = k->sector * bt.sectorsize;
		const struct bt_range *r;

		if (k->dev >= bt.ndev || !(r = bt_free_range(&bt, k->dev, at)))
			continue;
		if (k->dev != open_dev) {
			if (dev >= 0)
				close(dev);
			free(buf);
			dev = audit_direct_open(bt.dev[k->dev].path, READ_CHUNK, &buf);
			if (dev < 0) {
				rc = dev;
				break;
			}
			open_dev = k->dev;
		}
		rc = audit_block_reread(dev, buf, bt.sectorsize, at, 0, bt.sectorsize,
					k->sum);
		/*
		 * The same data, free all along: the discards did not erase
		 * it, or, for a sector FITRIM could not reach, none covered
		 * it (why: its block group is passed over, its device cannot
		 * discard, or its free extent is still too short). A sector
		 * never discarded that changes is a writer's, not unsteady.
		 */
		if (rc == AUDIT_REREAD_SAME) {
			m->v[n++] = *k;
			if (m->unreached && m->lo &&
			    bt_in_passed_chunk(&bt, k->dev, at, m->lo))
				out->passed_blocks++;
			else if (m->unreached && !bt.dev[k->dev].discard)
				out->nodiscard_blocks++;
			else if (m->unreached && r->len < m->minlen)
				out->short_blocks++;
			else if (!m->unreached)
				count_part_unit(&bt.dev[k->dev], bt.sectorsize, at, r,
						out);
			if (!m->unreached && r->unallocated)
				out->once_blocks++;
		} else if (rc == AUDIT_REREAD_UNSTEADY && !m->unreached) {
			out->unsteady_blocks++;
		}
		if (rc > 0)
			rc = 0;
	}
	if (dev >= 0)
		close(dev);
	free(buf);
	bt_free(&bt);
	if (rc)
		return rc;
	m->count = n;
	out->nonzero_blocks = n;
	out->classified = m->unreached;
	return 0;
}

void audit_btrfs_marks_free(struct audit_btrfs_marks *m)
{
	if (!m)
		return;
	free(m->v);
	free(m);
}

const struct audit_backend audit_btrfs_backend = {
	.magic = BTRFS_SUPER_MAGIC,
	.own_devices = true,
	.audit = audit_btrfs,
	.readback = btrfs_readback,
	.unreachable = btrfs_unreachable,
	.recheck = btrfs_recheck,
};
