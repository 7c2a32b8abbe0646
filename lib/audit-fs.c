// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The audit of one filesystem, by its type: the kernel's answers, then
 * the backend of its type (lib/audit-ext4.c, lib/audit-btrfs.c), which
 * also reads free space back after FITRIM.
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

const char *audit_journal_why(int err)
{
	if (err == ENOTUNIQ)
		return "several devices carry the external journal's UUID, and the "
		       "device number in the superblock names none of them: which one "
		       "the kernel uses cannot be told";
	return strerror(err);
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

static const struct audit_backend *const backends[] = {
	&audit_ext4_backend,
	&audit_btrfs_backend,
};

/*
 * Set *@b to the backend of the filesystem open at @fd, NULL for a type
 * without one. Returns 0 or -errno.
 */
static int backend_of(int fd, const struct audit_backend **b)
{
	struct statfs sfs;
	size_t i;

	*b = NULL;
	if (fstatfs(fd, &sfs) != 0)
		return -errno;
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if ((unsigned long)sfs.f_type == backends[i]->magic)
			*b = backends[i];
	return 0;
}

int audit_fs(int fd, struct audit_result *out, const struct audit_progress *progress)
{
	const struct audit_backend *b;
	struct stat st;
	int rc;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0)
		return -errno;
	rc = backend_of(fd, &b);
	if (rc)
		return rc;
	out->ext4 = b == &audit_ext4_backend;
	out->btrfs = b == &audit_btrfs_backend;
	audit_kernel(fd, out->ext4, &out->kernel);
	if ((!b || !b->own_devices) && major(st.st_dev))
		audit_describe_device(st.st_dev, &out->data);
	if (!b)
		return 1;
	return b->audit(fd, out, progress);
}

void audit_free_marks_free(struct audit_free_marks *marks)
{
	if (!marks)
		return;
	blocks_free(&marks->blocks);
	audit_btrfs_marks_free(marks->btrfs);
	free(marks->devpath);
	free(marks->readpath);
	free(marks);
}

int audit_free_readback(int fd, const struct audit_span *span, struct audit_free *out,
			struct audit_free_marks **marks,
			const struct audit_progress *progress)
{
	const struct audit_backend *b;
	int rc;

	if (marks)
		*marks = NULL;
	rc = backend_of(fd, &b);
	if (rc)
		return rc;
	return b ? b->readback(fd, span, out, marks, progress) : -EOPNOTSUPP;
}

int audit_free_unreachable(int fd, const struct audit_span *span, struct audit_free *out,
			   struct audit_free_marks **marks,
			   const struct audit_progress *progress)
{
	const struct audit_backend *b;
	int rc;

	*marks = NULL;
	rc = backend_of(fd, &b);
	if (rc)
		return rc;
	return b ? b->unreachable(fd, span, out, marks, progress) : -EOPNOTSUPP;
}

int audit_free_recheck(int fd, struct audit_free_marks *marks, struct audit_free *out)
{
	return marks->backend->recheck(fd, marks, out);
}
