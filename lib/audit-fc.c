// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fast-commit area of an ext4 journal (see include/audit-jbd2.h): ext4
 * writes its fast commits there without jbd2 headers, as blocks of tags.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit-jbd2.h"

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/*
 * The transaction id that a block of the fast-commit area names: the
 * TAIL's that ends a fast commit, else the HEAD's that begins the first
 * after a full commit. ext4 never lets a tag cross a block's end, so each
 * block is read alone. False when the block names none.
 */
bool audit_fc_block_tid(const unsigned char *b, size_t bsize, uint32_t *tid, bool *tail)
{
	size_t off = 0;
	bool found = false;

	while (off + EXT4_FC_TL_SIZE <= bsize) {
		unsigned int tag = (unsigned int)b[off] | (unsigned int)b[off + 1] << 8;
		size_t len = (size_t)b[off + 2] | (size_t)b[off + 3] << 8;
		const unsigned char *val = b + off + EXT4_FC_TL_SIZE;

		if (tag < EXT4_FC_TAG_ADD_RANGE || tag > EXT4_FC_TAG_HEAD ||
		    off + EXT4_FC_TL_SIZE + len > bsize)
			break;
		if (tag == EXT4_FC_TAG_TAIL && len >= 8) {
			*tid = le32(val);
			*tail = true;
			return true;
		}
		if (tag == EXT4_FC_TAG_HEAD && len >= 8) {
			*tid = le32(val + 4);
			found = true;
		}
		off += EXT4_FC_TL_SIZE + len;
	}
	*tail = false;
	return found;
}

/*
 * Judge a block of the fast-commit area, which has no jbd2 headers. The
 * erase zeroed the area, so a fast commit of a transaction from @since on
 * was written after it: the block whose tag names it, and the blocks
 * before it back to the last one a TAIL ended (*@pending, the first of
 * them, or UINT32_MAX), are explained.
 */
void audit_fc_explain(const unsigned char *b, size_t bsize, uint32_t blk, uint32_t since,
		      uint32_t *pending, unsigned char *explained)
{
	uint32_t tid = 0;
	bool tail, fresh;

	if (!audit_fc_block_tid(b, bsize, &tid, &tail)) {
		if (*pending == UINT32_MAX)
			*pending = blk;
		return;
	}
	fresh = (int32_t)(tid - since) >= 0;
	if (fresh)
		explained[blk] = 1;
	if (!tail) {
		/* a HEAD: the blocks after it go with the TAIL to come */
		*pending = blk + 1;
		return;
	}
	for (; fresh && *pending < blk; (*pending)++)
		explained[*pending] = 1;
	*pending = UINT32_MAX;
}
