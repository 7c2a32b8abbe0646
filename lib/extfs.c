// SPDX-License-Identifier: GPL-2.0-or-later
/* The one way the steps and the audit open an ext4 with libext2fs. */
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
