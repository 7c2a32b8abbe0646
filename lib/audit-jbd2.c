// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The jbd2 log of an ext4 filesystem, read from its device with O_DIRECT:
 * where the journal lies (internal or external), and which of its blocks
 * the log recovery would replay and which hold older transactions
 * (--audit). The read back after an erase is lib/audit-jbd2-readback.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blkid.h>
#include <ext2fs/ext2fs.h>

#include "audit.h"
#include "audit-jbd2.h"
#include "audit-read.h"
#include "devno.h"

/* What each journal block is, from a walk of the log (see classify_log). */
enum jblock_class {
	JBLOCK_STALE = 0, /* outside the log that recovery would replay */
	JBLOCK_LIVE, /* a header of the live log, or the newest copy of a block */
	JBLOCK_SUPERSEDED, /* a copy that a later transaction logs again or revokes */
};

/* A copy of filesystem block @fsblk in the log, or a revoke of it. */
struct logged_block {
	uint64_t fsblk;
	uint32_t seq;
	uint32_t jblk; /* journal block of the copy; UINT32_MAX for a revoke */
};

struct logged_list {
	struct logged_block *v;
	size_t count, alloc;
};

static int logged_add(struct logged_list *l, uint64_t fsblk, uint32_t seq, uint32_t jblk)
{
	if (audit_grow(&l->v, &l->alloc, l->count, sizeof(*l->v), 256))
		return -ENOMEM;
	l->v[l->count++] = (struct logged_block){ fsblk, seq, jblk };
	return 0;
}

static int cmp_logged(const void *a, const void *b)
{
	const struct logged_block *x = a, *y = b;

	if (x->fsblk != y->fsblk)
		return x->fsblk < y->fsblk ? -1 : 1;
	if (x->seq != y->seq)
		return (int32_t)(x->seq - y->seq) < 0 ? -1 : 1;
	/* a revoke sorts after a copy in the same transaction */
	return x->jblk == y->jblk ? 0 : x->jblk == UINT32_MAX ? 1 : -1;
}

/* Read journal block @jblk with O_DIRECT into @buf (DIRECT_ALIGN aligned). */
static int read_jblock(int dev, const struct journal_layout *jl, uint32_t jblk,
		       unsigned char *buf)
{
	ssize_t got = pread(dev, buf, jl->bsize,
			    (off_t)(jl->offset + jl->phys[jblk] * jl->bsize));

	if (got < 0)
		return -errno;
	return (size_t)got == jl->bsize ? 0 : -EIO;
}

static size_t tag_bytes(uint32_t incompat)
{
	size_t sz = 12;

	if (incompat & JBD2_INCOMPAT_CSUM_V3)
		return 16;
	if (incompat & JBD2_INCOMPAT_CSUM_V2)
		sz += 2;
	return incompat & JBD2_INCOMPAT_64BIT ? sz : sz - 4;
}

int read_jrun(int dev, const struct journal_layout *jl, uint32_t blk, unsigned char *big,
	      uint32_t *n)
{
	ssize_t got;

	*n = 1;
	while (blk + *n < jl->maxlen && *n < READ_CHUNK / jl->bsize &&
	       jl->phys[blk + *n] == jl->phys[blk] + *n)
		(*n)++;
	got = pread(dev, big, (size_t)*n * jl->bsize,
		    (off_t)(jl->offset + jl->phys[blk] * jl->bsize));
	if (got != (ssize_t)*n * jl->bsize)
		return got < 0 ? -errno : -EIO;
	return 0;
}

/* next_tag(): include/audit-jbd2.h */
bool next_tag(const struct journal_layout *jl, const unsigned char *buf, size_t *off,
	      uint64_t *fsblk)
{
	size_t tbytes = tag_bytes(jl->incompat);
	size_t space =
		jl->bsize -
		(jl->incompat & (JBD2_INCOMPAT_CSUM_V2 | JBD2_INCOMPAT_CSUM_V3) ? 4 : 0);
	const unsigned char *t = buf + *off;
	uint32_t flags;

	if (*off + tbytes > space)
		return false;
	*fsblk = be32(t);
	if (jl->incompat & JBD2_INCOMPAT_CSUM_V3) {
		flags = be32(t + 4);
		*fsblk |= (uint64_t)be32(t + 8) << 32;
	} else {
		flags = (uint32_t)t[6] << 8 | t[7];
		if (jl->incompat & JBD2_INCOMPAT_64BIT)
			*fsblk |= (uint64_t)be32(t + 8) << 32;
	}
	*off += tbytes + (flags & JBD2_FLAG_SAME_UUID ? 0 : 16);
	if (flags & JBD2_FLAG_LAST_TAG)
		*off = jl->bsize;
	return true;
}

/* Whether @old holds a run of name-like bytes (NAME_FRAGMENT_MIN or more) that @new lacks. */
static bool has_lost_text(const unsigned char *old, const unsigned char *new, size_t len)
{
	size_t i, run = 0;

	for (i = 0; i <= len; i++) {
		if (i < len && old[i] >= 0x20 && old[i] != 0x7f) {
			run++;
			continue;
		}
		if (run >= NAME_FRAGMENT_MIN && !memmem(new, len, old + i - run, run))
			return true;
		run = 0;
	}
	return false;
}

/*
 * What a block of the filesystem holds, for the text rule: the superblock,
 * the group descriptors and the bitmaps hold counters, checksums and bits,
 * never a name; an inode table holds records whose timestamps, sizes and
 * checksums change with every write, and text only where a fast symlink's
 * target, inline data and the in-inode extended attributes lie.
 */
enum meta_kind {
	META_OTHER,
	META_NO_TEXT,
	META_INODES
};

struct meta_range {
	blk64_t start, end; /* [start, end) */
	enum meta_kind kind;
};

struct meta_map {
	struct meta_range *v;
	size_t count;
};

static int cmp_range(const void *a, const void *b)
{
	const struct meta_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The metadata of @fs where the group descriptors place it. */
static int meta_map_build(ext2_filsys fs, struct meta_map *m)
{
	dgrp_t g;
	size_t n = 0;

	m->v = calloc((size_t)fs->group_desc_count * 4, sizeof(*m->v));
	if (!m->v)
		return -ENOMEM;
	for (g = 0; g < fs->group_desc_count; g++) {
		blk64_t super, old_desc, new_desc;
		blk_t used;

		/*
		 * The superblock and the descriptors (with their reserve), or
		 * meta_bg's descriptor, side by side where libext2fs places
		 * them: @used blocks from the first of them.
		 */
		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc, &used);
		if (!ext2fs_bg_has_super(fs, (int)g))
			super = old_desc ? old_desc : new_desc;
		if (used)
			m->v[n++] =
				(struct meta_range){ super, super + used, META_NO_TEXT };
		m->v[n++] = (struct meta_range){ ext2fs_block_bitmap_loc(fs, g),
						 ext2fs_block_bitmap_loc(fs, g) + 1,
						 META_NO_TEXT };
		m->v[n++] = (struct meta_range){ ext2fs_inode_bitmap_loc(fs, g),
						 ext2fs_inode_bitmap_loc(fs, g) + 1,
						 META_NO_TEXT };
		m->v[n++] = (struct meta_range){ ext2fs_inode_table_loc(fs, g),
						 ext2fs_inode_table_loc(fs, g) +
							 fs->inode_blocks_per_group,
						 META_INODES };
	}
	m->count = n;
	qsort(m->v, n, sizeof(*m->v), cmp_range);
	return 0;
}

static enum meta_kind meta_kind(const struct meta_map *m, blk64_t blk)
{
	size_t lo = 0, hi = m->count;

	/* the last range starting at or before @blk; they do not overlap */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && blk < m->v[lo - 1].end ? m->v[lo - 1].kind : META_OTHER;
}

/*
 * Whether an inode of @old (an inode-table block, records of @isize
 * bytes) held text that the same record of @new lacks: in i_block where
 * it holds a fast symlink's target or inline data, not an extent tree or
 * block numbers, and in the in-inode extended attribute space.
 */
static bool inodes_lost_text(const unsigned char *old, const unsigned char *new,
			     size_t len, size_t isize)
{
	size_t off;

	for (off = 0; off + isize <= len; off += isize) {
		const unsigned char *o = old + off, *n = new + off;
		uint16_t mode = (uint16_t)(o[0] | o[1] << 8);
		uint32_t flags = (uint32_t)o[0x20] | (uint32_t)o[0x21] << 8 |
				 (uint32_t)o[0x22] << 16 | (uint32_t)o[0x23] << 24;
		size_t extra;

		if (((S_ISLNK(mode) && !(flags & EXT4_EXTENTS_FL)) ||
		     (flags & EXT4_INLINE_DATA_FL)) &&
		    has_lost_text(o + 0x28, n + 0x28, EXT2_N_BLOCKS * 4))
			return true;
		if (isize <= EXT2_GOOD_OLD_INODE_SIZE + 2)
			continue;
		extra = EXT2_GOOD_OLD_INODE_SIZE + (size_t)(o[0x80] | o[0x81] << 8);
		if (extra < isize && has_lost_text(o + extra, n + extra, isize - extra))
			return true;
	}
	return false;
}

/* The first entry of the sorted @l (cmp_logged) for @fsblk, or l->count. */
static size_t first_logged(const struct logged_list *l, uint64_t fsblk)
{
	size_t lo = 0, hi = l->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->v[mid].fsblk < fsblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A block logged more than once, and where to look for its freeing. */
struct freed_query {
	uint64_t bitmap; /* the block bitmap of the block's group */
	uint64_t bit; /* the block's (cluster's) bit in it */
	uint32_t first, newest; /* the transactions of its first and newest copies */
	uint32_t freed; /* the last transaction between them that freed it */
	bool was_freed;
	size_t at, end; /* its copies in the sorted log list */
};

static int cmp_query(const void *a, const void *b)
{
	const struct freed_query *x = a, *y = b;

	return x->bitmap < y->bitmap ? -1 : x->bitmap > y->bitmap;
}

/*
 * An older copy that no rule counted yet counts when a copy of its group's
 * block bitmap, logged after it and no later than the block's newest,
 * shows the block free: it was freed and taken again since, as a deleted
 * file's block that another file now holds, whatever it held. Each bitmap
 * copy is read once, for all the blocks of its group.
 */
static int judge_freed_between(int dev, const struct journal_layout *jl, ext2_filsys fs,
			       const struct logged_list *logged, unsigned char *cls,
			       unsigned char *buf)
{
	const struct logged_block *v = logged->v;
	struct freed_query *q;
	size_t n = 0, i, k, j, e;
	int rc = 0;

	q = calloc(logged->count, sizeof(*q));
	if (!q)
		return -ENOMEM;
	for (i = 0; i < logged->count; i = e) {
		dgrp_t g = ext2fs_group_of_blk2(fs, v[i].fsblk);

		for (e = i; e < logged->count && v[e].fsblk == v[i].fsblk; e++)
			;
		if (e - i < 2 || v[i].fsblk < fs->super->s_first_data_block ||
		    v[i].fsblk >= ext2fs_blocks_count(fs->super))
			continue;
		q[n++] = (struct freed_query){
			.bitmap = ext2fs_block_bitmap_loc(fs, g),
			.bit = (v[i].fsblk - ext2fs_group_first_block2(fs, g)) >>
			       fs->cluster_ratio_bits,
			.first = v[i].seq,
			.newest = v[e - 1].seq,
			.at = i,
			.end = e - 1
		};
	}
	qsort(q, n, sizeof(*q), cmp_query);
	for (i = 0; !rc && i < n; i = k) {
		for (k = i; k < n && q[k].bitmap == q[i].bitmap; k++)
			;
		for (j = first_logged(logged, q[i].bitmap);
		     !rc && j < logged->count && v[j].fsblk == q[i].bitmap; j++) {
			bool read = false;
			size_t m;

			for (m = i; !rc && v[j].jblk != UINT32_MAX && m < k; m++) {
				if ((int32_t)(v[j].seq - q[m].first) <= 0 ||
				    (int32_t)(v[j].seq - q[m].newest) > 0)
					continue;
				if (!read)
					rc = read_jblock(dev, jl, v[j].jblk, buf);
				read = true;
				if (rc || buf[q[m].bit / 8] & (1U << (q[m].bit % 8)))
					continue;
				q[m].freed = v[j].seq; /* sorted: the last so far */
				q[m].was_freed = true;
			}
		}
	}
	for (i = 0; !rc && i < n; i++)
		for (j = q[i].at; q[i].was_freed && j < q[i].end; j++)
			if (v[j].jblk != UINT32_MAX &&
			    (int32_t)(q[i].freed - v[j].seq) > 0)
				cls[v[j].jblk] = JBLOCK_SUPERSEDED;
	free(q);
	return rc;
}

/*
 * A copy in the live log that a later transaction logs again is an old
 * version, but not every old version is deleted data: lazy inode-table
 * initialisation and timestamps log the same block again and again.
 * It counts when the block was revoked since (freed metadata, such as a
 * deleted directory's), holds text the newest copy lacks (a deleted
 * name; in an inode table, only where a record holds text, and never in
 * a bitmap or a group descriptor: meta_kind()), or was freed in between
 * (judge_freed_between()).
 */
static int judge_superseded(int dev, const struct journal_layout *jl, ext2_filsys fs,
			    const struct meta_map *meta, struct logged_block *old,
			    const struct logged_block *newest, unsigned char *cls,
			    unsigned char *buf)
{
	enum meta_kind kind = meta_kind(meta, old->fsblk);
	unsigned char *latest = NULL;
	bool lost;
	int rc;

	if (newest->jblk == UINT32_MAX) {
		cls[old->jblk] = JBLOCK_SUPERSEDED;
		return 0;
	}
	if (kind == META_NO_TEXT)
		return 0;
	if (posix_memalign((void **)&latest, DIRECT_ALIGN,
			   jl->bsize > DIRECT_ALIGN ? jl->bsize : DIRECT_ALIGN))
		return -ENOMEM;
	rc = read_jblock(dev, jl, newest->jblk, latest);
	if (!rc)
		rc = read_jblock(dev, jl, old->jblk, buf);
	if (!rc) {
		lost = kind == META_INODES ?
			       inodes_lost_text(buf, latest, jl->bsize,
						EXT2_INODE_SIZE(fs->super)) :
			       has_lost_text(buf, latest, jl->bsize);
		if (lost)
			cls[old->jblk] = JBLOCK_SUPERSEDED;
	}
	free(latest);
	return rc;
}

/*
 * A copy of a block the allocator holds free now is deleted data, whatever
 * it holds (data=journal frees a file's contents without a revoke record).
 */
static int judge_freed(ext2_filsys fs, const struct free_now *freed,
		       const struct logged_list *logged, unsigned char *cls)
{
	ext2fs_block_bitmap map = NULL;
	size_t i;
	int rc;

	rc = freed->map(freed->arg, fs, &map);
	for (i = 0; !rc && i < logged->count; i++) {
		const struct logged_block *b = &logged->v[i];

		if (b->jblk != UINT32_MAX && b->fsblk >= fs->super->s_first_data_block &&
		    b->fsblk < ext2fs_blocks_count(fs->super) &&
		    ext2fs_test_block_bitmap2(map, b->fsblk))
			cls[b->jblk] = JBLOCK_SUPERSEDED;
	}
	ext2fs_free_block_bitmap(map);
	return rc;
}

/*
 * Walk the log as recovery would: from the superblock's start, while
 * each block carries the jbd2 magic and the expected sequence. The
 * blocks walked are live; every other block of the journal holds older
 * transactions, already written home. Among the live copies, one that
 * a later transaction logs again or revokes is an old version too.
 */
static int classify_log(int dev, const struct journal_layout *jl, ext2_filsys fs,
			const struct free_now *freed, unsigned char *cls,
			unsigned char *buf)
{
	size_t rsize = jl->incompat & JBD2_INCOMPAT_64BIT ? 8 : 4;
	struct logged_list logged = { 0 };
	struct meta_map meta = { 0 };
	uint32_t blk = jl->start, seq = jl->sequence, steps = 0, span;
	size_t i;
	int rc = 0;

	if (!jl->start || jl->start < jl->first || jl->start >= jl->last)
		return 0;
	span = jl->last - jl->first;
#define NEXT(b) ((b) + 1 >= jl->last ? jl->first : (b) + 1)
	while (steps++ < span && !rc) {
		uint32_t type, next = NEXT(blk);

		rc = read_jblock(dev, jl, blk, buf);
		if (rc)
			break;
		if (be32(buf) != JBD2_MAGIC || be32(buf + JBD2_HDR_SEQUENCE) != seq)
			break;
		type = be32(buf + JBD2_HDR_TYPE);
		if (type != JBD2_DESCRIPTOR_BLOCK && type != JBD2_COMMIT_BLOCK &&
		    type != JBD2_REVOKE_BLOCK)
			break;
		cls[blk] = JBLOCK_LIVE;
		if (type == JBD2_DESCRIPTOR_BLOCK) {
			size_t off = JBD2_HDR_SIZE;
			uint64_t fsblk;

			while (steps < span && !rc && next_tag(jl, buf, &off, &fsblk)) {
				cls[next] = JBLOCK_LIVE;
				rc = logged_add(&logged, fsblk, seq, next);
				next = NEXT(next);
				steps++;
			}
		} else if (type == JBD2_COMMIT_BLOCK) {
			seq++;
		} else {
			uint32_t count = be32(buf + JBD2_REVOKE_COUNT);
			size_t off;

			for (off = JBD2_REVOKE_HDR_SIZE;
			     off + rsize <= count && off + rsize <= jl->bsize && !rc;
			     off += rsize) {
				uint64_t fsblk = rsize == 8 ?
							 (uint64_t)be32(buf + off) << 32 |
								 be32(buf + off + 4) :
							 be32(buf + off);

				rc = logged_add(&logged, fsblk, seq, UINT32_MAX);
			}
		}
		blk = next;
	}
#undef NEXT
	if (!rc && logged.count) {
		rc = judge_freed(fs, freed, &logged, cls);
		if (!rc)
			rc = meta_map_build(fs, &meta);
		qsort(logged.v, logged.count, sizeof(*logged.v), cmp_logged);
		/* sorted by block, then transaction: the last of a block is the newest */
		for (i = 0; i + 1 < logged.count && !rc; i++) {
			size_t last = i;

			if (logged.v[i].jblk == UINT32_MAX ||
			    logged.v[i].fsblk != logged.v[i + 1].fsblk)
				continue;
			while (last + 1 < logged.count &&
			       logged.v[last + 1].fsblk == logged.v[i].fsblk)
				last++;
			rc = judge_superseded(dev, jl, fs, &meta, &logged.v[i],
					      &logged.v[last], cls, buf);
		}
		if (!rc)
			rc = judge_freed_between(dev, jl, fs, &logged, cls, buf);
	}
	free(meta.v);
	free(logged.v);
	return rc;
}

/* Read the superblock at journal block 0 and the log's bounds. */
int read_layout_sb(int dev, struct journal_layout *jl, unsigned char *buf)
{
	ssize_t got = pread(dev, buf, DIRECT_ALIGN,
			    (off_t)(jl->offset + jl->phys[0] * jl->bsize));

	if (got != DIRECT_ALIGN)
		return got < 0 ? -errno : -EIO;
	if (be32(buf + JBD2_SB_MAGIC) != JBD2_MAGIC ||
	    be32(buf + JBD2_SB_BLOCKSIZE) != jl->bsize)
		return -EUCLEAN;
	jl->maxlen = be32(buf + JBD2_SB_MAXLEN);
	jl->first = be32(buf + JBD2_SB_FIRST);
	jl->sequence = be32(buf + JBD2_SB_SEQUENCE);
	jl->start = be32(buf + JBD2_SB_START);
	jl->incompat = be32(buf + JBD2_SB_INCOMPAT);
	jl->last = jl->maxlen;
	if (jl->maxlen > jl->mapped)
		return -EUCLEAN;
	/*
	 * The kernel takes the fast-commit area from the log whenever the
	 * filesystem has fast_commit; an empty journal's superblock does not
	 * say so (jbd2_mark_journal_empty() writes it without the flag).
	 */
	if ((jl->incompat & JBD2_INCOMPAT_FAST_COMMIT) || jl->fast_commit) {
		uint32_t fc = be32(buf + JBD2_SB_NUM_FC_BLKS);

		fc = fc ? fc : JBD2_DEFAULT_FC_BLOCKS;
		jl->last = fc < jl->maxlen ? jl->maxlen - fc : jl->maxlen;
	}
	if (!jl->first || jl->first >= jl->last)
		return -EUCLEAN;
	return 0;
}

/*
 * Count the non-zero blocks of the journal after its superblock, and
 * sort them into live and old (see classify_log). O_DIRECT reads what
 * the device returns, not what the page cache remembers: a buffered
 * read can show journal blocks the erase already removed (the jbd2
 * off-by-one of Linux 6.1.y) or hide blocks a discard left readable.
 */
int scan_journal(struct journal_layout *jl, ext2_filsys fs, const struct free_now *freed,
		 struct audit_journal *j, const struct audit_progress *progress)
{
	unsigned char *buf = NULL, *big = NULL, *cls = NULL, *nonzero = NULL;
	uint32_t blk, since, pending = UINT32_MAX;
	struct audit_read read = { .what = "audit: reading the journal" };
	int dev, rc;

	dev = audit_direct_open(
		jl->devpath, jl->bsize > DIRECT_ALIGN ? jl->bsize : DIRECT_ALIGN, &buf);
	if (dev < 0)
		return dev;
	if (posix_memalign((void **)&big, DIRECT_ALIGN, READ_CHUNK)) {
		free(buf);
		close(dev);
		return -ENOMEM;
	}
	rc = read_layout_sb(dev, jl, buf);
	if (!rc) {
		cls = calloc(jl->maxlen, 1);
		nonzero = calloc(jl->maxlen, 1);
		rc = cls && nonzero ? 0 : -ENOMEM;
	}
	/*
	 * A fast commit of a transaction older than the log's first (all of
	 * them, in an empty journal) is never replayed: old, like the log's
	 * older transactions.
	 */
	since = jl->sequence;
	j->block_size = jl->bsize;
	j->blocks = j->nonzero_blocks = j->live_blocks = j->old_blocks = 0;
	if (!rc) {
		read.total = (uint64_t)(jl->maxlen - jl->first) * jl->bsize;
		audit_read_tell(progress, AUDIT_READ_BEGIN, &read);
	}
	for (blk = jl->first; !rc && blk < jl->maxlen;) {
		uint32_t n, k;

		rc = read_jrun(dev, jl, blk, big, &n);
		if (rc)
			break;
		for (k = 0; k < n; k++, blk++) {
			const unsigned char *b = big + (size_t)k * jl->bsize;

			nonzero[blk] = !audit_block_is_zero(b, jl->bsize);
			if (!nonzero[blk])
				pending = UINT32_MAX;
			else if (blk >= jl->last) /* 1 is JBLOCK_LIVE */
				audit_fc_explain(b, jl->bsize, blk, since, &pending, cls);
		}
		read.done = (uint64_t)(blk - jl->first) * jl->bsize;
		audit_read_tell(progress, AUDIT_READ_PIECE, &read);
	}
	if (read.total)
		audit_read_tell(progress, AUDIT_READ_END, &read);
	/*
	 * Walk the log after the read: a commit during the read wrote at the
	 * head of the log, which the walk now covers, so that a block it
	 * wrote is not taken for an old one.
	 */
	if (!rc)
		rc = read_layout_sb(dev, jl, buf);
	if (!rc)
		rc = classify_log(dev, jl, fs, freed, cls, buf);
	for (blk = jl->first; !rc && blk < jl->maxlen; blk++) {
		j->blocks++;
		if (!nonzero[blk])
			continue;
		j->nonzero_blocks++;
		if (cls[blk] == JBLOCK_LIVE) {
			j->live_blocks++;
			continue;
		}
		j->old_blocks++;
	}
	j->live_log = jl->start != 0;
	free(nonzero);
	free(cls);
	free(big);
	free(buf);
	close(dev);
	return rc;
}

static int map_journal_block(blk64_t lblk, blk64_t pblk, void *priv)
{
	struct journal_layout *jl = priv;

	if (lblk >= jl->mapped)
		return 1;
	jl->phys[lblk] = pblk;
	return 0;
}

void layout_free(struct journal_layout *jl)
{
	free(jl->phys);
	free(jl->devpath);
	memset(jl, 0, sizeof(*jl));
}

/* An internal journal is the journal inode's blocks, mapped with libext2fs. */
int internal_layout(ext2_filsys fs, const char *devpath, struct journal_layout *jl)
{
	ext2_ino_t ino = fs->super->s_journal_inum ? fs->super->s_journal_inum :
						     EXT2_JOURNAL_INO;
	struct ext2_inode inode;

	if (ext2fs_read_inode(fs, ino, &inode) != 0)
		return -EIO;
	jl->fast_commit = ext2fs_has_feature_fast_commit(fs->super);
	jl->bsize = fs->blocksize;
	jl->mapped = (uint32_t)(EXT2_I_SIZE(&inode) / fs->blocksize);
	jl->phys = calloc(jl->mapped ? jl->mapped : 1, sizeof(*jl->phys));
	jl->devpath = strdup(devpath);
	if (!jl->phys || !jl->devpath)
		return -ENOMEM;
	if (audit_inode_blocks(fs, ino, map_journal_block, jl) != 0)
		return -EIO;
	return jl->mapped ? 0 : -EUCLEAN;
}

/*
 * The device whose number the filesystem recorded for its journal
 * (s_journal_dev, in the kernel's new_encode_dev() form), as the kernel
 * finds it at mount; or NULL.
 */
static char *journal_by_devno(ext2_filsys fs)
{
	uint32_t v = fs->super->s_journal_dev;

	if (!v)
		return NULL;
	return blkid_devno_to_devname(devno_decode_kernel(v));
}

/*
 * Read the journal superblock of the external journal device @path of @fs
 * (at block @sb_block): its length and block size. Returns 0, -ENOENT
 * when it is not the journal @fs names (another UUID), -EUCLEAN when it
 * is no journal, or -errno.
 */
static int external_sb(ext2_filsys fs, const char *path, uint32_t sb_block,
		       uint32_t *maxlen, uint32_t *bsize)
{
	unsigned char *buf = NULL;
	int dev, rc = 0;

	dev = audit_direct_open(path, DIRECT_ALIGN, &buf);
	if (dev < 0)
		return dev;
	errno = 0;
	if (pread(dev, buf, DIRECT_ALIGN, (off_t)sb_block * fs->blocksize) !=
	    DIRECT_ALIGN)
		rc = errno ? -errno : -EIO;
	else if (be32(buf) != JBD2_MAGIC)
		rc = -EUCLEAN;
	else if (memcmp(buf + JBD2_SB_UUID, fs->super->s_journal_uuid, 16))
		rc = -ENOENT;
	*maxlen = rc ? 0 : be32(buf + JBD2_SB_MAXLEN);
	*bsize = rc ? 0 : be32(buf + JBD2_SB_BLOCKSIZE);
	free(buf);
	close(dev);
	return rc;
}

/*
 * The one device that carries the journal UUID @uuid, into *@path.
 * Returns 0, -ENOENT when none does, -ENOTUNIQ when several do (a clone,
 * a snapshot, an image attached for forensics): which one the kernel
 * uses cannot be told from the UUID.
 */
static int journal_by_uuid(const char *uuid, char **path)
{
	blkid_cache cache = NULL;
	blkid_dev_iterate iter;
	blkid_dev dev;
	unsigned int n = 0;

	*path = NULL;
	/* "/dev/null": scan the devices, and leave blkid's cache file alone */
	if (blkid_get_cache(&cache, "/dev/null") != 0)
		return -ENOMEM;
	blkid_probe_all(cache);
	iter = blkid_dev_iterate_begin(cache);
	if (iter && blkid_dev_set_search(iter, "UUID", (char *)uuid) == 0) {
		while (blkid_dev_next(iter, &dev) == 0) {
			dev = blkid_verify(cache, dev);
			if (!dev)
				continue;
			if (!n++)
				*path = strdup(blkid_dev_devname(dev));
		}
	}
	blkid_dev_iterate_end(iter);
	/* without a scan (udev's links only): what blkid finds by the tag */
	if (!n) {
		*path = blkid_evaluate_tag("UUID", uuid, &cache);
		n = *path != NULL;
	}
	blkid_put_cache(cache);
	if (n > 1) {
		free(*path);
		*path = NULL;
		return -ENOTUNIQ;
	}
	return *path ? 0 : -ENOENT;
}

/*
 * An external journal (mke2fs -O journal_dev) is the device the kernel
 * opened at mount: ext4 records its number in the superblock
 * (s_journal_dev; a read-write mount writes the number of the device it
 * used), taken when the journal superblock there carries the UUID the
 * filesystem names. Where it does not, the one device that carries the
 * UUID; two that do (a clone) cannot be told apart, and the journal is
 * not read (-ENOTUNIQ). Its superblock follows the ext2 superblock, and
 * its block numbers are the device's own.
 */
int external_layout(ext2_filsys fs, struct audit_result *out, struct journal_layout *jl)
{
	struct audit_journal *j = &out->journal;
	uint32_t sb_block, maxlen = 0, i;
	struct stat st;
	int rc;
	char *path;

	snprintf(j->uuid, sizeof(j->uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 fs->super->s_journal_uuid[0], fs->super->s_journal_uuid[1],
		 fs->super->s_journal_uuid[2], fs->super->s_journal_uuid[3],
		 fs->super->s_journal_uuid[4], fs->super->s_journal_uuid[5],
		 fs->super->s_journal_uuid[6], fs->super->s_journal_uuid[7],
		 fs->super->s_journal_uuid[8], fs->super->s_journal_uuid[9],
		 fs->super->s_journal_uuid[10], fs->super->s_journal_uuid[11],
		 fs->super->s_journal_uuid[12], fs->super->s_journal_uuid[13],
		 fs->super->s_journal_uuid[14], fs->super->s_journal_uuid[15]);

	/* the journal's length is in its superblock: read that first */
	sb_block = (uint32_t)ext2fs_journal_sb_start((int)fs->blocksize);
	path = journal_by_devno(fs);
	rc = path ? external_sb(fs, path, sb_block, &maxlen, &jl->bsize) : -ENOENT;
	if (rc == -ENOENT || rc == -EUCLEAN) {
		free(path);
		rc = journal_by_uuid(j->uuid, &path);
		if (!rc)
			rc = external_sb(fs, path, sb_block, &maxlen, &jl->bsize);
	}
	if (path) {
		out->journal_dev.path = path;
		if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
			audit_describe_device(st.st_rdev, &out->journal_dev);
	}
	if (rc)
		return rc;
	if (jl->bsize < 1024 || jl->bsize > 65536 || maxlen <= sb_block)
		return -EUCLEAN;
	/* block 0 of the journal is its superblock; the rest follow it */
	jl->fast_commit = ext2fs_has_feature_fast_commit(fs->super);
	jl->mapped = maxlen;
	jl->phys = calloc(maxlen, sizeof(*jl->phys));
	jl->devpath = strdup(path);
	if (!jl->phys || !jl->devpath)
		return -ENOMEM;
	jl->phys[0] = sb_block;
	for (i = 1; i < maxlen; i++)
		jl->phys[i] = i;
	return 0;
}
