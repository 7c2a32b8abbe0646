// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --audit: what a reader of the device could still recover after the
 * trim and the journal step, and what the kernel offers to erase it.
 * Read-only throughout: libext2fs without EXT2_FLAG_RW, O_RDONLY device
 * reads, and the journal ioctl only with its DRY_RUN flag.
 *
 * The core of the audit: what its results say and how they are freed,
 * below every part that fills them. The parts: lib/audit-fs.c chooses the
 * filesystem's backend (lib/audit-ext4.c, lib/audit-btrfs.c), which read
 * through lib/audit-read.c; lib/audit-jbd2.c reads ext4's journal,
 * lib/audit-dirents.c its directories; lib/audit-text.c says what was found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"

bool audit_name_plausible(const char *buf, size_t len)
{
	size_t i;

	/* every directory has these two; no user gave them */
	if (len == 0 || (len <= 2 && !memcmp(buf, "..", len)))
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = buf[i];

		if (c < 0x20 || c == 0x7f || c == '/')
			return false;
	}
	return true;
}

bool audit_release_at_least(const char *release, int major, int minor)
{
	int ma = 0, mi = 0;

	if (sscanf(release, "%d.%d", &ma, &mi) < 1)
		return false;
	return ma > major || (ma == major && mi >= minor);
}
bool audit_found_remnants(const struct audit_result *res)
{
	return res->journal.old_blocks > 0 || res->dirents.removed_names > 0 ||
	       res->free.nonzero_blocks > 0;
}

bool audit_incomplete(const struct audit_result *res)
{
	if (res->btrfs)
		return !res->free.read || res->btrfs_space.striped_free_bytes > 0;
	if (!res->ext4)
		return true;
	return (res->journal.present && !res->journal.read) || !res->dirents.scanned ||
	       !res->free.read || res->free_error;
}

void audit_dirents_free(struct audit_dirents *d)
{
	size_t i;

	for (i = 0; i < d->ndirs; i++)
		free(d->dirs[i].path);
	free(d->dirs);
	d->dirs = NULL;
	d->ndirs = 0;
}

void audit_result_free(struct audit_result *res)
{
	audit_dirents_free(&res->dirents);
	free(res->data.path);
	free(res->journal_dev.path);
	memset(res, 0, sizeof(*res));
}
