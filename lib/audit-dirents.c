// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The directory scanner of the ext4 audit: names of removed entries that
 * live directory blocks still hold, read with libext2fs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <et/com_err.h>
#include <ext2fs/ext2_err.h>
#include <ext2fs/ext2fs.h>

#include "audit.h"
#include "audit-read.h"
#include "extfs.h"

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

static int read_dir_block(blk64_t lblk, blk64_t pblk, void *priv)
{
	struct dir_scan *scan = priv;

	(void)lblk;
	/* a block number is always on the device: a read that fails is an error */
	if (io_channel_read_blk64(scan->fs->io, pblk, 1, scan->buf) != 0) {
		scan->rc = -EIO;
		return 1;
	}
	scan->rc = scan_dir_block(scan, scan->buf);
	return scan->rc;
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

/* The blocks of directory @ino, each scanned; libext2fs's code. */
static errcode_t walk_dir(struct dir_scan *scan, ext2_ino_t ino)
{
	names_clear(&scan->live);
	names_clear(&scan->removed);
	scan->rc = 0;
	return audit_inode_blocks(scan->fs, ino, read_dir_block, scan);
}

int audit_dirents(ext2_filsys fs, struct audit_dirents *d, const char *what,
		  const struct audit_progress *progress)
{
	struct dir_scan scan = { .fs = fs, .d = d };
	/* where the scan is in the inode tables, which it reads in order */
	struct audit_read read = {
		.what = what,
		.total = (uint64_t)fs->super->s_inodes_count * EXT2_INODE_SIZE(fs->super),
		.at = true,
	};
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
	audit_read_tell(progress, AUDIT_READ_BEGIN, &read);
	for (;;) {
		errcode_t err = ext2fs_get_next_inode(iscan, &ino, &inode);

		/* an inode not read may be a directory: counted, said */
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE ||
		    err == EXT2_ET_INODE_CSUM_INVALID ||
		    err == EXT2_ET_INODE_IS_GARBAGE) {
			d->unread_inodes++;
			continue;
		}
		if (err) {
			rc = -EIO;
			break;
		}
		if (!ino)
			break;
		read.done = (uint64_t)ino * EXT2_INODE_SIZE(fs->super);
		audit_read_tell(progress, AUDIT_READ_PIECE, &read);
		if (!LINUX_S_ISDIR(inode.i_mode) || !inode.i_links_count || inode.i_dtime)
			continue;
		d->directories++;
		/* small directories kept inside the inode have no block to read */
		if (inode.i_flags & EXT4_INLINE_DATA_FL)
			continue;
		err = walk_dir(&scan, ino);
		/*
		 * libext2fs's own codes (a bad extent header, a block out of
		 * range) can mean the tree was rewritten since the inode was
		 * read: read it again, once. A directory whose blocks still
		 * cannot be listed was not examined, and says so; an errno
		 * (EIO, ENOMEM) is a failure of the scan.
		 */
		if (err && !scan.rc && err >= 4096) {
			ext2fs_flush_icache(fs);
			err = walk_dir(&scan, ino);
			if (err && !scan.rc && err >= 4096) {
				if (!d->unwalked++) {
					d->unwalked_ino = ino;
					d->unwalked_err = err;
				}
				continue;
			}
		}
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
	audit_read_tell(progress, AUDIT_READ_END, &read);
	if (!rc && (d->unwalked || d->unread_inodes))
		rc = -EUCLEAN;
	names_free(&scan.live);
	names_free(&scan.removed);
	free(scan.buf);
	d->scanned = rc == 0;
	return rc;
}

int audit_dirents_fd(int fd, struct audit_dirents *d,
		     const struct audit_progress *progress)
{
	struct audit_device dev = { 0 };
	ext2_filsys fs = NULL;
	struct stat st;
	int rc;

	memset(d, 0, sizeof(*d));
	if (fstat(fd, &st) != 0)
		return -errno;
	audit_describe_device(st.st_dev, &dev);
	if (!dev.path)
		return -ENOENT;
	rc = extfs_open(dev.path, 0, &fs);
	free(dev.path);
	if (rc)
		return rc;
	rc = audit_dirents(fs, d, "reading back the directories, inode tables", progress);
	d->error = -rc;
	ext2fs_close_free(&fs);
	return rc;
}

const char *audit_dirents_why(const struct audit_dirents *d, char *buf, size_t len)
{
	int n = 0;

	if (!d->unwalked && !d->unread_inodes) {
		snprintf(buf, len, "%s", strerror(d->error));
		return buf;
	}
	*buf = '\0';
	initialize_ext2_error_table();
	if (d->unwalked)
		n = snprintf(buf, len,
			     "the blocks of %" PRIu64
			     " %s could not be listed: inode %" PRIu32 ": %s",
			     d->unwalked, d->unwalked == 1 ? "directory" : "directories",
			     d->unwalked_ino, error_message(d->unwalked_err));
	if (d->unread_inodes && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - n, "%s%" PRIu64 " %s could not be read",
			 n ? "; " : "", d->unread_inodes,
			 d->unread_inodes == 1 ? "inode" : "inodes");
	return buf;
}
