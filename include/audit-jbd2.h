/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_AUDIT_JBD2_H
#define FSTRIM_EXT_AUDIT_JBD2_H

/*
 * The jbd2 log parser of the ext4 audit (lib/audit-jbd2.c) and the read
 * back after an erase (lib/audit-jbd2-readback.c); not an interface of the
 * library: the read back's (audit_journal_open() and the rest) is declared
 * in audit.h.
 */

#include <stdbool.h>
#include <stdint.h>

#include <ext2fs/ext2fs.h>

#include "audit.h"

/* The jbd2 superblock, big-endian, as far as it is read here. */
#define JBD2_MAGIC 0xc03b3998U
#define JBD2_SB_MAGIC 0
#define JBD2_SB_BLOCKSIZE 12
#define JBD2_SB_MAXLEN 16
#define JBD2_SB_UUID 48 /* s_uuid, 16 bytes */
#define JBD2_SB_FIRST 20

static inline uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * The jbd2 on-disk format, big-endian, as far as it is read here: the
 * journal superblock, and the header, descriptor tags and revoke
 * records of the log (include/linux/jbd2.h).
 */
#define JBD2_SB_SEQUENCE 24
#define JBD2_SB_START 28
#define JBD2_SB_INCOMPAT 40
#define JBD2_SB_NUM_FC_BLKS 84
#define JBD2_HDR_TYPE 4
#define JBD2_HDR_SEQUENCE 8
#define JBD2_HDR_SIZE 12
#define JBD2_DESCRIPTOR_BLOCK 1
#define JBD2_COMMIT_BLOCK 2
#define JBD2_REVOKE_BLOCK 5
#define JBD2_REVOKE_COUNT 12
#define JBD2_REVOKE_HDR_SIZE 16
#define JBD2_INCOMPAT_64BIT 0x2
#define JBD2_INCOMPAT_CSUM_V2 0x8
#define JBD2_INCOMPAT_CSUM_V3 0x10
#define JBD2_INCOMPAT_FAST_COMMIT 0x20
#define JBD2_FLAG_SAME_UUID 0x2
#define JBD2_FLAG_LAST_TAG 0x8
#define JBD2_DEFAULT_FC_BLOCKS 256

/* The journal as it lies on a device: block n of the journal is phys[n]. */
struct journal_layout {
	char *devpath;
	uint64_t offset; /* bytes before block 0 on the device read (below a mapping) */
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
 * Read into @big (READ_CHUNK bytes) the run of journal blocks from @blk on
 * that lie one after another on the device, READ_CHUNK at most: *@n
 * blocks. Returns 0 or -errno (-EIO for a short read).
 */
int read_jrun(int dev, const struct journal_layout *jl, uint32_t blk, unsigned char *big,
	      uint32_t *n);

/* Read the superblock at journal block 0 and the log's bounds into @jl. */
int read_layout_sb(int dev, struct journal_layout *jl, unsigned char *buf);

/*
 * The next tag of the descriptor block @buf from byte *@off: sets *@fsblk
 * to the filesystem block whose copy follows, and *@off to the next tag
 * (past the end after the last). Returns false when there is none.
 */
bool next_tag(const struct journal_layout *jl, const unsigned char *buf, size_t *off,
	      uint64_t *fsblk);

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
