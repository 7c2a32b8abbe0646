/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_MOUNTS_READ_H
#define FSTRIM_EXT_MOUNTS_READ_H

/*
 * How lib/mounts.c reads a path and a mount table entry, shared with the
 * selection (lib/mounts-select.c); not an interface of the library.
 */

#include <stdbool.h>
#include <sys/stat.h>

#include <libmount.h>

struct fs_entry;

/* statx of what @path reaches, with its mount ID. Returns 0 or -errno. */
int stat_path(const char *path, struct statx *stx, int *mnt_id);

/* Whether a mount shows the root of its filesystem (or a btrfs subvolume's). */
bool is_filesystem_root(struct libmnt_fs *fs, const char *mountpoint);

/* Fill @out from @fs and the names given. Returns 0 or -ENOMEM. */
int dup_entry(struct libmnt_fs *fs, const char *target, const char *mountpoint,
	      const char *source, struct fs_entry *out);

/* A table, or NULL with *err set. */
struct libmnt_table *read_table(const char *file, int *err);

/* Whether the filesystem of @live is read-only itself. */
bool is_readonly_fs(struct libmnt_fs *live);

#endif /* FSTRIM_EXT_MOUNTS_READ_H */
