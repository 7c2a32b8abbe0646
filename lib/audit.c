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
#include <linux/magic.h>

#include "audit.h"
#include "ext4-ioctl.h"
#include "sizes.h"
#include "sysfs.h"
#include "remnants.h"

/* The jbd2 superblock, big-endian, as far as it is read here. */
#define JBD2_MAGIC 0xc03b3998U
#define JBD2_SB_MAGIC 0
#define JBD2_SB_BLOCKSIZE 12
#define JBD2_SB_MAXLEN 16
#define JBD2_SB_FIRST 20

/* Device reads go through a buffer of this size, aligned for O_DIRECT. */
#define READ_CHUNK (1024 * 1024)
#define DIRECT_ALIGN 4096

bool audit_name_plausible(const char *buf, size_t len)
{
	size_t i;

	if (len == 0)
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

static bool uuid_is_zero(const unsigned char *uuid)
{
	int i;

	for (i = 0; i < 16; i++)
		if (uuid[i])
			return false;
	return true;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- devices -------------------------------------------------------- */

/* The queue limits live with the whole disk, not with a partition. */
static void describe_device(dev_t devno, struct audit_device *out)
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

static bool feature_present(const char *name)
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
	k->chkpt_jrnl = feature_present(EXT4_FEATURE_CHKPT_JRNL);
	k->jbd2_erase_fix = feature_present(EXT4_FEATURE_JBD2_ERASE_FIX);
	k->dirent_pack_wipe = feature_present(EXT4_FEATURE_DIRENT_PACK_WIPE);
	if (!ext4) {
		k->checkpoint = k->checkpoint_discard = k->checkpoint_zeroout = 0;
		return;
	}
	/* FS_IOC_CHKPT_JRNL has no dry run: it is never issued here */
	k->checkpoint = probe_checkpoint(fd, 0);
	k->checkpoint_discard = probe_checkpoint(fd, EXT4_IOC_CHECKPOINT_FLAG_DISCARD);
	k->checkpoint_zeroout = probe_checkpoint(fd, EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT);
}

/* ---- the journal's blocks -------------------------------------------- */

struct block_runs {
	uint64_t *start; /* physical block of each run */
	uint64_t *len;
	size_t count, alloc;
};

static int runs_add(struct block_runs *r, uint64_t blk)
{
	if (r->count && r->start[r->count - 1] + r->len[r->count - 1] == blk) {
		r->len[r->count - 1]++;
		return 0;
	}
	if (r->count == r->alloc) {
		size_t n = r->alloc ? r->alloc * 2 : 64;
		uint64_t *s = realloc(r->start, n * sizeof(*s));
		uint64_t *l;

		if (!s)
			return -ENOMEM;
		r->start = s;
		l = realloc(r->len, n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		r->len = l;
		r->alloc = n;
	}
	r->start[r->count] = blk;
	r->len[r->count] = 1;
	r->count++;
	return 0;
}

static void runs_free(struct block_runs *r)
{
	free(r->start);
	free(r->len);
	memset(r, 0, sizeof(*r));
}

static bool block_is_zero(const unsigned char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

/*
 * Count the non-zero blocks among @runs on the device at @path. O_DIRECT
 * reads what the device returns, not what the page cache remembers: a
 * buffered read can show journal blocks the erase already removed (the
 * jbd2 off-by-one of Linux 6.1.y) or hide blocks a discard left readable.
 */
static int count_nonzero(const char *path, const struct block_runs *runs, uint32_t bsize,
			 uint64_t *nonzero)
{
	unsigned char *buf = NULL;
	size_t i;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (posix_memalign((void **)&buf, DIRECT_ALIGN, READ_CHUNK)) {
		close(fd);
		return -ENOMEM;
	}
	for (i = 0; i < runs->count && !rc; i++) {
		uint64_t blk = runs->start[i], left = runs->len[i];

		while (left) {
			uint64_t n = left < READ_CHUNK / bsize ? left :
								 READ_CHUNK / bsize;
			ssize_t got = pread(fd, buf, n * bsize, (off_t)(blk * bsize));
			uint64_t j;

			if (got < 0) {
				rc = -errno;
				break;
			}
			if ((size_t)got != n * bsize) {
				rc = -EIO;
				break;
			}
			for (j = 0; j < n; j++)
				if (!block_is_zero(buf + j * bsize, bsize))
					(*nonzero)++;
			blk += n;
			left -= n;
		}
	}
	free(buf);
	close(fd);
	return rc;
}

/* Read the jbd2 superblock at byte @offset of @path: s_first and s_maxlen. */
static int read_jsb(const char *path, off_t offset, uint32_t *bsize, uint32_t *first,
		    uint32_t *maxlen)
{
	unsigned char *buf = NULL;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (posix_memalign((void **)&buf, DIRECT_ALIGN, DIRECT_ALIGN)) {
		close(fd);
		return -ENOMEM;
	}
	if (pread(fd, buf, DIRECT_ALIGN, offset & ~(off_t)(DIRECT_ALIGN - 1)) !=
	    DIRECT_ALIGN) {
		rc = errno ? -errno : -EIO;
	} else {
		const unsigned char *sb = buf + (offset & (DIRECT_ALIGN - 1));

		if (be32(sb + JBD2_SB_MAGIC) != JBD2_MAGIC) {
			rc = -EUCLEAN;
		} else {
			*bsize = be32(sb + JBD2_SB_BLOCKSIZE);
			*maxlen = be32(sb + JBD2_SB_MAXLEN);
			*first = be32(sb + JBD2_SB_FIRST);
		}
	}
	free(buf);
	close(fd);
	return rc;
}

struct journal_map {
	struct block_runs runs;
	uint64_t jsb; /* physical block of the journal superblock */
	int rc;
};

static int map_journal_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
			     blk64_t ref_blk, int ref_offset, void *priv)
{
	struct journal_map *map = priv;

	if (blockcnt < 0)
		return 0;
	if (blockcnt == 0) {
		map->jsb = *blocknr;
		return 0;
	}
	map->rc = runs_add(&map->runs, *blocknr);
	return map->rc ? BLOCK_ABORT : 0;
}

static int audit_internal_journal(ext2_filsys fs, const char *devpath,
				  struct audit_journal *j)
{
	ext2_ino_t ino = fs->super->s_journal_inum ? fs->super->s_journal_inum :
						     EXT2_JOURNAL_INO;
	struct journal_map map = { 0 };
	uint32_t bsize, first, maxlen;
	errcode_t err;
	int rc;

	err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_DATA_ONLY | BLOCK_FLAG_READ_ONLY,
				    NULL, map_journal_block, &map);
	if (err || map.rc) {
		runs_free(&map.runs);
		return map.rc ? map.rc : -EIO;
	}
	rc = read_jsb(devpath, (off_t)(map.jsb * fs->blocksize), &bsize, &first, &maxlen);
	if (!rc && bsize != fs->blocksize)
		rc = -EUCLEAN;
	if (!rc) {
		/*
		 * The map lists logical blocks 1.. of the journal inode; the
		 * journal proper is s_first .. s_maxlen - 1 (s_first is 1 for
		 * an internal journal, but take what it says).
		 */
		struct block_runs used = { 0 };
		uint64_t logical = 1;
		size_t i, k;

		for (i = 0; i < map.runs.count && !rc; i++)
			for (k = 0; k < map.runs.len[i] && !rc; k++, logical++)
				if (logical >= first && logical < maxlen)
					rc = runs_add(&used, map.runs.start[i] + k);
		for (i = 0; i < used.count; i++)
			j->blocks += used.len[i];
		j->block_size = bsize;
		if (!rc)
			rc = count_nonzero(devpath, &used, bsize, &j->nonzero_blocks);
		runs_free(&used);
	}
	runs_free(&map.runs);
	return rc;
}

/*
 * An external journal (mke2fs -O journal_dev) is found by the UUID the
 * filesystem records; its superblock follows the ext2 superblock, and
 * its block numbers are the device's own.
 */
static int audit_external_journal(ext2_filsys fs, struct audit_result *out)
{
	struct audit_journal *j = &out->journal;
	uint32_t bsize, first, maxlen, sb_block;
	struct block_runs runs = { 0 };
	blkid_cache cache = NULL;
	struct stat st;
	char *dev;
	int rc;

	snprintf(j->uuid, sizeof(j->uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 fs->super->s_journal_uuid[0], fs->super->s_journal_uuid[1],
		 fs->super->s_journal_uuid[2], fs->super->s_journal_uuid[3],
		 fs->super->s_journal_uuid[4], fs->super->s_journal_uuid[5],
		 fs->super->s_journal_uuid[6], fs->super->s_journal_uuid[7],
		 fs->super->s_journal_uuid[8], fs->super->s_journal_uuid[9],
		 fs->super->s_journal_uuid[10], fs->super->s_journal_uuid[11],
		 fs->super->s_journal_uuid[12], fs->super->s_journal_uuid[13],
		 fs->super->s_journal_uuid[14], fs->super->s_journal_uuid[15]);

	/* "/dev/null": scan the devices, and leave blkid's cache file alone */
	if (blkid_get_cache(&cache, "/dev/null") != 0)
		return -ENOMEM;
	dev = blkid_evaluate_tag("UUID", j->uuid, &cache);
	blkid_put_cache(cache);
	if (!dev)
		return -ENOENT;
	out->journal_dev.path = dev;
	if (stat(dev, &st) == 0 && S_ISBLK(st.st_mode))
		describe_device(st.st_rdev, &out->journal_dev);

	sb_block = (uint32_t)ext2fs_journal_sb_start((int)fs->blocksize);
	rc = read_jsb(dev, (off_t)sb_block * fs->blocksize, &bsize, &first, &maxlen);
	if (!rc && (bsize < 1024 || bsize > 65536 || first >= maxlen))
		rc = -EUCLEAN;
	if (rc)
		return rc;
	rc = runs_add(&runs, first);
	if (!rc) {
		runs.len[0] = maxlen - first;
		j->blocks = maxlen - first;
		j->block_size = bsize;
		rc = count_nonzero(dev, &runs, bsize, &j->nonzero_blocks);
	}
	runs_free(&runs);
	return rc;
}

/* ---- names in directory blocks ----------------------------------------- */

struct name_list {
	char **names;
	size_t count, alloc;
};

struct dir_scan {
	ext2_filsys fs;
	struct audit_dirents *d;
	struct name_list live, removed; /* of the directory being read */
	uint64_t found;
	int rc;
};

static int names_add(struct name_list *l, const char *name, size_t len)
{
	if (l->count == l->alloc) {
		size_t n = l->alloc ? l->alloc * 2 : 64;
		char **names = realloc(l->names, n * sizeof(*names));

		if (!names)
			return -ENOMEM;
		l->names = names;
		l->alloc = n;
	}
	l->names[l->count] = strndup(name, len);
	if (!l->names[l->count])
		return -ENOMEM;
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

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int collect_names(ext2_ino_t dir, int entry, struct ext2_dir_entry *dirent,
			 int offset, int blocksize, char *buf, void *priv)
{
	struct dir_scan *scan = priv;
	int len = ext2fs_dirent_name_len(dirent);

	if (len == 0 || entry == DIRENT_CHECKSUM)
		return 0;
	if (entry != DIRENT_DELETED_FILE)
		scan->rc = names_add(&scan->live, dirent->name, (size_t)len);
	/*
	 * libext2fs already checked that the removed entry's lengths fit the
	 * block. The kernel wipes the name when it removes an entry (5.13+);
	 * what is left with a name a user could have given is a name.
	 */
	else if (audit_name_plausible(dirent->name, (size_t)len))
		scan->rc = names_add(&scan->removed, dirent->name, (size_t)len);
	return scan->rc ? DIRENT_ABORT : 0;
}

/*
 * Distinct names of removed entries that no live entry of the directory
 * carries: dx_pack_dirents() leaves old copies of live names behind too,
 * and those tell nothing about what was deleted.
 */
static uint64_t count_deleted_names(struct dir_scan *scan)
{
	struct name_list *live = &scan->live, *rm = &scan->removed;
	uint64_t n = 0;
	size_t i;

	if (!rm->count)
		return 0;
	qsort(live->names, live->count, sizeof(char *), cmp_names);
	qsort(rm->names, rm->count, sizeof(char *), cmp_names);
	for (i = 0; i < rm->count; i++) {
		if (i && !strcmp(rm->names[i - 1], rm->names[i]))
			continue;
		if (!live->count || !bsearch(&rm->names[i], live->names, live->count,
					     sizeof(char *), cmp_names))
			n++;
	}
	return n;
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

	if (ext2fs_open_inode_scan(fs, 0, &iscan) != 0)
		return -EIO;
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
		names_clear(&scan.live);
		names_clear(&scan.removed);
		scan.rc = 0;
		if (ext2fs_dir_iterate2(fs, ino, DIRENT_FLAG_INCLUDE_REMOVED, NULL,
					collect_names, &scan) != 0) {
			if (scan.rc) {
				rc = scan.rc;
				break;
			}
			/* removed or rewritten since the inode was read */
			continue;
		}
		scan.found = count_deleted_names(&scan);
		if (scan.found) {
			d->removed_names += scan.found;
			rc = add_dir(&scan, ino);
			if (rc)
				break;
		}
	}
	ext2fs_close_inode_scan(iscan);
	names_clear(&scan.live);
	names_clear(&scan.removed);
	free(scan.live.names);
	free(scan.removed.names);
	d->scanned = rc == 0;
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
	int rc;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0)
		return -errno;
	out->ext4 = sfs.f_type == EXT4_SUPER_MAGIC;
	audit_kernel(fd, out->ext4, &out->kernel);
	if (major(st.st_dev))
		describe_device(st.st_dev, &out->data);
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

	out->journal.present = ext2fs_has_feature_journal(fs->super);
	if (out->journal.present) {
		out->journal.external = fs->super->s_journal_inum == 0 &&
					!uuid_is_zero(fs->super->s_journal_uuid);
		if (out->journal.external) {
			rc = audit_external_journal(fs, out);
		} else {
			out->journal_dev = out->data;
			out->journal_dev.path = strdup(out->data.path);
			rc = audit_internal_journal(fs, out->data.path, &out->journal);
		}
		out->journal.error = -rc;
		out->journal.read = rc == 0;
	}

	rc = audit_dirents(fs, &out->dirents);
	out->dirents.error = -rc;
	audit_free_space(out, fs->blocksize);
	ext2fs_close_free(&fs);
	return 0;
}

bool audit_found_remnants(const struct audit_result *res)
{
	return res->journal.nonzero_blocks > 0 || res->dirents.removed_names > 0;
}

bool audit_incomplete(const struct audit_result *res)
{
	if (!res->ext4)
		return true;
	return (res->journal.present && !res->journal.read) || !res->dirents.scanned;
}

void audit_result_free(struct audit_result *res)
{
	size_t i;

	for (i = 0; i < res->dirents.ndirs; i++)
		free(res->dirents.dirs[i].path);
	free(res->dirents.dirs);
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
		fprintf(f, "%s: audit: not an ext2/3/4 filesystem; nothing read\n", path);
		goto kernel;
	}

	fprintf(f, "%s: audit: ", path);
	if (!res->journal.present)
		fputs("no journal", f);
	else if (!res->journal.read)
		fprintf(f, "journal not read (%s)", strerror(res->journal.error));
	else
		fprintf(f, "%" PRIu64 " of %" PRIu64 " journal blocks hold data",
			res->journal.nonzero_blocks, res->journal.blocks);
	if (!res->dirents.scanned)
		fprintf(f, ", directories not read (%s)", strerror(res->dirents.error));
	else
		fprintf(f,
			", %" PRIu64 " deleted names in %zu of %" PRIu64 " directories",
			res->dirents.removed_names, res->dirents.ndirs,
			res->dirents.directories);
	if (res->free_known)
		fprintf(f,
			", up to %s of free space in extents below the discard "
			"granularity",
			size_to_human(res->small_free_bytes, size, sizeof(size)));
	fputc('\n', f);

	if (!verbose)
		goto out;
	for (i = 0; i < res->dirents.ndirs; i++)
		fprintf(f, "%s: audit: %" PRIu64 " deleted names in %s\n", path,
			res->dirents.dirs[i].removed_names, res->dirents.dirs[i].path);
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
	printf("1..12\n");
	check(audit_name_plausible("PII-SSN-001.txt", 15), "plain name");
	check(audit_name_plausible("\xc3\xa9t\xc3\xa9", 5), "UTF-8 name");
	check(!audit_name_plausible("", 0), "empty name");
	check(!audit_name_plausible("a\0b", 3), "NUL inside");
	check(!audit_name_plausible("\0\0\0\0", 4), "wiped name");
	check(!audit_name_plausible("a/b", 3), "slash");
	check(!audit_name_plausible("\x01\x02", 2), "control bytes");
	check(audit_release_at_least("5.13.0", 5, 13), "5.13.0 >= 5.13");
	check(audit_release_at_least("6.1.0-13-amd64", 5, 13), "6.1 >= 5.13");
	check(!audit_release_at_least("5.10.0-28-amd64", 5, 13), "5.10 < 5.13");
	check(!audit_release_at_least("4.19.0", 5, 13), "4.19 < 5.13");
	check(!audit_release_at_least("junk", 5, 13), "junk");
	return tap_failed ? 1 : 0;
}
#endif
