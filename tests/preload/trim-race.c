// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for tests/cost.bats, never installed: a block group
 * that ext4 marks trimmed over a block freed while FITRIM walked it, as
 * ext4_try_to_trim_range() can leave it (it lets go of the group lock
 * during its walk and marks the group when the walk ends).
 *
 *   TRIM_RACE_FILE=PATH        a file of the filesystem, in the group
 *   TRIM_RACE_GROUP=START:LEN  the group, in bytes of the filesystem
 *
 * A FITRIM over that group alone (the command calls FITRIM group by
 * group) runs, and then, while PATH exists, PATH is deleted and the
 * deletion committed: its blocks are freed behind the walk. Every later
 * FITRIM over that group alone discards nothing and says so, as the
 * kernel does for a group it marked trimmed. A FITRIM over more than the
 * group runs as asked. Whether PATH exists is the shim's memory, which
 * the children that make the command's FITRIM calls share.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/fs.h>

typedef int (*ioctl_fn)(int, unsigned long, ...);

static ioctl_fn real(void)
{
	static ioctl_fn fn;

	if (!fn) {
		fn = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
		if (!fn) {
			fprintf(stderr, "trim-race.so: no ioctl after the shim\n");
			abort();
		}
	}
	return fn;
}

/* Whether @r covers the group and nothing past it (but the odd byte ext4 ignores). */
static bool group_alone(const struct fstrim_range *r)
{
	const char *g = getenv("TRIM_RACE_GROUP");
	uint64_t start, len;

	if (!g || sscanf(g, "%" SCNu64 ":%" SCNu64, &start, &len) != 2)
		return false;
	return r->start >= start && r->start < start + len && r->len <= len + 1 &&
	       r->start + r->len <= start + len + 1;
}

int ioctl(int fd, unsigned long request, ...)
{
	const char *file = getenv("TRIM_RACE_FILE");
	struct fstrim_range *r;
	va_list ap;
	void *arg;
	int rc, err;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	r = arg;
	if (request != FITRIM || !file || !group_alone(r))
		return real()(fd, request, arg);
	if (access(file, F_OK) != 0) {
		r->len = 0;
		return 0;
	}
	rc = real()(fd, request, arg);
	err = errno;
	if (unlink(file) != 0 || syncfs(fd) != 0) {
		fprintf(stderr, "trim-race.so: cannot delete %s: %m\n", file);
		abort();
	}
	errno = err;
	return rc;
}
