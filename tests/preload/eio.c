// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for the test suites, never installed: reads of a byte
 * range of one device fail with EIO, as a failing disk's would, so that
 * a test can show what fstrim-ext says of a read it could not make.
 *
 *   FSTRIM_EXT_EIO=DEV:START:LEN  every pread(2)/pread64(2) of DEV (a path,
 *                                 compared with /proc/self/fd/N) that
 *                                 overlaps bytes START .. START+LEN-1 fails
 *                                 with EIO, and so does a read(2) there
 *                                 (libext2fs's unix io manager reads again
 *                                 with lseek and read when pread fails).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*read_fn)(int, void *, size_t);

static bool fails(int fd, off_t off, size_t len)
{
	const char *spec = getenv("FSTRIM_EXT_EIO");
	char dev[PATH_MAX], link[64], path[PATH_MAX];
	unsigned long long start, count;
	ssize_t n;

	if (!spec || sscanf(spec, "%4095[^:]:%llu:%llu", dev, &start, &count) != 3)
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = '\0';
	if (strcmp(path, dev))
		return false;
	return (unsigned long long)off < start + count &&
	       (unsigned long long)off + len > start;
}

static ssize_t eio_pread(const char *name, int fd, void *buf, size_t len, off_t off)
{
	pread_fn real = (pread_fn)dlsym(RTLD_NEXT, name);

	if (fails(fd, off, len)) {
		errno = EIO;
		return -1;
	}
	return real(fd, buf, len, off);
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	return eio_pread("pread", fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	return eio_pread("pread64", fd, buf, len, off);
}

ssize_t read(int fd, void *buf, size_t len)
{
	read_fn real = (read_fn)dlsym(RTLD_NEXT, "read");
	off_t off;

	if (getenv("FSTRIM_EXT_EIO")) {
		off = lseek(fd, 0, SEEK_CUR);
		if (off >= 0 && fails(fd, off, len)) {
			errno = EIO;
			return -1;
		}
	}
	return real(fd, buf, len);
}
