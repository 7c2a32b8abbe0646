/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_EXTFS_H
#define FSTRIM_EXT_EXTFS_H

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

#endif
