// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The audit of one filesystem, by its type: the kernel's answers, then
 * the ext4 backend (lib/audit-ext4.c) or the btrfs one (lib/audit-btrfs.c);
 * and the read back of free space after FITRIM, on either.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "audit.h"
#include "audit-read.h"
#include "ext4-ioctl.h"

/* ---- the kernel ------------------------------------------------------ */

static int probe_checkpoint(int fd, __u32 flags)
{
	flags |= EXT4_IOC_CHECKPOINT_FLAG_DRY_RUN;
	if (ioctl(fd, EXT4_IOC_CHECKPOINT, &flags) == 0)
		return 1;
	/* ENOTTY: no such ioctl; EOPNOTSUPP: no discard on the journal device */
	if (errno == ENOTTY || errno == EOPNOTSUPP)
		return 0;
	return -errno;
}

bool audit_ext4_feature(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", EXT4_FEATURES_DIR, name);
	return access(path, F_OK) == 0;
}

static void audit_kernel(int fd, bool ext4, struct audit_kernel *k)
{
	struct utsname uts;

	if (uname(&uts) == 0)
		snprintf(k->release, sizeof(k->release), "%s", uts.release);
	k->wipes_dirents = audit_release_at_least(k->release, 5, 13);
	k->chkpt_jrnl = audit_ext4_feature(EXT4_FEATURE_CHKPT_JRNL);
	k->jbd2_erase_fix = audit_ext4_feature(EXT4_FEATURE_JBD2_ERASE_FIX);
	k->dirent_pack_wipe = audit_ext4_feature(EXT4_FEATURE_DIRENT_PACK_WIPE);
	if (!ext4) {
		k->checkpoint = k->checkpoint_discard = k->checkpoint_zeroout = 0;
		return;
	}
	/* FS_IOC_CHKPT_JRNL has no dry run: it is never issued here */
	k->checkpoint = probe_checkpoint(fd, 0);
	k->checkpoint_discard = probe_checkpoint(fd, EXT4_IOC_CHECKPOINT_FLAG_DISCARD);
	k->checkpoint_zeroout = probe_checkpoint(fd, EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT);
}

/* ---- the whole ---------------------------------------------------------- */

int audit_fs(int fd, struct audit_result *out, const struct audit_progress *progress)
{
	struct statfs sfs;
	struct stat st;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0)
		return -errno;
	out->ext4 = sfs.f_type == EXT4_SUPER_MAGIC;
	out->btrfs = sfs.f_type == BTRFS_SUPER_MAGIC;
	audit_kernel(fd, out->ext4, &out->kernel);
	if (out->btrfs)
		return audit_btrfs(fd, out, progress);
	if (major(st.st_dev))
		audit_describe_device(st.st_dev, &out->data);
	if (!out->ext4)
		return 1;
	return audit_ext4(fd, out, progress);
}

void audit_free_marks_free(struct audit_free_marks *marks)
{
	if (!marks)
		return;
	blocks_free(&marks->blocks);
	audit_btrfs_marks_free(marks->btrfs);
	free(marks->devpath);
	free(marks);
}

/* On btrfs: @bm, what audit_btrfs_readback() or _unreachable() marked, as marks. */
static int btrfs_marks(int rc, struct audit_btrfs_marks *bm,
		       struct audit_free_marks **marks)
{
	if (rc || !bm || !marks) {
		audit_btrfs_marks_free(bm);
		return rc;
	}
	*marks = calloc(1, sizeof(**marks));
	if (!*marks) {
		audit_btrfs_marks_free(bm);
		return -ENOMEM;
	}
	(*marks)->btrfs = bm;
	return 0;
}

static bool is_btrfs(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 && sfs.f_type == BTRFS_SUPER_MAGIC;
}

int audit_free_readback(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			struct audit_free *out, struct audit_free_marks **marks,
			const struct audit_progress *progress)
{
	struct audit_btrfs_marks *bm = NULL;
	int rc;

	if (marks)
		*marks = NULL;
	if (!is_btrfs(fd))
		return audit_ext4_readback(fd, start, len, minlen, out, marks, progress);
	rc = audit_btrfs_readback(fd, start, len, minlen, out, &bm, progress);
	return btrfs_marks(rc, bm, marks);
}

int audit_free_unreachable(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			   struct audit_free *out, struct audit_free_marks **marks,
			   const struct audit_progress *progress)
{
	struct audit_btrfs_marks *bm = NULL;
	int rc;

	*marks = NULL;
	if (!is_btrfs(fd))
		return audit_ext4_unreachable(fd, start, len, minlen, out, marks,
					      progress);
	rc = audit_btrfs_unreachable(fd, start, len, minlen, out, &bm, progress);
	return btrfs_marks(rc, bm, marks);
}

int audit_free_recheck(int fd, struct audit_free_marks *marks, struct audit_free *out)
{
	if (marks->btrfs)
		return audit_btrfs_recheck(fd, marks->btrfs, out);
	return audit_ext4_recheck(fd, marks, out);
}
