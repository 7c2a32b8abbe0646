// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FITRIM, through a descriptor opened and checked once.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef HAVE_LINUX_OPENAT2_H
#include <linux/openat2.h>
#endif

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
	if (fd >= 0 || errno != ENOSYS)
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

	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MNT_ID, &stx) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (mnt_id > 0 && (stx.stx_mask & STATX_MNT_ID) &&
	    stx.stx_mnt_id != (__u64)mnt_id)
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
