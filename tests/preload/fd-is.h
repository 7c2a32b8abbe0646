/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_PRELOAD_FD_IS_H
#define FSTRIM_EXT_PRELOAD_FD_IS_H

/* What the test shims of tests/preload share; never installed. */

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Whether @fd is open on the path @dev. */
static inline bool is_dev(int fd, const char *dev)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = '\0';
	return strcmp(path, dev) == 0;
}

#endif
