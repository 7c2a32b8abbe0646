/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_JOURNAL_H
#define FSTRIM_EXT_JOURNAL_H

#include <stdbool.h>

enum journal_iface {
	JOURNAL_IFACE_NONE = 0,
	JOURNAL_IFACE_CHKPT_JRNL, /* FS_IOC_CHKPT_JRNL, the bundled patch */
	JOURNAL_IFACE_EXT4_CHECKPOINT, /* EXT4_IOC_CHECKPOINT, Linux 5.14+ */
	JOURNAL_IFACE_BTRFS_SYNC, /* btrfs: a transaction commit (lib/fslog) */
};

enum journal_erase {
	JOURNAL_ERASE_DISCARD = 0,
	JOURNAL_ERASE_ZEROOUT,
};

/* Why the journal step cannot run on a filesystem. */
enum journal_unsupported {
	JOURNAL_OK = 0,
	JOURNAL_NOT_EXT4, /* no journal erase interface for this type */
	JOURNAL_NO_JOURNAL, /* ext4 without a journal */
	JOURNAL_NO_IOCTL, /* kernel older than 5.14 without the patch */
	JOURNAL_NO_DISCARD, /* journal device cannot discard */
};

struct journal_result {
	enum journal_iface iface;
	enum journal_unsupported unsupported;
};

/*
 * Checkpoint the journal of the filesystem open at @fd and erase its
 * blocks. FS_IOC_CHKPT_JRNL is tried first for discard; ENOTTY means
 * the kernel lacks it and EXT4_IOC_CHECKPOINT is used. Zeroout exists
 * only in EXT4_IOC_CHECKPOINT. With @dry_run only the dry runs of the
 * same ioctls are issued. Returns 0, 1 when unsupported (res->unsupported says why),
 * or -errno.
 */
int journal_erase(int fd, enum journal_erase how, bool dry_run,
		  struct journal_result *res);

const char *journal_iface_name(enum journal_iface iface);

#endif
