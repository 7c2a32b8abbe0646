// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ext4's allocator seen from user space: its free extents, which FITRIM
 * walks, as FS_IOC_GETFSMAP reports them, and what a list of blocks read
 * back has to do with them (include/audit-alloc.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/fsmap.h>

#include "audit-alloc.h"

/* GETFSMAP records asked for at a time */
#define FSMAP_BATCH 512

static int alloc_free_fill(struct audit_alloc *w)
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

int audit_alloc_open(struct audit_alloc *w, int fd, ext2_filsys fs)
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

void audit_alloc_close(struct audit_alloc *w)
{
	free(w->head);
	w->head = NULL;
}

int audit_alloc_next(struct audit_alloc *w, blk64_t *start, blk64_t *end)
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

int audit_alloc_map(void *arg, ext2_filsys fs, ext2fs_block_bitmap *map)
{
	struct audit_alloc w;
	blk64_t s, e;
	int rc;

	if (ext2fs_allocate_block_bitmap(fs, "free now", map)) {
		*map = NULL;
		return -ENOMEM;
	}
	rc = audit_alloc_open(&w, *(int *)arg, fs);
	while (!rc && (rc = audit_alloc_next(&w, &s, &e)) == 0)
		ext2fs_mark_block_bitmap_range2(*map, s, (unsigned int)(e - s));
	audit_alloc_close(&w);
	return rc == 1 ? 0 : rc;
}

/*
 * Call @fn with the index of each block of @l (ascending) and the
 * allocator's free extent [@s, @e) around it, or @s == @e when the
 * allocator does not count it as free now. Returns 0, or -errno.
 */
static int alloc_free_each(int fd, ext2_filsys fs, const struct block_list *l,
			   void (*fn)(const struct block_list *l, size_t i, blk64_t s,
				      blk64_t e, void *arg),
			   void *arg)
{
	struct audit_alloc w;
	blk64_t s = 0, e = 0;
	size_t i = 0;
	int rc;

	rc = audit_alloc_open(&w, fd, fs);
	while (!rc && i < l->count) {
		blk64_t b = l->v[i];

		if (b < s || b < e) {
			fn(l, i++, b < s ? 0 : s, b < s ? 0 : e, arg);
		} else {
			rc = audit_alloc_next(&w, &s, &e);
			/* no free extent after: none of the rest is free */
			if (rc == 1) {
				s = e = UINT64_MAX;
				rc = 0;
			}
		}
	}
	audit_alloc_close(&w);
	return rc;
}

/* What audit_alloc_keep_free() keeps with: @l, and how many so far. */
struct keep {
	struct block_list *l;
	size_t n;
};

static void keep_block(const struct block_list *l, size_t i, blk64_t s, blk64_t e,
		       void *arg)
{
	struct keep *k = arg;

	if (s == e)
		return;
	k->l->sum[k->n] = l->sum[i];
	k->l->v[k->n++] = l->v[i];
}

int audit_alloc_keep_free(int fd, ext2_filsys fs, struct block_list *l)
{
	struct keep k = { .l = l };
	int rc;

	rc = alloc_free_each(fd, fs, l, keep_block, &k);
	if (!rc)
		l->count = k.n;
	return rc;
}

/* What audit_alloc_part_units() counts with. */
struct part_units {
	const struct audit_free_marks *marks;
	uint64_t count;
};

static void count_part_unit(const struct block_list *l, size_t i, blk64_t s, blk64_t e,
			    void *arg)
{
	struct part_units *p = arg;
	uint64_t bsize = p->marks->bsize;

	if (s != e && audit_in_part_unit(l->v[i] * bsize, p->marks->unit,
					 p->marks->unit_align, s * bsize, e * bsize))
		p->count++;
}

int audit_alloc_part_units(int fd, ext2_filsys fs, const struct audit_free_marks *marks,
			   const struct block_list *l, uint64_t *part)
{
	struct part_units p = { .marks = marks };
	int rc;

	rc = alloc_free_each(fd, fs, l, count_part_unit, &p);
	*part = rc ? 0 : p.count;
	return rc;
}

/* What audit_alloc_classify() counts with. */
struct classify {
	uint64_t min, bsize;
	struct audit_free *f;
};

static void classify_block(const struct block_list *l, size_t i, blk64_t s, blk64_t e,
			   void *arg)
{
	struct classify *c = arg;

	(void)l;
	(void)i;
	if (s == e)
		c->f->held_blocks++;
	else if ((e - s) * c->bsize < c->min)
		c->f->short_blocks++;
}

int audit_alloc_classify(int fd, ext2_filsys fs, uint64_t min, const struct block_list *l,
			 struct audit_free *f)
{
	struct classify c = { .min = min, .bsize = fs->blocksize, .f = f };
	int rc;

	rc = alloc_free_each(fd, fs, l, classify_block, &c);
	if (rc) {
		f->short_blocks = f->held_blocks = 0;
		return rc;
	}
	f->classified = true;
	return 0;
}
