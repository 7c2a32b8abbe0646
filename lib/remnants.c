// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What survives the trim and the journal step: free space the device's
 * discard granularity keeps FITRIM away from, and names that a kernel
 * without the directory-pack fix leaves inside live directory blocks.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>

#include "ext4-ioctl.h"
#include "extfs.h"
#include "remnants.h"
#include "sysfs.h"

/* ext4_mb_seq_groups_show() prints orders 2^0 .. 2^13, whatever the block size. */
#define MB_GROUPS_ORDERS 14

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Parse one unsigned decimal; NULL when there is none. */
static const char *parse_u64(const char *p, uint64_t *val)
{
	char *end;

	p = skip_blanks(p);
	if (!isdigit((unsigned char)*p))
		return NULL;
	errno = 0;
	*val = strtoull(p, &end, 10);
	if (errno)
		return NULL;
	return end;
}

/*
 * One group line: "#N    : FREE FRAGS FIRST [ C0 C1 ... C13 ]" with an
 * optional " Block bitmap corrupted!", or "#N    : I/O error".
 * Returns 0, 1 for a group the kernel could not read, -EINVAL otherwise.
 */
static int parse_group_line(const char *line, uint32_t unit, uint32_t granularity,
			    uint64_t *free_bytes, uint64_t *small_bytes)
{
	uint64_t group, free_units, frags, first, count;
	uint64_t small = 0;
	const char *p;
	int order;

	p = parse_u64(line + 1, &group);
	if (!p)
		return -EINVAL;
	p = skip_blanks(p);
	if (*p++ != ':')
		return -EINVAL;
	p = skip_blanks(p);
	if (strncmp(p, "I/O error", 9) == 0)
		return 1;

	if (!(p = parse_u64(p, &free_units)) || !(p = parse_u64(p, &frags)) ||
	    !(p = parse_u64(p, &first)))
		return -EINVAL;
	p = skip_blanks(p);
	if (*p++ != '[')
		return -EINVAL;
	for (order = 0;; order++) {
		p = skip_blanks(p);
		if (*p == ']')
			break;
		if (order >= MB_GROUPS_ORDERS || !(p = parse_u64(p, &count)))
			return -EINVAL;
		if (granularity && ((uint64_t)unit << order) < granularity)
			small += count * ((uint64_t)unit << order);
	}
	if (order == 0)
		return -EINVAL;
	if (strstr(p, "corrupt"))
		return 1;

	*free_bytes += free_units * unit;
	*small_bytes += small;
	return 0;
}

int remnants_parse_mb_groups(FILE *stream, uint32_t unit, uint32_t granularity,
			     struct remnants *out)
{
	uint64_t free_bytes = 0, small_bytes = 0;
	uint32_t groups = 0, unreadable = 0;
	char *line = NULL;
	size_t size = 0;
	ssize_t len;
	int rc = 0;

	if (unit == 0 || (unit & (unit - 1)))
		return -EINVAL;

	errno = 0;
	while ((len = getline(&line, &size, stream)) >= 0) {
		const char *p = skip_blanks(line);

		if (*p == '\n' || *p == '\0')
			continue;
		if (strncmp(p, "#group:", 7) == 0)
			continue;
		if (p[0] != '#' || !isdigit((unsigned char)p[1])) {
			rc = -EINVAL;
			goto out;
		}
		rc = parse_group_line(p, unit, granularity, &free_bytes, &small_bytes);
		if (rc < 0)
			goto out;
		if (rc == 1)
			unreadable++;
		else
			groups++;
		rc = 0;
	}
	if (ferror(stream)) {
		rc = errno ? -errno : -EIO;
		goto out;
	}

	out->free_bytes = free_bytes;
	out->small_free_bytes = small_bytes;
	out->groups = groups;
	out->groups_unreadable = unreadable;
out:
	free(line);
	return rc;
}

/* Whether read_superblock() found no node to read, rather than failing to read one. */
static bool sb_not_found(int rc)
{
	return rc == -ENOENT || rc == -ENODEV || rc == -ENXIO || rc == -EACCES ||
	       rc == -EPERM;
}

/*
 * Allocation unit (the cluster with bigalloc) and dir_index from the
 * superblock of the device @dev, read with libext2fs through @path,
 * which must be that device's node.
 */
static int read_superblock(const char *path, dev_t dev, uint32_t *unit, bool *dir_index)
{
	struct stat st;
	ext2_filsys fs;
	int rc;

	if (stat(path, &st) != 0)
		return -errno;
	if (!S_ISBLK(st.st_mode) || st.st_rdev != dev)
		return -ENODEV;
	rc = extfs_open(path, EXT2_FLAG_SUPER_ONLY, &fs);
	if (rc)
		return rc;
	*unit = EXT2_CLUSTER_SIZE(fs->super);
	*dir_index = ext2fs_has_feature_dir_index(fs->super);
	ext2fs_close_free(&fs);
	return 0;
}

int remnants_check_dev(dev_t dev, unsigned int blocksize, struct remnants *out)
{
	char name[NAME_MAX + 1], path[PATH_MAX + 32];
	uint32_t unit = blocksize, granularity = 0;
	uint64_t gran = 0;
	bool dir_index = true;
	FILE *f;
	int rc;

	memset(out, 0, sizeof(*out));

	/* /proc/fs/ext4/ is keyed by the kernel's name of the device, as in sysfs */
	rc = sysfs_blkdev_name(dev, name, sizeof(name));
	if (rc < 0)
		return rc;

	rc = sysfs_discard_granularity(dev, &gran);
	if (rc < 0)
		return rc;
	if (gran > UINT32_MAX)
		return -EINVAL;
	granularity = (uint32_t)gran;

	/*
	 * The superblock gives the unit of the histogram (the cluster with
	 * bigalloc) and dir_index. Try udev's link, then devtmpfs's node;
	 * without either, take @blocksize and assume htree directories are
	 * possible.
	 */
	snprintf(path, sizeof(path), "/dev/block/%u:%u", major(dev), minor(dev));
	rc = read_superblock(path, dev, &unit, &dir_index);
	if (sb_not_found(rc)) {
		snprintf(path, sizeof(path), "/dev/%s", name);
		rc = read_superblock(path, dev, &unit, &dir_index);
	}
	/* a node that opened and could not be read is a failed read, not a guess */
	if (rc < 0 && !sb_not_found(rc))
		return rc;
	if (rc < 0) {
		unit = blocksize;
		dir_index = true;
	}
	if (unit == 0)
		return -EINVAL;

	snprintf(path, sizeof(path), "/proc/fs/ext4/%s/mb_groups", name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	rc = remnants_parse_mb_groups(f, unit, granularity, out);
	fclose(f);
	if (rc < 0)
		return rc;

	out->discard_granularity = granularity;
	out->unit = unit;
	out->dir_index = dir_index;
	snprintf(path, sizeof(path), "%s/%s", EXT4_FEATURES_DIR,
		 EXT4_FEATURE_DIRENT_PACK_WIPE);
	out->dirent_pack_wipe = access(path, F_OK) == 0;
	return 0;
}

bool remnants_names_may_remain(const struct remnants *r)
{
	return r->dir_index && !r->dirent_pack_wipe;
}
