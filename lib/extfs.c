// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ext4 as the steps and the audit read it: the one way they open it with
 * libext2fs, and how its FITRIM reads a request.
 */
#include <errno.h>

#include "extfs.h"

int extfs_open(const char *path, int flags, ext2_filsys *fs)
{
	errcode_t err;

	*fs = NULL;
	err = ext2fs_open(path, flags | EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			  0, 0, unix_io_manager, fs);
	if (!err)
		return 0;
	/* the unix io manager passes errno values through; libext2fs's own are larger */
	return err < 4096 ? -(int)err : -EUCLEAN;
}

void ext4_trim_span(unsigned int block_bits, uint64_t first_data_block,
		    uint64_t blocks_count, const struct fstrim_range *r, uint64_t *first,
		    uint64_t *end)
{
	uint64_t s = r->start >> block_bits, e = s + (r->len >> block_bits) - 1;

	*first = *end = 0;
	if (s >= blocks_count || r->len < (1ULL << block_bits))
		return;
	if (e >= blocks_count - 1)
		e = blocks_count - 1;
	if (e <= first_data_block)
		return;
	*first = s > first_data_block ? s : first_data_block;
	*end = e + 1;
}

uint64_t ext4_trim_min_blocks(unsigned int block_bits, unsigned int cluster_bits,
			      uint64_t discard_granularity, uint64_t minlen)
{
	uint64_t ratio = 1ULL << cluster_bits;

	if (minlen < discard_granularity)
		minlen = discard_granularity;
	return ((minlen >> block_bits) + ratio - 1) / ratio * ratio;
}
