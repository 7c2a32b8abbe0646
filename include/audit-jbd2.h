/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_AUDIT_JBD2_H
#define FSTRIM_EXT_AUDIT_JBD2_H

/*
 * The jbd2 log parser of the ext4 audit (lib/audit-jbd2.c); not an
 * interface of the library. The read back after an erase
 * (audit_journal_open() and the rest) is declared in audit.h.
 */

#include <stdbool.h>
#include <stdint.h>

#include <ext2fs/ext2fs.h>

#include "audit.h"

/* The journal as it lies on a device: block n of the journal is phys[n]. */
struct journal_layout {
	char *devpath;
	uint64_t *phys;
	uint32_t mapped; /* entries in phys */
	uint32_t bsize;
	uint32_t first, maxlen, last; /* the log is first .. last - 1 */
	uint32_t sequence, start; /* from the superblock: start 0 is empty */
	uint32_t incompat;
	bool fast_commit; /* the filesystem's feature: the area after the log */
};

/* Whether the 16 bytes at @uuid are all zero (no external journal named). */
static inline bool uuid_is_zero(const unsigned char *uuid)
{
	int i;

	for (i = 0; i < 16; i++)
		if (uuid[i])
			return false;
	return true;
}

/*
 * Where the journal of @fs lies: an internal journal is the journal
 * inode's blocks on @devpath; an external one is found by its UUID, which
 * is set in @out->journal.uuid, and its device in @out->journal_dev.
 * Each returns 0 or -errno; free @jl with layout_free() either way.
 */
int internal_layout(ext2_filsys fs, const char *devpath, struct journal_layout *jl);
int external_layout(ext2_filsys fs, struct audit_result *out, struct journal_layout *jl);
void layout_free(struct journal_layout *jl);

/*
 * Where the allocator holds blocks free now: fills *@map (a bit set: free)
 * or returns -errno. Asked after the walk of the log, not before: a block
 * free then was freed after each copy the walk found.
 */
struct free_now {
	int (*map)(void *arg, ext2_filsys fs, ext2fs_block_bitmap *map);
	void *arg;
};

/*
 * Count the blocks of the journal at @jl into @j, live and old (the log
 * recovery would replay, or older transactions); a copy in the live log
 * of a block that @freed says is free now is old; the read is told to
 * @progress (NULL for none). Returns 0 or -errno.
 */
int scan_journal(struct journal_layout *jl, ext2_filsys fs, const struct free_now *freed,
		 struct audit_journal *j, const struct audit_progress *progress);

/* ext4's fast-commit tags (fs/ext4/fast_commit.h): little-endian tag and length */
#define EXT4_FC_TL_SIZE 4
#define EXT4_FC_TAG_ADD_RANGE 0x0001
#define EXT4_FC_TAG_TAIL 0x0008 /* value: the transaction id, a crc */
#define EXT4_FC_TAG_HEAD 0x0009 /* value: features, the transaction id */

/*
 * The transaction id that a block of the fast-commit area names (*@tail:
 * a TAIL's, which ends a fast commit; else a HEAD's); false when it names
 * none (lib/audit-fc.c).
 */
bool audit_fc_block_tid(const unsigned char *b, size_t bsize, uint32_t *tid, bool *tail);

/*
 * Judge block @blk of the fast-commit area, read into @b, against the
 * sequence @since: explained[] is set to 1 for the blocks of a fast commit
 * of a transaction from @since on. *@pending carries the first block
 * since the last TAIL (UINT32_MAX: none) from one call to the next; a
 * caller sets it to UINT32_MAX at a zero block.
 */
void audit_fc_explain(const unsigned char *b, size_t bsize, uint32_t blk, uint32_t since,
		      uint32_t *pending, unsigned char *explained);

#endif /* FSTRIM_EXT_AUDIT_JBD2_H */
