/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_JOURNAL_H
#define FSTRIM_EXT_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

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

/* What reading the journal back after the erase showed. */
enum journal_verified {
	JOURNAL_VERIFY_NONE = 0, /* not read back (dry run, step not done) */
	JOURNAL_VERIFY_ZERO, /* every block outside the live log reads zero */
	JOURNAL_VERIFY_ZEROED, /* some held data: erased again, then zero */
	JOURNAL_VERIFY_DATA_LEFT, /* still data after erasing again */
	JOURNAL_VERIFY_UNREAD, /* could not be read back (error says why) */
};

struct journal_verify {
	enum journal_verified state;
	const char *redo; /* how it was erased again, or NULL */
	uint64_t found; /* blocks with data read back after the erase */
	uint64_t left; /* ... and after erasing again */
	int error; /* errno of a failed read back or second erase */
};

/*
 * Read the journal of the filesystem open at @fd back with O_DIRECT after
 * journal_erase(). Where a block outside the live log still holds data
 * (a device that ignores discard), erase again: EXT4_IOC_CHECKPOINT
 * ZEROOUT, then, if data remains, BLKZEROOUT on those blocks while the
 * filesystem is frozen (its journal then is empty), and read back again.
 * Returns 0 when the journal reads zero in the end, -EIO when data is
 * left, or -errno when it could not be read.
 */
int journal_verify(int fd, struct journal_verify *v);

const char *journal_verified_name(enum journal_verified state);

const char *journal_iface_name(enum journal_iface iface);

#endif
