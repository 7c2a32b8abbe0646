/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_SYSFS_H
#define FSTRIM_EXT_SYSFS_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Read a number from an attribute of a block device in sysfs, e.g.
 * "queue/discard_granularity" of /sys/dev/block/MAJ:MIN. Returns 0 or
 * -errno.
 */
int sysfs_blkdev_read_u64(dev_t dev, const char *attr, uint64_t *val);

#endif
