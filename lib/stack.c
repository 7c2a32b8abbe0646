// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The storage stack below a filesystem's device (include/stack.h): each
 * device-mapper layer's table through libdevmapper, down to a device
 * that is no mapping (a disk, a partition, a loop device).
 */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <blkid.h>
#include <libdevmapper.h>

#include "stack.h"

/* A stack deeper than this is a loop in the tables: never followed further. */
#define STACK_MAX_LAYERS 16

/* libdevmapper's messages: the caller says what matters, in its words */
static void __attribute__((format(printf, 5, 6)))
dm_quiet(int level, const char *file, int line, int dm_errno, const char *fmt, ...)
{
	(void)level;
	(void)file;
	(void)line;
	(void)dm_errno;
	(void)fmt;
}

static bool is_dm(dev_t dev)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/dm", major(dev), minor(dev));
	return access(path, F_OK) == 0;
}

int stack_parse_target(const char *type, const char *params, dev_t *below,
		       uint64_t *sectors)
{
	unsigned int maj, min;
	unsigned long long off;
	char dev[64];
	int n;

	if (!strcmp(type, "linear")) {
		n = sscanf(params, "%63s %llu", dev, &off);
	} else if (!strcmp(type, "crypt")) {
		/* <cipher> <key> <iv_offset> <device> <offset> [<#opt> <opt>...] */
		n = sscanf(params, "%*s %*s %*s %63s %llu", dev, &off);
	} else {
		return -EINVAL;
	}
	/* the kernel names the device below by its numbers */
	if (n != 2 || sscanf(dev, "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	*below = makedev(maj, min);
	*sectors = off;
	return 0;
}

static void unmapped(struct storage_stack *s, const char *kname, const char *dmname,
		     const char *target)
{
	s->kind = STACK_UNMAPPED;
	snprintf(s->layer, sizeof(s->layer), "%s%s%s%s", kname, dmname ? " (" : "",
		 dmname ? dmname : "", dmname ? ")" : "");
	snprintf(s->target, sizeof(s->target), "%s", target);
}

/*
 * Follow the device-mapper device @dev one layer down: set *@below and
 * add its offset to @s. Returns 0, 1 when the layer cannot be mapped
 * (@s says why), or -errno.
 */
static int one_layer(dev_t dev, struct storage_stack *s, dev_t *below)
{
	char kname[32], *type = NULL, *params = NULL;
	uint64_t start, length, sectors = 0;
	const char *name;
	struct dm_task *dmt;
	struct dm_info info;
	unsigned int targets = 0;
	char first[64] = "";
	bool parsed = false;
	void *next = NULL;
	int rc = 0;

	snprintf(kname, sizeof(kname), "dm-%u", minor(dev));
	dmt = dm_task_create(DM_DEVICE_TABLE);
	if (!dmt)
		return -ENOMEM;
	errno = 0;
	if (!dm_task_set_major(dmt, major(dev)) || !dm_task_set_minor(dmt, minor(dev)) ||
	    !dm_task_run(dmt) || !dm_task_get_info(dmt, &info) || !info.exists) {
		/* no access to /dev/mapper/control, or the device went away */
		rc = errno ? -errno : -ENXIO;
		unmapped(s, kname, NULL, "its table could not be read");
		dm_task_destroy(dmt);
		return rc;
	}
	name = dm_task_get_name(dmt);
	do {
		next = dm_get_next_target(dmt, next, &start, &length, &type, &params);
		if (!type)
			break;
		if (!targets++) {
			snprintf(first, sizeof(first), "%s", type);
			parsed = start == 0 &&
				 stack_parse_target(type, params, below, &sectors) == 0;
		}
	} while (next);

	/* one linear or crypt target over the whole device: a layer mapped */
	if (targets == 1 && parsed) {
		s->offset += sectors * 512;
		s->encrypted |= !strcmp(first, "crypt");
	} else if (targets > 1) {
		char what[64];

		snprintf(what, sizeof(what), "%u %s segments", targets, first);
		unmapped(s, kname, name, what);
		rc = 1;
	} else {
		unmapped(s, kname, name, first[0] ? first : "no target");
		rc = 1;
	}
	dm_task_destroy(dmt);
	return rc;
}

int stack_describe(dev_t dev, struct storage_stack *s)
{
	char *node;
	int rc;

	memset(s, 0, sizeof(*s));
	dm_log_with_errno_init(dm_quiet);
	while (is_dm(dev)) {
		dev_t below = 0;

		if (s->layers == STACK_MAX_LAYERS) {
			unmapped(s, "dm", NULL, "more layers than followed");
			return 0;
		}
		rc = one_layer(dev, s, &below);
		if (rc)
			return rc < 0 ? rc : 0;
		s->layers++;
		dev = below;
	}
	if (!s->layers)
		return 0;
	node = blkid_devno_to_devname(dev);
	if (!node) {
		snprintf(s->layer, sizeof(s->layer), "%u:%u", major(dev), minor(dev));
		s->kind = STACK_UNMAPPED;
		snprintf(s->target, sizeof(s->target), "no device node below it");
		return 0;
	}
	s->kind = STACK_MAPPED;
	s->bottom_dev = dev;
	snprintf(s->bottom, sizeof(s->bottom), "%s", node);
	free(node);
	return 0;
}

#ifdef TEST_PROGRAM_STACK
/* TAP over table lines as the kernel shows them (dmsetup table). */
static int tap_count;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_count, what);
}

int main(void)
{
	static const struct {
		const char *type, *params;
		int rc;
		unsigned int maj, min;
		uint64_t sectors;
		const char *what;
	} cases[] = {
		{ "linear", "8:16 2048", 0, 8, 16, 2048, "linear: device and offset" },
		{ "linear", "253:0 0", 0, 253, 0, 0, "linear at 0 over a mapping" },
		{ "crypt", "aes-xts-plain64 0123abcd 0 8:2 32768", 0, 8, 2, 32768,
		  "crypt: the key and iv offset passed over" },
		{ "crypt",
		  "aes-xts-plain64 :64:logon:cryptsetup:1234-d0 0 259:3 32768 1 allow_discards",
		  0, 259, 3, 32768, "crypt with a keyring key and options" },
		{ "crypt", "aes-xts-plain64 - 0 7:0 0 2 allow_discards sector_size:4096",
		  0, 7, 0, 0, "crypt with two options" },
		{ "striped", "2 128 8:16 0 8:32 0", -EINVAL, 0, 0, 0,
		  "striped: not mapped" },
		{ "thin", "253:2 1", -EINVAL, 0, 0, 0, "thin: not mapped" },
		{ "linear", "/dev/sdb 2048", -EINVAL, 0, 0, 0,
		  "linear naming a path, which the kernel never shows" },
		{ "linear", "8:16", -EINVAL, 0, 0, 0, "linear without an offset" },
		{ "crypt", "aes-xts-plain64 KEY 0", -EINVAL, 0, 0, 0, "crypt cut short" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dev_t below = 0;
		uint64_t sectors = 0;
		int rc = stack_parse_target(cases[i].type, cases[i].params, &below,
					    &sectors);

		check(rc == cases[i].rc &&
			      (rc || (below == makedev(cases[i].maj, cases[i].min) &&
				      sectors == cases[i].sectors)),
		      cases[i].what);
	}
	printf("1..%d\n", tap_count);
	return 0;
}
#endif
