// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * btrfs's free space: device space in no chunk, and the space of each
 * chunk that no extent item covers, from BTRFS_IOC_TREE_SEARCH (the device
 * tree's dev extents, the chunk tree's chunks, the extent tree's extent
 * and metadata items), which reads the trees as the running transaction
 * sees them and writes nothing; each range where it lies on its devices,
 * and which of it FITRIM discards (include/audit-btrfs-space.h).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>

#include "audit-btrfs-space.h"
#include "audit-read.h"

/* btrfs never allocates the first MiB of a device, and FITRIM skips it. */
#define DEVICE_RESERVED (1024ULL * 1024)
/* The superblock copies (64 KiB, 64 MiB, 256 GiB): each keeps its stripe. */
#define SUPER_STRIPE (64ULL * 1024)
static const uint64_t super_offsets[] = { 64ULL << 10, 64ULL << 20, 256ULL << 30 };

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
		bool skipped = false;
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

			/* the part FITRIM was given */
			if (b <= a) {
				if (e == end)
					bt->cursor++;
				lo = e;
				continue;
			}
			/* too short a free extent, or a chunk FITRIM passes over */
			skipped = b - a < bt->minlen || ch->logical < bt->lo;
			s = a;
			e = b;
		}
		if (!chunk_mirrored(ch)) {
			if (bt->view == BT_ALL || skipped == (bt->view == BT_SHORT))
				bt->out->striped_free_bytes += e - s;
		} else {
			for (i = 0; i < ch->nstripes; i++) {
				ssize_t d = device_index(bt, ch->devid[i]);
				uint64_t at = ch->offset[i] + (s - ch->logical);

				if (d < 0)
					return -ENODEV;
				/* what FITRIM discards, or what it skips: the view's side */
				if (bt->view != BT_ALL &&
				    (skipped || !bt->dev[d].discard) !=
					    (bt->view == BT_SHORT))
					continue;
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

	for (i = 0; i < bt->ndev; i++) {
		size_t before = bt->nfree, k;

		/*
		 * FITRIM discards all of it, whatever its range and minimum,
		 * on a device that can discard, and none on one that cannot
		 */
		if (bt->view != BT_ALL && bt->dev[i].discard != (bt->view == BT_TRIMMED))
			continue;

		bt->pos = 0;
		rc = tree_search(bt, BTRFS_DEV_TREE_OBJECTID, bt->dev[i].devid,
				 bt->dev[i].devid, BTRFS_DEV_EXTENT_KEY,
				 BTRFS_DEV_EXTENT_KEY, dev_extent_item);
		if (!rc && bt->pos < bt->dev[i].total)
			rc = add_free(bt, i, bt->pos, bt->dev[i].total);
		if (rc)
			return rc;
		for (k = before; k < bt->nfree; k++) {
			bt->free[k].unallocated = true;
			bt->out->unallocated_bytes += bt->free[k].len;
		}
	}
	return 0;
}

/* ---- free ranges ------------------------------------------------------- */

static int cmp_range(const void *a, const void *b)
{
	const struct bt_range *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

const struct bt_range *bt_free_range(const struct bt_fs *bt, size_t dev, uint64_t at)
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

/* How many of the devices of @bt discard. */
static size_t discarding(const struct bt_fs *bt)
{
	size_t i, n = 0;

	for (i = 0; i < bt->ndev; i++)
		n += bt->dev[i].discard;
	return n;
}

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
		/* not known to be unable: FITRIM is taken to discard there */
		d->discard = true;
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
		d->discard = !ad.known || ad.discard_max_bytes;
		/* the first device stands for the filesystem's */
		if (data && bt->ndev == 1) {
			*data = ad;
			continue;
		}
		free(ad.path);
	}
	/*
	 * None can: FITRIM is not supported at all, and the run reads the
	 * free space it would discard as untrimmed (lib/run.c)
	 */
	if (!discarding(bt))
		for (id = 0; id < bt->ndev; id++)
			bt->dev[id].discard = true;
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

void bt_free(struct bt_fs *bt)
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

int bt_load(struct bt_fs *bt, struct audit_device *data)
{
	int rc = devices(bt, data);

	if (bt->view != BT_ALL)
		raise_minlen(bt);
	/*
	 * no free extent is shorter than a sector, no block group is passed
	 * over when FITRIM begins at 0, and every device discards: nothing
	 * to walk for
	 */
	if (!rc && bt->view == BT_SHORT && bt->minlen <= bt->sectorsize && !bt->lo &&
	    discarding(bt) == bt->ndev)
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

bool bt_in_passed_chunk(const struct bt_fs *bt, size_t dev, uint64_t at, uint64_t lo)
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
