// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The journal step: checkpoint the ext4 journal and erase its blocks.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

#include <linux/magic.h>

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
