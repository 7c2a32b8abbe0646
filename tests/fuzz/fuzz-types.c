// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the -t type list (mount -t syntax: "ext4,xfs",
 * "noext4", "nonfs,ext4") as mounts_select() applies it to a fixed
 * table of mixed types. Checks that a list naming no type selects
 * nothing more than no list at all.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mounts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char table[] = "/dev/sda1 / ext4 rw,relatime 0 1\n"
			    "/dev/sda2 /home xfs rw 0 2\n"
			    "/dev/sdb1 /srv btrfs rw,subvol=/srv 0 2\n"
			    "/dev/sdc1 /data ext3 rw 0 2\n"
			    "/dev/sdd1 /old ext2 rw 0 2\n"
			    "/dev/sde1 /vfat vfat rw 0 2\n"
			    "/dev/sdf1 /f2 f2fs rw 0 2\n"
			    "server:/export /nfs nfs rw 0 0\n"
			    "tmpfs /tmp tmpfs rw 0 0\n"
			    "/dev/sdg1 none swap sw 0 0\n";

static char dir[64];
static char tab[96], empty[96];

static void cleanup(void)
{
	unlink(tab);
	unlink(empty);
	rmdir(dir);
}

static void init(void)
{
	int fd;

	/* tmpfs: truncating a file on a disk filesystem costs milliseconds */
	snprintf(dir, sizeof(dir), "%s/fstrim-ext-fuzz-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(tab, sizeof(tab), "%s/fstab", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	fd = open(tab, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, table, sizeof(table) - 1) != sizeof(table) - 1)
		abort();
	close(fd);
	fd = open(empty, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct select_opts opts = { 0 };
	struct fs_list fsl;
	char *failed = NULL;
	char *types;
	int rc;

	if (!ready) {
		init();
		ready = 1;
	}
	types = malloc(size + 1);
	if (!types)
		return 0;
	memcpy(types, data, size);
	types[size] = '\0';

	opts.tables = tab;
	opts.types = types;
	opts.mountinfo = empty;
	rc = mounts_select(&opts, &fsl, &failed);
	if (rc < 0 && (fsl.entries || fsl.count))
		abort();
	if (rc >= 0)
		fs_list_free(&fsl);
	free(failed);
	free(types);
	return 0;
}
