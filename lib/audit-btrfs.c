// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --audit on btrfs: its free space, read back from its devices.
 *
 * btrfs has no journal to erase: what a deletion leaves (the deleted
 * files' data extents, the old copies of every tree block the deletion
 * rewrote, old log trees) lies in free space until a discard reaches it.
 * Free space is device space in no chunk, and the space of each chunk that
 * no extent item covers. Both come from BTRFS_IOC_TREE_SEARCH (the device
 * tree's dev extents, the chunk tree's chunks, the extent tree's extent
 * and metadata items), which reads the trees as the running transaction
 * sees them and writes nothing; the blocks are then read with O_DIRECT.
 * Blocks written since the last commit (new data whose extent item is not
 * inserted yet, a log tree written by fsync) are not in the extent tree
 * and read as free.
 *
 * After --journal's last FITRIM the same reader reads back all of what
 * FITRIM discarded (audit_free_readback() on btrfs), and reads the sectors
 * that held data again after one more commit and FITRIM.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>

#include "audit.h"
#include "audit-read.h"

/* btrfs never allocates the first MiB of a device, and FITRIM skips it. */
#define DEVICE_RESERVED (1024ULL * 1024)
/* The superblock copies (64 KiB, 64 MiB, 256 GiB): each keeps its stripe. */
#define SUPER_STRIPE (64ULL * 1024)
static const uint64_t super_offsets[] = { 64ULL << 10, 64ULL << 20, 256ULL << 30 };

/* Which free space a walk collects. */
enum bt_view {
	BT_ALL, /* all of it */
	/*
	 * What FITRIM over [lo, hi) with @minlen discards: chunk space in
	 * the range, in free extents at least @minlen long, each whole
	 * (btrfs sends them unaligned); and all the space in no chunk.
	 * Not the chunk @lo lies inside: btrfs_trim_fs() begins at the
	 * first block group that starts at or after it.
	 */
	BT_TRIMMED,
	/*
	 * What it skips: chunk space in the range, in shorter free extents,
	 * and all of the chunk @lo lies inside.
	 */
	BT_SHORT,
};

struct bt_device {
	uint64_t devid, total;
	char *path;
	uint64_t gran; /* discard granularity; 0 without discard, or unknown */
	uint64_t align; /* where its first discard unit begins, in bytes */
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

/* A free sector that held data when read, and a checksum of what it held. */
struct bt_mark {
	size_t dev;
	uint64_t sector;
	uint32_t sum;
};

struct audit_btrfs_marks {
	struct bt_mark *v;
	size_t count, alloc;
	bool unreached; /* marks of BT_SHORT, with FITRIM's minimum and start: */
	uint64_t minlen, lo;
};

/* One item of a tree search: its key, and its body of @len bytes. */
typedef int (*item_fn)(struct bt_fs *bt, const struct btrfs_ioctl_search_header *sh,
		       const void *item);

/*
 * Call @fn for every item of tree @tree with a key between
 * (@min_oid, @type_lo, 0) and (@max_oid, @type_hi, max) whose type is
 * in [@type_lo, @type_hi] (the search's range is one of whole keys,
 * so other types come with it). Returns 0, @fn's non-zero answer, or -errno.
 */
static int tree_search(struct bt_fs *bt, uint64_t tree, uint64_t min_oid,
		       uint64_t max_oid, uint32_t type_lo, uint32_t type_hi, item_fn fn)
{
	struct btrfs_ioctl_search_args args;
	struct btrfs_ioctl_search_key *sk = &args.key;

	memset(&args, 0, sizeof(args));
	sk->tree_id = tree;
	sk->min_objectid = min_oid;
	sk->max_objectid = max_oid;
	sk->min_type = type_lo;
	sk->max_type = type_hi;
	sk->max_offset = UINT64_MAX;
	sk->max_transid = UINT64_MAX;
	for (;;) {
		struct btrfs_ioctl_search_header sh = { 0 };
		size_t off = 0;
		uint32_t i;
		int rc;

		sk->nr_items = UINT32_MAX;
		if (ioctl(bt->fd, BTRFS_IOC_TREE_SEARCH, &args) != 0)
			return -errno;
		if (!sk->nr_items)
			return 0;
		for (i = 0; i < sk->nr_items; i++) {
			if (off + sizeof(sh) > sizeof(args.buf))
				return -EUCLEAN;
			memcpy(&sh, args.buf + off, sizeof(sh));
			off += sizeof(sh);
			if (off + sh.len > sizeof(args.buf))
				return -EUCLEAN;
			if (sh.type >= type_lo && sh.type <= type_hi) {
				rc = fn(bt, &sh, args.buf + off);
				if (rc)
					return rc;
			}
			off += sh.len;
		}
		/* go on after the last key returned */
		sk->min_objectid = sh.objectid;
		sk->min_type = sh.type;
		sk->min_offset = sh.offset;
		if (sk->min_offset < UINT64_MAX) {
			sk->min_offset++;
		} else if (sk->min_type < UINT8_MAX) {
			sk->min_type++;
			sk->min_offset = 0;
		} else if (sk->min_objectid < sk->max_objectid) {
			sk->min_objectid++;
			sk->min_type = 0;
			sk->min_offset = 0;
		} else {
			return 0;
		}
	}
}

static ssize_t device_index(const struct bt_fs *bt, uint64_t devid)
{
	size_t i;

	for (i = 0; i < bt->ndev; i++)
		if (bt->dev[i].devid == devid)
			return (ssize_t)i;
	return -1;
}

/* Add [@start, @end) of device @dev, less the superblock stripes and the first MiB. */
static int add_free(struct bt_fs *bt, size_t dev, uint64_t start, uint64_t end)
{
	size_t i;

	if (start < DEVICE_RESERVED)
		start = DEVICE_RESERVED;
	for (i = 0; i < sizeof(super_offsets) / sizeof(super_offsets[0]); i++) {
		uint64_t s = super_offsets[i], e = s + SUPER_STRIPE;
		int rc;

		if (start >= e || end <= s)
			continue;
		if (start < s) {
			rc = add_free(bt, dev, start, s);
			if (rc)
				return rc;
		}
		start = e;
	}
	if (start >= end)
		return 0;
	if (audit_grow(&bt->free, &bt->free_alloc, bt->nfree, sizeof(*bt->free), 64))
		return -ENOMEM;
	bt->free[bt->nfree++] = (struct bt_range){ dev, start, end - start };
	return 0;
}

/* ---- chunks ------------------------------------------------------------ */

static int chunk_item(struct bt_fs *bt, const struct btrfs_ioctl_search_header *sh,
		      const void *item)
{
	struct btrfs_chunk c;
	struct bt_chunk *ch;
	uint16_t i;

	if (sh->len < sizeof(c))
		return -EUCLEAN;
	memcpy(&c, item, sizeof(c));
	if (audit_grow(&bt->chunk, &bt->chunk_alloc, bt->nchunk, sizeof(*bt->chunk), 16))
		return -ENOMEM;
	ch = &bt->chunk[bt->nchunk];
	memset(ch, 0, sizeof(*ch));
	ch->logical = sh->offset;
	ch->length = le64toh(c.length);
	ch->type = le64toh(c.type);
	ch->nstripes = le16toh(c.num_stripes);
	if (!ch->nstripes ||
	    sh->len < sizeof(c) + (ch->nstripes - 1) * sizeof(struct btrfs_stripe))
		return -EUCLEAN;
	ch->devid = calloc(ch->nstripes, sizeof(*ch->devid));
	ch->offset = calloc(ch->nstripes, sizeof(*ch->offset));
	bt->nchunk++;
	if (!ch->devid || !ch->offset)
		return -ENOMEM;
	for (i = 0; i < ch->nstripes; i++) {
		struct btrfs_stripe st;

		memcpy(&st,
		       (const char *)item + offsetof(struct btrfs_chunk, stripe) +
			       i * sizeof(st),
		       sizeof(st));
		ch->devid[i] = le64toh(st.devid);
		ch->offset[i] = le64toh(st.offset);
	}
	return 0;
}

/* Whether every stripe of the chunk holds all of it (single, DUP, RAID1*). */
static bool chunk_mirrored(const struct bt_chunk *ch)
{
	uint64_t profile = ch->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;

	return !profile || profile == BTRFS_BLOCK_GROUP_DUP ||
	       (profile & BTRFS_BLOCK_GROUP_RAID1_MASK);
}

/*
 * The logical range [@lo, @hi) holds no extent: add its part in each chunk,
 * at every copy, to the free ranges. Chunks are passed in order.
 */
static int logical_free(struct bt_fs *bt, uint64_t lo, uint64_t hi)
{
	while (bt->cursor < bt->nchunk && lo < hi) {
		const struct bt_chunk *ch = &bt->chunk[bt->cursor];
		uint64_t end = ch->logical + ch->length, s, e;
		uint16_t i;
		int rc;

		if (end <= lo) {
			bt->cursor++;
			continue;
		}
		if (ch->logical >= hi)
			break;
		s = lo > ch->logical ? lo : ch->logical;
		e = hi < end ? hi : end;
		if (bt->view != BT_ALL) {
			uint64_t a = s > bt->lo ? s : bt->lo, b = e < bt->hi ? e : bt->hi;
			/* too short a free extent, or a chunk FITRIM passes over */
			bool skipped = b - a < bt->minlen || ch->logical < bt->lo;

			/* the part FITRIM was given, and what it skips of it */
			if (b <= a || skipped != (bt->view == BT_SHORT)) {
				if (e == end)
					bt->cursor++;
				lo = e;
				continue;
			}
			s = a;
			e = b;
		}
		if (!chunk_mirrored(ch)) {
			bt->out->striped_free_bytes += e - s;
		} else {
			for (i = 0; i < ch->nstripes; i++) {
				ssize_t d = device_index(bt, ch->devid[i]);
				uint64_t at = ch->offset[i] + (s - ch->logical);

				if (d < 0)
					return -ENODEV;
				rc = add_free(bt, (size_t)d, at, at + (e - s));
				if (rc)
					return rc;
				bt->out->chunk_free_bytes += e - s;
			}
		}
		if (e == end)
			bt->cursor++;
		lo = e;
	}
	return 0;
}

/* An extent or metadata item: the space before it since the last one is free. */
static int extent_item(struct bt_fs *bt, const struct btrfs_ioctl_search_header *sh,
		       const void *item)
{
	uint64_t len = sh->type == BTRFS_METADATA_ITEM_KEY ? bt->nodesize : sh->offset;
	int rc = 0;

	(void)item;
	if (sh->objectid > bt->pos)
		rc = logical_free(bt, bt->pos, sh->objectid);
	if (sh->objectid + len > bt->pos)
		bt->pos = sh->objectid + len;
	return rc;
}

/* ---- device space in no chunk -------------------------------------------- */

static int dev_extent_item(struct bt_fs *bt, const struct btrfs_ioctl_search_header *sh,
			   const void *item)
{
	struct btrfs_dev_extent de;
	ssize_t d = device_index(bt, sh->objectid);
	int rc = 0;

	if (d < 0 || sh->len < sizeof(de))
		return -EUCLEAN;
	memcpy(&de, item, sizeof(de));
	if (sh->offset > bt->pos)
		rc = add_free(bt, (size_t)d, bt->pos, sh->offset);
	if (sh->offset + le64toh(de.length) > bt->pos)
		bt->pos = sh->offset + le64toh(de.length);
	return rc;
}

static int unallocated(struct bt_fs *bt)
{
	size_t i;
	int rc;

	/* FITRIM discards all of it, whatever its range and minimum */
	if (bt->view == BT_SHORT)
		return 0;
	for (i = 0; i < bt->ndev; i++) {
		size_t before = bt->nfree, k;

		bt->pos = 0;
		rc = tree_search(bt, BTRFS_DEV_TREE_OBJECTID, bt->dev[i].devid,
				 bt->dev[i].devid, BTRFS_DEV_EXTENT_KEY,
				 BTRFS_DEV_EXTENT_KEY, dev_extent_item);
		if (!rc && bt->pos < bt->dev[i].total)
			rc = add_free(bt, i, bt->pos, bt->dev[i].total);
		if (rc)
			return rc;
		for (k = before; k < bt->nfree; k++)
			bt->out->unallocated_bytes += bt->free[k].len;
	}
	return 0;
}

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

static int cmp_range(const void *a, const void *b)
{
	const struct bt_range *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The free range (sorted) byte @at of device @dev lies in, or NULL. */
static const struct bt_range *free_range(const struct bt_fs *bt, size_t dev, uint64_t at)
{
	size_t lo = 0, hi = bt->nfree;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct bt_range *r = &bt->free[mid];

		if (r->dev < dev || (r->dev == dev && r->start + r->len <= at))
			lo = mid + 1;
		else if (r->dev > dev || r->start > at)
			hi = mid;
		else
			return r;
	}
	return NULL;
}

/* ---- the whole -------------------------------------------------------- */

static int devices(struct bt_fs *bt, struct audit_device *data)
{
	struct btrfs_ioctl_fs_info_args fi;
	uint64_t id;

	memset(&fi, 0, sizeof(fi));
	if (ioctl(bt->fd, BTRFS_IOC_FS_INFO, &fi) != 0)
		return -errno;
	bt->nodesize = fi.nodesize;
	bt->sectorsize = fi.sectorsize;
	if (!bt->nodesize || !bt->sectorsize || bt->sectorsize % 512 ||
	    READ_CHUNK % bt->sectorsize)
		return -EUCLEAN;
	bt->dev = calloc(fi.num_devices ? fi.num_devices : 1, sizeof(*bt->dev));
	if (!bt->dev)
		return -ENOMEM;
	for (id = 1; id <= fi.max_id && bt->ndev < fi.num_devices; id++) {
		struct btrfs_ioctl_dev_info_args di;
		struct bt_device *d = &bt->dev[bt->ndev];
		struct audit_device ad = { 0 };
		struct stat st;

		memset(&di, 0, sizeof(di));
		di.devid = id;
		if (ioctl(bt->fd, BTRFS_IOC_DEV_INFO, &di) != 0) {
			if (errno == ENODEV)
				continue; /* a device removed: its id stays unused */
			return -errno;
		}
		d->devid = id;
		d->total = di.total_bytes;
		d->path = strndup((const char *)di.path, sizeof(di.path));
		if (!d->path)
			return -ENOMEM;
		bt->ndev++;
		if (stat(d->path, &st) != 0 || !S_ISBLK(st.st_mode))
			continue;
		ad.path = strdup(d->path);
		if (!ad.path)
			return -ENOMEM;
		audit_describe_device(st.st_rdev, &ad);
		d->gran = ad.known && ad.discard_max_bytes ? ad.discard_granularity : 0;
		d->align = ad.discard_alignment;
		/* the first device stands for the filesystem's */
		if (data && bt->ndev == 1) {
			*data = ad;
			continue;
		}
		free(ad.path);
	}
	bt->out->devices = (unsigned int)bt->ndev;
	return bt->ndev ? 0 : -ENODEV;
}

/*
 * FITRIM's minimum as btrfs takes it (fs/btrfs/ioctl.c): raised to the
 * smallest discard granularity of the devices that discard.
 */
static void raise_minlen(struct bt_fs *bt)
{
	size_t i;

	for (i = 0; i < bt->ndev; i++)
		if (bt->dev[i].gran && (!bt->gran || bt->dev[i].gran < bt->gran))
			bt->gran = bt->dev[i].gran;
	if (bt->gran > bt->minlen)
		bt->minlen = bt->gran;
}

static void bt_free(struct bt_fs *bt)
{
	size_t i;

	for (i = 0; i < bt->ndev; i++)
		free(bt->dev[i].path);
	free(bt->dev);
	for (i = 0; i < bt->nchunk; i++) {
		free(bt->chunk[i].devid);
		free(bt->chunk[i].offset);
	}
	free(bt->chunk);
	free(bt->free);
	memset(bt, 0, sizeof(*bt));
}

/* The free ranges of the btrfs open at @bt->fd, sorted by device and offset. */
static int bt_load(struct bt_fs *bt, struct audit_device *data)
{
	int rc = devices(bt, data);

	if (bt->view != BT_ALL)
		raise_minlen(bt);
	/*
	 * no free extent is shorter than a sector, and no block group is
	 * passed over when FITRIM begins at 0: nothing to walk for
	 */
	if (!rc && bt->view == BT_SHORT && bt->minlen <= bt->sectorsize && !bt->lo)
		return 0;
	/* the chunk tree's chunks come in logical order, as the walk needs */
	if (!rc)
		rc = tree_search(bt, BTRFS_CHUNK_TREE_OBJECTID,
				 BTRFS_FIRST_CHUNK_TREE_OBJECTID,
				 BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				 BTRFS_CHUNK_ITEM_KEY, chunk_item);
	if (!rc)
		rc = tree_search(bt, BTRFS_EXTENT_TREE_OBJECTID, 0, UINT64_MAX,
				 BTRFS_EXTENT_ITEM_KEY, BTRFS_METADATA_ITEM_KEY,
				 extent_item);
	if (!rc)
		rc = logical_free(bt, bt->pos, UINT64_MAX);
	if (!rc)
		rc = unallocated(bt);
	if (!rc)
		qsort(bt->free, bt->nfree, sizeof(*bt->free), cmp_range);
	return rc;
}

int audit_btrfs(int fd, struct audit_result *out, const struct audit_progress *progress)
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
 * told to @progress as @what; *@marks the sectors that held data, or NULL.
 */
static int read_view(int fd, enum bt_view view, uint64_t start, uint64_t len,
		     uint64_t minlen, const char *what, struct audit_free *out,
		     struct audit_btrfs_marks **marks,
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
	if (rc || !m->count) {
		audit_btrfs_marks_free(m);
		return rc;
	}
	*marks = m;
	return 0;
}

int audit_btrfs_readback(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			 struct audit_free *out, struct audit_btrfs_marks **marks,
			 const struct audit_progress *progress)
{
	return read_view(fd, BT_TRIMMED, start, len, minlen,
			 "reading back the free space", out, marks, progress);
}

int audit_btrfs_unreachable(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			    struct audit_free *out, struct audit_btrfs_marks **marks,
			    const struct audit_progress *progress)
{
	return read_view(fd, BT_SHORT, start, len, minlen,
			 "reading the free space FITRIM cannot reach", out, marks,
			 progress);
}

/*
 * Whether byte @at of device @dev lies in a chunk that begins before
 * @lo and ends after it: FITRIM from @lo passes over its block group.
 */
static bool in_passed_chunk(const struct bt_fs *bt, size_t dev, uint64_t at, uint64_t lo)
{
	size_t c;
	uint16_t i;

	for (c = 0; c < bt->nchunk; c++) {
		const struct bt_chunk *ch = &bt->chunk[c];

		if (ch->logical >= lo || ch->logical + ch->length <= lo)
			continue;
		for (i = 0; i < ch->nstripes; i++)
			if (ch->devid[i] == bt->dev[dev].devid && ch->offset[i] <= at &&
			    at - ch->offset[i] < ch->length)
				return true;
	}
	return false;
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

int audit_btrfs_recheck(int fd, struct audit_btrfs_marks *m, struct audit_free *out)
{
	struct audit_btrfs space = { 0 };
	struct bt_fs bt = { .fd = fd, .out = &space };
	unsigned char *buf = NULL;
	size_t i, n = 0, open_dev = SIZE_MAX;
	int dev = -1, rc;

	out->unsteady_blocks = 0;
	out->short_blocks = out->held_blocks = out->passed_blocks = 0;
	out->part_unit_blocks = 0;
	out->discard_unit = 0;
	rc = bt_load(&bt, NULL);
	for (i = 0; i < m->count && !rc; i++) {
		const struct bt_mark *k = &m->v[i];
		uint64_t at = k->sector * bt.sectorsize;
		const struct bt_range *r;

		if (k->dev >= bt.ndev || !(r = free_range(&bt, k->dev, at)))
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
		 * it (why: its block group is passed over, or its free extent
		 * is still too short). A sector never discarded that changes
		 * is a writer's, not unsteady.
		 */
		if (rc == AUDIT_REREAD_SAME) {
			m->v[n++] = *k;
			if (m->unreached && m->lo &&
			    in_passed_chunk(&bt, k->dev, at, m->lo))
				out->passed_blocks++;
			else if (m->unreached && r->len < m->minlen)
				out->short_blocks++;
			else if (!m->unreached)
				count_part_unit(&bt.dev[k->dev], bt.sectorsize, at, r,
						out);
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
