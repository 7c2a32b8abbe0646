// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The read back of an ext4 journal after its erase (--journal): the
 * journal's device opened before the erase, and every block of the
 * journal read after it with O_DIRECT, sorted into what the transactions
 * committed since explain and what they do not (data left by the erase).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>

#include "audit.h"
#include "audit-jbd2.h"
#include "audit-read.h"
#include "extfs.h"
#include "stack.h"

struct audit_journal_dev {
	struct journal_layout jl;
	int dev; /* the journal's device, O_DIRECT */
	/*
	 * Below a crypt layer, the device where the bytes lie, O_DIRECT, and
	 * where the journal's device begins on it; -1 for none. A discard
	 * leaves zeroes there, and their decryption in the mapping.
	 */
	int below;
	uint64_t below_offset;
	unsigned char *buf; /* one block */
	bool fast_commit; /* the filesystem has the fast_commit feature */
};

void audit_journal_close(struct audit_journal_dev *jd)
{
	if (!jd)
		return;
	if (jd->dev >= 0)
		close(jd->dev);
	if (jd->below >= 0)
		close(jd->below);
	free(jd->buf);
	layout_free(&jd->jl);
	free(jd);
}

/*
 * Where the journal's device lies below a crypt layer, opened into
 * @jd->below; nothing where no crypt layer maps it. Returns 0 or -errno.
 */
static int open_below(struct audit_journal_dev *jd)
{
	struct storage_stack s;
	unsigned char *buf;
	struct stat st;

	if (stat(jd->jl.devpath, &st) != 0)
		return -errno;
	if (stack_describe(st.st_rdev, &s) != 0 || s.kind != STACK_MAPPED || !s.encrypted)
		return 0;
	jd->below = audit_direct_open(s.bottom, DIRECT_ALIGN, &buf);
	if (jd->below < 0)
		return jd->below;
	free(buf);
	jd->below_offset = s.offset;
	return 0;
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
	jd->dev = jd->below = -1;
	audit_describe_device(st.st_dev, &res.data);
	rc = res.data.path ? extfs_open(res.data.path, 0, &fs) : -ENOENT;
	if (!rc && !ext2fs_has_feature_journal(fs->super))
		rc = -ENODEV;
	else if (!rc && fs->super->s_journal_inum == 0 &&
		 !uuid_is_zero(fs->super->s_journal_uuid))
		rc = external_layout(fs, &res, &jd->jl);
	else if (!rc)
		rc = internal_layout(fs, res.data.path, &jd->jl);
	if (!rc) {
		jd->fast_commit = ext2fs_has_feature_fast_commit(fs->super);
		jd->dev = audit_direct_open(jd->jl.devpath,
					    jd->jl.bsize > DIRECT_ALIGN ? jd->jl.bsize :
									  DIRECT_ALIGN,
					    &jd->buf);
		rc = jd->dev < 0 ? jd->dev : read_layout_sb(jd->dev, &jd->jl, jd->buf);
	}
	if (!rc)
		rc = open_below(jd);
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

bool audit_journal_encrypted(const struct audit_journal_dev *jd)
{
	return jd->below >= 0;
}

int audit_journal_sequence(struct audit_journal_dev *jd, uint32_t *seq)
{
	int rc = read_layout_sb(jd->dev, &jd->jl, jd->buf);

	if (!rc)
		*seq = jd->jl.sequence;
	return rc;
}

/* What one read of the whole journal found, block by block. */
struct journal_pass {
	unsigned char *nonzero;
	unsigned char *explained; /* part of a transaction from @since on */
	uint32_t *hash; /* crc32c: whether it changed between two reads */
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

/*
 * Read the journal from its first log block to its end once, into @p;
 * told to @progress (NULL for none) as the read @what.
 */
static int read_pass(struct audit_journal_dev *jd, uint32_t since, unsigned char *big,
		     unsigned char *below, struct journal_pass *p, const char *what,
		     const struct audit_progress *progress)
{
	const struct journal_layout *jl = &jd->jl;
	struct journal_layout at_below = *jl;
	uint32_t blk, k, pending = UINT32_MAX;
	struct audit_read read = {
		.what = what,
		.total = (uint64_t)(jl->maxlen - jl->first) * jl->bsize,
	};
	int rc = 0;

	p->nonzero = calloc(jl->maxlen, 1);
	p->explained = calloc(jl->maxlen, 1);
	p->hash = calloc(jl->maxlen, sizeof(*p->hash));
	if (!p->nonzero || !p->explained || !p->hash)
		return -ENOMEM;
	audit_read_tell(progress, AUDIT_READ_BEGIN, &read);
	for (blk = jl->first; blk < jl->maxlen;) {
		uint32_t n;

		rc = read_jrun(jd->dev, jl, blk, big, &n);
		if (!rc && below) {
			uint32_t m;

			at_below.offset = jd->below_offset;
			rc = read_jrun(jd->below, &at_below, blk, below, &m);
			if (!rc && m != n)
				rc = -EIO;
		}
		if (rc)
			break;
		for (k = 0; k < n; k++, blk++) {
			const unsigned char *b = big + (size_t)k * jl->bsize;
			/* what the block holds on the disk; @b, what it means */
			const unsigned char *held =
				below ? below + (size_t)k * jl->bsize : b;

			if (audit_block_is_zero(held, jl->bsize)) {
				pending = UINT32_MAX;
				continue;
			}
			p->nonzero[blk] = 1;
			p->hash[blk] = ext2fs_crc32c_le(~0U, held, jl->bsize);
			if (blk >= jl->last)
				audit_fc_explain(b, jl->bsize, blk, since, &pending,
						 p->explained);
			else
				explain_header(jl, b, blk, since, p->explained);
		}
		read.done = (uint64_t)(blk - jl->first) * jl->bsize;
		audit_read_tell(progress, AUDIT_READ_PIECE, &read);
	}
	audit_read_tell(progress, AUDIT_READ_END, &read);
	return rc;
}

/*
 * Whether block @blk, which no transaction explained at the first read
 * (@one), read other data, or zero, at the second (@two), no transaction
 * explaining it there either; with @three, the same again at a third.
 */
static bool unsteady_now(const struct journal_pass *one, const struct journal_pass *two,
			 const struct journal_pass *three, uint32_t blk)
{
	if (!one->nonzero[blk] || one->explained[blk] || two->explained[blk])
		return false;
	if (two->nonzero[blk] && two->hash[blk] == one->hash[blk])
		return false;
	if (!three)
		return true;
	return !three->explained[blk] && (!three->nonzero[blk] || !two->nonzero[blk] ||
					  three->hash[blk] != two->hash[blk]);
}

int audit_journal_readback_since(struct audit_journal_dev *jd, uint32_t since, bool below,
				 struct audit_journal *j,
				 const struct audit_progress *progress)
{
	const struct journal_layout *jl = &jd->jl;
	struct journal_pass one = { 0 }, two = { 0 }, three = { 0 };
	unsigned char *big = NULL, *held = NULL;
	uint64_t unexplained = 0;
	uint32_t blk;
	int rc;

	memset(j, 0, sizeof(*j));
	if (posix_memalign((void **)&big, DIRECT_ALIGN, READ_CHUNK))
		return -ENOMEM;
	if (below && jd->below >= 0 &&
	    posix_memalign((void **)&held, DIRECT_ALIGN, READ_CHUNK)) {
		free(big);
		return -ENOMEM;
	}
	rc = read_pass(jd, since, big, held, &one, "reading back the journal", progress);
	for (blk = jl->first; !rc && blk < jl->maxlen; blk++)
		unexplained += one.nonzero[blk] && !one.explained[blk];
	/*
	 * A commit in progress during the read can leave a copy read before
	 * the descriptor that announces it: read again, and count a block
	 * only when it held the same bytes both times and no transaction
	 * from @since on explains it either time.
	 */
	if (!rc && unexplained)
		rc = read_pass(jd, since, big, held, &two,
			       "reading back the journal again", progress);
	/*
	 * A block no transaction explains, read other (or zero) the second
	 * time: a writer's copy read before its descriptor again, or a
	 * device that answers each read anew. A third read tells: what no
	 * transaction explains then either is an unsteady read, not proof.
	 */
	unexplained = 0;
	for (blk = jl->first; !rc && two.nonzero && blk < jl->maxlen; blk++)
		unexplained += unsteady_now(&one, &two, NULL, blk);
	if (!rc && unexplained)
		rc = read_pass(jd, since, big, held, &three,
			       "reading back the journal a third time", progress);
	for (blk = jl->first; !rc && blk < jl->maxlen; blk++) {
		j->blocks++;
		if (!one.nonzero[blk])
			continue;
		j->nonzero_blocks++;
		if (one.explained[blk] || !two.nonzero)
			j->live_blocks++;
		else if (unsteady_now(&one, &two, three.nonzero ? &three : NULL, blk))
			j->unsteady_blocks++;
		else if (!two.nonzero[blk] || two.explained[blk] ||
			 two.hash[blk] != one.hash[blk] ||
			 (three.nonzero && three.explained[blk]))
			j->live_blocks++;
		else
			j->old_blocks++;
	}
	j->block_size = jl->bsize;
	j->present = j->read = rc == 0;
	j->error = -rc;
	pass_free(&one);
	pass_free(&two);
	pass_free(&three);
	free(big);
	free(held);
	return rc;
}
