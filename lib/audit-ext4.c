// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ext4 backend of the audit: its journal (lib/audit-jbd2.c), its
 * directories (lib/audit-dirents.c), and its free space, read from the
 * block bitmap with libext2fs and from the allocator's free extents with
 * FS_IOC_GETFSMAP; after FITRIM, the read back of what it discarded and
 * of what it could not reach.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>
#include <linux/magic.h>

#include "audit.h"
#include "audit-alloc.h"
#include "audit-jbd2.h"
#include "audit-read.h"
#include "extfs.h"
#include "remnants.h"
#include "stack.h"

/* ---- free space --------------------------------------------------------- */

/*
 * The block bitmap of @fs as the disk holds it now: one read before is
 * dropped (libext2fs would keep it), and the read bypasses libext2fs's
 * block cache, which may hold bitmap blocks of that read. The group
 * descriptors stay those read at the open. Returns 0, or -EIO with no
 * bitmap left.
 */
static int bitmap_now(ext2_filsys fs)
{
	errcode_t err;

	if (fs->block_map) {
		ext2fs_free_block_bitmap(fs->block_map);
		fs->block_map = NULL;
	}
	err = io_channel_set_options(fs->io, "cache=off");
	if (!err)
		err = ext2fs_read_block_bitmap(fs);
	io_channel_set_options(fs->io, "cache=on");
	if (err && fs->block_map) {
		ext2fs_free_block_bitmap(fs->block_map);
		fs->block_map = NULL;
	}
	return err ? -EIO : 0;
}

/*
 * Keep of @l the blocks still free in the bitmap of @fs, read by
 * bitmap_now() after @l was read, and return how many. A writer
 * allocates a block (in the bitmap) before it writes it, so a block that
 * read back with data and is still free held it before: not a writer's
 * new data. Where the bitmap could not be read, all are kept.
 */
static uint64_t still_free(ext2_filsys fs, struct block_list *l)
{
	size_t i, n = 0;

	if (!fs->block_map)
		return l->count;
	for (i = 0; i < l->count; i++) {
		if (ext2fs_test_block_bitmap2(fs->block_map, l->v[i]))
			continue;
		l->sum[n] = l->sum[i];
		l->v[n++] = l->v[i];
	}
	l->count = n;
	return n;
}

/* The shortest free extent FITRIM with @minlen discards, in blocks (at least 1). */
static uint64_t trim_minimum(ext2_filsys fs, uint32_t discard_granularity,
			     uint64_t minlen)
{
	uint64_t n = ext4_trim_min_blocks(fs->super->s_log_block_size + 10,
					  (unsigned int)fs->cluster_ratio_bits,
					  discard_granularity, minlen);

	return n ? n : 1;
}

/* The blocks [*first, *end) FITRIM walks for its range @start, @len. */
static void trim_span(ext2_filsys fs, uint64_t start, uint64_t len, blk64_t *first,
		      blk64_t *end)
{
	struct fstrim_range r = { .start = start, .len = len };
	uint64_t f, e;

	ext4_trim_span(fs->super->s_log_block_size + 10, fs->super->s_first_data_block,
		       ext2fs_blocks_count(fs->super), &r, &f, &e);
	*first = f;
	*end = e;
}

/* audit_scan's found(): note the block, for still_free() */
static int found_free_block(void *arg, uint64_t blk, const unsigned char *data)
{
	(void)data;
	return blocks_add(arg, blk, NULL, 0);
}

/*
 * Read all the free space the block bitmap shows, with O_DIRECT, and
 * count the free blocks that are not zero: deleted contents, or older
 * metadata, that FITRIM did not reach (no discard, not run, extents
 * below the discard granularity or the minimum, a device that ignores
 * discard).
 */
static int read_free_space(int fd, ext2_filsys fs, const struct audit_device *data,
			   struct audit_free *f, const struct audit_progress *progress)
{
	const char *devpath = data->path;
	struct storage_stack below;
	uint64_t bsize = fs->blocksize, offset = 0;
	blk64_t start = fs->super->s_first_data_block,
		end = ext2fs_blocks_count(fs->super);
	struct block_list found = { 0 };
	struct audit_scan sc;
	int rc;

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
	audit_scan_begin(&sc, bsize, f,
			 &(struct audit_read){ .what = "audit: reading free space",
					       .total = f->free_bytes },
			 progress);
	sc.found = found_free_block;
	sc.arg = &found;
	/* as a reader of the disk reads it: below dm-crypt, a discard's zeroes */
	if (stack_describe(data->devno, &below) == 0 && below.kind == STACK_MAPPED) {
		devpath = below.bottom;
		offset = below.offset;
	}
	rc = audit_scan_device_at(&sc, devpath, offset);
	for (blk64_t b = start; b < end && !rc;) {
		blk64_t z, s;

		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end - 1, &z))
			break;
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, z, end - 1, &s))
			s = end;
		rc = audit_scan_extent(&sc, z, s);
		b = s;
	}
	rc = audit_scan_end(&sc, rc);
	if (!rc && found.count)
		bitmap_now(fs);
	if (!rc)
		f->nonzero_blocks = still_free(fs, &found);
	/* why FITRIM left them, where the device can discard at all */
	if (!rc && f->nonzero_blocks && data->known && data->discard_max_bytes)
		audit_alloc_classify(
			fd, fs, trim_minimum(fs, data->discard_granularity, 0) * bsize,
			&found, f);
	blocks_free(&found);
	return rc;
}

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

/*
 * The ext4 part of audit_fs(), after the kernel and the device: the
 * journal, the directories and the free space.
 */
static int audit_ext4(int fd, struct audit_result *out,
		      const struct audit_progress *progress)
{
	ext2_filsys fs = NULL;
	int rc, bitmap_rc;

	if (!out->data.path)
		return -ENODEV;

	rc = extfs_open(out->data.path, 0, &fs);
	if (rc)
		return rc;

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
			rc = out->journal_dev.path ?
				     internal_layout(fs, out->data.path, &jl) :
				     -ENOMEM;
		}
		if (!rc)
			rc = scan_journal(&jl, fs,
					  &(struct free_now){ audit_alloc_map, &fd },
					  &out->journal, progress);
		layout_free(&jl);
		out->journal.error = -rc;
		out->journal.read = rc == 0;
	}

	rc = audit_dirents(fs, &out->dirents,
			   "audit: reading the directories, inode tables", progress);
	out->dirents.error = -rc;
	rc = bitmap_rc ? bitmap_rc :
			 read_free_space(fd, fs, &out->data, &out->free, progress);
	out->free.error = -rc;
	out->free.read = rc == 0;
	out->free.block_size = fs->blocksize;
	audit_free_space(out, fs->blocksize);
	ext2fs_close_free(&fs);
	return 0;
}

/*
 * A read back of free space on the filesystem open at @fd: its device,
 * libext2fs on it, the read (begun by free_reader_begin()), the blocks
 * found holding data, and where the read is told.
 */
struct free_reader {
	struct audit_device dev;
	/* where the blocks are read: below the device's mapping, or the device */
	char *readpath;
	uint64_t offset;
	ext2_filsys fs;
	struct audit_scan scan;
	bool begun;
	struct audit_free *out;
	struct block_list found;
	const char *what;
	const struct audit_progress *progress;
};

static int free_reader_open(struct free_reader *r, int fd, struct audit_free *out,
			    const char *what, const struct audit_span *span,
			    const struct audit_progress *progress)
{
	struct stat st;
	int rc;

	memset(r, 0, sizeof(*r));
	r->out = out;
	r->what = what;
	r->progress = progress;
	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0)
		return -errno;
	audit_describe_device(st.st_dev, &r->dev);
	if (!r->dev.path || !r->dev.known)
		return -ENODEV;
	rc = extfs_open(r->dev.path, 0, &r->fs);
	if (rc)
		return rc;
	out->block_size = r->fs->blocksize;
	/* as a reader of the disk reads it: below a crypt layer, a discard's zeroes */
	if (span->below && span->below->kind == STACK_MAPPED) {
		r->readpath = strdup(span->below->bottom);
		if (!r->readpath)
			return -ENOMEM;
		r->offset = span->below->offset;
	}
	return 0;
}

/* audit_scan's found(): keep the block and a sum of what it held */
static int found_marked(void *arg, uint64_t blk, const unsigned char *data)
{
	struct free_reader *r = arg;

	return blocks_add(&r->found, blk, data, r->fs->blocksize);
}

/*
 * The read through [@first, @end) in blocks begins, on its device;
 * free_reader_close() ends it.
 */
static int free_reader_begin(struct free_reader *r, blk64_t first, blk64_t end)
{
	uint64_t bsize = r->fs->blocksize;

	audit_scan_begin(&r->scan, bsize, r->out,
			 &(struct audit_read){ .what = r->what,
					       .at = true,
					       .done = first * bsize,
					       .total = end * bsize },
			 r->progress);
	r->scan.found = found_marked;
	r->scan.arg = r;
	r->begun = true;
	return audit_scan_device_at(&r->scan, r->readpath ? r->readpath : r->dev.path,
				    r->offset);
}

/*
 * End the read free_reader_begin() began, keep of what @r found the
 * blocks still free, hand them to *@marks (when asked and there are
 * any), release the rest. Returns @rc, or the error of the read's end.
 */
static int free_reader_close(struct free_reader *r, int rc, struct audit_free *out,
			     struct audit_free_marks **marks)
{
	if (r->begun)
		rc = audit_scan_end(&r->scan, rc);
	if (!rc && r->found.count)
		bitmap_now(r->fs);
	if (!rc)
		out->nonzero_blocks = still_free(r->fs, &r->found) + r->found.over;
	if (!rc && r->found.count && marks) {
		*marks = calloc(1, sizeof(**marks));
		if (*marks) {
			(*marks)->backend = &audit_ext4_backend;
			(*marks)->devpath = r->dev.path;
			(*marks)->readpath = r->readpath;
			(*marks)->offset = r->offset;
			r->readpath = NULL;
			(*marks)->bsize = r->fs->blocksize;
			(*marks)->unit = r->dev.discard_granularity;
			(*marks)->unit_align = r->dev.discard_alignment;
			(*marks)->blocks = r->found;
			r->dev.path = NULL;
			memset(&r->found, 0, sizeof(r->found));
		}
	}
	blocks_free(&r->found);
	out->read = rc == 0;
	out->error = -rc;
	free(r->readpath);
	free(r->dev.path);
	if (r->fs)
		ext2fs_close_free(&r->fs);
	return rc;
}

/* Read [@z, @hi) of the free space, marking the blocks with data. */
static int read_marking(struct free_reader *r, blk64_t z, blk64_t hi)
{
	r->out->free_bytes += (hi - z) * r->fs->blocksize;
	return audit_scan_extent(&r->scan, z, hi);
}

/* read_marking() of the parts of [@z, @hi) in the block groups @span names. */
static int read_in_groups(struct free_reader *r, blk64_t z, blk64_t hi,
			  const struct audit_span *span)
{
	blk64_t first = r->fs->super->s_first_data_block;
	blk64_t per = r->fs->super->s_blocks_per_group;
	int rc = 0;

	if (!span->groups)
		return read_marking(r, z, hi);
	while (!rc && z < hi) {
		uint64_t g = (z - first) / per;
		blk64_t e = first + (g + 1) * per;

		if (e > hi)
			e = hi;
		/* a group the read set does not know is read */
		if (g >= span->ngroups || span->groups[g])
			rc = read_marking(r, z, e);
		z = e;
	}
	return rc;
}

/* ext4's part of audit_free_readback(). */
static int ext4_readback(int fd, const struct audit_span *span, struct audit_free *out,
			 struct audit_free_marks **marks,
			 const struct audit_progress *progress)
{
	struct audit_alloc w = { 0 };
	struct free_reader r;
	blk64_t first, end, z, e;
	uint64_t min;
	ext2_filsys fs;
	int rc;

	rc = free_reader_open(&r, fd, out, "reading back the free space", span, progress);
	if (rc)
		return free_reader_close(&r, rc, out, NULL);
	fs = r.fs;
	min = trim_minimum(fs, r.dev.discard_granularity, span->minlen);
	trim_span(fs, span->start, span->len, &first, &end);
	rc = free_reader_begin(&r, first, end);
	/* the extents FITRIM discarded: the allocator's, not the disk's bitmap (struct audit_alloc) */
	if (!rc)
		rc = audit_alloc_open(&w, fd, fs);
	while (!rc && (rc = audit_alloc_next(&w, &z, &e)) == 0) {
		/* what lies in the range FITRIM was given */
		if (z < first)
			z = first;
		if (e > end)
			e = end;
		/*
		 * ext4 discarded all of an extent at least its minimum long,
		 * and all of it is read: a device that erases only whole
		 * units of its discard granularity leaves the ends, and what
		 * they hold is found, not assumed gone
		 */
		if (e > z && e - z >= min)
			rc = read_in_groups(&r, z, e, span);
	}
	if (rc == 1)
		rc = 0;
	audit_alloc_close(&w);
	return free_reader_close(&r, rc, out, marks);
}

/* ext4's part of audit_free_unreachable(). */
static int ext4_unreachable(int fd, const struct audit_span *span, struct audit_free *out,
			    struct audit_free_marks **marks,
			    const struct audit_progress *progress)
{
	struct audit_alloc w = { 0 };
	blk64_t a = 0, b = 0, pos, end;
	struct free_reader r;
	bool walked = false;
	uint64_t min;
	int rc;

	*marks = NULL;
	rc = free_reader_open(&r, fd, out, "reading the free space FITRIM cannot reach",
			      span, progress);
	if (!rc)
		rc = ext2fs_read_block_bitmap(r.fs) ? -EIO : 0;
	if (!rc)
		rc = audit_alloc_open(&w, fd, r.fs);
	if (rc)
		return free_reader_close(&r, rc, out, NULL);
	min = trim_minimum(r.fs, r.dev.discard_granularity, span->minlen);
	out->short_below = min * r.fs->blocksize;
	out->short_below_gran = out->short_below == r.dev.discard_granularity;
	trim_span(r.fs, span->start, span->len, &pos, &end);
	rc = free_reader_begin(&r, pos, end);
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
				rc = audit_alloc_next(&w, &a, &b);
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
			if (!(a <= z && z < b) || b - a < min)
				rc = read_in_groups(&r, z, stop, span);
			z = stop;
		}
		pos = s;
	}
	audit_alloc_close(&w);
	min *= r.fs->blocksize;
	rc = free_reader_close(&r, rc, out, marks);
	if (*marks)
		(*marks)->gran = min;
	return rc;
}

/*
 * Keep of @l, read again for audit_free_recheck(), the blocks still free
 * (to the allocator, for the read back's marks: it had them free; and in
 * the bitmap of @fs, read after), and give their count in *@n.
 */
static int keep_still_free(int fd, ext2_filsys fs, const struct audit_free_marks *marks,
			   struct block_list *l, uint64_t *n)
{
	int rc = 0;

	*n = 0;
	if (!l->count)
		return 0;
	if (!marks->gran)
		rc = audit_alloc_keep_free(fd, fs, l);
	if (!rc)
		*n = still_free(fs, l);
	return rc;
}

/* ext4's part of audit_free_recheck(). */
static int ext4_recheck(int fd, struct audit_free_marks *marks, struct audit_free *out)
{
	struct block_list *l = &marks->blocks, unsteady = { 0 };
	size_t span = marks->bsize > DIRECT_ALIGN ? marks->bsize : DIRECT_ALIGN;
	ext2_filsys fs = NULL;
	unsigned char *buf;
	uint64_t left;
	size_t i, n = 0;
	int dev, rc = 0;

	dev = audit_direct_open(marks->readpath ? marks->readpath : marks->devpath, span,
				&buf);
	if (dev < 0)
		return dev;
	for (i = 0; i < l->count && !rc; i++) {
		/* O_DIRECT reads whole aligned pieces: the one holding the block */
		uint64_t at = marks->offset + l->v[i] * marks->bsize;
		uint64_t piece = at / DIRECT_ALIGN * DIRECT_ALIGN;

		rc = audit_block_reread(dev, buf, span, piece, at - piece, marks->bsize,
					l->sum[i]);
		/*
		 * Unsteady counts only where a discard covered the block: one
		 * FITRIM cannot reach was never discarded, and a writer may
		 * be filling it (a preallocation's) between the two reads.
		 */
		if (rc == AUDIT_REREAD_UNSTEADY && !marks->gran)
			rc = blocks_add(&unsteady, l->v[i], NULL, 0);
		else if (rc == AUDIT_REREAD_SAME) {
			l->sum[n] = l->sum[i];
			l->v[n++] = l->v[i];
		} else if (rc > 0)
			rc = 0;
	}
	close(dev);
	free(buf);
	/* one bitmap, read after the blocks were, judges both lists below */
	if (!rc && (unsteady.count || n)) {
		rc = extfs_open(marks->devpath, 0, &fs);
		if (!rc)
			bitmap_now(fs);
	}
	/* a writer's block changes from read to read too: only those still free */
	if (!rc)
		rc = keep_still_free(fd, fs, marks, &unsteady, &out->unsteady_blocks);
	blocks_free(&unsteady);
	if (rc)
		goto out;
	l->count = n;
	out->short_blocks = out->held_blocks = 0;
	out->classified = false;
	/*
	 * What FITRIM discarded and still holds data counts only where the
	 * allocator still has it free; where FITRIM could not reach, why
	 * (the allocator's view now).
	 */
	rc = keep_still_free(fd, fs, marks, l, &left);
	if (rc)
		goto out;
	out->nonzero_blocks = left + l->over;
	out->part_unit_blocks = 0;
	out->discard_unit = marks->unit;
	if (marks->gran && l->count)
		audit_alloc_classify(fd, fs, marks->gran, l, out);
	else if (l->count && marks->unit > marks->bsize)
		/* a hint only: a failure leaves it 0, not a failed read */
		audit_alloc_part_units(fd, fs, marks, l, &out->part_unit_blocks);
out:
	if (fs)
		ext2fs_close_free(&fs);
	return rc;
}

const struct audit_backend audit_ext4_backend = {
	.magic = EXT4_SUPER_MAGIC,
	.audit = audit_ext4,
	.readback = ext4_readback,
	.unreachable = ext4_unreachable,
	.recheck = ext4_recheck,
};
