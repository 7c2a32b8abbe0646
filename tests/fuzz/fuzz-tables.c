// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: the mount tables that -a, -A and -I hand to
 * mounts_select(), parsed by libmount, and the colon-separated list
 * itself. The first byte picks which files come before the fuzzed table
 * in the list (a missing one, an empty one, a directory) and whether
 * the table stands in for the live mountinfo too; the rest, split at
 * the first "\n--\n", is the table and an optional second table.
 *
 * The live checks (statx on targets, sysfs of devices) run against the
 * real system, read-only: they are part of what a table steers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mounts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char tab1[96], tab2[96], empty[96], missing[96];

static void on_parse_error(const char *file, int line, void *arg)
{
	(*(int *)arg)++;
}

static int write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = size ? write(fd, data, size) : 0;
	close(fd);
	return n == (ssize_t)size ? 0 : -1;
}

static void cleanup(void)
{
	unlink(tab1);
	unlink(tab2);
	unlink(empty);
	rmdir(dir);
}

static void init(void)
{
	/* tmpfs: truncating a file on a disk filesystem costs milliseconds */
	snprintf(dir, sizeof(dir), "%s/fstrim-ext-fuzz-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(tab1, sizeof(tab1), "%s/table1", dir);
	snprintf(tab2, sizeof(tab2), "%s/table2", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	if (write_file(empty, NULL, 0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct select_opts opts = { 0 };
	const uint8_t *second = NULL, *sep;
	size_t first_len = size, second_len = 0;
	char list[4 * PATH_MAX + 8] = "";
	struct fs_list fsl;
	char *failed = NULL;
	unsigned char mode;
	int parse_errors = 0, rc;
	size_t i;

	if (!ready) {
		init();
		ready = 1;
	}
	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	first_len = size;

	sep = memmem(data, size, "\n--\n", 4);
	if (sep) {
		first_len = (size_t)(sep - data) + 1;
		second = sep + 4;
		second_len = size - (size_t)(second - data);
	}
	if (write_file(tab1, data, first_len))
		return 0;
	if (second && write_file(tab2, second, second_len))
		return 0;

	if (mode & 1)
		strcat(list, missing), strcat(list, ":");
	if (mode & 2)
		strcat(list, empty), strcat(list, ":");
	if (mode & 4)
		strcat(list, dir), strcat(list, ":");
	strcat(list, tab1);
	if (second)
		strcat(list, ":"), strcat(list, tab2);
	if (mode & 8)
		strcat(list, "::");

	opts.tables = list;
	opts.parse_error = on_parse_error;
	opts.arg = &parse_errors;
	/* the table as the live mount table too, or a second fuzzed one */
	if (mode & 16)
		opts.mountinfo = tab1;
	else if ((mode & 32) && second)
		opts.mountinfo = tab2;
	else
		opts.mountinfo = empty;
	if (mode & 64)
		opts.types = (mode & 128) ? "ext4,xfs" : "noext4,btrfs";

	rc = mounts_select(&opts, &fsl, &failed);
	if (rc < 0) {
		/* on failure nothing is returned, and the file is named */
		if (fsl.entries || fsl.count || fsl.skipped)
			abort();
		free(failed);
		return 0;
	}
	/* a table that was read is named only on failure */
	if (failed)
		abort();
	if (rc != SELECT_OK && rc != SELECT_NO_TABLE && rc != SELECT_EMPTY)
		abort();
	for (i = 0; i < fsl.count; i++) {
		const struct fs_entry *e = &fsl.entries[i];

		/* every chosen filesystem has a target, an absolute source, a type */
		if (!e->target || !e->fstype || !e->source || e->source[0] != '/')
			abort();
	}
	fs_list_free(&fsl);
	return 0;
}
