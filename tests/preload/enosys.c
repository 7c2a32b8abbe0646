// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for tests/differential.bats, never installed: every
 * FITRIM fails with ENOSYS, as it does on a FUSE filesystem (bindfs and
 * the like) under kernels without "fuse: ioctl: translate ENOSYS". Any
 * other ioctl goes to the C library. Preloaded into fstrim and fstrim-ext
 * alike (fstrim-ext's FITRIM runs in a child, which inherits it).
 *
 *   FITRIM_ERRNO=N   fail with errno N instead (the journal step's test
 *                    compares ENOSYS with EOPNOTSUPP); 0: succeed and
 *                    discard nothing, as a device that ignores discard
 *                    looks to the filesystem (tests/journal.bats)
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/fs.h>

typedef int (*ioctl_fn)(int, unsigned long, ...);

int ioctl(int fd, unsigned long request, ...)
{
	static ioctl_fn real_ioctl;
	const char *want = getenv("FITRIM_ERRNO");
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (request == FITRIM) {
		errno = want ? (int)strtol(want, NULL, 10) : ENOSYS;
		if (!errno) {
			((struct fstrim_range *)arg)->len = 0;
			return 0;
		}
		return -1;
	}
	if (!real_ioctl) {
		real_ioctl = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
		if (!real_ioctl) {
			fprintf(stderr, "enosys.so: no ioctl after the shim\n");
			abort();
		}
	}
	return real_ioctl(fd, request, arg);
}
