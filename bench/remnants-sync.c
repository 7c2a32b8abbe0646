// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * remnants-sync.so: preloaded (LD_PRELOAD) into srm, sfill, zerofree and
 * extundelete by bench/remnants, it turns their sync() into a flush of
 * the one filesystem or device named by REMNANTS_SYNC_PATH: syncfs() of
 * a directory's filesystem, fsync() of a block device. On the trial's
 * filesystem the effect is the same as sync()'s; what it no longer does
 * is commit the deletions of the trials running beside it, which would
 * then no longer be "not synced". Not installed.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Not static: it must take the place of the C library's sync(). */
void sync(void)
{
	const char *path = getenv("REMNANTS_SYNC_PATH");
	struct stat st;
	int fd;

	fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		syscall(SYS_sync);
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode))
		fsync(fd);
	else
		syncfs(fd);
	close(fd);
}
