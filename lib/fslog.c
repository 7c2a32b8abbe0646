// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The journal step by filesystem type: ext4's journal erase, btrfs's
 * transaction commit, and what xfs keeps.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

#include <linux/btrfs.h>
#include <linux/magic.h>

#include "fslog.h"

static bool is_btrfs(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 && sfs.f_type == BTRFS_SUPER_MAGIC;
}

/*
 * A btrfs deletion leaves the old copies of the leaves it rewrote (names
 * in directory items, inline contents) and the log tree written by
 * fsync. The commit frees them; they are only unpinned, free to be
 * discarded, once it is on disk, which BTRFS_IOC_SYNC waits for.
 */
static int btrfs_commit(int fd, enum journal_erase how, bool dry_run,
			struct journal_result *res)
{
	res->iface = JOURNAL_IFACE_BTRFS_SYNC;
	res->unsupported = JOURNAL_OK;
	if (how == JOURNAL_ERASE_ZEROOUT) {
		/* what the commit frees is erased by FITRIM, which only discards */
		res->iface = JOURNAL_IFACE_NONE;
		res->unsupported = JOURNAL_NOT_EXT4;
		return 1;
	}
	if (dry_run)
		return 0;
	if (ioctl(fd, BTRFS_IOC_SYNC) != 0)
		return -errno;
	return 0;
}

int fslog_journal_step(int fd, enum journal_erase how, bool dry_run,
		       struct journal_result *res, struct journal_verify *v,
		       const struct audit_progress *progress)
{
	if (is_btrfs(fd))
		return btrfs_commit(fd, how, dry_run, res);
	return journal_erase(fd, how, dry_run, res, v, progress);
}

const char *fslog_unsupported_reason(const char *fstype)
{
	if (!fstype)
		return NULL;
	/*
	 * xfs marks a freed directory entry free (tag and length over its
	 * inode number) but keeps its name bytes, and its log holds copies
	 * of the directory blocks it changed until the log wraps: FITRIM
	 * discards neither, and xfs has no interface that would.
	 */
	if (!strcmp(fstype, "xfs"))
		return "xfs keeps the names of deleted files in its directory blocks "
		       "(a freed entry keeps its name bytes) and in its log, until "
		       "overwritten; no interface erases them";
	if (!strcmp(fstype, "btrfs"))
		return "btrfs frees old copies of its metadata to free space, which "
		       "only FITRIM erases (use --journal-erase=discard)";
	return NULL;
}

bool fslog_nothing_to_do(const char *fstype, const struct journal_result *res)
{
	if (res->unsupported == JOURNAL_NO_JOURNAL)
		return true;
	return res->unsupported == JOURNAL_NOT_EXT4 &&
	       !(fstype && !strcmp(fstype, "btrfs"));
}
