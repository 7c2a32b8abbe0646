// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FITRIM, through a descriptor opened and checked once.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef HAVE_LINUX_OPENAT2_H
#include <linux/openat2.h>
#endif

#include <blkid.h>
#include <linux/magic.h>
#include <ext2fs/ext2fs.h>

#include "extfs.h"
#include "mounts.h"
#include "sysfs.h"
#include "trim.h"

static int open_nofollow(const char *path)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	int fd;

#if defined(HAVE_LINUX_OPENAT2_H) && HAVE_DECL_SYS_OPENAT2
	struct open_how how = {
		.flags = (unsigned int)flags,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	/* EPERM: a seccomp filter written before openat2 existed refuses it */
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd;
#endif
	/* older kernels: at least the last component is no link */
	fd = open(path, flags | O_NOFOLLOW);
	return fd;
}

int fs_open_root(const char *path, int mnt_id, dev_t dev)
{
	struct statx stx;
	int fd, err;

	fd = open_nofollow(path);
	if (fd < 0)
		return -errno;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE, &stx) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* from statx, or from fdinfo before Linux 5.8 */
	if (mnt_id > 0 && mounts_fd_mnt_id(fd) != mnt_id)
		goto changed;
	/*
	 * Mount IDs are reused: unmount the chosen filesystem, mount another
	 * at the same place, and it may get the same ID. The device does not
	 * come back with it.
	 */
	if (dev && makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev)
		goto changed;
	if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		goto changed;
	return fd;
changed:
	close(fd);
	return -ESTALE;
}

/*
 * What a failed FITRIM means, as util-linux fstrim 2.38.1 reads it: 1 when
 * the filesystem or device cannot discard, else -errno. ENOTTY: no FITRIM
 * in this filesystem; EOPNOTSUPP: none in its device; EBADF: a descriptor
 * the filesystem will not trim through; ENOSYS: FUSE (bindfs and the like)
 * on kernels without "fuse: ioctl: translate ENOSYS".
 */
static int fitrim_errno(int err)
{
	switch (err) {
	case EBADF:
	case ENOTTY:
	case EOPNOTSUPP:
	case ENOSYS:
		return 1;
	default:
		return -err;
	}
}

int trim_fs(int fd, const struct fstrim_range *range, uint64_t *trimmed)
{
	struct fstrim_range r = *range;

	*trimmed = 0;
	if (ioctl(fd, FITRIM, &r) != 0)
		return fitrim_errno(errno);
	*trimmed = r.len;
	return 0;
}

/* The ext4 geometry of @t from its device's superblock; false when not read. */
static bool ext4_geometry(struct trim_target *t, const struct statfs *sfs, dev_t dev)
{
	struct ext2_super_block *sb;
	uint64_t fsid;
	ext2_filsys fs;
	char *devname;
	uint32_t v[2];
	bool ok;
	int rc;

	if (sfs->f_type != EXT4_SUPER_MAGIC || !major(dev))
		return false;
	devname = blkid_devno_to_devname(dev);
	if (!devname)
		return false;
	rc = extfs_open(devname, EXT2_FLAG_SUPER_ONLY, &fs);
	free(devname);
	if (rc)
		return false;

	sb = fs->super;
	fsid = le64toh(*(const uint64_t *)sb->s_uuid) ^
	       le64toh(*(const uint64_t *)(sb->s_uuid + 8));
	memcpy(v, &sfs->f_fsid, sizeof(v));
	t->block_bits = (unsigned int)sb->s_log_block_size + 10;
	t->cluster_bits = ext2fs_has_feature_bigalloc(sb) ?
				  sb->s_log_cluster_size - sb->s_log_block_size :
				  0;
	t->first_data_block = sb->s_first_data_block;
	t->blocks_per_group = sb->s_blocks_per_group;
	t->blocks_count = ext2fs_blocks_count(sb);
	memcpy(t->uuid, sb->s_uuid, sizeof(t->uuid));
	t->mount_count = sb->s_mnt_count;
	t->mount_time = sb->s_mtime | (uint64_t)sb->s_mtime_hi << 32;
	ext2fs_close_free(&fs);
	ok = v[0] == (uint32_t)fsid && v[1] == (uint32_t)(fsid >> 32) &&
	     t->blocks_per_group && t->block_bits <= 16;
	if (ok && sysfs_blkdev_name(dev, t->sysfs_name, sizeof(t->sysfs_name)) != 0)
		t->sysfs_name[0] = '\0';
	if (ok)
		sysfs_discard_granularity(dev, &t->discard_granularity);
	return ok;
}

void trim_target_init(int fd, struct trim_target *t)
{
	struct statfs sfs;
	struct stat st;

	memset(t, 0, sizeof(*t));
	t->fd = fd;
	if (fstatfs(fd, &sfs) != 0)
		return;
	t->fs_type = (unsigned long)sfs.f_type;
	if (__builtin_mul_overflow((uint64_t)sfs.f_blocks, (uint64_t)sfs.f_frsize,
				   &t->fs_size))
		t->fs_size = 0;
	if (fstat(fd, &st) == 0)
		t->ext4 = ext4_geometry(t, &sfs, st.st_dev);
}

/*
 * ext4's minimum of the last FITRIM in clusters, which every call sets;
 * 0 when unknown.
 */
static uint64_t last_trim_minblks(const struct trim_target *t)
{
	char path[NAME_MAX + 64];
	uint64_t v = 0;

	if (!t->sysfs_name[0])
		return 0;
	snprintf(path, sizeof(path), "/sys/fs/ext4/%s/last_trim_minblks", t->sysfs_name);
	sysfs_read_u64(path, &v);
	return v;
}

/* The minimum extent ext4 will use for @minlen bytes, in clusters. */
static uint64_t ext4_minlen_clusters(const struct trim_target *geo, uint64_t minlen)
{
	return ext4_trim_min_blocks(geo->block_bits, geo->cluster_bits,
				    geo->discard_granularity, minlen) >>
	       geo->cluster_bits;
}

static uint64_t group_of(const struct trim_target *geo, uint64_t block)
{
	return (block - geo->first_data_block) / geo->blocks_per_group;
}

static uint64_t group_start(const struct trim_target *geo, uint64_t group)
{
	return geo->first_data_block + group * geo->blocks_per_group;
}

/*
 * ext4 marks a group trimmed when FITRIM's walk of it ends, and skips it
 * until a block of it is freed, unless the minimum is below the last
 * call's. The walk lets go of the group lock for each discard, so a
 * block freed meanwhile behind it (a commit's freed blocks reach the
 * allocator then) is marked trimmed with the group and no FITRIM
 * discards it. A first call with the largest minimum a group allows
 * (it discards only wholly free groups) makes the second one, with the
 * range's own minimum, walk every group again.
 */
int trim_fs_again(const struct trim_target *t, const struct fstrim_range *range,
		  uint64_t *trimmed)
{
	struct fstrim_range r = *range;
	int rc;

	if (t->ext4 && ext4_minlen_clusters(t, range->minlen) < t->blocks_per_group >>
			       t->cluster_bits) {
		r.minlen = t->blocks_per_group << t->block_bits;
		rc = trim_fs(t->fd, &r, trimmed);
		if (rc)
			return rc;
	}
	return trim_fs(t->fd, range, trimmed);
}

/* ---- FITRIM in a child process, so that a stop can cut a call short ---- */

/*
 * A FITRIM runs to its end once started unless its caller gets a fatal
 * signal: ext4 and btrfs check for one between free extents and then
 * return what they discarded so far, xfs after each batch of extents;
 * a signal that is caught, as the command catches SIGINT and SIGTERM to
 * report what was done, is not fatal. So the calls are made by a child
 * process, which the parent kills with SIGKILL to stop one. The request
 * lies in a page shared with the child: the kernel writes its answer
 * there as the call ends, before the killed child dies, and the parent
 * reads it.
 *
 * One child makes all the calls of a trim, one at a time as the parent
 * asks: with --journal, ext4 is trimmed a block group a call, and on a
 * filesystem of thousands of groups a fork for each cost far more than
 * the calls, nearly all of a steady run's time. The parent asks through
 * an eventfd, whose write cannot raise SIGPIPE whatever became of the
 * child; the child answers a byte down a pipe, whose end tells the
 * parent that it died. A child that dies between calls, to a signal
 * sent to the process group, is replaced before the next one.
 */
struct trim_call {
	struct fstrim_range range; /* read by the kernel; its answer is written back */
	int err; /* the call's errno, 0 when it succeeded */
	int returned; /* the child saw the call return */
	int quit; /* the child is to end instead of making a call */
};

struct trimmer {
	int fd;
	const struct trim_target *geo; /* where each call's answer is added, by group */
	int stop_fd; /* readable: cut the call short; -1 for none */
	unsigned long fs_type; /* statfs f_type: what the kernel's answer means */
	uint64_t fs_size; /* statfs f_blocks * f_frsize; 0 when unknown */
	struct trim_call *call; /* shared with the child; NULL: calls made here */
	pid_t worker; /* the child that makes the calls; 0: none yet */
	int ask_fd; /* eventfd: one more call for @worker to make */
	int done_fd; /* the read end of @worker's answers */
	/* called every TICK_MS while a child's call runs, for the progress line */
	trim_after_range_fn *tick;
	void *tick_arg;
	const struct trim_progress *prog;
};

#define TICK_MS 250

static void trimmer_init(struct trimmer *t, const struct trim_target *target, int stop_fd,
			 trim_after_range_fn *tick, void *tick_arg,
			 const struct trim_progress *prog)
{
	void *page;

	memset(t, 0, sizeof(*t));
	t->ask_fd = -1;
	t->done_fd = -1;
	t->fd = target->fd;
	t->geo = target;
	t->stop_fd = stop_fd;
	t->tick = tick;
	t->tick_arg = tick_arg;
	t->prog = prog;
	t->fs_type = target->fs_type;
	t->fs_size = target->fs_size;
	if (stop_fd < 0)
		return;
	page = mmap(NULL, sizeof(struct trim_call), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (page != MAP_FAILED)
		t->call = page;
}

/* Let the child go, or reap it after it died or was killed. */
static int worker_end(struct trimmer *t, int *status)
{
	uint64_t one = 1;
	int st = 0, rc = 0;

	if (t->worker > 0) {
		t->call->quit = 1;
		(void)!write(t->ask_fd, &one, sizeof(one));
	}
	if (t->ask_fd >= 0)
		close(t->ask_fd);
	if (t->done_fd >= 0)
		close(t->done_fd);
	t->ask_fd = t->done_fd = -1;
	if (t->worker > 0) {
		while (waitpid(t->worker, &st, 0) < 0) {
			if (errno != EINTR) {
				rc = -errno;
				break;
			}
		}
	}
	t->worker = 0;
	if (status)
		*status = st;
	return rc;
}

static void trimmer_fini(struct trimmer *t)
{
	(void)worker_end(t, NULL);
	if (t->call)
		munmap(t->call, sizeof(struct trim_call));
	t->call = NULL;
}

/*
 * The child: default dispositions, so that SIGINT and SIGTERM kill it
 * too; then a FITRIM each time @ask_fd is written, a byte down @done_fd
 * after each, until told to quit.
 */
static void __attribute__((noreturn))
run_worker(const struct trimmer *t, pid_t parent, const sigset_t *mask, int ask_fd,
	   int done_fd)
{
	uint64_t asked;
	struct sigaction sa;
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
		    sa.sa_handler != SIG_IGN)
			signal(sig, SIG_DFL);
	}
	/* a parent killed by a second signal takes its call along (if allowed) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	sigprocmask(SIG_SETMASK, mask, NULL);
	for (;;) {
		ssize_t n = read(ask_fd, &asked, sizeof(asked));

		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(asked) || t->call->quit)
			_exit(0);
		/* written here first, so that the kernel's answer lands without a fault */
		t->call->err = 0;
		if (ioctl(t->fd, FITRIM, &t->call->range) != 0)
			t->call->err = errno;
		t->call->returned = 1;
		if (write(done_fd, "", 1) != 1)
			_exit(1);
	}
}

/*
 * Start the child that makes the calls. Returns 0, or -errno of the
 * eventfd, the pipe or fork().
 */
static int worker_start(struct trimmer *t)
{
	pid_t parent = getpid(), pid;
	int ask, done[2], err;
	sigset_t all, old;

	ask = eventfd(0, EFD_CLOEXEC);
	if (ask < 0)
		return -errno;
	if (pipe2(done, O_CLOEXEC) != 0) {
		err = errno;
		close(ask);
		return -err;
	}
	t->call->quit = 0;
	/* no handler of ours runs in the child before it resets them */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid == 0) {
		close(done[0]);
		run_worker(t, parent, &old, ask, done[1]);
	}
	err = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(done[1]);
	if (pid < 0) {
		close(done[0]);
		close(ask);
		return -err;
	}
	t->worker = pid;
	t->ask_fd = ask;
	t->done_fd = done[0];
	return 0;
}

/*
 * No child to be had for want of files, processes or memory, or under a
 * seccomp filter that refuses fork: the call is made here.
 */
static bool no_child(int rc)
{
	return rc == -EMFILE || rc == -ENFILE || rc == -EAGAIN || rc == -ENOMEM ||
	       rc == -EPERM || rc == -ENOSYS;
}

/* True when the child is gone: its pipe reads EOF. */
static bool worker_gone(const struct trimmer *t)
{
	struct pollfd pfd = { .fd = t->done_fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/*
 * Wait for the child's answer on @done_fd, or its end; kill it when
 * @t->stop_fd becomes readable. Meanwhile @t->tick, if any, every TICK_MS.
 */
static bool wait_or_stop(const struct trimmer *t, int done_fd, pid_t pid)
{
	struct pollfd pfd[2] = {
		{ .fd = done_fd, .events = POLLIN },
		{ .fd = t->stop_fd, .events = POLLIN },
	};
	int n;

	for (;;) {
		n = poll(pfd, 2, t->tick ? TICK_MS : -1);
		if (n == 0) {
			/* its answer is for the stop between ranges, taken from @stop_fd here */
			(void)t->tick(t->prog, t->tick_arg);
			continue;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			kill(pid, SIGKILL);
			return false;
		}
		if (pfd[0].revents)
			return false;
		if (pfd[1].revents) {
			kill(pid, SIGKILL);
			return true;
		}
	}
}

static bool stop_asked(int stop_fd)
{
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };

	return stop_fd >= 0 && poll(&pfd, 1, 0) == 1;
}

/*
 * What the kernel wrote back into a call that was cut short, when it
 * says how much was discarded: ext4 and btrfs write the bytes discarded
 * until they saw the signal, xfs the length of the range whatever it did.
 * @sent is the length asked for, which an answer never equals on ext4
 * (see fitrim_request()).
 */
static uint64_t partial_trimmed(const struct trimmer *t, uint64_t sent)
{
	uint64_t len = t->call->range.len;

	if (len == sent)
		return 0;
	if (t->fs_type == EXT4_SUPER_MAGIC || t->fs_type == BTRFS_SUPER_MAGIC)
		return len;
	return 0;
}

/*
 * FITRIM over @r: through a child that @t->stop_fd can cut short, or
 * here when there is no stop descriptor or no child can be made.
 * Returns as trim_fs() does, the bytes discarded in *@trimmed; *@cut
 * tells that the call was cut short (0 returned: *@trimmed is what it
 * discarded before, as far as the kernel says).
 */
static int fitrim_call(struct trimmer *t, const struct fstrim_range *r, uint64_t *trimmed,
		       bool *cut)
{
	uint64_t one = 1;
	int status = 0, rc;
	ssize_t n = 0;
	bool stopped;
	char c;

	*cut = false;
	*trimmed = 0;
	if (!t->call)
		return trim_fs(t->fd, r, trimmed);
	/* one that died idle, to a signal sent to the process group */
	if (t->worker && worker_gone(t))
		(void)worker_end(t, NULL);
	if (!t->worker) {
		rc = worker_start(t);
		if (rc)
			return no_child(rc) ? trim_fs(t->fd, r, trimmed) : rc;
	}
	t->call->range = *r;
	t->call->err = 0;
	t->call->returned = 0;
	/* a child that dies now is seen below, as one that died in the call */
	(void)!write(t->ask_fd, &one, sizeof(one));
	stopped = wait_or_stop(t, t->done_fd, t->worker);
	while (!stopped && (n = read(t->done_fd, &c, 1)) < 0 && errno == EINTR)
		;
	/* no answer: the child ended, killed by us or by a signal to the process group */
	if (n != 1) {
		rc = worker_end(t, &status);
		if (rc)
			return rc;
	}
	if (t->call->returned) {
		if (t->call->err)
			return fitrim_errno(t->call->err);
		*trimmed = t->call->range.len;
		return 0;
	}
	if (!WIFSIGNALED(status))
		return -EIO;
	if (!stopped && !stop_asked(t->stop_fd))
		return -EINTR;
	*cut = true;
	*trimmed = partial_trimmed(t, r->len);
	return 0;
}

/*
 * The length to ask for: on ext4 one byte more than a multiple of 512,
 * which ext4 ignores (it counts whole blocks) and which its answer, in
 * whole blocks, never equals; so partial_trimmed() can tell an answer
 * from a request the kernel never answered.
 */
static uint64_t fitrim_request(const struct trimmer *t, uint64_t len)
{
	if (t->fs_type == EXT4_SUPER_MAGIC && !(len & 511))
		return len | 1;
	return len;
}

/* Add @trimmed to every group of @t->group_trimmed that [@start, +@len) covers. */
static void note_groups(const struct trim_target *geo, uint64_t start, uint64_t len,
			uint64_t trimmed)
{
	uint64_t first, last, end, g;

	if (!geo->group_trimmed || !geo->ext4 || !len)
		return;
	first = start >> geo->block_bits;
	end = start + len - 1 < start ? UINT64_MAX : start + len - 1;
	last = end >> geo->block_bits;
	if (first < geo->first_data_block)
		first = geo->first_data_block;
	if (last >= geo->blocks_count)
		last = geo->blocks_count - 1;
	if (first > last)
		return;
	for (g = group_of(geo, first); g <= group_of(geo, last); g++)
		geo->group_trimmed[g] += trimmed;
}

static int issue(struct trimmer *t, uint64_t start, uint64_t len, uint64_t minlen,
		 struct trim_progress *prog)
{
	struct fstrim_range r = {
		.start = start,
		.len = fitrim_request(t, len),
		.minlen = minlen,
	};
	uint64_t trimmed = 0;
	bool cut = false, stopped = stop_asked(t->stop_fd);
	int rc = stopped ? 0 : fitrim_call(t, &r, &trimmed, &cut);

	if (rc == 0)
		prog->trimmed += trimmed;
	if (rc == 0 && trimmed)
		note_groups(t->geo, start, len, trimmed);
	/* cut short, or not made at all for a stop asked before */
	if (cut || stopped) {
		prog->stopped = true;
		prog->cut = cut;
	}
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Each call is sized to take about this long: short enough that the
 * position reported and the progress line follow the trim closely, long
 * enough that groups already trimmed (microseconds each) go by in few
 * calls. The stop itself does not wait for a call to end (fitrim_call()).
 */
#define CALL_TARGET_NS (250ULL * 1000000ULL)

/* The number of groups for the next call, from the time the last one took. */
static uint64_t next_groups(uint64_t groups, uint64_t max, uint64_t took_ns)
{
	if (took_ns < CALL_TARGET_NS / 4 && groups < max)
		return groups > max / 2 ? max : groups * 2;
	if (took_ns > CALL_TARGET_NS && groups > 1)
		return groups / 2;
	return groups;
}

/*
 * Elsewhere than on ext4 the end of a request is what was asked for, by
 * default 2^64 - 1: report no more of it than the filesystem's size
 * (statfs), so that a trim cut short reads "at 0 B of 64 GiB", not "of
 * 16 EiB". btrfs takes FITRIM offsets in its logical address space,
 * which can pass that size: a request that starts there keeps its end.
 */
static void clamp_to_fs_size(const struct trimmer *t, struct trim_progress *prog)
{
	if (t->fs_size && prog->start < t->fs_size && prog->end > t->fs_size)
		prog->end = t->fs_size;
}

int trim_fs_steps(const struct trim_target *geo, const struct fstrim_range *range,
		  uint64_t step, int stop_fd, trim_after_range_fn *after, void *arg,
		  struct trim_progress *prog)
{
	uint64_t s, e_req, e, x, chunk_end, groups, max_groups, group_bytes;
	uint64_t restore_minlen = 0, t0, start = 0, end = 0, last_minblks;
	struct trimmer t;
	bool lowered, aligned;
	int rc = 0;

	trimmer_init(&t, geo, stop_fd, after, arg, prog);
	memset(prog, 0, sizeof(*prog));
	prog->start = range->start;
	prog->end = range->start + range->len < range->start ? UINT64_MAX :
							       range->start + range->len;

	if (!geo->ext4)
		goto one_call;

	/* the blocks a single FITRIM would cover */
	ext4_trim_span(geo->block_bits, geo->first_data_block, geo->blocks_count, range,
		       &x, &e);
	if (x == e)
		goto one_call;
	start = x << geo->block_bits;
	end = e << geo->block_bits;
	e--;
	s = range->start >> geo->block_bits;
	e_req = s + (range->len >> geo->block_bits) - 1;
	if (step == 0)
		goto one_call;
	prog->start = start;
	prog->end = end;

	group_bytes = geo->blocks_per_group << geo->block_bits;
	max_groups = step / group_bytes + (step % group_bytes != 0);
	/* the read back wants to know where FITRIM discarded: a group a call */
	if (!max_groups || geo->group_trimmed)
		max_groups = 1;
	/* from one group up, as fast as the device allows (next_groups()) */
	groups = 1;
	prog->pos = prog->start;

	/*
	 * ext4 skips a group it remembers as trimmed unless the minimum is
	 * lower than the last FITRIM's (last_trim_minblks), and every call
	 * sets that value. A single call with a lowered minimum so re-trims
	 * every such group; ranges would do it in the first range only. So
	 * after each range, a call over its whole groups with the old
	 * minimum, which finds them all trimmed and discards nothing, puts
	 * the old value back for the next range.
	 */
	last_minblks = last_trim_minblks(geo);
	lowered = last_minblks && ext4_minlen_clusters(geo, range->minlen) < last_minblks;
	if (lowered)
		restore_minlen = last_minblks << (geo->block_bits + geo->cluster_bits);

	while (x <= e) {
		uint64_t g = group_of(geo, x), first_full, start_byte, len;

		/* whole groups only: ext4 trims a free extent to its group's end, past the range */
		aligned = x == group_start(geo, g);
		first_full = aligned ? g : g + 1;
		chunk_end = group_start(geo, first_full + groups) - 1;
		if (!prog->ranges && chunk_end >= e)
			goto one_call;
		if (chunk_end >= e)
			chunk_end =
				e_req; /* the last: the kernel clamps as for one call */

		/* the first range starts where the request does, as the kernel rounds it */
		start_byte = prog->ranges ? x << geo->block_bits : range->start;
		len = (chunk_end - (prog->ranges ? x : s) + 1) << geo->block_bits;
		t0 = now_ns();
		rc = issue(&t, start_byte, len, range->minlen, prog);
		if (rc != 0 || prog->stopped)
			goto out;
		prog->ranges++;
		if (chunk_end >= e) {
			prog->pos = prog->end;
			break;
		}
		groups = next_groups(groups, max_groups, now_ns() - t0);
		if (lowered && first_full <= group_of(geo, chunk_end)) {
			bool cut = prog->cut;

			rc = issue(&t, group_start(geo, first_full) << geo->block_bits,
				   (chunk_end - group_start(geo, first_full) + 1)
					   << geo->block_bits,
				   restore_minlen, prog);
			/* the range was done all the same */
			prog->cut = cut;
			if (rc != 0)
				goto out;
		}
		x = chunk_end + 1;
		prog->pos = x << geo->block_bits;
		if (prog->stopped || (after && after(prog, arg))) {
			prog->stopped = true;
			goto out;
		}
	}
	if (after)
		after(prog, arg);
	goto out;

one_call:
	memset(prog, 0, sizeof(*prog));
	prog->start = range->start;
	prog->end = range->start + range->len < range->start ? UINT64_MAX :
							       range->start + range->len;
	/* on ext4, what the request covers of the filesystem, as for ranges */
	if (end) {
		prog->start = start;
		prog->end = end;
	} else {
		clamp_to_fs_size(&t, prog);
	}
	prog->pos = prog->start;
	prog->one_call = true;
	rc = issue(&t, range->start, range->len, range->minlen, prog);
	if (rc != 0 || prog->stopped)
		goto out;
	prog->ranges = 1;
	prog->pos = prog->end;
	if (after)
		after(prog, arg);
out:
	if (prog->cut)
		prog->ranges++;
	trimmer_fini(&t);
	return rc;
}
