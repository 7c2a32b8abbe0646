// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for the test suites, never installed: holds fstrim-ext
 * in the open of the Nth filesystem it works on, between choosing that
 * filesystem and opening it, so that a test can change the mount there or
 * signal the command there (tests/test_helper/workload.bash drives it).
 *
 *   FSTRIM_EXT_PAUSE_AT=N     hold the Nth open of a filesystem root: an
 *                             openat2 through syscall(2), or the open(2)
 *                             or openat(2) with O_DIRECTORY | O_NOFOLLOW
 *                             that stands in for it where openat2 fails
 *   FSTRIM_EXT_PAUSE_DIR=DIR  two FIFOs that the test keeps open for
 *                             reading and writing while the command runs:
 *     DIR/reached  the shim writes "PID N PATH\n" once it holds there
 *     DIR/release  a byte written there, or the test closing it, lets
 *                  the open go on
 *
 * The hold is a ppoll() entered with SIGINT and SIGTERM blocked until
 * then: a signal sent once the test has read the line is taken inside the
 * ppoll, which a signal always interrupts, even under the command's
 * SA_RESTART handlers. So a held command still ends on SIGINT or SIGTERM
 * as it would at that point of a run, and a test that dies (its ends of
 * the FIFOs closed) never leaves it held. Without a reader on DIR/reached
 * (no test waiting) there is no hold.
 *
 * It also makes one FITRIM fail, for the tests of what follows a failed
 * trim. fstrim-ext makes each FITRIM in a child process of its own, so
 * the calls are counted in a file that every process appends to:
 *
 *   FSTRIM_EXT_FITRIM_LOG=FILE  one byte appended to FILE for each FITRIM
 *   FSTRIM_EXT_FAIL_FITRIM=N    the Nth FITRIM of the run (the Nth byte of
 *                               FILE) fails with EIO, without the kernel
 *
 * And it brings a stop signal at a chosen call, for what a stop during
 * the journal checkpoint leaves:
 *
 *   FSTRIM_EXT_SIGTERM_AT=REQUEST  SIGTERM is raised as the first ioctl
 *                               REQUEST (a number, 0x... allowed) is
 *                               made, just before the call itself
 */
#undef _FORTIFY_SOURCE /* open() is defined here, not wrapped inline */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/fs.h>
#include <unistd.h>

typedef long (*syscall_fn)(long, ...);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*ioctl_fn)(int, unsigned long, ...);

/* filesystem root opens seen so far */
static long opens_seen;
/* an openat2 of this path failed: the open() that follows is the same one */
static char fallback_path[PATH_MAX];

static void *next_symbol(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (!fn) {
		fprintf(stderr, "pause.so: no %s after the shim\n", name);
		abort();
	}
	return fn;
}

static int open_fifo(const char *dir, const char *name, int flags)
{
	static open_fn real_open;
	char path[PATH_MAX];

	if (!real_open)
		real_open = (open_fn)next_symbol("open");
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -1;
	return real_open(path, flags | O_NONBLOCK | O_CLOEXEC);
}

/* Hold until the test releases us, goes away, or a signal is taken. */
static void hold(const char *path)
{
	const char *dir = getenv("FSTRIM_EXT_PAUSE_DIR");
	int saved_errno = errno;
	struct pollfd release = { .fd = -1, .events = POLLIN };
	sigset_t stop, old;
	char line[PATH_MAX + 64];
	int reached = -1, len;

	if (!dir)
		return;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &old);

	/*
	 * release first: the test holds it open while it waits on reached,
	 * so its end is there now and closing it later wakes us.
	 */
	release.fd = open_fifo(dir, "release", O_RDONLY);
	/* ENXIO: nobody reads reached, no test to hold us for */
	reached = open_fifo(dir, "reached", O_WRONLY);
	if (release.fd < 0 || reached < 0)
		goto out;
	len = snprintf(line, sizeof(line), "%ld %ld %s\n", (long)getpid(), opens_seen,
		       path);
	if (len < 0 || len >= (int)sizeof(line) ||
	    write(reached, line, (size_t)len) != len)
		goto out;
	close(reached);
	reached = -1;
	/* returns on a byte, on the test's end closing, or -1 EINTR on a signal */
	ppoll(&release, 1, NULL, &old);
out:
	if (reached >= 0)
		close(reached);
	if (release.fd >= 0)
		close(release.fd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = saved_errno;
}

static void root_open(const char *path)
{
	const char *at = getenv("FSTRIM_EXT_PAUSE_AT");

	opens_seen++;
	if (at && strtol(at, NULL, 10) == opens_seen)
		hold(path);
}

/* the fallback open of a path whose openat2 failed is not counted again */
static void fallback_open(const char *path, int flags)
{
	if ((flags & (O_DIRECTORY | O_NOFOLLOW)) != (O_DIRECTORY | O_NOFOLLOW))
		return;
	if (fallback_path[0] && strcmp(fallback_path, path) == 0) {
		fallback_path[0] = '\0';
		return;
	}
	root_open(path);
}

long syscall(long number, ...)
{
	static syscall_fn real_syscall;
	long a[6], rc;
	va_list ap;
	int i;

	if (!real_syscall)
		real_syscall = (syscall_fn)next_symbol("syscall");
	va_start(ap, number);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number != SYS_openat2)
		return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);

	root_open((const char *)a[1]);
	rc = real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	fallback_path[0] = '\0';
	if (rc < 0 && (errno == ENOSYS || errno == EPERM) &&
	    strlen((const char *)a[1]) < sizeof(fallback_path))
		strcpy(fallback_path, (const char *)a[1]);
	return rc;
}

/* open() and openat() alike: both go to the next openat() */
static int forward_open(int dirfd, const char *path, int flags, mode_t mode)
{
	static openat_fn real_openat;

	if (!real_openat)
		real_openat = (openat_fn)next_symbol("openat");
	fallback_open(path, flags);
	return real_openat(dirfd, path, flags, mode);
}

/* the mode argument of the caller, there only with O_CREAT or O_TMPFILE */
#define MODE_ARG(flags)                                            \
	({                                                         \
		va_list ap_;                                       \
		mode_t mode_ = 0;                                  \
		va_start(ap_, flags);                              \
		if ((flags) & (O_CREAT | O_TMPFILE))               \
			mode_ = (mode_t)va_arg(ap_, unsigned int); \
		va_end(ap_);                                       \
		mode_;                                             \
	})

int open(const char *path, int flags, ...)
{
	return forward_open(AT_FDCWD, path, flags, MODE_ARG(flags));
}

int openat(int dirfd, const char *path, int flags, ...)
{
	return forward_open(dirfd, path, flags, MODE_ARG(flags));
}

/* Count this FITRIM in FSTRIM_EXT_FITRIM_LOG; true when it is the one to fail. */
static bool fitrim_fails(void)
{
	const char *log = getenv("FSTRIM_EXT_FITRIM_LOG");
	const char *fail = getenv("FSTRIM_EXT_FAIL_FITRIM");
	static open_fn real_open;
	struct stat st;
	int fd, rc;

	if (!log)
		return false;
	if (!real_open)
		real_open = (open_fn)next_symbol("open");
	/* O_APPEND: the size after the write is this call's number */
	fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	rc = write(fd, "x", 1) == 1 && fstat(fd, &st) == 0;
	close(fd);
	return rc && fail && strtol(fail, NULL, 10) == (long)st.st_size;
}

/* Whether this is the first call of FSTRIM_EXT_SIGTERM_AT's request. */
static bool sigterm_at(unsigned long request)
{
	static bool raised;
	const char *at = getenv("FSTRIM_EXT_SIGTERM_AT");

	if (raised || !at || strtoul(at, NULL, 0) != request)
		return false;
	raised = true;
	return true;
}

int ioctl(int fd, unsigned long request, ...)
{
	static ioctl_fn real_ioctl;
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real_ioctl)
		real_ioctl = (ioctl_fn)next_symbol("ioctl");
	if (request == FITRIM && fitrim_fails()) {
		errno = EIO;
		return -1;
	}
	if (sigterm_at(request))
		raise(SIGTERM);
	return real_ioctl(fd, request, arg);
}
