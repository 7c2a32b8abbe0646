// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * remnants-steps: run a sequence of flush, trim and journal steps on a
 * mounted filesystem, for bench/remnants. Not installed.
 *
 *   remnants-steps MOUNTPOINT STEPS
 *
 * STEPS is a string of letters run in order:
 *   s  syncfs()                      t  FITRIM over the whole filesystem
 *   S  sync()                        c  EXT4_IOC_CHECKPOINT with DISCARD
 *   f  fsync() of MOUNTPOINT         z  EXT4_IOC_CHECKPOINT with ZEROOUT
 *   w  sleep one second
 * "tc" is "FITRIM then checkpoint"; "stct" is the order fstrim-ext uses.
 * Exit status: 0, 1 when a step failed (named on stderr), 2 on usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/fs.h>

#include "ext4-ioctl.h"

static int run_step(int fd, char step)
{
	struct fstrim_range range = { .start = 0, .len = (__u64)-1, .minlen = 0 };
	__u32 flags;

	switch (step) {
	case 's':
		return syncfs(fd);
	case 'S':
		sync();
		return 0;
	case 'f':
		return fsync(fd);
	case 'w':
		sleep(1);
		return 0;
	case 't':
		return ioctl(fd, FITRIM, &range);
	case 'c':
		flags = EXT4_IOC_CHECKPOINT_FLAG_DISCARD;
		return ioctl(fd, EXT4_IOC_CHECKPOINT, &flags);
	case 'z':
		flags = EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT;
		return ioctl(fd, EXT4_IOC_CHECKPOINT, &flags);
	default:
		errno = EINVAL;
		return -1;
	}
}

int main(int argc, char **argv)
{
	const char *p;
	int fd;

	if (argc != 3 || !*argv[2] || strspn(argv[2], "sSfwtcz") != strlen(argv[2])) {
		fprintf(stderr, "usage: %s MOUNTPOINT STEPS (letters of sSfwtcz)\n",
			argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	for (p = argv[2]; *p; p++) {
		if (run_step(fd, *p) != 0) {
			fprintf(stderr, "%s: %s: step '%c': %s\n", argv[0], argv[1], *p,
				strerror(errno));
			close(fd);
			return 1;
		}
	}
	close(fd);
	return 0;
}
