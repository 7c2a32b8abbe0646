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
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
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

int trim_fs(int fd, const struct fstrim_range *range, uint64_t *trimmed)
{
	struct fstrim_range r = *range;

	*trimmed = 0;
	if (ioctl(fd, FITRIM, &r) != 0) {
		switch (errno) {
		case EBADF:
		case ENOTTY:
		case EOPNOTSUPP:
			return 1;
		default:
			return -errno;
		}
	}
	*trimmed = r.len;
	return 0;
}

/* What ext4's FITRIM works in, from the superblock; all in blocks but the shift. */
struct ext4_geometry {
	unsigned int block_bits;
	unsigned int cluster_bits; /* bigalloc: log2 of blocks per cluster */
	uint64_t first_data_block;
	uint64_t blocks_per_group;
	uint64_t blocks_count;
	uint64_t last_trim_minblks; /* clusters; 0 when unknown */
	uint64_t discard_granularity; /* bytes */
};

static uint64_t read_u64_file(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

/*
 * The geometry of the ext4 mounted at @fd, read from its device through
 * libext2fs (superblock only). The statfs fsid, which ext4 derives from
 * the UUID, must match: otherwise the node read is not the filesystem
 * trimmed, and the caller falls back to one FITRIM.
 */
static int ext4_geometry(int fd, struct ext4_geometry *geo)
{
	struct ext2_super_block *sb;
	char name[NAME_MAX + 1], path[NAME_MAX + 64];
	uint64_t fsid, gran = 0;
	struct statfs sfs;
	struct stat st;
	ext2_filsys fs;
	dev_t disk = 0;
	char *devname;
	errcode_t err;
	uint32_t v[2];

	if (fstatfs(fd, &sfs) != 0 || fstat(fd, &st) != 0)
		return -errno;
	if (sfs.f_type != EXT4_SUPER_MAGIC || !major(st.st_dev))
		return -EOPNOTSUPP;
	devname = blkid_devno_to_devname(st.st_dev);
	if (!devname)
		return -ENODEV;
	err = ext2fs_open(devname,
			  EXT2_FLAG_64BITS | EXT2_FLAG_SUPER_ONLY |
				  EXT2_FLAG_IGNORE_CSUM_ERRORS,
			  0, 0, unix_io_manager, &fs);
	free(devname);
	if (err)
		return err < 4096 ? -(int)err : -EUCLEAN;

	sb = fs->super;
	fsid = le64toh(*(const uint64_t *)sb->s_uuid) ^
	       le64toh(*(const uint64_t *)(sb->s_uuid + 8));
	memcpy(v, &sfs.f_fsid, sizeof(v));
	geo->block_bits = (unsigned int)sb->s_log_block_size + 10;
	geo->cluster_bits = ext2fs_has_feature_bigalloc(sb) ?
				    sb->s_log_cluster_size - sb->s_log_block_size :
				    0;
	geo->first_data_block = sb->s_first_data_block;
	geo->blocks_per_group = sb->s_blocks_per_group;
	geo->blocks_count = ext2fs_blocks_count(sb);
	ext2fs_close_free(&fs);
	if (v[0] != (uint32_t)fsid || v[1] != (uint32_t)(fsid >> 32) ||
	    !geo->blocks_per_group || geo->block_bits > 16)
		return -ESTALE;

	geo->last_trim_minblks = 0;
	if (sysfs_blkdev_name(st.st_dev, name, sizeof(name)) == 0) {
		snprintf(path, sizeof(path), "/sys/fs/ext4/%s/last_trim_minblks", name);
		geo->last_trim_minblks = read_u64_file(path);
	}
	/* a partition has no queue of its own: its disk's applies */
	if (blkid_devno_to_wholedisk(st.st_dev, NULL, 0, &disk) != 0 || !disk)
		disk = st.st_dev;
	sysfs_blkdev_read_u64(disk, "queue/discard_granularity", &gran);
	geo->discard_granularity = gran;
	return 0;
}

/* The minimum extent ext4 will use for @minlen bytes, in clusters (ext4_trim_fs()). */
static uint64_t ext4_minlen_clusters(const struct ext4_geometry *geo, uint64_t minlen)
{
	uint64_t ratio = 1ULL << geo->cluster_bits;

	if (minlen < geo->discard_granularity)
		minlen = geo->discard_granularity;
	return ((minlen >> geo->block_bits) + ratio - 1) >> geo->cluster_bits;
}

static uint64_t group_of(const struct ext4_geometry *geo, uint64_t block)
{
	return (block - geo->first_data_block) / geo->blocks_per_group;
}

static uint64_t group_start(const struct ext4_geometry *geo, uint64_t group)
{
	return geo->first_data_block + group * geo->blocks_per_group;
}

static int issue(int fd, uint64_t start, uint64_t len, uint64_t minlen,
		 struct trim_progress *prog)
{
	struct fstrim_range r = { .start = start, .len = len, .minlen = minlen };
	uint64_t trimmed;
	int rc = trim_fs(fd, &r, &trimmed);

	if (rc == 0)
		prog->trimmed += trimmed;
	return rc;
}

int trim_fs_steps(int fd, const struct fstrim_range *range, uint64_t step,
		  trim_after_range_fn *after, void *arg, struct trim_progress *prog)
{
	struct ext4_geometry geo;
	uint64_t s, e_req, e, x, chunk_end, groups, group_bytes, restore_minlen = 0;
	bool lowered, aligned;
	int rc;

	memset(prog, 0, sizeof(*prog));
	prog->start = range->start;
	prog->end = range->start + range->len < range->start ? UINT64_MAX :
							       range->start + range->len;

	if (step == 0 || ext4_geometry(fd, &geo) != 0)
		goto one_call;

	/* the blocks a single FITRIM would cover, computed as ext4_trim_fs() does */
	if (range->len < (1ULL << geo.block_bits))
		goto one_call;
	s = range->start >> geo.block_bits;
	e_req = s + (range->len >> geo.block_bits) - 1;
	if (s >= geo.blocks_count)
		goto one_call;
	e = e_req < geo.blocks_count - 1 ? e_req : geo.blocks_count - 1;
	if (e <= geo.first_data_block)
		goto one_call;
	x = s > geo.first_data_block ? s : geo.first_data_block;
	prog->start = x << geo.block_bits;
	prog->end = (e + 1) << geo.block_bits;

	group_bytes = geo.blocks_per_group << geo.block_bits;
	groups = step / group_bytes + (step % group_bytes != 0);
	if (!groups)
		groups = 1;

	/*
	 * ext4 skips a group it remembers as trimmed unless the minimum is
	 * lower than the last FITRIM's (last_trim_minblks), and every call
	 * sets that value. A single call with a lowered minimum so re-trims
	 * every such group; ranges would do it in the first range only. So
	 * after each range, a call over its whole groups with the old
	 * minimum, which finds them all trimmed and discards nothing, puts
	 * the old value back for the next range.
	 */
	lowered = geo.last_trim_minblks &&
		  ext4_minlen_clusters(&geo, range->minlen) < geo.last_trim_minblks;
	if (lowered)
		restore_minlen = geo.last_trim_minblks
				 << (geo.block_bits + geo.cluster_bits);

	while (x <= e) {
		uint64_t g = group_of(&geo, x), first_full, start_byte, len;

		/* whole groups only: ext4 trims a free extent to its end even past the range */
		aligned = x == group_start(&geo, g);
		first_full = aligned ? g : g + 1;
		chunk_end = group_start(&geo, first_full + groups) - 1;
		if (!prog->ranges && chunk_end >= e)
			goto one_call;
		if (chunk_end >= e)
			chunk_end =
				e_req; /* the last: the kernel clamps as for one call */

		/* the first range starts where the request does, as the kernel rounds it */
		start_byte = prog->ranges ? x << geo.block_bits : range->start;
		len = (chunk_end - (prog->ranges ? x : s) + 1) << geo.block_bits;
		rc = issue(fd, start_byte, len, range->minlen, prog);
		if (rc != 0)
			return rc;
		prog->ranges++;
		if (chunk_end >= e) {
			prog->pos = prog->end;
			break;
		}
		if (lowered && first_full <= group_of(&geo, chunk_end)) {
			rc = issue(fd, group_start(&geo, first_full) << geo.block_bits,
				   (chunk_end - group_start(&geo, first_full) + 1)
					   << geo.block_bits,
				   restore_minlen, prog);
			if (rc != 0)
				return rc;
		}
		x = chunk_end + 1;
		prog->pos = x << geo.block_bits;
		if (after && after(prog, arg)) {
			prog->stopped = true;
			return 0;
		}
	}
	if (after)
		after(prog, arg);
	return 0;

one_call:
	memset(prog, 0, sizeof(*prog));
	prog->start = range->start;
	prog->end = range->start + range->len < range->start ? UINT64_MAX :
							       range->start + range->len;
	rc = issue(fd, range->start, range->len, range->minlen, prog);
	if (rc != 0)
		return rc;
	prog->ranges = 1;
	prog->pos = prog->end;
	if (after)
		after(prog, arg);
	return 0;
}
