// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --audit: what a reader of the device could still recover after the
 * trim and the journal step, and what the kernel offers to erase it.
 * Read-only throughout: libext2fs without EXT2_FLAG_RW, O_RDONLY device
 * reads, and the journal ioctl only with its DRY_RUN flag.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <blkid.h>
#include <ext2fs/ext2fs.h>
#include <linux/fsmap.h>
#include <linux/magic.h>

#include "audit.h"
#include "audit-jbd2.h"
#include "audit-read.h"
#include "ext4-ioctl.h"
#include "sizes.h"
#include "sysfs.h"
#include "remnants.h"

bool audit_name_plausible(const char *buf, size_t len)
{
	size_t i;

	/* every directory has these two; no user gave them */
	if (len == 0 || (len <= 2 && !memcmp(buf, "..", len)))
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = buf[i];

		if (c < 0x20 || c == 0x7f || c == '/')
			return false;
	}
	return true;
}

bool audit_release_at_least(const char *release, int major, int minor)
{
	int ma = 0, mi = 0;

	if (sscanf(release, "%d.%d", &ma, &mi) < 1)
		return false;
	return ma > major || (ma == major && mi >= minor);
}
/* ---- devices -------------------------------------------------------- */

/* The queue limits live with the whole disk, not with a partition. */
void audit_describe_device(dev_t devno, struct audit_device *out)
{
	uint64_t gran = 0;
	dev_t disk = 0;

	out->devno = devno;
	if (!out->path)
		out->path = blkid_devno_to_devname(devno);
	if (blkid_devno_to_wholedisk(devno, NULL, 0, &disk) != 0 || !disk)
		disk = devno;
	if (sysfs_blkdev_read_u64(disk, "queue/discard_max_bytes",
				  &out->discard_max_bytes))
		return;
	sysfs_blkdev_read_u64(disk, "queue/write_zeroes_max_bytes",
			      &out->write_zeroes_max_bytes);
	sysfs_blkdev_read_u64(disk, "queue/discard_granularity", &gran);
	out->discard_granularity = (uint32_t)gran;
	out->known = true;
}

/* ---- the kernel ------------------------------------------------------ */

static int probe_checkpoint(int fd, __u32 flags)
{
	flags |= EXT4_IOC_CHECKPOINT_FLAG_DRY_RUN;
	if (ioctl(fd, EXT4_IOC_CHECKPOINT, &flags) == 0)
		return 1;
	/* ENOTTY: no such ioctl; EOPNOTSUPP: no discard on the journal device */
	if (errno == ENOTTY || errno == EOPNOTSUPP)
		return 0;
	return -errno;
}

bool audit_ext4_feature(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", EXT4_FEATURES_DIR, name);
	return access(path, F_OK) == 0;
}

static void audit_kernel(int fd, bool ext4, struct audit_kernel *k)
{
	struct utsname uts;

	if (uname(&uts) == 0)
		snprintf(k->release, sizeof(k->release), "%s", uts.release);
	k->wipes_dirents = audit_release_at_least(k->release, 5, 13);
	k->chkpt_jrnl = audit_ext4_feature(EXT4_FEATURE_CHKPT_JRNL);
	k->jbd2_erase_fix = audit_ext4_feature(EXT4_FEATURE_JBD2_ERASE_FIX);
	k->dirent_pack_wipe = audit_ext4_feature(EXT4_FEATURE_DIRENT_PACK_WIPE);
	if (!ext4) {
		k->checkpoint = k->checkpoint_discard = k->checkpoint_zeroout = 0;
		return;
	}
	/* FS_IOC_CHKPT_JRNL has no dry run: it is never issued here */
	k->checkpoint = probe_checkpoint(fd, 0);
	k->checkpoint_discard = probe_checkpoint(fd, EXT4_IOC_CHECKPOINT_FLAG_DISCARD);
	k->checkpoint_zeroout = probe_checkpoint(fd, EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT);
}

int audit_grow(void *array, size_t *alloc, size_t count, size_t size, size_t first)
{
	void **p = array, *v;
	size_t n;

	if (count < *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : first;
	v = reallocarray(*p, n, size);
	if (!v)
		return -ENOMEM;
	*p = v;
	*alloc = n;
	return 0;
}

int audit_grow2(void *array1, size_t size1, void *array2, size_t size2, size_t *alloc,
		size_t count, size_t first)
{
	size_t alloc1 = *alloc, alloc2 = *alloc;

	if (audit_grow(array1, &alloc1, count, size1, first) ||
	    audit_grow(array2, &alloc2, count, size2, first))
		return -ENOMEM;
	*alloc = alloc1;
	return 0;
}

bool audit_block_is_zero(const unsigned char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

int audit_direct_open(const char *path, size_t size, unsigned char **buf)
{
	int dev = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);

	*buf = NULL;
	if (dev < 0)
		return -errno;
	if (posix_memalign((void **)buf, DIRECT_ALIGN, size)) {
		*buf = NULL;
		close(dev);
		return -ENOMEM;
	}
	return dev;
}

/* ---- names in directory blocks ----------------------------------------- */

struct name_list {
	char **names;
	bool *fragment; /* only a piece, found without its header */
	size_t count, alloc;
};

struct dir_scan {
	ext2_filsys fs;
	struct audit_dirents *d;
	struct name_list live, removed; /* of the directory being read */
	unsigned char *buf;
	uint64_t found;
	int rc;
};

static int names_add(struct name_list *l, const char *name, size_t len, bool fragment)
{
	if (audit_grow2(&l->names, sizeof(*l->names), &l->fragment, sizeof(*l->fragment),
			&l->alloc, l->count, 64))
		return -ENOMEM;
	l->names[l->count] = strndup(name, len);
	if (!l->names[l->count])
		return -ENOMEM;
	l->fragment[l->count] = fragment;
	l->count++;
	return 0;
}

static void names_clear(struct name_list *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		free(l->names[i]);
	l->count = 0;
}

static void names_free(struct name_list *l)
{
	names_clear(l);
	free(l->names);
	free(l->fragment);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool name_byte(unsigned char c)
{
	return c >= 0x20 && c != 0x7f && c != '/';
}

/*
 * Every byte of [@from, @to) lies outside the live entries of the
 * block: first look for entries whose header survived (at 4-byte
 * boundaries, as entries are placed), then for runs of name bytes
 * whose header did not (overwritten by a live entry, or never parsed
 * because an old rec_len no longer fits the chain).
 */
static int scan_gap(struct dir_scan *scan, const unsigned char *blk, size_t from,
		    size_t to)
{
	size_t p = (from + 3) & ~(size_t)3, covered = from, run = 0, i;
	int rc = 0;

	for (; p + 8 < to && !rc; p += 4) {
		const struct ext2_dir_entry *de = (const void *)(blk + p);
		size_t len = ext2fs_dirent_name_len(de);
		unsigned int rec_len = 0;

		/*
		 * A header that survived is one a directory could hold: its
		 * inode exists, its entry fits in the block, its file type is
		 * one ext4 writes. Bytes of other names that happen to pass
		 * the rest (seen: inode 2621520 of 32768, rec_len 44928 in a
		 * 4 KiB block, in the slack an htree leaf split leaves) are
		 * not an entry.
		 */
		if (p < covered || !len || p + 8 + len > to ||
		    de->inode > scan->fs->super->s_inodes_count ||
		    ext2fs_get_rec_len(scan->fs, (struct ext2_dir_entry *)de, &rec_len) ||
		    rec_len % 4 || rec_len < 8 + len ||
		    p + rec_len > scan->fs->blocksize ||
		    (ext2fs_has_feature_filetype(scan->fs->super) &&
		     ext2fs_dirent_file_type(de) >= EXT2_FT_MAX) ||
		    !audit_name_plausible(de->name, len))
			continue;
		/* the bytes before it are scanned as a run below */
		for (i = covered; i < p && !rc; i++) {
			if (name_byte(blk[i])) {
				run++;
				continue;
			}
			if (run >= NAME_FRAGMENT_MIN)
				rc = names_add(&scan->removed,
					       (const char *)blk + i - run, run, true);
			run = 0;
		}
		if (!rc && run >= NAME_FRAGMENT_MIN)
			rc = names_add(&scan->removed, (const char *)blk + p - run, run,
				       true);
		run = 0;
		if (!rc)
			rc = names_add(&scan->removed, de->name, len, false);
		covered = p + 8 + len;
		p = ((covered + 3) & ~(size_t)3) - 4;
	}
	for (i = covered; i < to && !rc; i++) {
		if (name_byte(blk[i])) {
			run++;
			continue;
		}
		if (run >= NAME_FRAGMENT_MIN)
			rc = names_add(&scan->removed, (const char *)blk + i - run, run,
				       true);
		run = 0;
	}
	if (!rc && run >= NAME_FRAGMENT_MIN)
		rc = names_add(&scan->removed, (const char *)blk + to - run, run, true);
	return rc;
}

/*
 * One directory block: the live entries by their rec_len chain, and
 * everything else as gaps: the tail of each entry after its name, the
 * whole of each removed (inode 0) entry, and the rest of the block
 * after a chain that breaks. The checksum tail is not a gap.
 */
static int scan_dir_block(struct dir_scan *scan, const unsigned char *blk)
{
	size_t bsize = scan->fs->blocksize, off = 0, end = bsize;
	int rc = 0;

	if (ext2fs_has_feature_metadata_csum(scan->fs->super) && bsize >= 12) {
		const struct ext2_dir_entry_tail *t = (const void *)(blk + bsize - 12);

		if (!t->det_reserved_zero1 && t->det_rec_len == 12 &&
		    t->det_reserved_name_len == EXT2_DIR_NAME_LEN_CSUM)
			end = bsize - 12;
	}
	while (off + 8 <= end && !rc) {
		struct ext2_dir_entry *de = (void *)(blk + off);
		size_t len = ext2fs_dirent_name_len(de);
		unsigned int rec_len;

		if (ext2fs_get_rec_len(scan->fs, de, &rec_len) || rec_len < 8 ||
		    rec_len % 4 || off + rec_len > end || 8 + len > rec_len) {
			rc = scan_gap(scan, blk, off, end);
			return rc;
		}
		if (de->inode && len) {
			rc = names_add(&scan->live, de->name, len, false);
			if (!rc)
				rc = scan_gap(scan, blk, off + 8 + len, off + rec_len);
		} else {
			rc = scan_gap(scan, blk, off + 8, off + rec_len);
		}
		off += rec_len;
	}
	return rc;
}

static int read_dir_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
			  blk64_t ref_blk, int ref_offset, void *priv)
{
	struct dir_scan *scan = priv;

	if (blockcnt < 0)
		return 0;
	/* a block number is always on the device: a read that fails is an error */
	if (io_channel_read_blk64(fs->io, *blocknr, 1, scan->buf) != 0) {
		scan->rc = -EIO;
		return BLOCK_ABORT;
	}
	scan->rc = scan_dir_block(scan, scan->buf);
	return scan->rc ? BLOCK_ABORT : 0;
}

/* Whether @frag is a piece of one of @l's whole names. */
static bool piece_of(const char *frag, const struct name_list *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		if (!l->fragment[i] && strstr(l->names[i], frag))
			return true;
	return false;
}

static int cmp_name_index(const void *a, const void *b, void *priv)
{
	char *const *names = priv;

	return strcmp(names[*(const size_t *)a], names[*(const size_t *)b]);
}

/*
 * Distinct names and pieces of names of removed entries that no live
 * entry of the directory carries: dx_pack_dirents() leaves old copies
 * of live names behind too, and those tell nothing about what was
 * deleted.
 */
static int count_deleted_names(struct dir_scan *scan, uint64_t *found)
{
	struct name_list *live = &scan->live, *rm = &scan->removed;
	size_t i, *order;

	*found = 0;
	if (!rm->count)
		return 0;
	order = malloc(rm->count * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < rm->count; i++)
		order[i] = i;
	qsort(live->names, live->count, sizeof(char *), cmp_names);
	qsort_r(order, rm->count, sizeof(*order), cmp_name_index, rm->names);
	for (i = 0; i < rm->count; i++) {
		const char *name = rm->names[order[i]];

		if (i && !strcmp(rm->names[order[i - 1]], name))
			continue;
		if (live->count &&
		    bsearch(&name, live->names, live->count, sizeof(char *), cmp_names))
			continue;
		if (rm->fragment[order[i]] &&
		    (piece_of(name, live) || piece_of(name, rm)))
			continue;
		(*found)++;
	}
	free(order);
	return 0;
}

static int add_dir(struct dir_scan *scan, ext2_ino_t ino)
{
	struct audit_dirents *d = scan->d;
	struct audit_dir *dirs;
	char *name = NULL;

	dirs = realloc(d->dirs, (d->ndirs + 1) * sizeof(*dirs));
	if (!dirs)
		return -ENOMEM;
	d->dirs = dirs;
	if (ext2fs_get_pathname(scan->fs, ino, 0, &name) != 0 || !name) {
		if (asprintf(&name, "<inode %u>", ino) < 0)
			return -ENOMEM;
	} else {
		/* libext2fs allocates with its own allocator: copy */
		char *copy = strdup(name);

		ext2fs_free_mem(&name);
		if (!copy)
			return -ENOMEM;
		name = copy;
	}
	dirs[d->ndirs].path = name;
	dirs[d->ndirs].ino = ino;
	dirs[d->ndirs].removed_names = scan->found;
	d->ndirs++;
	return 0;
}

static int audit_dirents(ext2_filsys fs, struct audit_dirents *d)
{
	struct dir_scan scan = { .fs = fs, .d = d };
	struct ext2_inode inode;
	ext2_inode_scan iscan;
	ext2_ino_t ino;
	int rc = 0;

	scan.buf = malloc(fs->blocksize);
	if (!scan.buf)
		return -ENOMEM;
	if (ext2fs_open_inode_scan(fs, 0, &iscan) != 0) {
		free(scan.buf);
		return -EIO;
	}
	for (;;) {
		errcode_t err = ext2fs_get_next_inode(iscan, &ino, &inode);

		/* a live filesystem changes under the scan: skip what breaks */
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE ||
		    err == EXT2_ET_INODE_CSUM_INVALID || err == EXT2_ET_INODE_IS_GARBAGE)
			continue;
		if (err) {
			rc = -EIO;
			break;
		}
		if (!ino)
			break;
		if (!LINUX_S_ISDIR(inode.i_mode) || !inode.i_links_count || inode.i_dtime)
			continue;
		d->directories++;
		/* small directories kept inside the inode have no block to read */
		if (inode.i_flags & EXT4_INLINE_DATA_FL)
			continue;
		names_clear(&scan.live);
		names_clear(&scan.removed);
		scan.rc = 0;
		err = ext2fs_block_iterate3(fs, ino,
					    BLOCK_FLAG_DATA_ONLY | BLOCK_FLAG_READ_ONLY,
					    NULL, read_dir_block, &scan);
		/*
		 * libext2fs's own codes (a bad extent header, a block out of
		 * range) mean the tree was rewritten since the inode was read;
		 * an errno (EIO, ENOMEM) is a failure of the scan
		 */
		if (err && !scan.rc && err >= 4096)
			continue;
		rc = scan.rc ? scan.rc : err ? -(int)err : 0;
		if (!rc)
			rc = count_deleted_names(&scan, &scan.found);
		if (!rc && scan.found) {
			d->removed_names += scan.found;
			rc = add_dir(&scan, ino);
		}
		if (rc)
			break;
	}
	ext2fs_close_inode_scan(iscan);
	names_free(&scan.live);
	names_free(&scan.removed);
	free(scan.buf);
	d->scanned = rc == 0;
	return rc;
}

/* ---- free space --------------------------------------------------------- */

/*
 * Blocks found holding data that are kept, with what they held, to be
 * read again: 12 MiB at most. A device that ignores discard fills it
 * long before a run ends; the blocks past it count as holding data.
 */
#define BLOCK_LIST_MAX (1U << 20)

struct block_list {
	blk64_t *v;
	uint32_t *sum; /* crc32c of each block's contents when read */
	size_t count, alloc;
	uint64_t over; /* blocks with data past BLOCK_LIST_MAX, not kept */
};

static int blocks_add(struct block_list *l, blk64_t blk, const unsigned char *data,
		      size_t len)
{
	if (l->count >= BLOCK_LIST_MAX) {
		l->over++;
		return 0;
	}
	if (audit_grow2(&l->v, sizeof(*l->v), &l->sum, sizeof(*l->sum), &l->alloc,
			l->count, 64))
		return -ENOMEM;
	l->sum[l->count] = ext2fs_crc32c_le(~0U, data, len);
	l->v[l->count++] = blk;
	return 0;
}

static void blocks_free(struct block_list *l)
{
	free(l->v);
	free(l->sum);
	memset(l, 0, sizeof(*l));
}

/*
 * Keep of @l the blocks still free in a bitmap read now, and return how
 * many. A writer allocates a block (in the bitmap) before it writes it,
 * so a block that read back with data and is still free held it before:
 * not a writer's new data. When the bitmap cannot be read, all are kept.
 */
static uint64_t still_free(const char *devpath, struct block_list *l)
{
	ext2_filsys fs = NULL;
	size_t i, n = 0;

	if (!l->count)
		return 0;
	if (ext2fs_open(devpath, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			unix_io_manager, &fs) != 0)
		return l->count;
	if (ext2fs_read_block_bitmap(fs) != 0) {
		ext2fs_close_free(&fs);
		return l->count;
	}
	for (i = 0; i < l->count; i++) {
		if (ext2fs_test_block_bitmap2(fs->block_map, l->v[i]))
			continue;
		l->sum[n] = l->sum[i];
		l->v[n++] = l->v[i];
	}
	l->count = n;
	ext2fs_close_free(&fs);
	return n;
}

/* GETFSMAP records asked for at a time */
#define FSMAP_BATCH 512

/*
 * The free extents of ext4's allocator, which FITRIM walks: its buddy
 * bitmaps, as FS_IOC_GETFSMAP reports them. They differ from the block
 * bitmap on the disk: space the allocator holds in memory (the rest of
 * a group preallocation that small files are cut from, 512 blocks by
 * default, or blocks freed by a transaction that has not committed)
 * counts as used there. So a freed block next to such space is a short
 * extent to FITRIM, below the discard granularity, where the disk's
 * bitmap shows a long one. FITRIM works group by group: an extent is
 * cut where its group ends (GETFSMAP joins them).
 */
struct alloc_free {
	int fd;
	struct fsmap_head *head;
	unsigned int next; /* the next record of head to look at */
	bool done; /* head holds the kernel's last record */
	uint64_t bsize;
	blk64_t first_data, per_group;
	blk64_t start, end; /* what is left of the current free record */
};

static int alloc_free_fill(struct alloc_free *w)
{
	if (w->head->fmh_entries)
		fsmap_advance(w->head);
	if (ioctl(w->fd, FS_IOC_GETFSMAP, w->head) != 0)
		return -errno;
	w->next = 0;
	if (!w->head->fmh_entries ||
	    (w->head->fmh_recs[w->head->fmh_entries - 1].fmr_flags & FMR_OF_LAST))
		w->done = true;
	return 0;
}

/* Start at the first free extent of the filesystem open at @fd. */
static int alloc_free_open(struct alloc_free *w, int fd, ext2_filsys fs)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->head = calloc(1, fsmap_sizeof(FSMAP_BATCH));
	if (!w->head)
		return -ENOMEM;
	w->fd = fd;
	w->bsize = fs->blocksize;
	w->first_data = fs->super->s_first_data_block;
	w->per_group = EXT2_BLOCKS_PER_GROUP(fs->super);
	w->head->fmh_count = FSMAP_BATCH;
	/* the high key: everything (its reserved fields stay zero) */
	w->head->fmh_keys[1].fmr_device = UINT32_MAX;
	w->head->fmh_keys[1].fmr_flags = UINT32_MAX;
	w->head->fmh_keys[1].fmr_physical = UINT64_MAX;
	w->head->fmh_keys[1].fmr_owner = UINT64_MAX;
	w->head->fmh_keys[1].fmr_offset = UINT64_MAX;
	rc = alloc_free_fill(w);
	if (rc) {
		free(w->head);
		w->head = NULL;
	}
	return rc;
}

static void alloc_free_close(struct alloc_free *w)
{
	free(w->head);
	w->head = NULL;
}

/*
 * The next free extent [*start, *end) of the allocator, within one group.
 * Returns 0, 1 when there is none, or -errno.
 */
static int alloc_free_next(struct alloc_free *w, blk64_t *start, blk64_t *end)
{
	blk64_t group_end;
	int rc;

	while (w->start >= w->end) {
		const struct fsmap *r;

		if (w->next >= w->head->fmh_entries) {
			if (w->done)
				return 1;
			rc = alloc_free_fill(w);
			if (rc)
				return rc;
			continue;
		}
		r = &w->head->fmh_recs[w->next++];
		if (!(r->fmr_flags & FMR_OF_SPECIAL_OWNER) ||
		    r->fmr_owner != FMR_OWN_FREE)
			continue;
		w->start = r->fmr_physical / w->bsize;
		w->end = (r->fmr_physical + r->fmr_length) / w->bsize;
	}
	/* blocks before the first data block belong to no group */
	group_end = w->first_data;
	if (w->start >= w->first_data)
		group_end +=
			((w->start - w->first_data) / w->per_group + 1) * w->per_group;
	*start = w->start;
	*end = w->end < group_end ? w->end : group_end;
	w->start = *end;
	return 0;
}

/*
 * Keep of @l (ascending) the blocks the allocator counts as free now, and
 * return how many. On a filesystem in use a block of free space read back
 * with old data may have been taken by a writer since: allocated before
 * its new data is written home (with data=journal, until the checkpoint),
 * it is no longer free space, and FITRIM rightly skipped it. The disk's
 * bitmap cannot tell: it is written home only at a checkpoint.
 */
static int alloc_still_free(int fd, ext2_filsys fs, struct block_list *l)
{
	struct alloc_free w;
	blk64_t s = 0, e = 0;
	size_t i = 0, n = 0;
	int rc;

	rc = alloc_free_open(&w, fd, fs);
	while (!rc && i < l->count) {
		blk64_t b = l->v[i];

		if (b < s) {
			i++;
		} else if (b < e) {
			l->sum[n] = l->sum[i];
			l->v[n++] = l->v[i++];
		} else {
			rc = alloc_free_next(&w, &s, &e);
			if (rc == 1) {
				rc = 0;
				break;
			}
		}
	}
	alloc_free_close(&w);
	if (rc)
		return rc;
	l->count = n;
	return 0;
}

/*
 * Why FITRIM did not erase the blocks of @l (ascending), free on the disk
 * and holding data: counted in @f->short_blocks when the allocator's free
 * extent around one is shorter than @min bytes (FITRIM's minimum, the
 * discard granularity), in @f->held_blocks when the allocator does not
 * count it as free at all. Returns 0 with @f->classified set, or -errno
 * (a kernel without GETFSMAP for ext4, before 4.12).
 */
static int classify_left(int fd, ext2_filsys fs, uint64_t min, const struct block_list *l,
			 struct audit_free *f)
{
	struct alloc_free w;
	blk64_t s = 0, e = 0;
	size_t i = 0;
	int rc;

	rc = alloc_free_open(&w, fd, fs);
	while (!rc && i < l->count) {
		blk64_t b = l->v[i];

		if (b < s) {
			f->held_blocks++;
			i++;
		} else if (b < e) {
			if ((e - s) * w.bsize < min)
				f->short_blocks++;
			i++;
		} else {
			rc = alloc_free_next(&w, &s, &e);
			if (rc == 1) {
				f->held_blocks += l->count - i;
				rc = 0;
				break;
			}
		}
	}
	alloc_free_close(&w);
	if (rc) {
		f->short_blocks = f->held_blocks = 0;
		return rc;
	}
	f->classified = true;
	return 0;
}

void audit_spread_init(struct audit_spread *sp, uint64_t bsize, uint64_t budget,
		       struct audit_free *f)
{
	memset(sp, 0, sizeof(*sp));
	sp->bsize = bsize;
	sp->per_chunk = READ_CHUNK / bsize;
	sp->budget = budget;
	sp->f = f;
	/* read everything, or every stride-th free block in pieces of per_chunk */
	sp->all = f->free_bytes <= budget;
	sp->stride = sp->all ? sp->per_chunk :
			       f->free_bytes / bsize / (budget / READ_CHUNK);
	if (sp->stride < sp->per_chunk)
		sp->stride = sp->per_chunk;
}

int audit_spread_extent(struct audit_spread *sp, int dev, unsigned char *buf, uint64_t z,
			uint64_t s)
{
	struct audit_free *f = sp->f;
	uint64_t bsize = sp->bsize;
	int rc = 0;

	/* the pieces that start in this extent */
	while (sp->next < sp->pos + (s - z) && f->read_bytes < sp->budget && !rc) {
		uint64_t at = z + (sp->next - sp->pos), k;
		uint64_t n = s - at < sp->per_chunk ? s - at : sp->per_chunk;
		ssize_t got;

		if (n > (sp->budget - f->read_bytes) / bsize)
			n = (sp->budget - f->read_bytes) / bsize;
		if (!n)
			break;
		got = pread(dev, buf, n * bsize, (off_t)(at * bsize));
		if (got != (ssize_t)(n * bsize))
			return got < 0 ? -errno : -EIO;
		f->read_bytes += n * bsize;
		for (k = 0; k < n && !rc; k++)
			if (!audit_block_is_zero(buf + k * bsize, bsize))
				rc = sp->found(sp->arg, at + k, buf + k * bsize);
		/* reading all of it: go on where this piece ended */
		sp->next += sp->all ? n : sp->stride;
	}
	sp->pos += s - z;
	return rc;
}

/* audit_spread's found(): note the block, for still_free() */
static int found_free_block(void *arg, uint64_t blk, const unsigned char *data)
{
	(void)data;
	return blocks_add(arg, blk, NULL, 0);
}

/*
 * Read the free space the block bitmap shows, with O_DIRECT, and count
 * the free blocks that are not zero: deleted contents, or older
 * metadata, that FITRIM did not reach (no discard, not run, extents
 * below the discard granularity or the minimum, a device that ignores
 * discard). Up to @budget bytes: beyond that, 1 MiB pieces spread
 * evenly over the free space, and the audit says how much it read.
 */
static int read_free_space(int fd, ext2_filsys fs, const struct audit_device *data,
			   uint64_t budget, struct audit_free *f)
{
	const char *devpath = data->path;
	uint64_t bsize = fs->blocksize;
	blk64_t start = fs->super->s_first_data_block,
		end = ext2fs_blocks_count(fs->super);
	unsigned char *buf = NULL;
	struct block_list found = { 0 };
	struct audit_spread sp;
	int dev, rc = 0;

	f->free_bytes = 0;
	for (blk64_t b = start; b < end;) {
		blk64_t z, s;

		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end - 1, &z))
			break;
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, z, end - 1, &s))
			s = end;
		f->free_bytes += (s - z) * bsize;
		b = s;
	}
	audit_spread_init(&sp, bsize, budget, f);
	sp.found = found_free_block;
	sp.arg = &found;

	dev = audit_direct_open(devpath, READ_CHUNK, &buf);
	if (dev < 0)
		return dev;
	for (blk64_t b = start; b < end && !rc;) {
		blk64_t z, s;

		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end - 1, &z))
			break;
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, z, end - 1, &s))
			s = end;
		rc = audit_spread_extent(&sp, dev, buf, z, s);
		b = s;
	}
	free(buf);
	close(dev);
	if (!rc)
		f->nonzero_blocks = still_free(devpath, &found);
	/* why FITRIM left them, where the device can discard at all */
	if (!rc && f->nonzero_blocks && data->known && data->discard_max_bytes) {
		uint64_t min = data->discard_granularity;

		classify_left(fd, fs, min > bsize ? min : bsize, &found, f);
	}
	blocks_free(&found);
	return rc;
}

/* ---- the whole ---------------------------------------------------------- */

static void audit_free_space(struct audit_result *out, unsigned int blocksize)
{
	struct remnants r = { 0 };
	int rc = remnants_check_dev(out->data.devno, blocksize, &r);

	if (rc) {
		out->free_error = -rc;
		return;
	}
	out->free_known = true;
	out->free_bytes = r.free_bytes;
	out->small_free_bytes = r.small_free_bytes;
}

int audit_fs(int fd, struct audit_result *out)
{
	ext2_filsys fs = NULL;
	struct statfs sfs;
	struct stat st;
	errcode_t err;
	int rc, bitmap_rc;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0)
		return -errno;
	out->ext4 = sfs.f_type == EXT4_SUPER_MAGIC;
	out->btrfs = sfs.f_type == BTRFS_SUPER_MAGIC;
	audit_kernel(fd, out->ext4, &out->kernel);
	if (out->btrfs)
		return audit_btrfs(fd, out);
	if (major(st.st_dev))
		audit_describe_device(st.st_dev, &out->data);
	if (!out->ext4)
		return 1;
	if (!out->data.path)
		return -ENODEV;

	/*
	 * Read-only: no EXT2_FLAG_RW. The filesystem is mounted and changes
	 * under us, so a checksum that does not match is not a reason to
	 * stop; the 64-bit flag only lets large filesystems be opened.
	 */
	err = ext2fs_open(out->data.path, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			  0, 0, unix_io_manager, &fs);
	if (err) {
		/* libext2fs passes errno values through; its own codes are larger */
		return err < 4096 ? -(int)err : -EUCLEAN;
	}

	/* the journal's judgement and the free-space read both need it */
	bitmap_rc = ext2fs_read_block_bitmap(fs) ? -EIO : 0;
	out->journal.present = ext2fs_has_feature_journal(fs->super);
	if (out->journal.present) {
		struct journal_layout jl = { 0 };

		out->journal.external = fs->super->s_journal_inum == 0 &&
					!uuid_is_zero(fs->super->s_journal_uuid);
		if (out->journal.external) {
			rc = external_layout(fs, out, &jl);
		} else {
			out->journal_dev = out->data;
			out->journal_dev.path = strdup(out->data.path);
			rc = internal_layout(fs, out->data.path, &jl);
		}
		if (!rc)
			rc = scan_journal(&jl, fs, &out->journal);
		layout_free(&jl);
		out->journal.error = -rc;
		out->journal.read = rc == 0;
	}

	rc = audit_dirents(fs, &out->dirents);
	out->dirents.error = -rc;
	rc = bitmap_rc ?
		     bitmap_rc :
		     read_free_space(fd, fs, &out->data, FREE_READ_BUDGET, &out->free);
	out->free.error = -rc;
	out->free.read = rc == 0;
	out->free.block_size = fs->blocksize;
	audit_free_space(out, fs->blocksize);
	ext2fs_close_free(&fs);
	return 0;
}

/* Free blocks that read back with data after FITRIM, and what they held. */
struct audit_free_marks {
	char *devpath;
	uint64_t bsize;
	uint64_t gran; /* FITRIM's minimum, to tell why it left them; or 0 */
	struct block_list blocks;
	struct audit_btrfs_marks *btrfs; /* on btrfs, instead of the above */
};

void audit_free_marks_free(struct audit_free_marks *marks)
{
	if (!marks)
		return;
	blocks_free(&marks->blocks);
	audit_btrfs_marks_free(marks->btrfs);
	free(marks->devpath);
	free(marks);
}

/*
 * A read back of free space on the filesystem open at @fd: its device,
 * libext2fs on it, an O_DIRECT descriptor and buffer, and the blocks found
 * holding data.
 */
struct free_reader {
	struct audit_device dev;
	ext2_filsys fs;
	int devfd;
	unsigned char *buf;
	struct block_list found;
};

static int free_reader_open(struct free_reader *r, int fd, struct audit_free *out)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->devfd = -1;
	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0)
		return -errno;
	audit_describe_device(st.st_dev, &r->dev);
	if (!r->dev.path || !r->dev.known)
		return -ENODEV;
	if (ext2fs_open(r->dev.path, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0,
			0, unix_io_manager, &r->fs) != 0)
		return -EUCLEAN;
	out->block_size = r->fs->blocksize;
	r->devfd = audit_direct_open(r->dev.path, READ_CHUNK, &r->buf);
	return r->devfd < 0 ? r->devfd : 0;
}

/*
 * Keep of what @r found the blocks still free, hand them to *@marks (when
 * asked and there are any), release the rest. Returns @rc.
 */
static int free_reader_close(struct free_reader *r, int rc, struct audit_free *out,
			     struct audit_free_marks **marks)
{
	if (!rc)
		out->nonzero_blocks = still_free(r->dev.path, &r->found) + r->found.over;
	if (!rc && r->found.count && marks) {
		*marks = calloc(1, sizeof(**marks));
		if (*marks) {
			(*marks)->devpath = r->dev.path;
			(*marks)->bsize = r->fs->blocksize;
			(*marks)->blocks = r->found;
			r->dev.path = NULL;
			memset(&r->found, 0, sizeof(r->found));
		}
	}
	blocks_free(&r->found);
	out->read = rc == 0;
	out->error = -rc;
	if (r->devfd >= 0)
		close(r->devfd);
	free(r->buf);
	free(r->dev.path);
	if (r->fs)
		ext2fs_close_free(&r->fs);
	return rc;
}

/* FITRIM's minimum in bytes, as ext4_trim_fs() raises it. */
static uint64_t trim_minimum(const struct free_reader *r, uint64_t minlen)
{
	uint64_t bsize = r->fs->blocksize;
	uint64_t gran = r->dev.discard_granularity > bsize ? r->dev.discard_granularity :
							     bsize;

	if (minlen > gran)
		gran = (minlen + bsize - 1) / bsize * bsize;
	return gran;
}

/* The blocks [*first, *end) of FITRIM's range @start, @len. */
static void trim_span(ext2_filsys fs, uint64_t start, uint64_t len, blk64_t *first,
		      blk64_t *end)
{
	uint64_t bsize = fs->blocksize;

	*first = start / bsize > fs->super->s_first_data_block ?
			 start / bsize :
			 fs->super->s_first_data_block;
	*end = ext2fs_blocks_count(fs->super);
	if (len / bsize < *end - *first)
		*end = *first + len / bsize;
}

/* Read [@z, @hi) in pieces, marking the blocks with data. */
static int read_marking(struct free_reader *r, blk64_t z, blk64_t hi, uint64_t budget,
			struct audit_free *out)
{
	uint64_t bsize = r->fs->blocksize;

	out->free_bytes += (hi - z) * bsize;
	while (z < hi) {
		uint64_t n = hi - z, k;
		ssize_t got;

		if (n > READ_CHUNK / bsize)
			n = READ_CHUNK / bsize;
		if (n > (budget - out->read_bytes) / bsize)
			n = (budget - out->read_bytes) / bsize;
		if (!n)
			return 0;
		got = pread(r->devfd, r->buf, n * bsize, (off_t)(z * bsize));
		if (got != (ssize_t)(n * bsize))
			return got < 0 ? -errno : -EIO;
		out->read_bytes += n * bsize;
		for (k = 0; k < n; k++) {
			int rc;

			if (audit_block_is_zero(r->buf + k * bsize, bsize))
				continue;
			rc = blocks_add(&r->found, z + k, r->buf + k * bsize, bsize);
			if (rc)
				return rc;
		}
		z += n;
	}
	return 0;
}

/* btrfs: all of what FITRIM discarded, as on ext4 */
static int readback_btrfs(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			  struct audit_free *out, struct audit_free_marks **marks)
{
	struct audit_btrfs_marks *bm = NULL;
	int rc = audit_btrfs_readback(fd, start, len, minlen, out, &bm);

	if (rc || !bm || !marks) {
		audit_btrfs_marks_free(bm);
		return rc;
	}
	*marks = calloc(1, sizeof(**marks));
	if (!*marks) {
		audit_btrfs_marks_free(bm);
		return -ENOMEM;
	}
	(*marks)->btrfs = bm;
	return 0;
}

int audit_free_readback(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			struct audit_free *out, struct audit_free_marks **marks)
{
	struct alloc_free w = { 0 };
	struct free_reader r;
	struct statfs sfs;
	blk64_t first, end, z, e;
	uint64_t bsize, gran;
	ext2_filsys fs;
	int rc;

	if (marks)
		*marks = NULL;
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == BTRFS_SUPER_MAGIC)
		return readback_btrfs(fd, start, len, minlen, out, marks);
	rc = free_reader_open(&r, fd, out);
	if (rc)
		return free_reader_close(&r, rc, out, NULL);
	fs = r.fs;
	bsize = fs->blocksize;
	gran = trim_minimum(&r, minlen);
	trim_span(fs, start, len, &first, &end);
	/* the extents FITRIM discarded: the allocator's, not the disk's bitmap (struct alloc_free) */
	rc = alloc_free_open(&w, fd, fs);
	while (!rc && (rc = alloc_free_next(&w, &z, &e)) == 0) {
		uint64_t lo, hi;

		/* what lies in the range FITRIM was given */
		if (z < first)
			z = first;
		if (e > end)
			e = end;
		if (e <= z || (e - z) * bsize < gran)
			continue;
		/* the part of the extent the device's granularity lets discard */
		lo = (z * bsize + gran - 1) / gran * gran;
		hi = e * bsize / gran * gran;
		/* in whole blocks: all of it, as gran is a multiple of bsize */
		lo = (lo + bsize - 1) / bsize;
		hi /= bsize;
		if (hi > lo)
			rc = read_marking(&r, lo, hi, FREE_READ_BUDGET, out);
	}
	if (rc == 1)
		rc = 0;
	alloc_free_close(&w);
	return free_reader_close(&r, rc, out, marks);
}

int audit_free_unreachable(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			   uint64_t budget, struct audit_free *out,
			   struct audit_free_marks **marks)
{
	struct alloc_free w = { 0 };
	blk64_t a = 0, b = 0, pos, end;
	struct free_reader r;
	bool walked = false;
	uint64_t gran;
	int rc;

	*marks = NULL;
	rc = free_reader_open(&r, fd, out);
	if (!rc)
		rc = ext2fs_read_block_bitmap(r.fs) ? -EIO : 0;
	if (!rc)
		rc = alloc_free_open(&w, fd, r.fs);
	if (rc)
		return free_reader_close(&r, rc, out, NULL);
	gran = trim_minimum(&r, minlen);
	trim_span(r.fs, start, len, &pos, &end);
	/*
	 * The disk's free runs, less the allocator's free extents that
	 * FITRIM discards: those at least its minimum long.
	 */
	while (!rc && pos < end) {
		blk64_t z, s;

		if (ext2fs_find_first_zero_block_bitmap2(r.fs->block_map, pos, end - 1,
							 &z))
			break;
		if (ext2fs_find_first_set_block_bitmap2(r.fs->block_map, z, end - 1, &s))
			s = end;
		while (!rc && z < s) {
			blk64_t stop;

			if (b <= z && !walked) {
				rc = alloc_free_next(&w, &a, &b);
				if (rc == 1) {
					walked = true;
					a = b = end;
					rc = 0;
				}
				continue;
			}
			/* held: not free to the allocator; or free, too short */
			stop = a <= z && z < b ? b : a;
			if (stop > s)
				stop = s;
			if (!(a <= z && z < b) || (b - a) * r.fs->blocksize < gran)
				rc = read_marking(&r, z, stop, budget, out);
			z = stop;
		}
		pos = s;
	}
	alloc_free_close(&w);
	rc = free_reader_close(&r, rc, out, marks);
	if (*marks)
		(*marks)->gran = gran;
	return rc;
}

int audit_free_recheck(int fd, struct audit_free_marks *marks, struct audit_free *out)
{
	struct block_list *l = &marks->blocks;
	size_t span = marks->bsize > DIRECT_ALIGN ? marks->bsize : DIRECT_ALIGN;
	ext2_filsys fs = NULL;
	unsigned char *buf;
	size_t i, n = 0;
	int dev, rc = 0;

	if (marks->btrfs)
		return audit_btrfs_recheck(fd, marks->btrfs, out);
	dev = audit_direct_open(marks->devpath, span, &buf);
	if (dev < 0)
		return dev;
	for (i = 0; i < l->count; i++) {
		/* O_DIRECT reads whole aligned pieces: the one holding the block */
		uint64_t at = l->v[i] * marks->bsize;
		uint64_t piece = at / DIRECT_ALIGN * DIRECT_ALIGN;
		ssize_t got = pread(dev, buf, span, (off_t)piece);

		if (got < 0 || (uint64_t)got < at - piece + marks->bsize) {
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		if (ext2fs_crc32c_le(~0U, buf + (at - piece), marks->bsize) != l->sum[i])
			continue;
		l->sum[n] = l->sum[i];
		l->v[n++] = l->v[i];
	}
	close(dev);
	free(buf);
	if (rc)
		return rc;
	l->count = n;
	out->short_blocks = out->held_blocks = 0;
	out->classified = false;
	if (!l->count) {
		out->nonzero_blocks = l->over;
		return 0;
	}
	if (ext2fs_open(marks->devpath, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			0, 0, unix_io_manager, &fs) != 0)
		return -EUCLEAN;
	/*
	 * What FITRIM discarded and still holds data counts only where the
	 * allocator still has it free; where FITRIM could not reach, why
	 * (the allocator's view now).
	 */
	if (!marks->gran)
		rc = alloc_still_free(fd, fs, l);
	ext2fs_close_free(&fs);
	if (rc)
		return rc;
	out->nonzero_blocks = still_free(marks->devpath, l) + l->over;
	if (marks->gran && l->count &&
	    ext2fs_open(marks->devpath, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			0, 0, unix_io_manager, &fs) == 0) {
		classify_left(fd, fs, marks->gran, l, out);
		ext2fs_close_free(&fs);
	}
	return 0;
}

bool audit_found_remnants(const struct audit_result *res)
{
	return res->journal.old_blocks > 0 || res->dirents.removed_names > 0 ||
	       res->free.nonzero_blocks > 0;
}

bool audit_incomplete(const struct audit_result *res)
{
	if (res->btrfs)
		return !res->free.read || res->btrfs_space.striped_free_bytes > 0;
	if (!res->ext4)
		return true;
	return (res->journal.present && !res->journal.read) || !res->dirents.scanned ||
	       !res->free.read;
}

int audit_dirents_fd(int fd, struct audit_dirents *d)
{
	struct audit_device dev = { 0 };
	ext2_filsys fs = NULL;
	struct stat st;
	errcode_t err;
	int rc;

	memset(d, 0, sizeof(*d));
	if (fstat(fd, &st) != 0)
		return -errno;
	audit_describe_device(st.st_dev, &dev);
	if (!dev.path)
		return -ENOENT;
	err = ext2fs_open(dev.path, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			  unix_io_manager, &fs);
	free(dev.path);
	if (err)
		return err < 4096 ? -(int)err : -EUCLEAN;
	rc = audit_dirents(fs, d);
	d->error = -rc;
	ext2fs_close_free(&fs);
	return rc;
}

void audit_dirents_free(struct audit_dirents *d)
{
	size_t i;

	for (i = 0; i < d->ndirs; i++)
		free(d->dirs[i].path);
	free(d->dirs);
	d->dirs = NULL;
	d->ndirs = 0;
}

void audit_result_free(struct audit_result *res)
{
	audit_dirents_free(&res->dirents);
	free(res->data.path);
	free(res->journal_dev.path);
	memset(res, 0, sizeof(*res));
}

/* ---- what the user reads ---------------------------------------------- */

static const char *yes_no(int val)
{
	return val == 1 ? "yes" : val == 0 ? "no" : "unknown";
}

static void describe_device_line(FILE *f, const char *path, const char *what,
				 const struct audit_device *d)
{
	if (!d->known) {
		fprintf(f, "%s: audit: %s %s: queue limits unknown\n", path, what,
			d->path ? d->path : "device");
		return;
	}
	fprintf(f, "%s: audit: %s %s: discard %s, write-zeroes %s\n", path, what,
		d->path ? d->path : "device", yes_no(d->discard_max_bytes > 0),
		yes_no(d->write_zeroes_max_bytes > 0));
}

/* The summary line's first words. */
static const char *verdict(const struct audit_result *res)
{
	if (audit_found_remnants(res))
		return "deleted data found";
	return audit_incomplete(res) ? "incomplete, nothing found in what was read" :
				       "nothing found";
}

/* "; free space: ..." of the summary line */
static void describe_free(FILE *f, const struct audit_result *res)
{
	char size[SIZE_HUMAN_MAX], total[SIZE_HUMAN_MAX];

	if (!res->free.read) {
		fprintf(f, "; free space not read (%s)", strerror(res->free.error));
		return;
	}
	fprintf(f, "; free space: %" PRIu64 " blocks hold data",
		res->free.nonzero_blocks);
	/* deleted data that FITRIM cannot reach, with the reason */
	if (res->free.nonzero_blocks && res->data.known && !res->data.discard_max_bytes)
		fputs(" (the device cannot discard)", f);
	else if (res->free.short_blocks || res->free.held_blocks)
		fprintf(f,
			" (FITRIM cannot reach %" PRIu64 ": %" PRIu64
			" in free extents below the discard granularity, %" PRIu64
			" held by the allocator)",
			res->free.short_blocks + res->free.held_blocks,
			res->free.short_blocks, res->free.held_blocks);
	fprintf(f, ", %s read of %s",
		size_to_human(res->free.read_bytes, size, sizeof(size)),
		size_to_human(res->free.free_bytes, total, sizeof(total)));
}

/*
 * btrfs: free space alone. Its old tree blocks and deleted extents are
 * there; what stays inside live tree blocks is not examined.
 */
static void describe_btrfs(FILE *f, const char *path, const struct audit_result *res)
{
	const struct audit_btrfs *b = &res->btrfs_space;
	char size[SIZE_HUMAN_MAX];

	fprintf(f, "%s: audit: %s", path, verdict(res));
	describe_free(f, res);
	if (res->free.read) {
		fprintf(f, " (%s in no chunk",
			size_to_human(b->unallocated_bytes, size, sizeof(size)));
		fprintf(f, ", %s in chunks)",
			size_to_human(b->chunk_free_bytes, size, sizeof(size)));
	}
	if (b->striped_free_bytes)
		fprintf(f, "; not read: %s free in RAID0/10/5/6 chunks",
			size_to_human(b->striped_free_bytes, size, sizeof(size)));
	fputs("; not examined: unused bytes inside live tree blocks\n", f);
}

char *audit_describe(const char *path, const struct audit_result *res, int rc,
		     bool verbose)
{
	const struct audit_kernel *k = &res->kernel;
	char size[SIZE_HUMAN_MAX];
	char *text = NULL;
	size_t len = 0, i;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	if (rc < 0) {
		fprintf(f, "%s: audit: not done: %s\n", path, strerror(-rc));
		goto out;
	}
	if (rc == 1) {
		fprintf(f,
			"%s: audit: not an ext2/3/4 or btrfs filesystem; nothing examined\n",
			path);
		goto kernel;
	}
	if (res->btrfs) {
		describe_btrfs(f, path, res);
		if (verbose)
			describe_device_line(f, path, "data device", &res->data);
		goto out;
	}

	fprintf(f, "%s: audit: %s; ", path, verdict(res));
	if (!res->journal.present)
		fputs("no journal", f);
	else if (!res->journal.read)
		fprintf(f, "journal not read (%s)", strerror(res->journal.error));
	else
		fprintf(f,
			"journal: %" PRIu64 " of %" PRIu64 " blocks hold older "
			"transactions, %" PRIu64 " the live log",
			res->journal.old_blocks, res->journal.blocks,
			res->journal.live_blocks);
	if (!res->dirents.scanned)
		fprintf(f, "; directories not read (%s)", strerror(res->dirents.error));
	else
		fprintf(f,
			"; %" PRIu64 " deleted names in %zu of %" PRIu64 " directories",
			res->dirents.removed_names, res->dirents.ndirs,
			res->dirents.directories);
	describe_free(f, res);
	/* what no step here reads, said every time */
	fputs("; not examined: freed inodes (inline data, extended attributes)", f);
	fputc('\n', f);

	if (!verbose)
		goto out;
	for (i = 0; i < res->dirents.ndirs; i++)
		fprintf(f, "%s: audit: %" PRIu64 " deleted names in %s\n", path,
			res->dirents.dirs[i].removed_names, res->dirents.dirs[i].path);
	if (res->free_known)
		fprintf(f,
			"%s: audit: up to %s of free space in extents below the discard "
			"granularity\n",
			path, size_to_human(res->small_free_bytes, size, sizeof(size)));
	if (res->journal.external)
		fprintf(f, "%s: audit: external journal UUID=%s on %s\n", path,
			res->journal.uuid,
			res->journal_dev.path ? res->journal_dev.path :
						"no device found");
kernel:
	if (!verbose)
		goto out;
	fprintf(f,
		"%s: audit: Linux %s: EXT4_IOC_CHECKPOINT %s "
		"(discard %s, zeroout %s), "
		"FS_IOC_CHKPT_JRNL %s, names wiped on unlink %s, "
		"directory-pack fix %s\n",
		path, k->release, yes_no(k->checkpoint), yes_no(k->checkpoint_discard),
		yes_no(k->checkpoint_zeroout), yes_no(k->chkpt_jrnl),
		yes_no(k->wipes_dirents), yes_no(k->dirent_pack_wipe));
	describe_device_line(f, path, "data device", &res->data);
	if (res->journal.external)
		describe_device_line(f, path, "journal device", &res->journal_dev);
out:
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

#ifdef TEST_PROGRAM_AUDIT
/* TAP over the pure helpers. */
static int tap_count, tap_failed;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_count, what);
	if (!ok)
		tap_failed++;
}

int main(void)
{
	printf("1..14\n");
	check(audit_name_plausible("PII-SSN-001.txt", 15), "plain name");
	check(audit_name_plausible("\xc3\xa9t\xc3\xa9", 5), "UTF-8 name");
	check(!audit_name_plausible("", 0), "empty name");
	check(!audit_name_plausible("a\0b", 3), "NUL inside");
	check(!audit_name_plausible("\0\0\0\0", 4), "wiped name");
	check(!audit_name_plausible("a/b", 3), "slash");
	check(!audit_name_plausible("..", 2), "dot-dot");
	check(!audit_name_plausible(".", 1), "dot");
	check(!audit_name_plausible("\x01\x02", 2), "control bytes");
	check(audit_release_at_least("5.13.0", 5, 13), "5.13.0 >= 5.13");
	check(audit_release_at_least("6.1.0-13-amd64", 5, 13), "6.1 >= 5.13");
	check(!audit_release_at_least("5.10.0-28-amd64", 5, 13), "5.10 < 5.13");
	check(!audit_release_at_least("4.19.0", 5, 13), "4.19 < 5.13");
	check(!audit_release_at_least("junk", 5, 13), "junk");
	return tap_failed ? 1 : 0;
}
#endif
