/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_MOUNTS_H
#define FSTRIM_EXT_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PATH_MOUNTINFO "/proc/self/mountinfo"
#define PATH_FSTAB "/etc/fstab"

/* One filesystem chosen for trimming, as the live mount table shows it. */
struct fs_entry {
	char *target; /* mountpoint, as named by the table it came from */
	char *mountpoint; /* the same, canonical: the path that is opened */
	char *source; /* device path; for a single path only reported */
	char *fstype;
	int mnt_id; /* mount ID in /proc/self/mountinfo */
	dev_t dev; /* st_dev of its root when it was chosen */
};

/* An entry of a table that looks like a block-device filesystem, not chosen. */
struct fs_skipped {
	char *target; /* as the table names it */
	char *source; /* the device, or the table's source when unresolved */
	char *fstype;
	char *reason; /* why it was not chosen, for "TARGET: skipped: REASON" */
	int error; /* an errno when it could not be looked at (a failure), else 0 */
	/*
	 * the filesystem is mounted only through binds of a directory of it
	 * (a chroot, a container): nothing chosen reaches it
	 */
	bool only_subdir;
};

struct fs_list {
	struct fs_entry *entries; /* in the order they are to be trimmed */
	size_t count;
	struct fs_skipped *skipped; /* in table order */
	size_t nskipped;
};

/* Why a single path was refused. */
enum path_refusal {
	PATH_OK = 0,
	PATH_INSIDE, /* a directory inside a filesystem */
	PATH_BIND_SUBDIR, /* the root of a bind mount of a subdirectory */
	PATH_NOT_MOUNTED, /* no mountinfo entry covers it */
	PATH_UNPROVEN, /* no mount table, and statx cannot tell */
};

struct path_lookup {
	enum path_refusal refusal;
	char *mountpoint; /* PATH_INSIDE: the mountpoint above the path */
	char *root; /* PATH_BIND_SUBDIR: the directory that is mounted */
	char *source; /* PATH_BIND_SUBDIR: its device */
};

/*
 * Find the mount a user-given directory is the root of, by the mount
 * ID of what the path reaches (a later entry of the same mountpoint may
 * be tucked under it). @path must name an existing directory. Without
 * /proc, statx alone decides where it can (doc/fstrim-differences.md).
 * Returns 0 and fills @fs, or fills @why->refusal; -errno on other errors.
 */
int mounts_lookup_path(const char *path, struct fs_entry *fs, struct path_lookup *why);
void path_lookup_free(struct path_lookup *why);
/* Why @why refused a path, for "PATH: %s", in @buf of @size bytes. */
void path_lookup_reason(const struct path_lookup *why, char *buf, size_t size);

struct select_opts {
	const char *tables; /* colon-separated list of mount tables */
	const char *types; /* mount -t pattern, or NULL */
	const char *mountinfo; /* live table; NULL means /proc/self/mountinfo */
	bool need_discard; /* a requested step needs the device to discard */
	/*
	 * with @need_discard: the journal step is asked, and a device below
	 * dm-crypt that passes no discards is chosen all the same (its
	 * journal is zeroed through the mapping, lib/journal)
	 */
	bool journal_below_crypt;
	bool need_writable; /* a requested step writes to the filesystem */
	/* the table's rules alone, without asking the running system (tests) */
	bool table_rules_only;
	/* called for each line of a table that cannot be parsed */
	void (*parse_error)(const char *file, int line, void *arg);
	void *arg;
};

enum select_status {
	SELECT_OK = 0,
	SELECT_NO_TABLE, /* no file in the list exists as a regular file */
	SELECT_EMPTY, /* every file in the list is empty */
};

/*
 * Choose the filesystems of the first non-empty table in opts->tables,
 * with fstrim's rules (doc/fstrim-differences.md says where they
 * differ). Returns a select_status, or -errno; on failure *failed names
 * the file (the caller frees it). Entries not chosen are in
 * list->skipped.
 */
int mounts_select(const struct select_opts *opts, struct fs_list *list, char **failed);

/*
 * The mount ID of an open file: from statx, or on kernels before 5.8
 * from /proc/self/fdinfo. Returns it, or -errno.
 */
int mounts_fd_mnt_id(int fd);

/*
 * Whether the filesystem of mount @mnt_id is read-only itself (its
 * superblock options), whatever the flags of that one mount: 1 or 0,
 * -ENOENT when the mount is gone, or -errno.
 */
int mounts_fs_readonly(int mnt_id);

void fs_entry_free(struct fs_entry *fs);
void fs_list_free(struct fs_list *list);

/* Trailing slashes do not make another path: "/mnt/" is "/mnt". */
bool paths_equal(const char *a, const char *b);

#endif
