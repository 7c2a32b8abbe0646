// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which filesystems to trim: a single path, and what the mount tables
 * say of one mount (its ID, whether it is read-only). The entries of a
 * mount table are chosen in lib/mounts-select.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <blkid.h>
#include <libmount.h>
#include <linux/magic.h>

#include "compat.h"
#include "mounts.h"
#include "mounts-read.h"
#include "sysfs.h"

/* the root directory of an ext2/3/4 filesystem */
#define EXT4_ROOT_INO 2
/* btrfs gives every subvolume root this inode number */
#define BTRFS_SUBVOL_ROOT_INO 256

bool paths_equal(const char *a, const char *b)
{
	size_t la, lb;

	if (!a || !b)
		return false;
	la = strlen(a);
	lb = strlen(b);
	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	return la == lb && !strncmp(a, b, la);
}

void fs_entry_free(struct fs_entry *fs)
{
	if (!fs)
		return;
	free(fs->target);
	free(fs->mountpoint);
	free(fs->source);
	free(fs->fstype);
	memset(fs, 0, sizeof(*fs));
}

static void fs_skipped_free(struct fs_skipped *sk)
{
	free(sk->target);
	free(sk->source);
	free(sk->fstype);
	free(sk->reason);
}

void fs_list_free(struct fs_list *list)
{
	size_t i;

	for (i = 0; i < list->count; i++)
		fs_entry_free(&list->entries[i]);
	for (i = 0; i < list->nskipped; i++)
		fs_skipped_free(&list->skipped[i]);
	free(list->entries);
	free(list->skipped);
	memset(list, 0, sizeof(*list));
}

void path_lookup_free(struct path_lookup *why)
{
	free(why->mountpoint);
	free(why->root);
	free(why->source);
	memset(why, 0, sizeof(*why));
}

void path_lookup_reason(const struct path_lookup *why, char *buf, size_t size)
{
	switch (why->refusal) {
	case PATH_OK:
		snprintf(buf, size, "the root of a filesystem");
		break;
	case PATH_INSIDE:
		if (why->mountpoint)
			snprintf(buf, size,
				 "not the root of a filesystem (mounted on %s)",
				 why->mountpoint);
		else
			snprintf(buf, size, "not the root of a filesystem");
		break;
	case PATH_BIND_SUBDIR:
		if (why->root)
			snprintf(
				buf, size,
				"not the root of a filesystem (bind mount of %s from %s)",
				why->root, why->source);
		else
			snprintf(
				buf, size,
				"not the root of a filesystem (a bind mount of a directory)");
		break;
	case PATH_NOT_MOUNTED:
		snprintf(buf, size, "not the root of a filesystem");
		break;
	case PATH_UNPROVEN:
		snprintf(buf, size,
			 "cannot tell whether it is the root of a filesystem without %s "
			 "(mount /proc)",
			 PATH_MOUNTINFO);
		break;
	}
}

/* /proc/self/fdinfo has had "mnt_id:" since Linux 3.15. */
static int fdinfo_mnt_id(int fd)
{
	char path[64], line[128];
	int id = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %d", &id) == 1)
			break;
	fclose(f);
	return id;
}

int mounts_fd_mnt_id(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID))
		return (int)stx.stx_mnt_id;
	return fdinfo_mnt_id(fd);
}

/*
 * statx of what @path reaches, with its mount ID. Kernels before 5.8
 * have no STATX_MNT_ID: then the ID comes from a descriptor's fdinfo.
 */
int stat_path(const char *path, struct statx *stx, int *mnt_id)
{
	int fd;

	if (statx(AT_FDCWD, path, AT_NO_AUTOMOUNT, STATX_TYPE | STATX_INO | STATX_MNT_ID,
		  stx) != 0)
		return -errno;
	if (stx->stx_mask & STATX_MNT_ID) {
		*mnt_id = (int)stx->stx_mnt_id;
		return 0;
	}
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*mnt_id = fdinfo_mnt_id(fd);
	close(fd);
	return *mnt_id < 0 ? *mnt_id : 0;
}

/*
 * Whether a mount shows the root of its filesystem. A btrfs subvolume
 * mount is one: the whole filesystem is trimmed through it.
 */
bool is_filesystem_root(struct libmnt_fs *fs, const char *mountpoint)
{
	const char *root = mnt_fs_get_root(fs);
	struct stat st;

	if (!root || !strcmp(root, "/"))
		return true;
	if (!mnt_fs_match_fstype(fs, "btrfs"))
		return false;
	return stat(mountpoint, &st) == 0 && st.st_ino == BTRFS_SUBVOL_ROOT_INO;
}

int dup_entry(struct libmnt_fs *fs, const char *target, const char *mountpoint,
	      const char *source, struct fs_entry *out)
{
	const char *fstype = mnt_fs_get_fstype(fs);

	memset(out, 0, sizeof(*out));
	out->target = strdup(target);
	out->mountpoint = strdup(mountpoint);
	out->source = source ? strdup(source) : NULL;
	out->fstype = strdup(fstype ? fstype : "");
	out->mnt_id = mnt_fs_get_id(fs);
	if (!out->target || !out->mountpoint || !out->fstype ||
	    (source && !out->source)) {
		fs_entry_free(out);
		return -ENOMEM;
	}
	return 0;
}

/* A table, or NULL with *err set. */
struct libmnt_table *read_table(const char *file, int *err)
{
	struct libmnt_table *tab = mnt_new_table();
	int rc;

	if (!tab) {
		*err = -ENOMEM;
		return NULL;
	}
	rc = mnt_table_parse_file(tab, file);
	if (rc != 0) {
		*err = rc < 0 ? rc : -EINVAL;
		mnt_unref_table(tab);
		return NULL;
	}
	*err = 0;
	return tab;
}

/* Read-only is the filesystem's own state, not the view of one mount. */
bool is_readonly_fs(struct libmnt_fs *live)
{
	const char *opts = mnt_fs_get_fs_options(live);

	return opts && mnt_optstr_get_option(opts, "ro", NULL, NULL) == 0;
}

static struct libmnt_fs *find_by_id(struct libmnt_table *tab, int id)
{
	struct libmnt_iter *itr = mnt_new_iter(MNT_ITER_BACKWARD);
	struct libmnt_fs *fs, *found = NULL;

	while (itr && mnt_table_next_fs(tab, itr, &fs) == 0) {
		if (mnt_fs_get_id(fs) == id) {
			found = fs;
			break;
		}
	}
	mnt_free_iter(itr);
	return found;
}

/* What statx can prove without a mount table: the root of an ext2/3/4 or btrfs. */
static int lookup_by_statx(const char *rpath, struct fs_entry *fs,
			   struct path_lookup *why)
{
	const char *fstype;
	struct statfs sfs;
	struct statx stx;
	uint64_t root_ino;

	if (statx(AT_FDCWD, rpath, AT_NO_AUTOMOUNT, STATX_TYPE | STATX_INO | STATX_MNT_ID,
		  &stx) != 0 ||
	    statfs(rpath, &sfs) != 0)
		return -errno;
	if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    !(stx.stx_mask & STATX_MNT_ID)) {
		why->refusal = PATH_UNPROVEN;
		return 0;
	}
	if (!(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
		why->refusal = PATH_INSIDE;
		return 0;
	}
	if (sfs.f_type == EXT4_SUPER_MAGIC) {
		fstype = "ext4";
		root_ino = EXT4_ROOT_INO;
	} else if (sfs.f_type == BTRFS_SUPER_MAGIC) {
		fstype = "btrfs";
		root_ino = BTRFS_SUBVOL_ROOT_INO;
	} else {
		why->refusal = PATH_UNPROVEN;
		return 0;
	}
	if (stx.stx_ino != root_ino) {
		why->refusal = PATH_BIND_SUBDIR;
		return 0;
	}
	fs->target = strdup(rpath);
	fs->mountpoint = strdup(rpath);
	fs->fstype = strdup(fstype);
	fs->mnt_id = (int)stx.stx_mnt_id;
	fs->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	if (!fs->target || !fs->mountpoint || !fs->fstype) {
		fs_entry_free(fs);
		return -ENOMEM;
	}
	return 0;
}

int mounts_lookup_path(const char *path, struct fs_entry *fs, struct path_lookup *why)
{
	struct libmnt_table *tab;
	struct libmnt_fs *mnt;
	struct statx stx;
	char *rpath;
	int rc, id;

	memset(why, 0, sizeof(*why));
	memset(fs, 0, sizeof(*fs));
	rpath = realpath(path, NULL);
	if (!rpath)
		return -errno;
	tab = read_table(PATH_MOUNTINFO, &rc);
	if (!tab) {
		/* no /proc: a rescue shell or a chroot */
		if (rc == -ENOENT)
			rc = lookup_by_statx(rpath, fs, why);
		free(rpath);
		return rc;
	}
	rc = stat_path(rpath, &stx, &id);
	if (rc)
		goto out;

	/* by the mount the path reaches: a later entry may be tucked under it */
	mnt = find_by_id(tab, id);
	if (!mnt) {
		why->refusal = PATH_NOT_MOUNTED;
	} else if (!mnt_fs_streq_target(mnt, rpath)) {
		why->refusal = PATH_INSIDE;
		why->mountpoint = strdup(mnt_fs_get_target(mnt));
	} else if (!is_filesystem_root(mnt, rpath)) {
		why->refusal = PATH_BIND_SUBDIR;
		why->root = strdup(mnt_fs_get_root(mnt));
		why->source = mnt_fs_get_srcpath(mnt) ?
				      strdup(mnt_fs_get_srcpath(mnt)) :
				      strdup(mnt_fs_get_source(mnt) ?
						     mnt_fs_get_source(mnt) :
						     "?");
	} else {
		/* the source is for reports; no " on DEVICE" for a single path */
		rc = dup_entry(mnt, rpath, rpath, mnt_fs_get_srcpath(mnt), fs);
		if (!rc) {
			fs->mnt_id = id;
			fs->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
		}
	}
out:
	mnt_unref_table(tab);
	free(rpath);
	return rc;
}

int mounts_fs_readonly(int mnt_id)
{
	struct libmnt_table *tab;
	struct libmnt_fs *fs;
	int rc;

	tab = read_table(PATH_MOUNTINFO, &rc);
	if (!tab)
		return rc;
	fs = find_by_id(tab, mnt_id);
	rc = fs ? is_readonly_fs(fs) : -ENOENT;
	mnt_unref_table(tab);
	return rc;
}
