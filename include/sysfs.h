/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_SYSFS_H
#define FSTRIM_EXT_SYSFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read a number from the sysfs file @path. Returns 0 or -errno. */
int sysfs_read_u64(const char *path, uint64_t *val);

/*
 * Read a number from an attribute of a block device in sysfs, e.g.
 * "queue/discard_granularity" of /sys/dev/block/MAJ:MIN. Returns 0 or
 * -errno.
 */
int sysfs_blkdev_read_u64(dev_t dev, const char *attr, uint64_t *val);

/*
 * The discard granularity of the block device @dev, in bytes: its disk's
 * for a partition. Returns 0 or -errno.
 */
int sysfs_discard_granularity(dev_t dev, uint64_t *val);

/*
 * The kernel's name of a block device ("loop0", "sda1", "dm-0"), which
 * keys /sys/fs/ext4/ and /proc/fs/ext4/. Returns 0 or -errno.
 */
int sysfs_blkdev_name(dev_t dev, char *name, size_t size);

#endif
