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

static int ext4_checkpoint(int fd, __u32 flags, struct journal_result *res)
{
	res->iface = JOURNAL_IFACE_EXT4_CHECKPOINT;
	if (ioctl(fd, EXT4_IOC_CHECKPOINT, &flags) != 0)
		return classify(errno, res);
	return 0;
}

int journal_erase(int fd, enum journal_erase how, bool dry_run,
		  struct journal_result *res)
{
	__u32 flags = how == JOURNAL_ERASE_ZEROOUT ? EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT :
						     EXT4_IOC_CHECKPOINT_FLAG_DISCARD;
	struct statfs sfs;

	res->iface = JOURNAL_IFACE_NONE;
	res->unsupported = JOURNAL_OK;

	/* ext2 and ext3 are served by the ext4 driver and share its magic */
	if (fstatfs(fd, &sfs) != 0)
		return -errno;
	if (sfs.f_type != EXT4_SUPER_MAGIC) {
		res->unsupported = JOURNAL_NOT_EXT4;
		return 1;
	}

	/*
	 * FS_IOC_CHKPT_JRNL is detected by trying it: its own dry run in a
	 * dry run. ENOTTY means the kernel lacks it.
	 */
	if (how == JOURNAL_ERASE_DISCARD) {
		__u64 chkpt_flags = CHKPT_JRNL_DO_DISCARD;

		if (dry_run)
			chkpt_flags |= CHKPT_JRNL_DRY_RUN;
		res->iface = JOURNAL_IFACE_CHKPT_JRNL;
		if (ioctl(fd, FS_IOC_CHKPT_JRNL, &chkpt_flags) == 0)
			return 0;
		if (errno != ENOTTY)
			return classify(errno, res);
	}
	if (dry_run)
		flags |= EXT4_IOC_CHECKPOINT_FLAG_DRY_RUN;
	return ext4_checkpoint(fd, flags, res);
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

/*
 * Zero the journal's blocks that hold data on its device while the
 * filesystem is frozen: a freeze checkpoints the journal and holds every
 * update, so no block but the superblock is needed, as under the
 * checkpoint ioctl. The blocks are found under the freeze, and read back
 * under it too: nothing else writes the journal meanwhile. @left is what
 * still holds data then.
 */
static int zeroout_frozen(int fd, uint64_t *left)
{
	struct audit_extents old = { 0 };
	struct audit_journal j;
	size_t i;
	int dev = -1, rc;

	if (ioctl(fd, FIFREEZE, 0) != 0)
		return -errno;
	rc = audit_journal_readback(fd, &j, &old);
	if (!rc && old.count) {
		dev = open(old.devpath, O_WRONLY | O_CLOEXEC);
		if (dev < 0)
			rc = -errno;
	}
	for (i = 0; !rc && i < old.count; i++) {
		uint64_t range[2] = { old.start[i], old.len[i] };

		if (ioctl(dev, BLKZEROOUT, range) != 0)
			rc = -errno;
	}
	if (dev >= 0)
		close(dev);
	if (!rc)
		rc = audit_journal_readback(fd, &j, NULL);
	if (!rc)
		*left = j.old_blocks;
	if (ioctl(fd, FITHAW, 0) != 0 && !rc)
		rc = -errno;
	audit_extents_free(&old);
	return rc;
}

int journal_verify(int fd, struct journal_verify *v)
{
	__u32 flags = EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT;
	struct audit_journal j;
	int rc;

	memset(v, 0, sizeof(*v));
	rc = audit_journal_readback(fd, &j, NULL);
	if (rc) {
		v->state = JOURNAL_VERIFY_UNREAD;
		v->error = -rc;
		return rc;
	}
	v->found = v->left = j.old_blocks;
	if (!v->found) {
		v->state = JOURNAL_VERIFY_ZERO;
		return 0;
	}
	/* write-zeroes promises zeroes where discard promises nothing */
	v->redo = "EXT4_IOC_CHECKPOINT ZEROOUT";
	if (ioctl(fd, EXT4_IOC_CHECKPOINT, &flags) != 0)
		v->error = errno;
	else if (audit_journal_readback(fd, &j, NULL) == 0)
		v->left = j.old_blocks;
	if (v->left) {
		/* a device that takes write-zeroes as a discard too */
		v->redo = "BLKZEROOUT";
		rc = zeroout_frozen(fd, &v->left);
		if (rc)
			v->error = -rc;
	}
	v->state = v->left ? JOURNAL_VERIFY_DATA_LEFT : JOURNAL_VERIFY_ZEROED;
	return v->left ? -EIO : 0;
}
