/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_AUDIT_ALLOC_H
#define FSTRIM_EXT_AUDIT_ALLOC_H

/*
 * ext4's allocator seen from user space (lib/audit-alloc.c), for the ext4
 * backend of the audit: its free extents, and what a list of blocks read
 * back has to do with them. Not an interface of the library.
 */

#include <stdbool.h>
#include <stdint.h>

#include <ext2fs/ext2fs.h>

#include "audit.h"
#include "audit-read.h"

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
struct audit_alloc {
	int fd;
	struct fsmap_head *head;
	unsigned int next; /* the next record of head to look at */
	bool done; /* head holds the kernel's last record */
	uint64_t bsize;
	blk64_t first_data, per_group;
	blk64_t start, end; /* what is left of the current free record */
};

/*
 * Start @w at the first free extent of the filesystem open at @fd (@fs
 * gives its geometry). Returns 0, or -errno (a kernel without GETFSMAP
 * for ext4, before 4.12).
 */
int audit_alloc_open(struct audit_alloc *w, int fd, ext2_filsys fs);
void audit_alloc_close(struct audit_alloc *w);

/*
 * The next free extent [*start, *end) of the allocator, within one group.
 * Returns 0, 1 when there is none, or -errno.
 */
int audit_alloc_next(struct audit_alloc *w, blk64_t *start, blk64_t *end);

/*
 * struct free_now's map(): a bitmap of @fs marking the allocator's free
 * blocks (@arg points to the descriptor), for the journal's judgement.
 */
int audit_alloc_map(void *arg, ext2_filsys fs, ext2fs_block_bitmap *map);

/*
 * Keep of @l (ascending) the blocks the allocator counts as free now.
 * On a filesystem in use a block of free space read back with old data
 * may have been taken by a writer since: allocated before its new data
 * is written home (with data=journal, until the checkpoint), it is no
 * longer free space, and FITRIM rightly skipped it. The disk's bitmap
 * cannot tell: it is written home only at a checkpoint. Returns 0, or
 * -errno.
 */
int audit_alloc_keep_free(int fd, ext2_filsys fs, struct block_list *l);

/*
 * Of @l (ascending), discarded and still holding data, how many lie in a
 * unit of the device's discard granularity (@marks->unit, the first at
 * @marks->unit_align) that the allocator's free extent around them does
 * not cover whole, in *@part: FITRIM discards the extent, the parts of
 * units at its ends with it, and a device that erases whole units only
 * keeps those. Returns 0, or -errno (*@part 0).
 */
int audit_alloc_part_units(int fd, ext2_filsys fs, const struct audit_free_marks *marks,
			   const struct block_list *l, uint64_t *part);

/*
 * Why FITRIM did not erase the blocks of @l (ascending), free on the disk
 * and holding data: counted in @f->short_blocks when the allocator's free
 * extent around one is shorter than @min bytes (FITRIM's minimum, the
 * discard granularity), in @f->held_blocks when the allocator does not
 * count it as free at all. Returns 0 with @f->classified set, or -errno.
 */
int audit_alloc_classify(int fd, ext2_filsys fs, uint64_t min, const struct block_list *l,
			 struct audit_free *f);

#endif
