// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for the test suites, never installed: a device that
 * does not read discarded blocks back the same way twice, as some drives
 * answer a read of a block they were told to discard.
 *
 *   FSTRIM_EXT_UNSTEADY=DEV:START:LEN:MODE
 *       every O_DIRECT pread(2)/pread64(2) of DEV (a path, compared with
 *       /proc/self/fd/N) returns, in the bytes of START .. START+LEN-1 it
 *       covers, a pattern that is not zero: with MODE "each" another one
 *       at every read; with MODE "once" one at the first read that covers
 *       them and another at every read after it (a block a writer took
 *       between two reads reads the same way from then on). Reads without
 *       O_DIRECT (libext2fs's) are left alone.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "fd-is.h"

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

/* reads of the range so far */
static unsigned long long reads;

static void unsteady(int fd, unsigned char *buf, size_t got, off_t off)
{
	const char *spec = getenv("FSTRIM_EXT_UNSTEADY");
	unsigned long long start, len, lo, hi, at;
	char dev[PATH_MAX], mode[8];
	int flags = fcntl(fd, F_GETFL);
	uint64_t word;

	if (!spec || flags < 0 || !(flags & O_DIRECT) ||
	    sscanf(spec, "%4095[^:]:%llu:%llu:%7s", dev, &start, &len, mode) != 4 ||
	    !is_dev(fd, dev))
		return;
	lo = (unsigned long long)off > start ? (unsigned long long)off : start;
	hi = (unsigned long long)off + got < start + len ? (unsigned long long)off + got :
							   start + len;
	if (lo >= hi)
		return;
	reads++;
	word = 0x5a5a5a5a00000000ULL |
	       (strcmp(mode, "once") == 0 ? (reads == 1 ? 1 : 2) : reads);
	for (at = lo; at < hi; at += sizeof(word))
		memcpy(buf + (at - (unsigned long long)off), &word,
		       hi - at < sizeof(word) ? hi - at : sizeof(word));
}

static ssize_t unsteady_pread(const char *name, int fd, void *buf, size_t len, off_t off)
{
	pread_fn real = (pread_fn)dlsym(RTLD_NEXT, name);
	ssize_t got = real(fd, buf, len, off);

	if (got > 0)
		unsteady(fd, buf, (size_t)got, off);
	return got;
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	return unsteady_pread("pread", fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	return unsteady_pread("pread64", fd, buf, len, off);
}
