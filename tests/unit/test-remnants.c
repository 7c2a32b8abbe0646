// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * TAP test of lib/remnants.c: the mb_groups parser on fixture text from
 * tests/fixtures/mb_groups/ (found through $top_srcdir, else ".").
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remnants.h"

static int tap_count;
static int failed;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_count, what);
	if (!ok)
		failed = 1;
}

struct expect {
	const char *fixture;
	uint32_t unit;
	uint32_t granularity;
	int rc;
	uint64_t free_bytes;
	uint64_t small_free_bytes;
	uint32_t groups;
	uint32_t unreadable;
};

static const struct expect cases[] = {
	/* 1 KiB blocks, 4 KiB granularity: the 50 freed single blocks of
	 * group 1 and the unaligned edges of the large extents (2^0, 2^1) */
	{ "loop-1024-holes", 1024, 4096, 0, 56892416, 64512, 8, 0 },
	{ "loop-1024-holes", 1024, 1024, 0, 56892416, 0, 8, 0 },
	{ "loop-1024-holes", 1024, 0, 0, 56892416, 0, 8, 0 },
	{ "loop-4096-holes", 4096, 4096, 0, 56758272, 0, 1, 0 },
	/* a 64 KiB granularity (e.g. a thin volume): orders 2^0 .. 2^3 */
	{ "loop-4096-holes", 4096, 65536, 0, 56758272, 266240, 1, 0 },
	{ "unreadable", 4096, 16384, 0, 430080, 36864, 2, 2 },
	{ "many-groups", 1024, 4096, 0, 33559552, 1024, 3, 0 },
	{ "header-only", 4096, 4096, 0, 0, 0, 0, 0 },
	{ "malformed", 4096, 4096, -EINVAL, 0, 0, 0, 0 },
	/* not a power of two */
	{ "loop-4096-holes", 3000, 4096, -EINVAL, 0, 0, 0, 0 },
};

static void run_fixture(const char *dir, const struct expect *e)
{
	struct remnants r;
	char path[PATH_MAX], what[PATH_MAX + 64];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/tests/fixtures/mb_groups/%s", dir, e->fixture);
	snprintf(what, sizeof(what), "%s unit %" PRIu32 " granularity %" PRIu32,
		 e->fixture, e->unit, e->granularity);
	f = fopen(path, "re");
	if (!f) {
		check(false, path);
		return;
	}
	memset(&r, 0xa5, sizeof(r));
	rc = remnants_parse_mb_groups(f, e->unit, e->granularity, &r);
	fclose(f);
	if (rc != e->rc) {
		printf("# rc %d, want %d\n", rc, e->rc);
		check(false, what);
		return;
	}
	if (rc == 0 &&
	    (r.free_bytes != e->free_bytes || r.small_free_bytes != e->small_free_bytes ||
	     r.groups != e->groups || r.groups_unreadable != e->unreadable)) {
		printf("# free %" PRIu64 " small %" PRIu64 " groups %" PRIu32
		       " unreadable %" PRIu32 "\n",
		       r.free_bytes, r.small_free_bytes, r.groups, r.groups_unreadable);
		check(false, what);
		return;
	}
	check(true, what);
}

static int parse_text(const char *text, struct remnants *r)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc;

	if (!f)
		return -errno;
	rc = remnants_parse_mb_groups(f, 4096, 4096, r);
	fclose(f);
	return rc;
}

int main(void)
{
	const char *dir = getenv("top_srcdir");
	struct remnants r = { 0 };
	size_t i;

	if (!dir || !*dir)
		dir = ".";
	printf("1..%zu\n", sizeof(cases) / sizeof(cases[0]) + 6);

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_fixture(dir, &cases[i]);

	check(parse_text("not mb_groups\n", &r) == -EINVAL, "other text is refused");
	check(parse_text("#0    : 1 1 0 [ 1 ]", &r) == 0 && r.free_bytes == 4096 &&
		      r.small_free_bytes == 0 && r.groups == 1,
	      "a line without a trailing newline or with few orders");
	check(parse_text("#0    : 1 1 0 [ ]\n", &r) == -EINVAL, "no orders is refused");
	check(parse_text("#0    : 1 1 0 [ 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 ]\n", &r) ==
		      -EINVAL,
	      "more than 14 orders is refused");
	check(parse_text("#0    1 1 0 [ 1 ]\n", &r) == -EINVAL,
	      "a line without ':' is refused");

	r.dir_index = true;
	r.dirent_pack_wipe = false;
	check(remnants_names_may_remain(&r), "names may remain without dirent_pack_wipe");

	return failed;
}
