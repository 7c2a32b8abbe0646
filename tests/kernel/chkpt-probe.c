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
 *   chkpt-probe shutdown PATH [GOING]   EXT4_IOC_SHUTDOWN with GOING (default
 *                                       2, no log flush: the journal is left
 *                                       as after a crash; 0 freezes, syncs
 *                                       and leaves the journal live)
 *   chkpt-probe poweroff STATUS         set the UML host exit status, halt
 *   chkpt-probe checkpoints PATH N PROGRESS
 *                                       N EXT4_IOC_CHECKPOINTs, alternating
 *                                       flag DISCARD and no flag, the round
 *                                       reached written to file PROGRESS
 *   chkpt-probe fsync-loop DIR COUNT STOP
 *                                       rewrite and fsync DIR/f0 to f9 in
 *                                       turn until file STOP exists, the
 *                                       number done written to file COUNT
 *   chkpt-probe trim-race DIR DEVICE HOLES
 *                                       on the fresh ext4 without a journal
 *                                       mounted on DIR (one block group, on
 *                                       DEVICE): a victim file, then a file
 *                                       of 2*HOLES blocks with every other
 *                                       block punched out; a FITRIM in a
 *                                       child, and the victim deleted while
 *                                       it runs; then a second FITRIM. Prints
 *                                       whether the delete fell inside the
 *                                       first FITRIM, the bytes each trimmed
 *                                       and how many victim blocks still hold
 *                                       their data (read with O_DIRECT)
 *
 * poweroff does not sync: a filesystem hung by a test would hang it; the
 * caller syncs first (guest_poweroff in guest-setup.sh).
 *
 * The ioctl commands print "0" or the errno name (EPERM, ENOTTY, ...) and
 * exit 0 when the ioctl succeeded, 1 when it failed, 2 on a usage error.
 * The loops are here rather than in shell so that each round costs one
 * system call, not a fork and an exec, which are slow under UML: the race
 * they are for needs many rounds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ext4-ioctl.h"

/* fs/ext4/ext4.h, not in the UAPI headers of Linux 6.1 */
#ifndef EXT4_IOC_SHUTDOWN
#define EXT4_IOC_SHUTDOWN _IOR('X', 125, __u32)
#endif

static int usage(void)
{
	fputs("usage: chkpt-probe chkpt-jrnl|checkpoint PATH FLAGS\n"
	      "       chkpt-probe shutdown PATH [GOING]\n"
	      "       chkpt-probe poweroff STATUS\n"
	      "       chkpt-probe checkpoints PATH N PROGRESS\n"
	      "       chkpt-probe fsync-loop DIR COUNT STOP\n"
	      "       chkpt-probe trim-race DIR DEVICE HOLES\n",
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
		__u32 arg = (__u32)flags;

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

/*
 * note FILE TEXT: FILE holds TEXT and nothing else, replaced whole (written
 * to FILE.new and renamed), so that a reader never sees it empty; best effort
 */
static void note(const char *file, const char *text)
{
	char tmp[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.new", file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) == (ssize_t)strlen(text))
		rename(tmp, file);
	close(fd);
}

static int checkpoints(const char *path, const char *n_arg, const char *progress)
{
	char text[128], *end;
	unsigned long n, i;
	__u32 flags;
	int fd, rc = 0;

	errno = 0;
	n = strtoul(n_arg, &end, 10);
	if (errno || *end || end == n_arg || n == 0)
		return usage();
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "chkpt-probe: %s: %s\n", path, strerror(errno));
		return 2;
	}
	for (i = 1; i <= n && rc == 0; i++) {
		snprintf(text, sizeof(text),
			 "checkpoint %lu of %lu issued, %lu returned\n", i, n, i - 1);
		note(progress, text);
		flags = i % 2 ? EXT4_IOC_CHECKPOINT_FLAG_DISCARD : 0;
		rc = ioctl(fd, EXT4_IOC_CHECKPOINT, &flags);
	}
	if (rc == 0) {
		snprintf(text, sizeof(text), "all %lu checkpoints returned\n", n);
		note(progress, text);
	} else {
		fprintf(stderr, "chkpt-probe: checkpoint %lu: ", i - 1);
	}
	rc = print_answer(rc);
	close(fd);
	return rc;
}

static int fsync_loop(const char *dir, const char *count, const char *stop)
{
	char name[4096], text[64];
	unsigned long i;
	struct stat st;
	int fd;

	for (i = 0; stat(stop, &st) != 0; i++) {
		snprintf(name, sizeof(name), "%s/f%lu", dir, i % 10);
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		snprintf(text, sizeof(text), "row %lu\n", i);
		if (fd < 0 || write(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
			fprintf(stderr, "chkpt-probe: %s: %s\n", name, strerror(errno));
			return 1;
		}
		close(fd);
		snprintf(text, sizeof(text), "%lu\n", i + 1);
		note(count, text);
	}
	return 0;
}

/* Only meaningful as PID 1 of a UML guest: /proc/exitcode is UML's. */
static int poweroff(const char *status)
{
	FILE *f = fopen("/proc/exitcode", "w");

	if (f) {
		fputs(status, f);
		fclose(f);
	}
	reboot(RB_POWER_OFF);
	fprintf(stderr, "chkpt-probe: reboot: %s\n", strerror(errno));
	return 1;
}

#define RACE_VICTIM_BLOCKS 64

/* write_blocks: N blocks of BYTE to a new file PATH, synced; its fd */
static int write_blocks(const char *path, long n, int byte, long bsize)
{
	char *buf = malloc(bsize);
	int fd;
	long i;

	if (!buf)
		return -1;
	memset(buf, byte, bsize);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	for (i = 0; fd >= 0 && i < n; i++) {
		if (write(fd, buf, bsize) != bsize) {
			close(fd);
			fd = -1;
		}
	}
	free(buf);
	if (fd >= 0 && fsync(fd) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static long long fitrim(const char *dir)
{
	struct fstrim_range range = { .start = 0, .len = UINT64_MAX, .minlen = 0 };
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	int rc;

	if (fd < 0)
		return -1;
	rc = ioctl(fd, FITRIM, &range);
	close(fd);
	return rc == 0 ? (long long)range.len : -1;
}

/*
 * The race of ext4_try_to_trim_range(): a block freed behind the walk while
 * the group lock is dropped for a discard. The victim is written first, so
 * it lies below every punched hole, where the walk has already been when
 * the delete lands; the holes make the walk long (one discard each). The
 * group's trimmed bit then decides whether the second FITRIM trims the
 * victim's blocks.
 */
static int trim_race(const char *dir, const char *device, const char *holes_arg)
{
	long bsize = sysconf(_SC_PAGESIZE), holes = atol(holes_arg), i;
	char victim[4096], holes_path[4096], *buf = NULL;
	unsigned long blocks[RACE_VICTIM_BLOCKS], lowest_hole = ~0UL;
	long long second;
	int fd, dev, status, left = 0, mid_walk;
	pid_t child;
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	if (holes <= 0)
		return usage();
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(holes_path, sizeof(holes_path), "%s/holes", dir);
	fd = write_blocks(victim, RACE_VICTIM_BLOCKS, 0xab, bsize);
	if (fd < 0)
		goto fail;
	for (i = 0; i < RACE_VICTIM_BLOCKS; i++) {
		int b = i;

		if (ioctl(fd, FIBMAP, &b) != 0 || b == 0)
			goto fail;
		blocks[i] = b;
	}
	close(fd);
	fd = write_blocks(holes_path, 2 * holes, 0xcd, bsize);
	if (fd < 0)
		goto fail;
	for (i = 0; i < 2 * holes; i += 2) {
		int b = i;

		if (ioctl(fd, FIBMAP, &b) != 0 || b == 0)
			goto fail;
		if ((unsigned long)b < lowest_hole)
			lowest_hole = b;
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, i * bsize,
			      bsize) != 0)
			goto fail;
	}
	close(fd);
	for (i = 0; i < RACE_VICTIM_BLOCKS; i++) {
		if (blocks[i] >= lowest_hole) {
			fprintf(stderr,
				"trim-race: victim block %lu is not below the holes (%lu)\n",
				blocks[i], lowest_hole);
			return 1;
		}
	}
	sync();

	child = fork();
	if (child < 0)
		goto fail;
	if (child == 0)
		_exit(fitrim(dir) < 0 ? 1 : 0);
	nanosleep(&pause, NULL);
	if (unlink(victim) != 0)
		goto fail;
	mid_walk = waitpid(child, &status, WNOHANG) == 0;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		goto fail;
	second = fitrim(dir);
	if (second < 0)
		goto fail;

	dev = open(device, O_RDONLY | O_DIRECT);
	if (dev < 0 || posix_memalign((void **)&buf, bsize, bsize) != 0)
		goto fail;
	for (i = 0; i < RACE_VICTIM_BLOCKS; i++) {
		long j;

		if (pread(dev, buf, bsize, (off_t)blocks[i] * bsize) != bsize)
			goto fail;
		for (j = 0; j < bsize && buf[j] == 0; j++)
			;
		left += j < bsize;
	}
	close(dev);
	free(buf);
	printf("delete inside the first FITRIM: %s; second FITRIM trimmed %lld bytes; "
	       "victim blocks still holding data: %d of %d\n",
	       mid_walk ? "yes" : "no", second, left, RACE_VICTIM_BLOCKS);
	return 0;
fail:
	perror("trim-race");
	free(buf);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 &&
	    (strcmp(argv[1], "chkpt-jrnl") == 0 || strcmp(argv[1], "checkpoint") == 0))
		return probe(argv[1], argv[2], argv[3]);
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "shutdown") == 0)
		return probe(argv[1], argv[2], argc == 4 ? argv[3] : "2");
	if (argc == 3 && strcmp(argv[1], "poweroff") == 0)
		return poweroff(argv[2]);
	if (argc == 5 && strcmp(argv[1], "checkpoints") == 0)
		return checkpoints(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "fsync-loop") == 0)
		return fsync_loop(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "trim-race") == 0)
		return trim_race(argv[2], argv[3], argv[4]);
	return usage();
}
