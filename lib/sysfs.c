// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Block device attributes in sysfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sysfs.h"

int sysfs_read_u64(const char *path, uint64_t *val)
{
	char buf[64];
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EINVAL;
	buf[len] = '\0';
	*val = strtoull(buf, NULL, 10);
	return 0;
}

int sysfs_blkdev_read_u64(dev_t dev, const char *attr, uint64_t *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s", major(dev), minor(dev),
		 attr);
	return sysfs_read_u64(path, val);
}

int sysfs_discard_granularity(dev_t dev, uint64_t *val)
{
	char path[64];

	/* a partition has no queue of its own: its disk's applies */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", major(dev),
		 minor(dev));
	return sysfs_blkdev_read_u64(dev,
				     access(path, F_OK) == 0 ?
					     "../queue/discard_granularity" :
					     "queue/discard_granularity",
				     val);
}

int sysfs_blkdev_name(dev_t dev, char *name, size_t size)
{
	char sysdir[64], link[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(sysdir, sizeof(sysdir), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	n = readlink(sysdir, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (strlen(base) >= size)
		return -ENAMETOOLONG;
	strcpy(name, base);
	return 0;
}
