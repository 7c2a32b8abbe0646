// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --audit: what a reader of the device could still recover after the
 * trim and the journal step, and what the kernel offers to erase it.
 * Read-only throughout: libext2fs without EXT2_FLAG_RW, O_RDONLY device
 * reads, and the journal ioctl only with its DRY_RUN flag.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include <blkid.h>
#include <ext2fs/ext2fs.h>
#include <linux/fsmap.h>
#include <linux/magic.h>

#include "audit.h"
#include "audit-read.h"
#include "ext4-ioctl.h"
#include "sizes.h"
#include "sysfs.h"
#include "remnants.h"

/* The jbd2 superblock, big-endian, as far as it is read here. */
#define JBD2_MAGIC 0xc03b3998U
#define JBD2_SB_MAGIC 0
#define JBD2_SB_BLOCKSIZE 12
#define JBD2_SB_MAXLEN 16
#define JBD2_SB_FIRST 20

/*
 * A run of at least this many name bytes outside every live entry is a
 * piece of a name even without its entry's header. The leftovers of
 * do_split() (dx_map_entry: a hash, then an offset and a size below
 * 4096) and of the htree index never hold more than six in a row.
 */
#define NAME_FRAGMENT_MIN 8

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

static bool uuid_is_zero(const unsigned char *uuid)
{
	int i;

	for (i = 0; i < 16; i++)
		if (uuid[i])
			return false;
	return true;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- devices -------------------------------------------------------- */

/* The queue limits live with the whole disk, not with a partition. */
void audit_describe_device(dev_t devno, struct audit_device *out)
{
	uint64_t gran = 0;
	dev_t disk = 0;

	out->devno = devno;
	if (!out->path)
		out->path = blkid_devno_to_devname(devno);
	if (blkid_devno_to_wholedisk(devno, NULL, 0, &disk) != 0 || !disk)
		disk = devno;
	if (sysfs_blkdev_read_u64(disk, "queue/discard_max_bytes",
				  &out->discard_max_bytes))
		return;
	sysfs_blkdev_read_u64(disk, "queue/write_zeroes_max_bytes",
			      &out->write_zeroes_max_bytes);
	sysfs_blkdev_read_u64(disk, "queue/discard_granularity", &gran);
	out->discard_granularity = (uint32_t)gran;
	out->known = true;
}

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

/* ---- the journal's blocks -------------------------------------------- */

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

/* What each journal block is, from a walk of the log (see classify_log). */
enum jblock_class {
	JBLOCK_STALE = 0, /* outside the log that recovery would replay */
	JBLOCK_LIVE, /* a header of the live log, or the newest copy of a block */
	JBLOCK_SUPERSEDED, /* a copy that a later transaction logs again or revokes */
};

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

int audit_grow(void *array, size_t *alloc, size_t count, size_t size, size_t first)
{
	void **p = array, *v;
	size_t n;

	if (count < *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : first;
	v = reallocarray(*p, n, size);
	if (!v)
		return -ENOMEM;
	*p = v;
	*alloc = n;
	return 0;
}

int audit_grow2(void *array1, size_t size1, void *array2, size_t size2, size_t *alloc,
		size_t count, size_t first)
{
	size_t alloc1 = *alloc, alloc2 = *alloc;

	if (audit_grow(array1, &alloc1, count, size1, first) ||
	    audit_grow(array2, &alloc2, count, size2, first))
		return -ENOMEM;
	*alloc = alloc1;
	return 0;
}

bool audit_block_is_zero(const unsigned char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

int audit_direct_open(const char *path, size_t size, unsigned char **buf)
{
	int dev = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);

	*buf = NULL;
	if (dev < 0)
		return -errno;
	if (posix_memalign((void **)buf, DIRECT_ALIGN, size)) {
		*buf = NULL;
		close(dev);
		return -ENOMEM;
	}
	return dev;
}

/* Read journal block @jblk with O_DIRECT into @buf (DIRECT_ALIGN aligned). */
static int read_jblock(int dev, const struct journal_layout *jl, uint32_t jblk,
		       unsigned char *buf)
{
	ssize_t got = pread(dev, buf, jl->bsize, (off_t)(jl->phys[jblk] * jl->bsize));

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

/*
 * The next tag of the descriptor block @buf from byte *@off: sets *@fsblk
 * to the filesystem block whose copy follows, and *@off to the next tag
 * (past the end after the last). Returns false when there is none.
 */
static bool next_tag(const struct journal_layout *jl, const unsigned char *buf,
		     size_t *off, uint64_t *fsblk)
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
 * A copy in the live log that a later transaction logs again is an old
 * version, but not every old version is deleted data: lazy inode-table
 * initialisation and timestamps log the same block again and again.
 * It counts when the block was revoked since (freed metadata, such as
 * a deleted directory's), is free now, or holds text that the newest
 * copy lacks (a deleted name, a deleted file's journalled contents).
 */
static int judge_superseded(int dev, const struct journal_layout *jl, ext2_filsys fs,
			    struct logged_block *old, const struct logged_block *newest,
			    unsigned char *cls, unsigned char *buf)
{
	unsigned char *latest = NULL;
	int rc;

	if (newest->jblk == UINT32_MAX ||
	    (fs->block_map && newest->fsblk < ext2fs_blocks_count(fs->super) &&
	     !ext2fs_test_block_bitmap2(fs->block_map, newest->fsblk))) {
		cls[old->jblk] = JBLOCK_SUPERSEDED;
		return 0;
	}
	if (posix_memalign((void **)&latest, DIRECT_ALIGN,
			   jl->bsize > DIRECT_ALIGN ? jl->bsize : DIRECT_ALIGN))
		return -ENOMEM;
	rc = read_jblock(dev, jl, newest->jblk, latest);
	if (!rc)
		rc = read_jblock(dev, jl, old->jblk, buf);
	if (!rc && has_lost_text(buf, latest, jl->bsize))
		cls[old->jblk] = JBLOCK_SUPERSEDED;
	free(latest);
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
			unsigned char *cls, unsigned char *buf)
{
	size_t rsize = jl->incompat & JBD2_INCOMPAT_64BIT ? 8 : 4;
	struct logged_list logged = { 0 };
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
			rc = judge_superseded(dev, jl, fs, &logged.v[i], &logged.v[last],
					      cls, buf);
		}
	}
	free(logged.v);
	return rc;
}

/* Read the superblock at journal block 0 and the log's bounds. */
static int read_layout_sb(int dev, struct journal_layout *jl, unsigned char *buf)
{
	ssize_t got = pread(dev, buf, DIRECT_ALIGN, (off_t)(jl->phys[0] * jl->bsize));

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

/* ext4's fast-commit tags (fs/ext4/fast_commit.h): little-endian tag and length */
#define EXT4_FC_TL_SIZE 4
#define EXT4_FC_TAG_ADD_RANGE 0x0001
#define EXT4_FC_TAG_TAIL 0x0008 /* value: the transaction id, a crc */
#define EXT4_FC_TAG_HEAD 0x0009 /* value: features, the transaction id */

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
static bool fc_block_tid(const unsigned char *b, size_t bsize, uint32_t *tid, bool *tail)
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
static void explain_fc(const unsigned char *b, size_t bsize, uint32_t blk, uint32_t since,
		       uint32_t *pending, unsigned char *explained)
{
	uint32_t tid = 0;
	bool tail, fresh;

	if (!fc_block_tid(b, bsize, &tid, &tail)) {
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

/*
 * Count the non-zero blocks of the journal after its superblock, and
 * sort them into live and old (see classify_log). O_DIRECT reads what
 * the device returns, not what the page cache remembers: a buffered
 * read can show journal blocks the erase already removed (the jbd2
 * off-by-one of Linux 6.1.y) or hide blocks a discard left readable.
 */
static int scan_journal(struct journal_layout *jl, ext2_filsys fs,
			struct audit_journal *j)
{
	unsigned char *buf = NULL, *big = NULL, *cls = NULL, *nonzero = NULL;
	uint32_t blk, since, pending = UINT32_MAX;
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
	for (blk = jl->first; !rc && blk < jl->maxlen;) {
		uint32_t n = 1, k;
		ssize_t got;

		/* one read for a run of blocks that lie one after another */
		while (blk + n < jl->maxlen && n < READ_CHUNK / jl->bsize &&
		       jl->phys[blk + n] == jl->phys[blk] + n)
			n++;
		got = pread(dev, big, (size_t)n * jl->bsize,
			    (off_t)(jl->phys[blk] * jl->bsize));
		if (got != (ssize_t)n * jl->bsize) {
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		for (k = 0; k < n; k++, blk++) {
			const unsigned char *b = big + (size_t)k * jl->bsize;

			nonzero[blk] = !audit_block_is_zero(b, jl->bsize);
			if (!nonzero[blk])
				pending = UINT32_MAX;
			else if (blk >= jl->last) /* 1 is JBLOCK_LIVE */
				explain_fc(b, jl->bsize, blk, since, &pending, cls);
		}
	}
	/*
	 * Walk the log after the read: a commit during the read wrote at the
	 * head of the log, which the walk now covers, so that a block it
	 * wrote is not taken for an old one.
	 */
	if (!rc)
		rc = read_layout_sb(dev, jl, buf);
	if (!rc)
		rc = classify_log(dev, jl, fs, cls, buf);
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

static int map_journal_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
			     blk64_t ref_blk, int ref_offset, void *priv)
{
	struct journal_layout *jl = priv;

	if (blockcnt < 0)
		return 0;
	if ((uint64_t)blockcnt >= jl->mapped)
		return BLOCK_ABORT;
	jl->phys[blockcnt] = *blocknr;
	return 0;
}

static void layout_free(struct journal_layout *jl)
{
	free(jl->phys);
	free(jl->devpath);
	memset(jl, 0, sizeof(*jl));
}

/* An internal journal is the journal inode's blocks, mapped with libext2fs. */
static int internal_layout(ext2_filsys fs, const char *devpath, struct journal_layout *jl)
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
	if (ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_DATA_ONLY | BLOCK_FLAG_READ_ONLY,
				  NULL, map_journal_block, jl) != 0)
		return -EIO;
	return jl->mapped ? 0 : -EUCLEAN;
}

/*
 * An external journal (mke2fs -O journal_dev) is found by the UUID the
 * filesystem records; its superblock follows the ext2 superblock, and
 * its block numbers are the device's own.
 */
static int external_layout(ext2_filsys fs, struct audit_result *out,
			   struct journal_layout *jl)
{
	struct audit_journal *j = &out->journal;
	unsigned char *buf = NULL;
	blkid_cache cache = NULL;
	uint32_t sb_block, maxlen, i;
	struct stat st;
	int dev, rc = 0;
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

	/* "/dev/null": scan the devices, and leave blkid's cache file alone */
	if (blkid_get_cache(&cache, "/dev/null") != 0)
		return -ENOMEM;
	path = blkid_evaluate_tag("UUID", j->uuid, &cache);
	blkid_put_cache(cache);
	if (!path)
		return -ENOENT;
	out->journal_dev.path = path;
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		audit_describe_device(st.st_rdev, &out->journal_dev);

	/* the journal's length is in its superblock: read that first */
	sb_block = (uint32_t)ext2fs_journal_sb_start((int)fs->blocksize);
	dev = audit_direct_open(path, DIRECT_ALIGN, &buf);
	if (dev < 0)
		return dev;
	if (pread(dev, buf, DIRECT_ALIGN, (off_t)sb_block * fs->blocksize) !=
	    DIRECT_ALIGN)
		rc = errno ? -errno : -EIO;
	else if (be32(buf) != JBD2_MAGIC)
		rc = -EUCLEAN;
	maxlen = rc ? 0 : be32(buf + JBD2_SB_MAXLEN);
	jl->bsize = rc ? 0 : be32(buf + JBD2_SB_BLOCKSIZE);
	free(buf);
	close(dev);
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

/* ---- names in directory blocks ----------------------------------------- */

struct name_list {
	char **names;
	bool *fragment; /* only a piece, found without its header */
	size_t count, alloc;
};

struct dir_scan {
	ext2_filsys fs;
	struct audit_dirents *d;
	struct name_list live, removed; /* of the directory being read */
	unsigned char *buf;
	uint64_t found;
	int rc;
};

static int names_add(struct name_list *l, const char *name, size_t len, bool fragment)
{
	if (audit_grow2(&l->names, sizeof(*l->names), &l->fragment, sizeof(*l->fragment),
			&l->alloc, l->count, 64))
		return -ENOMEM;
	l->names[l->count] = strndup(name, len);
	if (!l->names[l->count])
		return -ENOMEM;
	l->fragment[l->count] = fragment;
	l->count++;
	return 0;
}

static void names_clear(struct name_list *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		free(l->names[i]);
	l->count = 0;
}

static void names_free(struct name_list *l)
{
	names_clear(l);
	free(l->names);
	free(l->fragment);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool name_byte(unsigned char c)
{
	return c >= 0x20 && c != 0x7f && c != '/';
}

/*
 * Every byte of [@from, @to) lies outside the live entries of the
 * block: first look for entries whose header survived (at 4-byte
 * boundaries, as entries are placed), then for runs of name bytes
 * whose header did not (overwritten by a live entry, or never parsed
 * because an old rec_len no longer fits the chain).
 */
static int scan_gap(struct dir_scan *scan, const unsigned char *blk, size_t from,
		    size_t to)
{
	size_t p = (from + 3) & ~(size_t)3, covered = from, run = 0, i;
	int rc = 0;

	for (; p + 8 < to && !rc; p += 4) {
		const struct ext2_dir_entry *de = (const void *)(blk + p);
		size_t len = ext2fs_dirent_name_len(de);
		unsigned int rec_len = 0;

		/*
		 * A header that survived is one a directory could hold: its
		 * inode exists, its entry fits in the block, its file type is
		 * one ext4 writes. Bytes of other names that happen to pass
		 * the rest (seen: inode 2621520 of 32768, rec_len 44928 in a
		 * 4 KiB block, in the slack an htree leaf split leaves) are
		 * not an entry.
		 */
		if (p < covered || !len || p + 8 + len > to ||
		    de->inode > scan->fs->super->s_inodes_count ||
		    ext2fs_get_rec_len(scan->fs, (struct ext2_dir_entry *)de, &rec_len) ||
		    rec_len % 4 || rec_len < 8 + len ||
		    p + rec_len > scan->fs->blocksize ||
		    (ext2fs_has_feature_filetype(scan->fs->super) &&
		     ext2fs_dirent_file_type(de) >= EXT2_FT_MAX) ||
		    !audit_name_plausible(de->name, len))
			continue;
		/* the bytes before it are scanned as a run below */
		for (i = covered; i < p && !rc; i++) {
			if (name_byte(blk[i])) {
				run++;
				continue;
			}
			if (run >= NAME_FRAGMENT_MIN)
				rc = names_add(&scan->removed,
					       (const char *)blk + i - run, run, true);
			run = 0;
		}
		if (!rc && run >= NAME_FRAGMENT_MIN)
			rc = names_add(&scan->removed, (const char *)blk + p - run, run,
				       true);
		run = 0;
		if (!rc)
			rc = names_add(&scan->removed, de->name, len, false);
		covered = p + 8 + len;
		p = ((covered + 3) & ~(size_t)3) - 4;
	}
	for (i = covered; i < to && !rc; i++) {
		if (name_byte(blk[i])) {
			run++;
			continue;
		}
		if (run >= NAME_FRAGMENT_MIN)
			rc = names_add(&scan->removed, (const char *)blk + i - run, run,
				       true);
		run = 0;
	}
	if (!rc && run >= NAME_FRAGMENT_MIN)
		rc = names_add(&scan->removed, (const char *)blk + to - run, run, true);
	return rc;
}

/*
 * One directory block: the live entries by their rec_len chain, and
 * everything else as gaps: the tail of each entry after its name, the
 * whole of each removed (inode 0) entry, and the rest of the block
 * after a chain that breaks. The checksum tail is not a gap.
 */
static int scan_dir_block(struct dir_scan *scan, const unsigned char *blk)
{
	size_t bsize = scan->fs->blocksize, off = 0, end = bsize;
	int rc = 0;

	if (ext2fs_has_feature_metadata_csum(scan->fs->super) && bsize >= 12) {
		const struct ext2_dir_entry_tail *t = (const void *)(blk + bsize - 12);

		if (!t->det_reserved_zero1 && t->det_rec_len == 12 &&
		    t->det_reserved_name_len == EXT2_DIR_NAME_LEN_CSUM)
			end = bsize - 12;
	}
	while (off + 8 <= end && !rc) {
		struct ext2_dir_entry *de = (void *)(blk + off);
		size_t len = ext2fs_dirent_name_len(de);
		unsigned int rec_len;

		if (ext2fs_get_rec_len(scan->fs, de, &rec_len) || rec_len < 8 ||
		    rec_len % 4 || off + rec_len > end || 8 + len > rec_len) {
			rc = scan_gap(scan, blk, off, end);
			return rc;
		}
		if (de->inode && len) {
			rc = names_add(&scan->live, de->name, len, false);
			if (!rc)
				rc = scan_gap(scan, blk, off + 8 + len, off + rec_len);
		} else {
			rc = scan_gap(scan, blk, off + 8, off + rec_len);
		}
		off += rec_len;
	}
	return rc;
}

static int read_dir_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
			  blk64_t ref_blk, int ref_offset, void *priv)
{
	struct dir_scan *scan = priv;

	if (blockcnt < 0)
		return 0;
	/* a block number is always on the device: a read that fails is an error */
	if (io_channel_read_blk64(fs->io, *blocknr, 1, scan->buf) != 0) {
		scan->rc = -EIO;
		return BLOCK_ABORT;
	}
	scan->rc = scan_dir_block(scan, scan->buf);
	return scan->rc ? BLOCK_ABORT : 0;
}

/* Whether @frag is a piece of one of @l's whole names. */
static bool piece_of(const char *frag, const struct name_list *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		if (!l->fragment[i] && strstr(l->names[i], frag))
			return true;
	return false;
}

static int cmp_name_index(const void *a, const void *b, void *priv)
{
	char *const *names = priv;

	return strcmp(names[*(const size_t *)a], names[*(const size_t *)b]);
}

/*
 * Distinct names and pieces of names of removed entries that no live
 * entry of the directory carries: dx_pack_dirents() leaves old copies
 * of live names behind too, and those tell nothing about what was
 * deleted.
 */
static int count_deleted_names(struct dir_scan *scan, uint64_t *found)
{
	struct name_list *live = &scan->live, *rm = &scan->removed;
	size_t i, *order;

	*found = 0;
	if (!rm->count)
		return 0;
	order = malloc(rm->count * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < rm->count; i++)
		order[i] = i;
	qsort(live->names, live->count, sizeof(char *), cmp_names);
	qsort_r(order, rm->count, sizeof(*order), cmp_name_index, rm->names);
	for (i = 0; i < rm->count; i++) {
		const char *name = rm->names[order[i]];

		if (i && !strcmp(rm->names[order[i - 1]], name))
			continue;
		if (live->count &&
		    bsearch(&name, live->names, live->count, sizeof(char *), cmp_names))
			continue;
		if (rm->fragment[order[i]] &&
		    (piece_of(name, live) || piece_of(name, rm)))
			continue;
		(*found)++;
	}
	free(order);
	return 0;
}

static int add_dir(struct dir_scan *scan, ext2_ino_t ino)
{
	struct audit_dirents *d = scan->d;
	struct audit_dir *dirs;
	char *name = NULL;

	dirs = realloc(d->dirs, (d->ndirs + 1) * sizeof(*dirs));
	if (!dirs)
		return -ENOMEM;
	d->dirs = dirs;
	if (ext2fs_get_pathname(scan->fs, ino, 0, &name) != 0 || !name) {
		if (asprintf(&name, "<inode %u>", ino) < 0)
			return -ENOMEM;
	} else {
		/* libext2fs allocates with its own allocator: copy */
		char *copy = strdup(name);

		ext2fs_free_mem(&name);
		if (!copy)
			return -ENOMEM;
		name = copy;
	}
	dirs[d->ndirs].path = name;
	dirs[d->ndirs].ino = ino;
	dirs[d->ndirs].removed_names = scan->found;
	d->ndirs++;
	return 0;
}

static int audit_dirents(ext2_filsys fs, struct audit_dirents *d)
{
	struct dir_scan scan = { .fs = fs, .d = d };
	struct ext2_inode inode;
	ext2_inode_scan iscan;
	ext2_ino_t ino;
	int rc = 0;

	scan.buf = malloc(fs->blocksize);
	if (!scan.buf)
		return -ENOMEM;
	if (ext2fs_open_inode_scan(fs, 0, &iscan) != 0) {
		free(scan.buf);
		return -EIO;
	}
	for (;;) {
		errcode_t err = ext2fs_get_next_inode(iscan, &ino, &inode);

		/* a live filesystem changes under the scan: skip what breaks */
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE ||
		    err == EXT2_ET_INODE_CSUM_INVALID || err == EXT2_ET_INODE_IS_GARBAGE)
			continue;
		if (err) {
			rc = -EIO;
			break;
		}
		if (!ino)
			break;
		if (!LINUX_S_ISDIR(inode.i_mode) || !inode.i_links_count || inode.i_dtime)
			continue;
		d->directories++;
		/* small directories kept inside the inode have no block to read */
		if (inode.i_flags & EXT4_INLINE_DATA_FL)
			continue;
		names_clear(&scan.live);
		names_clear(&scan.removed);
		scan.rc = 0;
		err = ext2fs_block_iterate3(fs, ino,
					    BLOCK_FLAG_DATA_ONLY | BLOCK_FLAG_READ_ONLY,
					    NULL, read_dir_block, &scan);
		/*
		 * libext2fs's own codes (a bad extent header, a block out of
		 * range) mean the tree was rewritten since the inode was read;
		 * an errno (EIO, ENOMEM) is a failure of the scan
		 */
		if (err && !scan.rc && err >= 4096)
			continue;
		rc = scan.rc ? scan.rc : err ? -(int)err : 0;
		if (!rc)
			rc = count_deleted_names(&scan, &scan.found);
		if (!rc && scan.found) {
			d->removed_names += scan.found;
			rc = add_dir(&scan, ino);
		}
		if (rc)
			break;
	}
	ext2fs_close_inode_scan(iscan);
	names_free(&scan.live);
	names_free(&scan.removed);
	free(scan.buf);
	d->scanned = rc == 0;
	return rc;
}

/* ---- free space --------------------------------------------------------- */

/*
 * Blocks found holding data that are kept, with what they held, to be
 * read again: 12 MiB at most. A device that ignores discard fills it
 * long before a run ends; the blocks past it count as holding data.
 */
#define BLOCK_LIST_MAX (1U << 20)

struct block_list {
	blk64_t *v;
	uint32_t *sum; /* crc32c of each block's contents when read */
	size_t count, alloc;
	uint64_t over; /* blocks with data past BLOCK_LIST_MAX, not kept */
};

static int blocks_add(struct block_list *l, blk64_t blk, const unsigned char *data,
		      size_t len)
{
	if (l->count >= BLOCK_LIST_MAX) {
		l->over++;
		return 0;
	}
	if (audit_grow2(&l->v, sizeof(*l->v), &l->sum, sizeof(*l->sum), &l->alloc,
			l->count, 64))
		return -ENOMEM;
	l->sum[l->count] = ext2fs_crc32c_le(~0U, data, len);
	l->v[l->count++] = blk;
	return 0;
}

static void blocks_free(struct block_list *l)
{
	free(l->v);
	free(l->sum);
	memset(l, 0, sizeof(*l));
}

/*
 * Keep of @l the blocks still free in a bitmap read now, and return how
 * many. A writer allocates a block (in the bitmap) before it writes it,
 * so a block that read back with data and is still free held it before:
 * not a writer's new data. When the bitmap cannot be read, all are kept.
 */
static uint64_t still_free(const char *devpath, struct block_list *l)
{
	ext2_filsys fs = NULL;
	size_t i, n = 0;

	if (!l->count)
		return 0;
	if (ext2fs_open(devpath, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			unix_io_manager, &fs) != 0)
		return l->count;
	if (ext2fs_read_block_bitmap(fs) != 0) {
		ext2fs_close_free(&fs);
		return l->count;
	}
	for (i = 0; i < l->count; i++) {
		if (ext2fs_test_block_bitmap2(fs->block_map, l->v[i]))
			continue;
		l->sum[n] = l->sum[i];
		l->v[n++] = l->v[i];
	}
	l->count = n;
	ext2fs_close_free(&fs);
	return n;
}

/* GETFSMAP records asked for at a time */
#define FSMAP_BATCH 512

/*
 * The free extents of ext4's allocator, which FITRIM walks: its buddy
 * bitmaps, as FS_IOC_GETFSMAP reports them. They differ from the block
 * bitmap on the disk: space the allocator holds in memory (the rest of
 * a group preallocation that small files are cut from, 512 blocks by
 * default, or blocks freed by a transaction that has not committed)
 * counts as used there. So a freed block next to such space is a short
 * extent to FITRIM, below the discard granularity, where the disk's
 * bitmap shows a long one. FITRIM works group by group: an extent is
 * cut where its group ends (GETFSMAP joins them).
 */
struct alloc_free {
	int fd;
	struct fsmap_head *head;
	unsigned int next; /* the next record of head to look at */
	bool done; /* head holds the kernel's last record */
	uint64_t bsize;
	blk64_t first_data, per_group;
	blk64_t start, end; /* what is left of the current free record */
};

static int alloc_free_fill(struct alloc_free *w)
{
	if (w->head->fmh_entries)
		fsmap_advance(w->head);
	if (ioctl(w->fd, FS_IOC_GETFSMAP, w->head) != 0)
		return -errno;
	w->next = 0;
	if (!w->head->fmh_entries ||
	    (w->head->fmh_recs[w->head->fmh_entries - 1].fmr_flags & FMR_OF_LAST))
		w->done = true;
	return 0;
}

/* Start at the first free extent of the filesystem open at @fd. */
static int alloc_free_open(struct alloc_free *w, int fd, ext2_filsys fs)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->head = calloc(1, fsmap_sizeof(FSMAP_BATCH));
	if (!w->head)
		return -ENOMEM;
	w->fd = fd;
	w->bsize = fs->blocksize;
	w->first_data = fs->super->s_first_data_block;
	w->per_group = EXT2_BLOCKS_PER_GROUP(fs->super);
	w->head->fmh_count = FSMAP_BATCH;
	/* the high key: everything (its reserved fields stay zero) */
	w->head->fmh_keys[1].fmr_device = UINT32_MAX;
	w->head->fmh_keys[1].fmr_flags = UINT32_MAX;
	w->head->fmh_keys[1].fmr_physical = UINT64_MAX;
	w->head->fmh_keys[1].fmr_owner = UINT64_MAX;
	w->head->fmh_keys[1].fmr_offset = UINT64_MAX;
	rc = alloc_free_fill(w);
	if (rc) {
		free(w->head);
		w->head = NULL;
	}
	return rc;
}

static void alloc_free_close(struct alloc_free *w)
{
	free(w->head);
	w->head = NULL;
}

/*
 * The next free extent [*start, *end) of the allocator, within one group.
 * Returns 0, 1 when there is none, or -errno.
 */
static int alloc_free_next(struct alloc_free *w, blk64_t *start, blk64_t *end)
{
	blk64_t group_end;
	int rc;

	while (w->start >= w->end) {
		const struct fsmap *r;

		if (w->next >= w->head->fmh_entries) {
			if (w->done)
				return 1;
			rc = alloc_free_fill(w);
			if (rc)
				return rc;
			continue;
		}
		r = &w->head->fmh_recs[w->next++];
		if (!(r->fmr_flags & FMR_OF_SPECIAL_OWNER) ||
		    r->fmr_owner != FMR_OWN_FREE)
			continue;
		w->start = r->fmr_physical / w->bsize;
		w->end = (r->fmr_physical + r->fmr_length) / w->bsize;
	}
	/* blocks before the first data block belong to no group */
	group_end = w->first_data;
	if (w->start >= w->first_data)
		group_end +=
			((w->start - w->first_data) / w->per_group + 1) * w->per_group;
	*start = w->start;
	*end = w->end < group_end ? w->end : group_end;
	w->start = *end;
	return 0;
}

/*
 * Keep of @l (ascending) the blocks the allocator counts as free now, and
 * return how many. On a filesystem in use a block of free space read back
 * with old data may have been taken by a writer since: allocated before
 * its new data is written home (with data=journal, until the checkpoint),
 * it is no longer free space, and FITRIM rightly skipped it. The disk's
 * bitmap cannot tell: it is written home only at a checkpoint.
 */
static int alloc_still_free(int fd, ext2_filsys fs, struct block_list *l)
{
	struct alloc_free w;
	blk64_t s = 0, e = 0;
	size_t i = 0, n = 0;
	int rc;

	rc = alloc_free_open(&w, fd, fs);
	while (!rc && i < l->count) {
		blk64_t b = l->v[i];

		if (b < s) {
			i++;
		} else if (b < e) {
			l->sum[n] = l->sum[i];
			l->v[n++] = l->v[i++];
		} else {
			rc = alloc_free_next(&w, &s, &e);
			if (rc == 1) {
				rc = 0;
				break;
			}
		}
	}
	alloc_free_close(&w);
	if (rc)
		return rc;
	l->count = n;
	return 0;
}

/*
 * Why FITRIM did not erase the blocks of @l (ascending), free on the disk
 * and holding data: counted in @f->short_blocks when the allocator's free
 * extent around one is shorter than @min bytes (FITRIM's minimum, the
 * discard granularity), in @f->held_blocks when the allocator does not
 * count it as free at all. Returns 0 with @f->classified set, or -errno
 * (a kernel without GETFSMAP for ext4, before 4.12).
 */
static int classify_left(int fd, ext2_filsys fs, uint64_t min, const struct block_list *l,
			 struct audit_free *f)
{
	struct alloc_free w;
	blk64_t s = 0, e = 0;
	size_t i = 0;
	int rc;

	rc = alloc_free_open(&w, fd, fs);
	while (!rc && i < l->count) {
		blk64_t b = l->v[i];

		if (b < s) {
			f->held_blocks++;
			i++;
		} else if (b < e) {
			if ((e - s) * w.bsize < min)
				f->short_blocks++;
			i++;
		} else {
			rc = alloc_free_next(&w, &s, &e);
			if (rc == 1) {
				f->held_blocks += l->count - i;
				rc = 0;
				break;
			}
		}
	}
	alloc_free_close(&w);
	if (rc) {
		f->short_blocks = f->held_blocks = 0;
		return rc;
	}
	f->classified = true;
	return 0;
}

void audit_spread_init(struct audit_spread *sp, uint64_t bsize, uint64_t budget,
		       struct audit_free *f)
{
	memset(sp, 0, sizeof(*sp));
	sp->bsize = bsize;
	sp->per_chunk = READ_CHUNK / bsize;
	sp->budget = budget;
	sp->f = f;
	/* read everything, or every stride-th free block in pieces of per_chunk */
	sp->all = f->free_bytes <= budget;
	sp->stride = sp->all ? sp->per_chunk :
			       f->free_bytes / bsize / (budget / READ_CHUNK);
	if (sp->stride < sp->per_chunk)
		sp->stride = sp->per_chunk;
}

int audit_spread_extent(struct audit_spread *sp, int dev, unsigned char *buf, uint64_t z,
			uint64_t s)
{
	struct audit_free *f = sp->f;
	uint64_t bsize = sp->bsize;
	int rc = 0;

	/* the pieces that start in this extent */
	while (sp->next < sp->pos + (s - z) && f->read_bytes < sp->budget && !rc) {
		uint64_t at = z + (sp->next - sp->pos), k;
		uint64_t n = s - at < sp->per_chunk ? s - at : sp->per_chunk;
		ssize_t got;

		if (n > (sp->budget - f->read_bytes) / bsize)
			n = (sp->budget - f->read_bytes) / bsize;
		if (!n)
			break;
		got = pread(dev, buf, n * bsize, (off_t)(at * bsize));
		if (got != (ssize_t)(n * bsize))
			return got < 0 ? -errno : -EIO;
		f->read_bytes += n * bsize;
		for (k = 0; k < n && !rc; k++)
			if (!audit_block_is_zero(buf + k * bsize, bsize))
				rc = sp->found(sp->arg, at + k, buf + k * bsize);
		/* reading all of it: go on where this piece ended */
		sp->next += sp->all ? n : sp->stride;
	}
	sp->pos += s - z;
	return rc;
}

/* audit_spread's found(): note the block, for still_free() */
static int found_free_block(void *arg, uint64_t blk, const unsigned char *data)
{
	(void)data;
	return blocks_add(arg, blk, NULL, 0);
}

/*
 * Read the free space the block bitmap shows, with O_DIRECT, and count
 * the free blocks that are not zero: deleted contents, or older
 * metadata, that FITRIM did not reach (no discard, not run, extents
 * below the discard granularity or the minimum, a device that ignores
 * discard). Up to @budget bytes: beyond that, 1 MiB pieces spread
 * evenly over the free space, and the audit says how much it read.
 */
static int read_free_space(int fd, ext2_filsys fs, const struct audit_device *data,
			   uint64_t budget, struct audit_free *f)
{
	const char *devpath = data->path;
	uint64_t bsize = fs->blocksize;
	blk64_t start = fs->super->s_first_data_block,
		end = ext2fs_blocks_count(fs->super);
	unsigned char *buf = NULL;
	struct block_list found = { 0 };
	struct audit_spread sp;
	int dev, rc = 0;

	f->free_bytes = 0;
	for (blk64_t b = start; b < end;) {
		blk64_t z, s;

		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end - 1, &z))
			break;
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, z, end - 1, &s))
			s = end;
		f->free_bytes += (s - z) * bsize;
		b = s;
	}
	audit_spread_init(&sp, bsize, budget, f);
	sp.found = found_free_block;
	sp.arg = &found;

	dev = audit_direct_open(devpath, READ_CHUNK, &buf);
	if (dev < 0)
		return dev;
	for (blk64_t b = start; b < end && !rc;) {
		blk64_t z, s;

		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end - 1, &z))
			break;
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, z, end - 1, &s))
			s = end;
		rc = audit_spread_extent(&sp, dev, buf, z, s);
		b = s;
	}
	free(buf);
	close(dev);
	if (!rc)
		f->nonzero_blocks = still_free(devpath, &found);
	/* why FITRIM left them, where the device can discard at all */
	if (!rc && f->nonzero_blocks && data->known && data->discard_max_bytes) {
		uint64_t min = data->discard_granularity;

		classify_left(fd, fs, min > bsize ? min : bsize, &found, f);
	}
	blocks_free(&found);
	return rc;
}

/* ---- the whole ---------------------------------------------------------- */

static void audit_free_space(struct audit_result *out, unsigned int blocksize)
{
	struct remnants r = { 0 };
	int rc = remnants_check_dev(out->data.devno, blocksize, &r);

	if (rc) {
		out->free_error = -rc;
		return;
	}
	out->free_known = true;
	out->free_bytes = r.free_bytes;
	out->small_free_bytes = r.small_free_bytes;
}

int audit_fs(int fd, struct audit_result *out)
{
	ext2_filsys fs = NULL;
	struct statfs sfs;
	struct stat st;
	errcode_t err;
	int rc, bitmap_rc;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0)
		return -errno;
	out->ext4 = sfs.f_type == EXT4_SUPER_MAGIC;
	out->btrfs = sfs.f_type == BTRFS_SUPER_MAGIC;
	audit_kernel(fd, out->ext4, &out->kernel);
	if (out->btrfs)
		return audit_btrfs(fd, out);
	if (major(st.st_dev))
		audit_describe_device(st.st_dev, &out->data);
	if (!out->ext4)
		return 1;
	if (!out->data.path)
		return -ENODEV;

	/*
	 * Read-only: no EXT2_FLAG_RW. The filesystem is mounted and changes
	 * under us, so a checksum that does not match is not a reason to
	 * stop; the 64-bit flag only lets large filesystems be opened.
	 */
	err = ext2fs_open(out->data.path, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			  0, 0, unix_io_manager, &fs);
	if (err) {
		/* libext2fs passes errno values through; its own codes are larger */
		return err < 4096 ? -(int)err : -EUCLEAN;
	}

	/* the journal's judgement and the free-space read both need it */
	bitmap_rc = ext2fs_read_block_bitmap(fs) ? -EIO : 0;
	out->journal.present = ext2fs_has_feature_journal(fs->super);
	if (out->journal.present) {
		struct journal_layout jl = { 0 };

		out->journal.external = fs->super->s_journal_inum == 0 &&
					!uuid_is_zero(fs->super->s_journal_uuid);
		if (out->journal.external) {
			rc = external_layout(fs, out, &jl);
		} else {
			out->journal_dev = out->data;
			out->journal_dev.path = strdup(out->data.path);
			rc = internal_layout(fs, out->data.path, &jl);
		}
		if (!rc)
			rc = scan_journal(&jl, fs, &out->journal);
		layout_free(&jl);
		out->journal.error = -rc;
		out->journal.read = rc == 0;
	}

	rc = audit_dirents(fs, &out->dirents);
	out->dirents.error = -rc;
	rc = bitmap_rc ?
		     bitmap_rc :
		     read_free_space(fd, fs, &out->data, FREE_READ_BUDGET, &out->free);
	out->free.error = -rc;
	out->free.read = rc == 0;
	out->free.block_size = fs->blocksize;
	audit_free_space(out, fs->blocksize);
	ext2fs_close_free(&fs);
	return 0;
}

/* ---- the journal read back after an erase ------------------------------ */

struct audit_journal_dev {
	struct journal_layout jl;
	int dev; /* the journal's device, O_DIRECT */
	unsigned char *buf; /* one block */
	bool fast_commit; /* the filesystem has the fast_commit feature */
};

void audit_journal_close(struct audit_journal_dev *jd)
{
	if (!jd)
		return;
	if (jd->dev >= 0)
		close(jd->dev);
	free(jd->buf);
	layout_free(&jd->jl);
	free(jd);
}

int audit_journal_open(int fd, struct audit_journal_dev **out)
{
	struct audit_journal_dev *jd;
	struct audit_result res = { 0 };
	ext2_filsys fs = NULL;
	struct stat st;
	int rc;

	*out = NULL;
	if (fstat(fd, &st) != 0)
		return -errno;
	jd = calloc(1, sizeof(*jd));
	if (!jd)
		return -ENOMEM;
	jd->dev = -1;
	audit_describe_device(st.st_dev, &res.data);
	if (!res.data.path)
		rc = -ENOENT;
	else if (ext2fs_open(res.data.path,
			     EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			     unix_io_manager, &fs) != 0)
		rc = -EUCLEAN;
	else if (!ext2fs_has_feature_journal(fs->super))
		rc = -ENODEV;
	else if (fs->super->s_journal_inum == 0 &&
		 !uuid_is_zero(fs->super->s_journal_uuid))
		rc = external_layout(fs, &res, &jd->jl);
	else
		rc = internal_layout(fs, res.data.path, &jd->jl);
	if (!rc) {
		jd->fast_commit = ext2fs_has_feature_fast_commit(fs->super);
		jd->dev = audit_direct_open(jd->jl.devpath,
					    jd->jl.bsize > DIRECT_ALIGN ? jd->jl.bsize :
									  DIRECT_ALIGN,
					    &jd->buf);
		rc = jd->dev < 0 ? jd->dev : read_layout_sb(jd->dev, &jd->jl, jd->buf);
	}
	if (fs)
		ext2fs_close_free(&fs);
	audit_result_free(&res);
	if (rc) {
		audit_journal_close(jd);
		return rc;
	}
	*out = jd;
	return 0;
}

bool audit_journal_fast_commit(const struct audit_journal_dev *jd)
{
	return jd->fast_commit;
}

int audit_journal_sequence(struct audit_journal_dev *jd, uint32_t *seq)
{
	int rc = read_layout_sb(jd->dev, &jd->jl, jd->buf);

	if (!rc)
		*seq = jd->jl.sequence;
	return rc;
}

/* A cheap fingerprint of a block, to tell whether it changed between two reads. */
static uint64_t block_hash(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL, w;
	size_t i;

	for (i = 0; i + sizeof(w) <= len; i += sizeof(w)) {
		memcpy(&w, p + i, sizeof(w));
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

/* What one read of the whole journal found, block by block. */
struct journal_pass {
	unsigned char *nonzero;
	unsigned char *explained; /* part of a transaction from @since on */
	uint64_t *hash;
};

static void pass_free(struct journal_pass *p)
{
	free(p->nonzero);
	free(p->explained);
	free(p->hash);
}

/*
 * Mark the blocks that a transaction with a sequence from @since on wrote:
 * its descriptor, commit and revoke blocks, which carry the sequence, and
 * the copies each of its descriptors announces, which follow it.
 */
static void explain_header(const struct journal_layout *jl, const unsigned char *buf,
			   uint32_t blk, uint32_t since, unsigned char *explained)
{
	uint32_t type = be32(buf + JBD2_HDR_TYPE), next = blk;
	size_t off = JBD2_HDR_SIZE;
	uint64_t fsblk;

	if (be32(buf) != JBD2_MAGIC ||
	    (int32_t)(be32(buf + JBD2_HDR_SEQUENCE) - since) < 0 ||
	    (type != JBD2_DESCRIPTOR_BLOCK && type != JBD2_COMMIT_BLOCK &&
	     type != JBD2_REVOKE_BLOCK))
		return;
	explained[blk] = 1;
	if (type != JBD2_DESCRIPTOR_BLOCK)
		return;
	while (next_tag(jl, buf, &off, &fsblk)) {
		next = next + 1 >= jl->last ? jl->first : next + 1;
		if (next == blk)
			break;
		explained[next] = 1;
	}
}

/* Read the journal from its first log block to its end once, into @p. */
static int read_pass(struct audit_journal_dev *jd, uint32_t since, unsigned char *big,
		     struct journal_pass *p)
{
	const struct journal_layout *jl = &jd->jl;
	uint32_t blk, k, pending = UINT32_MAX;

	p->nonzero = calloc(jl->maxlen, 1);
	p->explained = calloc(jl->maxlen, 1);
	p->hash = calloc(jl->maxlen, sizeof(*p->hash));
	if (!p->nonzero || !p->explained || !p->hash)
		return -ENOMEM;
	for (blk = jl->first; blk < jl->maxlen;) {
		uint32_t n = 1;
		ssize_t got;

		while (blk + n < jl->maxlen && n < READ_CHUNK / jl->bsize &&
		       jl->phys[blk + n] == jl->phys[blk] + n)
			n++;
		got = pread(jd->dev, big, (size_t)n * jl->bsize,
			    (off_t)(jl->phys[blk] * jl->bsize));
		if (got != (ssize_t)n * jl->bsize)
			return got < 0 ? -errno : -EIO;
		for (k = 0; k < n; k++, blk++) {
			const unsigned char *b = big + (size_t)k * jl->bsize;

			if (audit_block_is_zero(b, jl->bsize)) {
				pending = UINT32_MAX;
				continue;
			}
			p->nonzero[blk] = 1;
			p->hash[blk] = block_hash(b, jl->bsize);
			if (blk >= jl->last)
				explain_fc(b, jl->bsize, blk, since, &pending,
					   p->explained);
			else
				explain_header(jl, b, blk, since, p->explained);
		}
	}
	return 0;
}

int audit_journal_readback_since(struct audit_journal_dev *jd, uint32_t since,
				 struct audit_journal *j)
{
	const struct journal_layout *jl = &jd->jl;
	struct journal_pass one = { 0 }, two = { 0 };
	unsigned char *big = NULL;
	uint64_t unexplained = 0;
	uint32_t blk;
	int rc;

	memset(j, 0, sizeof(*j));
	if (posix_memalign((void **)&big, DIRECT_ALIGN, READ_CHUNK))
		return -ENOMEM;
	rc = read_pass(jd, since, big, &one);
	for (blk = jl->first; !rc && blk < jl->maxlen; blk++)
		unexplained += one.nonzero[blk] && !one.explained[blk];
	/*
	 * A commit in progress during the read can leave a copy read before
	 * the descriptor that announces it: read again, and count a block
	 * only when it held the same bytes both times and no transaction
	 * from @since on explains it either time.
	 */
	if (!rc && unexplained)
		rc = read_pass(jd, since, big, &two);
	for (blk = jl->first; !rc && blk < jl->maxlen; blk++) {
		j->blocks++;
		if (!one.nonzero[blk])
			continue;
		j->nonzero_blocks++;
		if (one.explained[blk] || !two.nonzero || !two.nonzero[blk] ||
		    two.explained[blk] || two.hash[blk] != one.hash[blk])
			j->live_blocks++;
		else
			j->old_blocks++;
	}
	j->block_size = jl->bsize;
	j->present = j->read = rc == 0;
	j->error = -rc;
	pass_free(&one);
	pass_free(&two);
	free(big);
	return rc;
}

/* Free blocks that read back with data after FITRIM, and what they held. */
struct audit_free_marks {
	char *devpath;
	uint64_t bsize;
	uint64_t gran; /* FITRIM's minimum, to tell why it left them; or 0 */
	struct block_list blocks;
	struct audit_btrfs_marks *btrfs; /* on btrfs, instead of the above */
};

void audit_free_marks_free(struct audit_free_marks *marks)
{
	if (!marks)
		return;
	blocks_free(&marks->blocks);
	audit_btrfs_marks_free(marks->btrfs);
	free(marks->devpath);
	free(marks);
}

/*
 * A read back of free space on the filesystem open at @fd: its device,
 * libext2fs on it, an O_DIRECT descriptor and buffer, and the blocks found
 * holding data.
 */
struct free_reader {
	struct audit_device dev;
	ext2_filsys fs;
	int devfd;
	unsigned char *buf;
	struct block_list found;
};

static int free_reader_open(struct free_reader *r, int fd, struct audit_free *out)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->devfd = -1;
	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0)
		return -errno;
	audit_describe_device(st.st_dev, &r->dev);
	if (!r->dev.path || !r->dev.known)
		return -ENODEV;
	if (ext2fs_open(r->dev.path, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0,
			0, unix_io_manager, &r->fs) != 0)
		return -EUCLEAN;
	out->block_size = r->fs->blocksize;
	r->devfd = audit_direct_open(r->dev.path, READ_CHUNK, &r->buf);
	return r->devfd < 0 ? r->devfd : 0;
}

/*
 * Keep of what @r found the blocks still free, hand them to *@marks (when
 * asked and there are any), release the rest. Returns @rc.
 */
static int free_reader_close(struct free_reader *r, int rc, struct audit_free *out,
			     struct audit_free_marks **marks)
{
	if (!rc)
		out->nonzero_blocks = still_free(r->dev.path, &r->found) + r->found.over;
	if (!rc && r->found.count && marks) {
		*marks = calloc(1, sizeof(**marks));
		if (*marks) {
			(*marks)->devpath = r->dev.path;
			(*marks)->bsize = r->fs->blocksize;
			(*marks)->blocks = r->found;
			r->dev.path = NULL;
			memset(&r->found, 0, sizeof(r->found));
		}
	}
	blocks_free(&r->found);
	out->read = rc == 0;
	out->error = -rc;
	if (r->devfd >= 0)
		close(r->devfd);
	free(r->buf);
	free(r->dev.path);
	if (r->fs)
		ext2fs_close_free(&r->fs);
	return rc;
}

/* FITRIM's minimum in bytes, as ext4_trim_fs() raises it. */
static uint64_t trim_minimum(const struct free_reader *r, uint64_t minlen)
{
	uint64_t bsize = r->fs->blocksize;
	uint64_t gran = r->dev.discard_granularity > bsize ? r->dev.discard_granularity :
							     bsize;

	if (minlen > gran)
		gran = (minlen + bsize - 1) / bsize * bsize;
	return gran;
}

/* The blocks [*first, *end) of FITRIM's range @start, @len. */
static void trim_span(ext2_filsys fs, uint64_t start, uint64_t len, blk64_t *first,
		      blk64_t *end)
{
	uint64_t bsize = fs->blocksize;

	*first = start / bsize > fs->super->s_first_data_block ?
			 start / bsize :
			 fs->super->s_first_data_block;
	*end = ext2fs_blocks_count(fs->super);
	if (len / bsize < *end - *first)
		*end = *first + len / bsize;
}

/* Read [@z, @hi) in pieces, marking the blocks with data. */
static int read_marking(struct free_reader *r, blk64_t z, blk64_t hi, uint64_t budget,
			struct audit_free *out)
{
	uint64_t bsize = r->fs->blocksize;

	out->free_bytes += (hi - z) * bsize;
	while (z < hi) {
		uint64_t n = hi - z, k;
		ssize_t got;

		if (n > READ_CHUNK / bsize)
			n = READ_CHUNK / bsize;
		if (n > (budget - out->read_bytes) / bsize)
			n = (budget - out->read_bytes) / bsize;
		if (!n)
			return 0;
		got = pread(r->devfd, r->buf, n * bsize, (off_t)(z * bsize));
		if (got != (ssize_t)(n * bsize))
			return got < 0 ? -errno : -EIO;
		out->read_bytes += n * bsize;
		for (k = 0; k < n; k++) {
			int rc;

			if (audit_block_is_zero(r->buf + k * bsize, bsize))
				continue;
			rc = blocks_add(&r->found, z + k, r->buf + k * bsize, bsize);
			if (rc)
				return rc;
		}
		z += n;
	}
	return 0;
}

/* btrfs: all of what FITRIM discarded, as on ext4 */
static int readback_btrfs(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			  struct audit_free *out, struct audit_free_marks **marks)
{
	struct audit_btrfs_marks *bm = NULL;
	int rc = audit_btrfs_readback(fd, start, len, minlen, out, &bm);

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

int audit_free_readback(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			struct audit_free *out, struct audit_free_marks **marks)
{
	struct alloc_free w = { 0 };
	struct free_reader r;
	struct statfs sfs;
	blk64_t first, end, z, e;
	uint64_t bsize, gran;
	ext2_filsys fs;
	int rc;

	if (marks)
		*marks = NULL;
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == BTRFS_SUPER_MAGIC)
		return readback_btrfs(fd, start, len, minlen, out, marks);
	rc = free_reader_open(&r, fd, out);
	if (rc)
		return free_reader_close(&r, rc, out, NULL);
	fs = r.fs;
	bsize = fs->blocksize;
	gran = trim_minimum(&r, minlen);
	trim_span(fs, start, len, &first, &end);
	/* the extents FITRIM discarded: the allocator's, not the disk's bitmap (struct alloc_free) */
	rc = alloc_free_open(&w, fd, fs);
	while (!rc && (rc = alloc_free_next(&w, &z, &e)) == 0) {
		uint64_t lo, hi;

		/* what lies in the range FITRIM was given */
		if (z < first)
			z = first;
		if (e > end)
			e = end;
		if (e <= z || (e - z) * bsize < gran)
			continue;
		/* the part of the extent the device's granularity lets discard */
		lo = (z * bsize + gran - 1) / gran * gran;
		hi = e * bsize / gran * gran;
		/* in whole blocks: all of it, as gran is a multiple of bsize */
		lo = (lo + bsize - 1) / bsize;
		hi /= bsize;
		if (hi > lo)
			rc = read_marking(&r, lo, hi, FREE_READ_BUDGET, out);
	}
	if (rc == 1)
		rc = 0;
	alloc_free_close(&w);
	return free_reader_close(&r, rc, out, marks);
}

int audit_free_unreachable(int fd, uint64_t start, uint64_t len, uint64_t minlen,
			   uint64_t budget, struct audit_free *out,
			   struct audit_free_marks **marks)
{
	struct alloc_free w = { 0 };
	blk64_t a = 0, b = 0, pos, end;
	struct free_reader r;
	bool walked = false;
	uint64_t gran;
	int rc;

	*marks = NULL;
	rc = free_reader_open(&r, fd, out);
	if (!rc)
		rc = ext2fs_read_block_bitmap(r.fs) ? -EIO : 0;
	if (!rc)
		rc = alloc_free_open(&w, fd, r.fs);
	if (rc)
		return free_reader_close(&r, rc, out, NULL);
	gran = trim_minimum(&r, minlen);
	trim_span(r.fs, start, len, &pos, &end);
	/*
	 * The disk's free runs, less the allocator's free extents that
	 * FITRIM discards: those at least its minimum long.
	 */
	while (!rc && pos < end) {
		blk64_t z, s;

		if (ext2fs_find_first_zero_block_bitmap2(r.fs->block_map, pos, end - 1,
							 &z))
			break;
		if (ext2fs_find_first_set_block_bitmap2(r.fs->block_map, z, end - 1, &s))
			s = end;
		while (!rc && z < s) {
			blk64_t stop;

			if (b <= z && !walked) {
				rc = alloc_free_next(&w, &a, &b);
				if (rc == 1) {
					walked = true;
					a = b = end;
					rc = 0;
				}
				continue;
			}
			/* held: not free to the allocator; or free, too short */
			stop = a <= z && z < b ? b : a;
			if (stop > s)
				stop = s;
			if (!(a <= z && z < b) || (b - a) * r.fs->blocksize < gran)
				rc = read_marking(&r, z, stop, budget, out);
			z = stop;
		}
		pos = s;
	}
	alloc_free_close(&w);
	rc = free_reader_close(&r, rc, out, marks);
	if (*marks)
		(*marks)->gran = gran;
	return rc;
}

int audit_free_recheck(int fd, struct audit_free_marks *marks, struct audit_free *out)
{
	struct block_list *l = &marks->blocks;
	size_t span = marks->bsize > DIRECT_ALIGN ? marks->bsize : DIRECT_ALIGN;
	ext2_filsys fs = NULL;
	unsigned char *buf;
	size_t i, n = 0;
	int dev, rc = 0;

	if (marks->btrfs)
		return audit_btrfs_recheck(fd, marks->btrfs, out);
	dev = audit_direct_open(marks->devpath, span, &buf);
	if (dev < 0)
		return dev;
	for (i = 0; i < l->count; i++) {
		/* O_DIRECT reads whole aligned pieces: the one holding the block */
		uint64_t at = l->v[i] * marks->bsize;
		uint64_t piece = at / DIRECT_ALIGN * DIRECT_ALIGN;
		ssize_t got = pread(dev, buf, span, (off_t)piece);

		if (got < 0 || (uint64_t)got < at - piece + marks->bsize) {
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		if (ext2fs_crc32c_le(~0U, buf + (at - piece), marks->bsize) != l->sum[i])
			continue;
		l->sum[n] = l->sum[i];
		l->v[n++] = l->v[i];
	}
	close(dev);
	free(buf);
	if (rc)
		return rc;
	l->count = n;
	out->short_blocks = out->held_blocks = 0;
	out->classified = false;
	if (!l->count) {
		out->nonzero_blocks = l->over;
		return 0;
	}
	if (ext2fs_open(marks->devpath, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			0, 0, unix_io_manager, &fs) != 0)
		return -EUCLEAN;
	/*
	 * What FITRIM discarded and still holds data counts only where the
	 * allocator still has it free; where FITRIM could not reach, why
	 * (the allocator's view now).
	 */
	if (!marks->gran)
		rc = alloc_still_free(fd, fs, l);
	ext2fs_close_free(&fs);
	if (rc)
		return rc;
	out->nonzero_blocks = still_free(marks->devpath, l) + l->over;
	if (marks->gran && l->count &&
	    ext2fs_open(marks->devpath, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			0, 0, unix_io_manager, &fs) == 0) {
		classify_left(fd, fs, marks->gran, l, out);
		ext2fs_close_free(&fs);
	}
	return 0;
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

int audit_dirents_fd(int fd, struct audit_dirents *d)
{
	struct audit_device dev = { 0 };
	ext2_filsys fs = NULL;
	struct stat st;
	errcode_t err;
	int rc;

	memset(d, 0, sizeof(*d));
	if (fstat(fd, &st) != 0)
		return -errno;
	audit_describe_device(st.st_dev, &dev);
	if (!dev.path)
		return -ENOENT;
	err = ext2fs_open(dev.path, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			  unix_io_manager, &fs);
	free(dev.path);
	if (err)
		return err < 4096 ? -(int)err : -EUCLEAN;
	rc = audit_dirents(fs, d);
	d->error = -rc;
	ext2fs_close_free(&fs);
	return rc;
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

/* ---- what the user reads ---------------------------------------------- */

static const char *yes_no(int val)
{
	return val == 1 ? "yes" : val == 0 ? "no" : "unknown";
}

static void describe_device_line(FILE *f, const char *path, const char *what,
				 const struct audit_device *d)
{
	if (!d->known) {
		fprintf(f, "%s: audit: %s %s: queue limits unknown\n", path, what,
			d->path ? d->path : "device");
		return;
	}
	fprintf(f, "%s: audit: %s %s: discard %s, write-zeroes %s\n", path, what,
		d->path ? d->path : "device", yes_no(d->discard_max_bytes > 0),
		yes_no(d->write_zeroes_max_bytes > 0));
}

/* The summary line's first words. */
static const char *verdict(const struct audit_result *res)
{
	if (audit_found_remnants(res))
		return "deleted data found";
	return audit_incomplete(res) ? "incomplete, nothing found in what was read" :
				       "nothing found";
}

/* "; free space: ..." of the summary line */
static void describe_free(FILE *f, const struct audit_result *res)
{
	char size[SIZE_HUMAN_MAX], total[SIZE_HUMAN_MAX];

	if (!res->free.read) {
		fprintf(f, "; free space not read (%s)", strerror(res->free.error));
		return;
	}
	fprintf(f, "; free space: %" PRIu64 " blocks hold data",
		res->free.nonzero_blocks);
	/* deleted data that FITRIM cannot reach, with the reason */
	if (res->free.nonzero_blocks && res->data.known && !res->data.discard_max_bytes)
		fputs(" (the device cannot discard)", f);
	else if (res->free.short_blocks || res->free.held_blocks)
		fprintf(f,
			" (FITRIM cannot reach %" PRIu64 ": %" PRIu64
			" in free extents below the discard granularity, %" PRIu64
			" held by the allocator)",
			res->free.short_blocks + res->free.held_blocks,
			res->free.short_blocks, res->free.held_blocks);
	fprintf(f, ", %s read of %s",
		size_to_human(res->free.read_bytes, size, sizeof(size)),
		size_to_human(res->free.free_bytes, total, sizeof(total)));
}

/*
 * btrfs: free space alone. Its old tree blocks and deleted extents are
 * there; what stays inside live tree blocks is not examined.
 */
static void describe_btrfs(FILE *f, const char *path, const struct audit_result *res)
{
	const struct audit_btrfs *b = &res->btrfs_space;
	char size[SIZE_HUMAN_MAX];

	fprintf(f, "%s: audit: %s", path, verdict(res));
	describe_free(f, res);
	if (res->free.read) {
		fprintf(f, " (%s in no chunk",
			size_to_human(b->unallocated_bytes, size, sizeof(size)));
		fprintf(f, ", %s in chunks)",
			size_to_human(b->chunk_free_bytes, size, sizeof(size)));
	}
	if (b->striped_free_bytes)
		fprintf(f, "; not read: %s free in RAID0/10/5/6 chunks",
			size_to_human(b->striped_free_bytes, size, sizeof(size)));
	fputs("; not examined: unused bytes inside live tree blocks\n", f);
}

char *audit_describe(const char *path, const struct audit_result *res, int rc,
		     bool verbose)
{
	const struct audit_kernel *k = &res->kernel;
	char size[SIZE_HUMAN_MAX];
	char *text = NULL;
	size_t len = 0, i;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	if (rc < 0) {
		fprintf(f, "%s: audit: not done: %s\n", path, strerror(-rc));
		goto out;
	}
	if (rc == 1) {
		fprintf(f,
			"%s: audit: not an ext2/3/4 or btrfs filesystem; nothing examined\n",
			path);
		goto kernel;
	}
	if (res->btrfs) {
		describe_btrfs(f, path, res);
		if (verbose)
			describe_device_line(f, path, "data device", &res->data);
		goto out;
	}

	fprintf(f, "%s: audit: %s; ", path, verdict(res));
	if (!res->journal.present)
		fputs("no journal", f);
	else if (!res->journal.read)
		fprintf(f, "journal not read (%s)", strerror(res->journal.error));
	else
		fprintf(f,
			"journal: %" PRIu64 " of %" PRIu64 " blocks hold older "
			"transactions, %" PRIu64 " the live log",
			res->journal.old_blocks, res->journal.blocks,
			res->journal.live_blocks);
	if (!res->dirents.scanned)
		fprintf(f, "; directories not read (%s)", strerror(res->dirents.error));
	else
		fprintf(f,
			"; %" PRIu64 " deleted names in %zu of %" PRIu64 " directories",
			res->dirents.removed_names, res->dirents.ndirs,
			res->dirents.directories);
	describe_free(f, res);
	if (res->ext4 && res->free_error)
		fprintf(f, "; free extents' sizes not read (%s)",
			strerror(res->free_error));
	/* what no step here reads, said every time */
	fputs("; not examined: freed inodes (inline data, extended attributes)", f);
	fputc('\n', f);

	if (!verbose)
		goto out;
	for (i = 0; i < res->dirents.ndirs; i++)
		fprintf(f, "%s: audit: %" PRIu64 " deleted names in %s\n", path,
			res->dirents.dirs[i].removed_names, res->dirents.dirs[i].path);
	if (res->free_known)
		fprintf(f,
			"%s: audit: up to %s of free space in extents below the discard "
			"granularity\n",
			path, size_to_human(res->small_free_bytes, size, sizeof(size)));
	if (res->journal.external)
		fprintf(f, "%s: audit: external journal UUID=%s on %s\n", path,
			res->journal.uuid,
			res->journal_dev.path ? res->journal_dev.path :
						"no device found");
kernel:
	if (!verbose)
		goto out;
	fprintf(f,
		"%s: audit: Linux %s: EXT4_IOC_CHECKPOINT %s "
		"(discard %s, zeroout %s), "
		"FS_IOC_CHKPT_JRNL %s, names wiped on unlink %s, "
		"directory-pack fix %s\n",
		path, k->release, yes_no(k->checkpoint), yes_no(k->checkpoint_discard),
		yes_no(k->checkpoint_zeroout), yes_no(k->chkpt_jrnl),
		yes_no(k->wipes_dirents), yes_no(k->dirent_pack_wipe));
	describe_device_line(f, path, "data device", &res->data);
	if (res->journal.external)
		describe_device_line(f, path, "journal device", &res->journal_dev);
out:
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

#ifdef TEST_PROGRAM_AUDIT
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
		explain_fc(b[i], BS, i, since, &pending, explained);
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

	check(!fc_block_tid(blk, sizeof(blk), &tid, &tail),
	      "fc: a zero block names no transaction");
	put_fc_tag(blk, put_fc_tag(blk, 0, EXT4_FC_TAG_HEAD, 8, 12),
		   EXT4_FC_TAG_ADD_RANGE, 16, 0);
	check(fc_block_tid(blk, sizeof(blk), &tid, &tail) && tid == 12 && !tail,
	      "fc: a HEAD names its transaction");
	put_fc_tag(blk, 0, EXT4_FC_TAG_TAIL, sizeof(blk) - EXT4_FC_TL_SIZE, 0x01020304);
	check(fc_block_tid(blk, sizeof(blk), &tid, &tail) && tid == 0x01020304 && tail,
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
#endif
