// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chkpt-probe - issue one journal checkpoint ioctl and print its answer
 *
 * Used inside the User-Mode Linux guest of `make check-kernel`, where the
 * answers that fstrim-ext turns into messages (or never reaches, because
 * it refuses first) must be seen raw:
 *
 *   chkpt-probe chkpt-jrnl PATH FLAGS   FS_IOC_CHKPT_JRNL with __u64 FLAGS
 *   chkpt-probe checkpoint PATH FLAGS   EXT4_IOC_CHECKPOINT with __u32 FLAGS
 *   chkpt-probe shutdown PATH           EXT4_IOC_SHUTDOWN, no log flush: the
 *                                       journal is left as after a crash
 *   chkpt-probe poweroff STATUS         set the UML host exit status, halt
 *
 * The ioctl commands print "0" or the errno name (EPERM, ENOTTY, ...) and
 * exit 0 when the ioctl succeeded, 1 when it failed, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/reboot.h>
#include <unistd.h>

#include "ext4-ioctl.h"

/* fs/ext4/ext4.h, not in the UAPI headers of Linux 6.1 */
#ifndef EXT4_IOC_SHUTDOWN
#define EXT4_IOC_SHUTDOWN _IOR('X', 125, __u32)
#endif
#define EXT4_GOING_FLAGS_NOLOGFLUSH 0x2

static int usage(void)
{
	fputs("usage: chkpt-probe chkpt-jrnl|checkpoint PATH FLAGS\n"
	      "       chkpt-probe shutdown PATH\n"
	      "       chkpt-probe poweroff STATUS\n",
	      stderr);
	return 2;
}

static int print_answer(int rc)
{
	const char *name;

	if (rc == 0) {
		puts("0");
		return 0;
	}
	name = strerrorname_np(errno);
	if (name)
		puts(name);
	else
		printf("errno %d\n", errno);
	return 1;
}

static int probe(const char *which, const char *path, const char *flags_arg)
{
	unsigned long long flags;
	char *end;
	int fd, rc;

	errno = 0;
	flags = strtoull(flags_arg, &end, 0);
	if (errno || *end || end == flags_arg)
		return usage();

	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "chkpt-probe: %s: %s\n", path, strerror(errno));
		return 2;
	}

	if (strcmp(which, "shutdown") == 0) {
		__u32 arg = EXT4_GOING_FLAGS_NOLOGFLUSH;

		rc = ioctl(fd, EXT4_IOC_SHUTDOWN, &arg);
	} else if (strcmp(which, "chkpt-jrnl") == 0) {
		__u64 arg = flags;

		rc = ioctl(fd, FS_IOC_CHKPT_JRNL, &arg);
	} else {
		__u32 arg = (__u32)flags;

		rc = ioctl(fd, EXT4_IOC_CHECKPOINT, &arg);
	}
	rc = print_answer(rc);
	close(fd);
	return rc;
}

/* Only meaningful as PID 1 of a UML guest: /proc/exitcode is UML's. */
static int poweroff(const char *status)
{
	FILE *f = fopen("/proc/exitcode", "w");

	if (f) {
		fputs(status, f);
		fclose(f);
	}
	sync();
	reboot(RB_POWER_OFF);
	fprintf(stderr, "chkpt-probe: reboot: %s\n", strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 &&
	    (strcmp(argv[1], "chkpt-jrnl") == 0 || strcmp(argv[1], "checkpoint") == 0))
		return probe(argv[1], argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "shutdown") == 0)
		return probe(argv[1], argv[2], "0");
	if (argc == 3 && strcmp(argv[1], "poweroff") == 0)
		return poweroff(argv[2]);
	return usage();
}
