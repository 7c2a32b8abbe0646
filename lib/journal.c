// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The journal step: checkpoint the ext4 journal and erase its blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

#include <linux/fs.h>
#include <linux/magic.h>

#include "audit.h"
#include "ext4-ioctl.h"
#include "journal.h"

const char *journal_iface_name(enum journal_iface iface)
{
	switch (iface) {
	case JOURNAL_IFACE_CHKPT_JRNL:
		return "FS_IOC_CHKPT_JRNL";
	case JOURNAL_IFACE_EXT4_CHECKPOINT:
		return "EXT4_IOC_CHECKPOINT";
	case JOURNAL_IFACE_BTRFS_SYNC:
		return "BTRFS_IOC_SYNC";
	default:
		return "none";
	}
}

/* Map the errors both ioctls share to the reasons the step cannot run. */
static int classify(int err, struct journal_result *res)
{
	switch (err) {
	case ENOTTY:
		res->unsupported = JOURNAL_NO_IOCTL;
		return 1;
	case ENODEV:
		res->unsupported = JOURNAL_NO_JOURNAL;
		return 1;
	case EOPNOTSUPP:
		res->unsupported = JOURNAL_NO_DISCARD;
		return 1;
	default:
		return -err;
	}
}

/*
 * Issue the checkpoint and erase through whichever ioctl the kernel has;
 * set @iface to the one that answered. Returns 0 or the errno it gave.
 *
 * FS_IOC_CHKPT_JRNL is detected by trying it: its own dry run in a dry
 * run. ENOTTY means the kernel lacks it. Its zeroout flag exists only
 * where the kernel advertises it (@chkpt_zeroout): the series' first
 * versions read 0x2 as a dry run.
 */
static int erase_ioctl(int fd, enum journal_erase how, bool dry_run, bool chkpt_zeroout,
		       enum journal_iface *iface)
{
	__u32 flags = how == JOURNAL_ERASE_ZEROOUT ? EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT :
						     EXT4_IOC_CHECKPOINT_FLAG_DISCARD;

	if (how == JOURNAL_ERASE_DISCARD || chkpt_zeroout) {
		__u64 chkpt_flags = how == JOURNAL_ERASE_ZEROOUT ? CHKPT_JRNL_DO_ZEROOUT :
								   CHKPT_JRNL_DO_DISCARD;

		if (dry_run)
			chkpt_flags |= chkpt_zeroout ? CHKPT_JRNL_DRY_RUN :
						       CHKPT_JRNL_DRY_RUN_OLD;
		*iface = JOURNAL_IFACE_CHKPT_JRNL;
		if (ioctl(fd, FS_IOC_CHKPT_JRNL, &chkpt_flags) == 0)
			return 0;
		if (errno != ENOTTY)
			return errno;
	}
	if (dry_run)
		flags |= EXT4_IOC_CHECKPOINT_FLAG_DRY_RUN;
	*iface = JOURNAL_IFACE_EXT4_CHECKPOINT;
	return ioctl(fd, EXT4_IOC_CHECKPOINT, &flags) == 0 ? 0 : errno;
}

/*
 * Read the journal back after the erase, judging only what the erase
 * was to remove: transactions older than @since. Where old blocks still
 * hold data (a device that ignored the discard), erase once more by
 * zeroout (through erase_ioctl(), as the erase itself), whose
 * write-zeroes promises zeroes where discard promises nothing, and read
 * back again; each read told to @progress.
 */
static void verify(int fd, struct audit_journal_dev *jd, uint32_t since,
		   enum journal_erase how, bool chkpt_zeroout, struct journal_verify *v,
		   const struct audit_progress *progress)
{
	enum journal_iface iface;
	struct audit_journal j;
	int rc;

	/* a discard's zeroes lie below a crypt layer, a zeroout's in the mapping */
	rc = audit_journal_readback_since(jd, since, how == JOURNAL_ERASE_DISCARD, &j,
					  progress);
	if (rc) {
		v->state = JOURNAL_VERIFY_UNREAD;
		v->error = -rc;
		return;
	}
	/*
	 * Blocks that read other data at each read are no proof either way:
	 * erased again like blocks left, and judged again after.
	 */
	v->found = v->left = j.old_blocks + j.unsteady_blocks;
	v->unsteady = j.unsteady_blocks;
	v->new_blocks = j.live_blocks;
	if (!v->found) {
		v->state = JOURNAL_VERIFY_ZERO;
		return;
	}
	/* the raw errno: a second erase that cannot run is data left */
	v->error = erase_ioctl(fd, JOURNAL_ERASE_ZEROOUT, false, chkpt_zeroout, &iface);
	v->redo = iface == JOURNAL_IFACE_CHKPT_JRNL ? "FS_IOC_CHKPT_JRNL ZEROOUT" :
						      "EXT4_IOC_CHECKPOINT ZEROOUT";
	if (!v->error) {
		if ((rc = audit_journal_sequence(jd, &since)) != 0 ||
		    (rc = audit_journal_readback_since(jd, since, false, &j, progress)) !=
			    0) {
			v->error = -rc;
		} else {
			v->left = j.old_blocks;
			v->unsteady = j.unsteady_blocks;
		}
	}
	if (v->left || v->error)
		v->state = JOURNAL_VERIFY_DATA_LEFT;
	else if (v->unsteady)
		v->state = JOURNAL_VERIFY_UNSTEADY;
	else
		v->state = JOURNAL_VERIFY_ZEROED;
}

int journal_erase(int fd, enum journal_erase how, bool dry_run,
		  struct journal_result *res, struct journal_verify *v,
		  const struct audit_progress *progress)
{
	struct audit_journal_dev *jd = NULL;
	struct statfs sfs;
	bool chkpt_zeroout;
	uint32_t since;
	int rc, jrc;

	res->iface = JOURNAL_IFACE_NONE;
	res->unsupported = JOURNAL_OK;
	res->zeroed_instead = false;
	if (v)
		memset(v, 0, sizeof(*v));

	/* ext2 and ext3 are served by the ext4 driver and share its magic */
	if (fstatfs(fd, &sfs) != 0)
		return -errno;
	if (sfs.f_type != EXT4_SUPER_MAGIC) {
		res->unsupported = JOURNAL_NOT_EXT4;
		return 1;
	}

	/* found before the erase, so that its sequence is read right after */
	jrc = audit_journal_open(fd, &jd);
	if (jrc && jrc != -ENODEV) {
		/*
		 * The device could not be read: the kernel's dry run, which
		 * returns before any flush, tells whether there is a journal.
		 */
		__u32 probe = EXT4_IOC_CHECKPOINT_FLAG_DRY_RUN;

		if (ioctl(fd, EXT4_IOC_CHECKPOINT, &probe) != 0 && errno == ENODEV)
			jrc = -ENODEV;
	}
	if (jrc == -ENODEV) {
		res->unsupported = JOURNAL_NO_JOURNAL;
		return 1;
	}
	/*
	 * On fast_commit, a checkpoint can deadlock with an fsync's fast
	 * commit (every writer of the filesystem would hang), and the fast
	 * commits made after it are not replayed after a crash until the
	 * next full commit (fsyncs that returned, lost): the notes in
	 * include/ext4-ioctl.h. Not even tried, on a kernel without both
	 * fixes, where fast_commit cannot be ruled out.
	 */
	if ((!audit_ext4_feature(EXT4_FEATURE_FC_CHECKPOINT_FIX) ||
	     !audit_ext4_feature(EXT4_FEATURE_FC_FLUSH_FIX)) &&
	    (jrc || audit_journal_fast_commit(jd))) {
		res->unsupported = jrc ? JOURNAL_FC_UNKNOWN :
				   !audit_ext4_feature(EXT4_FEATURE_FC_CHECKPOINT_FIX) ?
					 JOURNAL_FAST_COMMIT :
					 JOURNAL_FC_NOT_DURABLE;
		res->error = -jrc;
		audit_journal_close(jd);
		return 1;
	}

	/* FS_IOC_CHKPT_JRNL's zeroout: read once, for the erase and the redo */
	chkpt_zeroout = audit_ext4_feature(EXT4_FEATURE_CHKPT_JRNL_ZEROOUT);
	rc = erase_ioctl(fd, how, dry_run, chkpt_zeroout, &res->iface);
	/*
	 * Below a crypt layer that passes no discards (a crypttab without
	 * "discard"), zeroes written through the mapping are the erase: the
	 * disk then holds the encryption of zeroes, where the journal was.
	 */
	if (rc == EOPNOTSUPP && how == JOURNAL_ERASE_DISCARD && !jrc &&
	    audit_journal_encrypted(jd)) {
		how = JOURNAL_ERASE_ZEROOUT;
		res->zeroed_instead = true;
		rc = erase_ioctl(fd, how, dry_run, chkpt_zeroout, &res->iface);
	}
	if (rc)
		rc = classify(rc, res);
	if (rc == 0 && !dry_run && v) {
		if (jrc) {
			v->state = JOURNAL_VERIFY_UNREAD;
			v->error = -jrc;
		} else if ((jrc = audit_journal_sequence(jd, &since)) != 0) {
			v->state = JOURNAL_VERIFY_UNREAD;
			v->error = -jrc;
		} else {
			verify(fd, jd, since, how, chkpt_zeroout, v, progress);
		}
	}
	audit_journal_close(jd);
	return rc;
}

bool journal_not_erased(const struct journal_result *res)
{
	switch (res->unsupported) {
	case JOURNAL_NO_IOCTL:
	case JOURNAL_NO_DISCARD:
	case JOURNAL_FAST_COMMIT:
	case JOURNAL_FC_UNKNOWN:
	case JOURNAL_FC_NOT_DURABLE:
		return true;
	default:
		return false;
	}
}

const char *journal_verified_name(enum journal_verified state)
{
	switch (state) {
	case JOURNAL_VERIFY_ZERO:
		return "zero";
	case JOURNAL_VERIFY_ZEROED:
		return "zeroed-again";
	case JOURNAL_VERIFY_DATA_LEFT:
		return "data-left";
	case JOURNAL_VERIFY_UNREAD:
		return "not-read";
	default:
		return "not-verified";
	}
}
