// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A disk whose discard does nothing, for the tests of the verified
 * erase: a FUSE filesystem with one file, "disk", whose contents are
 * those of an image file. A loop device on it offers discard (FUSE
 * has fallocate), and a discard reaches here as
 * fallocate(PUNCH_HOLE), which is acknowledged and ignored, as by
 * firmware that ignores TRIM: the old data reads back. ZERO_RANGE
 * (write-zeroes that may not unmap) writes zeroes.
 *
 * Usage: discard-ignored IMAGE MOUNTPOINT
 * It returns once MOUNTPOINT/disk is mounted (so a test waits for the
 * command, not for a time), and serves in the background until unmounted.
 * With DISCARD_IGNORED_LOG=FILE it appends a line to FILE for each
 * fallocate, "fallocate mode MODE off OFFSET len LENGTH", so that a test
 * can see the ranges discarded.
 *
 * With DISCARD_IGNORED_MODE=erase a discard does erase (the image's range
 * is punched out, reading zeroes), as on a device that honours it, so that
 * a test can tell what the filesystem never asked the device to discard.
 * With DISCARD_IGNORED_MODE=units it erases only the whole granules (below)
 * that a discard covers, and keeps the parts of those at its ends, as a
 * device that erases whole units only.
 * With DISCARD_IGNORED_GRANULE=BYTES (a power of two, 512 to 16 MiB) the
 * filesystem reports BYTES as its block size, which a loop device on
 * "disk" takes for its discard granularity, as on a device that discards
 * in units larger than a block (dm-thin, eMMC).
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int image_fd = -1;
static FILE *fallocate_log;
static enum {
	IGNORE,
	ERASE,
	UNITS
} discard_mode; /* DISCARD_IGNORED_MODE */
/* what libfuse answers for a filesystem that has no statfs */
static unsigned long granule = 512;
static const char disk_path[] = "/disk";

static int disk_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct stat img;

	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, disk_path))
		return -ENOENT;
	if (fstat(image_fd, &img) != 0)
		return -errno;
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = 1;
	st->st_size = img.st_size;
	st->st_blocks = img.st_blocks;
	return 0;
}

static int disk_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, disk_path + 1, NULL, 0, 0);
	return 0;
}

static int disk_open(const char *path, struct fuse_file_info *fi)
{
	return strcmp(path, disk_path) ? -ENOENT : 0;
}

static int disk_read(const char *path, char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n = pread(image_fd, buf, size, off);

	return n < 0 ? -errno : (int)n;
}

static int disk_write(const char *path, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	ssize_t n = pwrite(image_fd, buf, size, off);

	return n < 0 ? -errno : (int)n;
}

static int disk_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return fdatasync(image_fd) ? -errno : 0;
}

static int disk_fallocate(const char *path, int mode, off_t off, off_t len,
			  struct fuse_file_info *fi)
{
	if (fallocate_log)
		fprintf(fallocate_log, "fallocate mode %#x off %lld len %lld\n", mode,
			(long long)off, (long long)len);
	/* a discard: acknowledged, nothing done (but in the erasing modes) */
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		off_t end = off + len;

		if (discard_mode == UNITS) {
			off = (off + (off_t)granule - 1) / (off_t)granule *
			      (off_t)granule;
			end = end / (off_t)granule * (off_t)granule;
		}
		if (discard_mode == IGNORE || end <= off)
			return 0;
		return fallocate(image_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 off, end - off) ?
			       -errno :
			       0;
	}
	if (mode & FALLOC_FL_ZERO_RANGE)
		return fallocate(image_fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
				 off, len) ?
			       -errno :
			       0;
	return 0;
}

static int disk_statfs(const char *path, struct statvfs *st)
{
	memset(st, 0, sizeof(*st));
	st->f_bsize = granule;
	st->f_frsize = granule;
	st->f_namemax = 255;
	return 0;
}

static const struct fuse_operations ops = {
	.getattr = disk_getattr,
	.readdir = disk_readdir,
	.open = disk_open,
	.read = disk_read,
	.write = disk_write,
	.fsync = disk_fsync,
	.fallocate = disk_fallocate,
	.statfs = disk_statfs,
};

int main(int argc, char **argv)
{
	static char single[] = "-s", opt[] = "-o", other[] = "allow_other";
	char *fargs[] = { argv[0], single, opt, other, NULL, NULL };

	if (argc != 3) {
		fprintf(stderr, "usage: %s IMAGE MOUNTPOINT\n", argv[0]);
		return 1;
	}
	image_fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (image_fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (getenv("DISCARD_IGNORED_LOG")) {
		/* opened before fuse_main() daemonizes and closes stderr */
		fallocate_log = fopen(getenv("DISCARD_IGNORED_LOG"), "ae");
		if (!fallocate_log) {
			perror(getenv("DISCARD_IGNORED_LOG"));
			return 1;
		}
		setvbuf(fallocate_log, NULL, _IOLBF, 0);
	}
	if (getenv("DISCARD_IGNORED_MODE")) {
		const char *m = getenv("DISCARD_IGNORED_MODE");

		if (!strcmp(m, "erase")) {
			discard_mode = ERASE;
		} else if (!strcmp(m, "units")) {
			discard_mode = UNITS;
		} else if (strcmp(m, "ignore")) {
			fprintf(stderr,
				"%s: DISCARD_IGNORED_MODE: ignore, erase or units\n",
				argv[0]);
			return 1;
		}
	}
	if (getenv("DISCARD_IGNORED_GRANULE")) {
		char *end;

		granule = strtoul(getenv("DISCARD_IGNORED_GRANULE"), &end, 10);
		if (*end || granule < 512 || granule > (16UL << 20) ||
		    (granule & (granule - 1))) {
			fprintf(stderr,
				"%s: DISCARD_IGNORED_GRANULE: not a power of two"
				" from 512 to 16777216\n",
				argv[0]);
			return 1;
		}
	}
	fargs[4] = argv[2];
	/* not -f: fuse_main() mounts, then daemonizes */
	return fuse_main(5, fargs, &ops, NULL);
}
