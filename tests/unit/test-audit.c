// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * TAP test of the audit's pure helpers (lib/audit.c, lib/audit-fc.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "audit-jbd2.h"

/* TAP over the pure helpers. */
static int tap_count, tap_failed;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_count, what);
	if (!ok)
		tap_failed++;
}

/* Put a fast-commit tag at @off of @b; returns the offset after it. */
static size_t put_fc_tag(unsigned char *b, size_t off, unsigned int tag, size_t len,
			 uint32_t tid)
{
	b[off] = tag & 0xff;
	b[off + 1] = tag >> 8;
	b[off + 2] = len & 0xff;
	b[off + 3] = len >> 8;
	memset(b + off + EXT4_FC_TL_SIZE, 0x5a, len);
	if (tag == EXT4_FC_TAG_HEAD || tag == EXT4_FC_TAG_TAIL) {
		unsigned char *t =
			b + off + EXT4_FC_TL_SIZE + (tag == EXT4_FC_TAG_HEAD ? 4 : 0);

		t[0] = tid & 0xff;
		t[1] = tid >> 8 & 0xff;
		t[2] = tid >> 16 & 0xff;
		t[3] = tid >> 24;
	}
	return off + EXT4_FC_TL_SIZE + len;
}

/*
 * Fast commits as ext4 lays them out, judged against the sequence an
 * erase left: blocks [0] HEAD, [1] tags, [2] TAIL of transaction @tid,
 * [3] zero.
 */
static unsigned int fc_explained(uint32_t tid, uint32_t since, bool head)
{
	enum {
		BS = 1024
	};
	static unsigned char b[4][BS];
	unsigned char explained[4] = { 0 };
	uint32_t pending = UINT32_MAX, i;
	size_t off;

	memset(b, 0, sizeof(b));
	off = put_fc_tag(b[0], 0, head ? EXT4_FC_TAG_HEAD : EXT4_FC_TAG_ADD_RANGE, 8,
			 tid);
	put_fc_tag(b[0], off, 0x0007 /* PAD */, BS - off - EXT4_FC_TL_SIZE, 0);
	off = put_fc_tag(b[1], 0, EXT4_FC_TAG_ADD_RANGE, 16, 0);
	put_fc_tag(b[1], off, 0x0007, BS - off - EXT4_FC_TL_SIZE, 0);
	off = put_fc_tag(b[2], 0, 0x0006 /* INODE */, 100, 0);
	put_fc_tag(b[2], off, EXT4_FC_TAG_TAIL, BS - off - EXT4_FC_TL_SIZE, tid);
	for (i = 0; i < 3; i++)
		audit_fc_explain(b[i], BS, i, since, &pending, explained);
	return explained[0] | explained[1] << 1 | explained[2] << 2;
}

int main(void)
{
	unsigned char blk[1024] = { 0 };
	uint32_t tid = 0;
	bool tail = true;

	printf("1..22\n");
	check(audit_name_plausible("PII-SSN-001.txt", 15), "plain name");
	check(audit_name_plausible("\xc3\xa9t\xc3\xa9", 5), "UTF-8 name");
	check(!audit_name_plausible("", 0), "empty name");
	check(!audit_name_plausible("a\0b", 3), "NUL inside");
	check(!audit_name_plausible("\0\0\0\0", 4), "wiped name");
	check(!audit_name_plausible("a/b", 3), "slash");
	check(!audit_name_plausible("..", 2), "dot-dot");
	check(!audit_name_plausible(".", 1), "dot");
	check(!audit_name_plausible("\x01\x02", 2), "control bytes");
	check(audit_release_at_least("5.13.0", 5, 13), "5.13.0 >= 5.13");
	check(audit_release_at_least("6.1.0-13-amd64", 5, 13), "6.1 >= 5.13");
	check(!audit_release_at_least("5.10.0-28-amd64", 5, 13), "5.10 < 5.13");
	check(!audit_release_at_least("4.19.0", 5, 13), "4.19 < 5.13");
	check(!audit_release_at_least("junk", 5, 13), "junk");

	check(!audit_fc_block_tid(blk, sizeof(blk), &tid, &tail),
	      "fc: a zero block names no transaction");
	put_fc_tag(blk, put_fc_tag(blk, 0, EXT4_FC_TAG_HEAD, 8, 12),
		   EXT4_FC_TAG_ADD_RANGE, 16, 0);
	check(audit_fc_block_tid(blk, sizeof(blk), &tid, &tail) && tid == 12 && !tail,
	      "fc: a HEAD names its transaction");
	put_fc_tag(blk, 0, EXT4_FC_TAG_TAIL, sizeof(blk) - EXT4_FC_TL_SIZE, 0x01020304);
	check(audit_fc_block_tid(blk, sizeof(blk), &tid, &tail) && tid == 0x01020304 &&
		      tail,
	      "fc: a TAIL names its transaction, little-endian");
	check(fc_explained(12, 12, true) == 7,
	      "fc: a fast commit of the erase's own sequence was written after it");
	check(fc_explained(13, 12, false) == 7,
	      "fc: a later fast commit without HEAD: all its blocks are new");
	check(fc_explained(11, 12, true) == 0, "fc: an older fast commit is old data");
	check(fc_explained(0xffffffffU, 2, false) == 0,
	      "fc: an older one across the wrap of the sequence is old data");
	check(fc_explained(3, 0xfffffffeU, false) == 7,
	      "fc: a newer one across the wrap of the sequence is new");
	return tap_failed ? 1 : 0;
}
