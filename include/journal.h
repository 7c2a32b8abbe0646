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
	JOURNAL_FAST_COMMIT, /* fast_commit, on a kernel whose checkpoint can hang it */
	JOURNAL_FC_UNKNOWN, /* ... and whether the filesystem has it is unknown */
	JOURNAL_FC_NOT_DURABLE, /* fast_commit: fsyncs after a checkpoint not replayed */
};

struct journal_verify;
struct audit_progress;

struct journal_result {
	enum journal_iface iface;
	enum journal_unsupported unsupported;
	/*
	 * Erased by zeroout though discard was asked: the journal's device
	 * lies below a crypt layer that passes no discards.
	 */
	bool zeroed_instead;
	int error; /* JOURNAL_FC_UNKNOWN: why the superblock could not be read */
};

/*
 * Checkpoint the journal of the filesystem open at @fd and erase its
 * blocks. FS_IOC_CHKPT_JRNL is tried first for discard; ENOTTY means
 * the kernel lacks it and EXT4_IOC_CHECKPOINT is used; for zeroout only
 * where the kernel advertises EXT4_FEATURE_CHKPT_JRNL_ZEROOUT (else
 * EXT4_IOC_CHECKPOINT). With @dry_run only the dry runs of the
 * same ioctls are issued. On a fast_commit filesystem nothing is issued
 * unless the kernel advertises EXT4_FEATURE_FC_CHECKPOINT_FIX and
 * EXT4_FEATURE_FC_FLUSH_FIX.
 *
 * With @v, and not @dry_run, the journal is then read back (O_DIRECT):
 * a block counts as left when it holds data and belongs to no transaction
 * committed after the erase (what writers committed since is new work,
 * counted in @v->new_blocks, never a failure). Where blocks are left,
 * the journal is erased once more by zeroout (as above: FS_IOC_CHKPT_JRNL
 * or EXT4_IOC_CHECKPOINT) and read back again; nothing else is tried
 * (no freeze, no write to the device). @v->state says what was found.
 * Each read of the journal is told to @progress (NULL for none).
 *
 * Returns 0, 1 when unsupported (res->unsupported says why), or -errno:
 * about the erase; the read back is in @v.
 */
int journal_erase(int fd, enum journal_erase how, bool dry_run,
		  struct journal_result *res, struct journal_verify *v,
		  const struct audit_progress *progress);

/* What reading the journal back after the erase showed. */
enum journal_verified {
	JOURNAL_VERIFY_NONE = 0, /* not read back (dry run, step not done) */
	JOURNAL_VERIFY_ZERO, /* every block of the erased transactions reads zero */
	JOURNAL_VERIFY_ZEROED, /* some held data: erased again, then zero */
	JOURNAL_VERIFY_DATA_LEFT, /* still data after erasing again, or that failed */
	JOURNAL_VERIFY_UNREAD, /* could not be read back (error says why) */
	JOURNAL_VERIFY_UNSTEADY, /* blocks no transaction explains read other
				  * data at each read, after erasing again too:
				  * what they hold is not known */
};

struct journal_verify {
	enum journal_verified state;
	const char *redo; /* how it was erased again, or NULL */
	uint64_t found; /* blocks of erased transactions read back with data */
	uint64_t left; /* ... and after erasing again */
	uint64_t new_blocks; /* blocks of transactions committed after the erase */
	uint64_t unsteady; /* blocks read other data at each read (audit_journal) */
	int error; /* errno of a failed read back or second erase */
};

/*
 * Whether journal_erase() returned 1 for a filesystem with an ext4
 * journal that holds what was deleted: the step was asked for and not
 * done, a failure whatever --quiet-unsupported says (unlike a filesystem
 * with no journal, or no ext4 journal, where there is nothing to erase).
 */
bool journal_not_erased(const struct journal_result *res);

const char *journal_verified_name(enum journal_verified state);

const char *journal_iface_name(enum journal_iface iface);

#endif
