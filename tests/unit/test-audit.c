// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * TAP test of the audit's pure helpers (lib/audit.c, lib/audit-fc.c), of
 * its reader (lib/audit-read.c), and of its choice of a backend by
 * filesystem (lib/audit-fs.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "audit-jbd2.h"
#include "audit-read.h"
#include "extfs.h"

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

/* A zero block with one byte set at each place in turn is never zero. */
static bool zero_test_sees_every_byte(void)
{
	static unsigned char b[4096] __attribute__((aligned(8)));
	/* a 64 KiB block: a byte past the first 4 KiB, and the last */
	static unsigned char big[65536] __attribute__((aligned(8)));
	static const size_t far[] = { 4096, 4097, 32768 + 5, 65535 };
	size_t i;

	memset(b, 0, sizeof(b));
	if (!audit_block_is_zero(b, sizeof(b)))
		return false;
	for (i = 0; i < sizeof(b); i++) {
		b[i] = 0x80;
		if (audit_block_is_zero(b, sizeof(b)))
			return false;
		b[i] = 0;
	}
	if (!audit_block_is_zero(big, sizeof(big)))
		return false;
	for (i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
		big[far[i]] = 1;
		if (audit_block_is_zero(big, sizeof(big)))
			return false;
		big[far[i]] = 0;
	}
	return true;
}

enum {
	PIECE = 64 * 1024,
	BLK = 4096
};

/* Whether @p is the piece at @off of @len bytes of the file reader_file() made. */
/*
 * ext4_trim_span() on a request: whether it gives [first, end). The
 * expected spans are ext4_trim_fs()'s (fs/ext4/mballoc.c, Linux 6.1 and
 * 6.12): start and end from the request in whole blocks, the end cut to
 * the filesystem, nothing when it ends at or before the first data block.
 */
static bool span_is(unsigned int bits, uint64_t fdb, uint64_t count, uint64_t start,
		    uint64_t len, uint64_t first, uint64_t end)
{
	struct fstrim_range r = { .start = start, .len = len };
	uint64_t f = 7, e = 7;

	ext4_trim_span(bits, fdb, count, &r, &f, &e);
	return f == first && e == end;
}

static bool piece_is(const struct audit_piece *p, uint64_t off, size_t len)
{
	size_t i;

	if (p->off != off || p->len != len || !p->data)
		return false;
	for (i = 0; i < len; i++)
		if (p->data[i] != (unsigned char)((off + i) / BLK + 1))
			return false;
	return true;
}

/*
 * The reader hands back each piece once read, the one asked before; a
 * read that comes up short is -EIO. Returns -1 where the file system of
 * the build tree takes no O_DIRECT.
 */
static int reader_reads_ahead(void)
{
	static unsigned char blk[BLK];
	const char *path = "test-audit-reader.tmp";
	struct audit_reader *r;
	struct audit_piece p;
	bool ok = true;
	int fd, i, rc;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	for (i = 0; i < 3 * PIECE / BLK; i++) {
		memset(blk, i + 1, sizeof(blk));
		ok &= write(fd, blk, sizeof(blk)) == (ssize_t)sizeof(blk);
	}
	close(fd);
	rc = audit_reader_open(&r, path, PIECE);
	if (rc) {
		unlink(path);
		return rc == -EINVAL ? -1 : 0;
	}
	ok &= audit_reader_next(r, 0, PIECE, &p) == 0 && p.len == 0;
	ok &= audit_reader_next(r, PIECE, PIECE, &p) == 0 && piece_is(&p, 0, PIECE);
	ok &= audit_reader_next(r, 2 * PIECE, PIECE / 2, &p) == 0 &&
	      piece_is(&p, PIECE, PIECE);
	ok &= audit_reader_last(r, &p) == 0 && piece_is(&p, 2 * PIECE, PIECE / 2);
	ok &= audit_reader_last(r, &p) == 0 && p.len == 0;
	/* past the end of the file: a short read */
	ok &= audit_reader_next(r, 3 * PIECE - BLK, 2 * BLK, &p) == 0 && p.len == 0;
	ok &= audit_reader_last(r, &p) == -EIO && p.len == 0;
	/* a read in flight at the close */
	ok &= audit_reader_next(r, 0, PIECE, &p) == 0;
	audit_reader_close(r);
	unlink(path);
	return ok;
}

/*
 * The read backs on a filesystem the audit has no backend for (procfs):
 * EOPNOTSUPP, no marks, and @out as it was (nothing read, nothing said).
 */
static bool no_backend_refuses(void)
{
	struct audit_free out = { .free_bytes = 7 }, before = out;
	struct audit_free_marks *marks = (void *)&out;
	const struct audit_span span = { .len = UINT64_MAX };
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = audit_free_readback(fd, &span, &out, &marks, NULL) == -EOPNOTSUPP && !marks;
	marks = (void *)&out;
	ok = ok && audit_free_unreachable(fd, &span, &out, &marks, NULL) == -EOPNOTSUPP &&
	     !marks && !memcmp(&out, &before, sizeof(out));
	close(fd);
	return ok;
}

int main(void)
{
	int reader;

	unsigned char blk[1024] = { 0 };
	uint32_t tid = 0;
	bool tail = true;

	printf("1..42\n");
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

	check(span_is(12, 0, 1000, 0, UINT64_MAX, 0, 1000),
	      "trim span: the whole filesystem");
	check(span_is(10, 1, 1000, 0, 100 * 1024, 1, 100),
	      "trim span: 1 KiB blocks from 0, the end counted from the request");
	check(span_is(12, 0, 1000, 4096 * 10 + 100, 4096 * 5, 10, 15),
	      "trim span: start and length in whole blocks, rounded down");
	check(span_is(10, 1, 1000, 0, 2048, 0, 0),
	      "trim span: ends at the first data block");
	check(span_is(12, 0, 1000, 4096 * 1000, 4096, 0, 0),
	      "trim span: starts past the end");
	check(span_is(12, 0, 1000, 0, 4095, 0, 0), "trim span: shorter than a block");
	check(ext4_trim_min_blocks(12, 0, 4096, 6000) == 1,
	      "trim minimum: -m in whole blocks, rounded down");
	check(ext4_trim_min_blocks(12, 0, 65536, 4096) == 16,
	      "trim minimum: the discard granularity when -m is below it");
	check(ext4_trim_min_blocks(12, 0, 0, 0) == 0,
	      "trim minimum: none asked, none known");
	check(ext4_trim_min_blocks(12, 4, 4096, 0) == 16,
	      "trim minimum: bigalloc, in whole clusters");
	check(ext4_trim_min_blocks(12, 4, 4096, 17 * 4096) == 32,
	      "trim minimum: bigalloc, -m rounded up to clusters");

	check(!audit_in_part_unit(65536 + 4096, 65536, 0, 65536, 3 * 65536),
	      "part unit: a unit the discard covers whole");
	check(audit_in_part_unit(65536 + 4096, 65536, 0, 65536 + 4096, 3 * 65536),
	      "part unit: the discard begins inside the unit");
	check(audit_in_part_unit(2 * 65536 + 4096, 65536, 0, 65536, 3 * 65536 - 4096),
	      "part unit: the discard ends inside the unit");
	check(!audit_in_part_unit(65536 + 4096, 65536, 4096, 65536 + 4096,
				  2 * 65536 + 4096),
	      "part unit: units begin at the alignment");
	check(audit_in_part_unit(0, 65536, 4096, 0, 3 * 65536),
	      "part unit: before the first boundary, a unit begun before the device");
	check(!audit_in_part_unit(3 * 65536, 65536, 65536 + 4096, 4096, 5 * 65536),
	      "part unit: an alignment of more than a unit, taken modulo it");
	check(no_backend_refuses(),
	      "backend: none for procfs, the read backs refuse and read nothing");
	check(zero_test_sees_every_byte(), "zero test: a byte set anywhere in a block");
	reader = reader_reads_ahead();
	if (reader < 0)
		printf("ok %d # SKIP reader: no O_DIRECT in the build tree\n",
		       ++tap_count);
	else
		check(reader,
		      "reader: each piece handed back once read, a short read -EIO");
	return tap_failed ? 1 : 0;
}
