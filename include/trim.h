/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_TRIM_H
#define FSTRIM_EXT_TRIM_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/fs.h>

/*
 * Open the root of a chosen filesystem for the ioctls, without
 * following symbolic links, and check the descriptor itself: it must be
 * the root of the mount @mnt_id (when > 0) and of a filesystem on @dev
 * (when not 0). Returns a descriptor, or -ESTALE when the mount is no
 * longer the one chosen, or -errno.
 */
int fs_open_root(const char *path, int mnt_id, dev_t dev);

/*
 * FITRIM over @range (copied, the kernel rewrites it). Returns 0 and
 * the bytes the kernel discarded, 1 when the filesystem or device
 * cannot discard, or -errno.
 */
int trim_fs(int fd, const struct fstrim_range *range, uint64_t *trimmed);

#endif
