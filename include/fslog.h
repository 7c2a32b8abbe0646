/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_FSLOG_H
#define FSTRIM_EXT_FSLOG_H

#include <stdbool.h>

#include "journal.h"

/*
 * The journal step by filesystem type. ext4 (and ext2, ext3) has its
 * journal erase (lib/journal). btrfs has no journal to erase: what it
 * keeps of a deletion are the copies of metadata blocks that copy-on-write
 * left behind and the log tree, all freed by a transaction commit and
 * then discarded by FITRIM; its step is that commit. xfs keeps the names
 * of deleted files in its directory blocks and in its log, and nothing
 * erases them from userspace: its step is unsupported, and said why.
 */

/*
 * The journal step for the filesystem open at @fd: the ext4 journal
 * erase (journal_erase()), or on btrfs a transaction commit through
 * BTRFS_IOC_SYNC, which writes out delayed allocations, commits the
 * running transaction and drops the log tree, so that the next FITRIM
 * discards every block the commit freed. On btrfs only discard erases
 * (zeroout is unsupported) and a dry run issues nothing. On ext4, @v
 * receives the journal's read back (journal_erase()), whose reads are
 * told to @progress (NULL for none). Returns 0, 1 when unsupported
 * (res->unsupported says why), or -errno.
 */
int fslog_journal_step(int fd, enum journal_erase how, bool dry_run,
		       struct journal_result *res, struct journal_verify *v,
		       const struct audit_progress *progress);

/*
 * Why the journal step cannot run on @fstype, when the ext4 journal is
 * not the reason: what stays on an xfs filesystem and why, or why btrfs
 * has no zeroout. NULL for other types.
 */
const char *fslog_unsupported_reason(const char *fstype);

/*
 * Whether the journal step, unsupported on the filesystem (@res, of
 * @fstype), had nothing there to do: an ext4 without a journal, a type
 * without one to erase (xfs). Not so for an ext4 journal that could not
 * be erased (journal_not_erased()), nor on btrfs, whose commit only
 * --journal-erase=zeroout prevents.
 */
bool fslog_nothing_to_do(const char *fstype, const struct journal_result *res);

#endif
