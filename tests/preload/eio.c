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
 *   FSTRIM_EXT_EIO_NTH=DEV:N        the Nth read of DEV in the process (1
 *                                 is the first; pread, pread64 and read
 *                                 alike) fails with EIO, and so does every
 *                                 later read of DEV that overlaps the bytes
 *                                 it asked for: a bad sector stays bad.
 *                                 N = 0 fails none. With
 *                                 FSTRIM_EXT_EIO_LOG=FILE each read of DEV
 *                                 appends "N OFFSET LENGTH" to FILE, so that
 *                                 a test knows how many reads a run makes.
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

#include "fd-is.h"

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*read_fn)(int, void *, size_t);

static bool overlaps(unsigned long long off, size_t len, unsigned long long start,
		     unsigned long long count)
{
	return off < start + count && off + len > start;
}

/* FSTRIM_EXT_EIO_NTH: the reads of the device so far, and the bad range once set */
static unsigned long long nth_reads, bad_start, bad_count;
static bool bad_set;

static bool fails_nth(int fd, off_t off, size_t len)
{
	const char *spec = getenv("FSTRIM_EXT_EIO_NTH"),
		   *log = getenv("FSTRIM_EXT_EIO_LOG");
	char dev[PATH_MAX];
	unsigned long long nth;
	FILE *f;

	if (!spec || sscanf(spec, "%4095[^:]:%llu", dev, &nth) != 2 || !is_dev(fd, dev))
		return false;
	nth_reads++;
	if (log && (f = fopen(log, "a"))) {
		fprintf(f, "%llu %llu %zu\n", nth_reads, (unsigned long long)off, len);
		fclose(f);
	}
	if (nth && nth_reads == nth && !bad_set) {
		bad_set = true;
		bad_start = (unsigned long long)off;
		bad_count = len ? len : 1;
	}
	return bad_set && overlaps((unsigned long long)off, len, bad_start, bad_count);
}

static bool fails(int fd, off_t off, size_t len)
{
	const char *spec = getenv("FSTRIM_EXT_EIO");
	char dev[PATH_MAX];
	unsigned long long start, count;

	if (fails_nth(fd, off, len))
		return true;
	if (!spec || sscanf(spec, "%4095[^:]:%llu:%llu", dev, &start, &count) != 3)
		return false;
	if (!is_dev(fd, dev))
		return false;
	return overlaps((unsigned long long)off, len, start, count);
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

	if (getenv("FSTRIM_EXT_EIO") || getenv("FSTRIM_EXT_EIO_NTH")) {
		off = lseek(fd, 0, SEEK_CUR);
		if (off >= 0 && fails(fd, off, len)) {
			errno = EIO;
			return -1;
		}
	}
	return real(fd, buf, len);
}
