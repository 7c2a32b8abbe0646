/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_EXTFS_H
#define FSTRIM_EXT_EXTFS_H

#include <stdint.h>
#include <linux/fs.h>

#include <ext2fs/ext2fs.h>

/*
 * Open the ext4 on the device node @path read-only with libext2fs, as
 * every reader of a mounted filesystem here does: it changes under us,
 * so a checksum that does not match is no reason to stop, and the
 * 64-bit flag lets large filesystems be opened. @flags adds to those
 * (EXT2_FLAG_SUPER_ONLY for the superblock alone).
 * Returns 0, or -errno: a read that failed with its errno, -EUCLEAN for
 * what libext2fs refuses (no ext4 there, a damaged superblock).
 */
int extfs_open(const char *path, int flags, ext2_filsys *fs);

/*
 * How ext4_trim_fs() reads a FITRIM request, for the trims in ranges and
 * for the checks that read back what a FITRIM discarded. On an ext4 of
 * @blocks_count blocks of 1 << @block_bits bytes whose first data block
 * is @first_data_block: the blocks [*first, *end) its walk covers (none
 * when equal).
 */
void ext4_trim_span(unsigned int block_bits, uint64_t first_data_block,
		    uint64_t blocks_count, const struct fstrim_range *r, uint64_t *first,
		    uint64_t *end);

/*
 * The shortest free extent, in blocks, that ext4's FITRIM with minimum
 * @minlen bytes discards: @minlen in whole blocks (rounded down), or the
 * device's @discard_granularity when @minlen is below it, rounded up to
 * whole clusters of 1 << @cluster_bits blocks.
 */
uint64_t ext4_trim_min_blocks(unsigned int block_bits, unsigned int cluster_bits,
			      uint64_t discard_granularity, uint64_t minlen);

#endif
