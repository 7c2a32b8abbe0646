// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * TAP test of lib/mounts-select.c: the rules of the selection from a
 * mount table, without the live checks.
 */
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mounts.h"

/*
 * TAP over tests/fixtures/tables: for each NAME.tab, the table-only
 * rules (no live checks) must yield NAME.expected; NAME.types, when
 * present, holds a -t pattern.
 */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t sz = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &sz, '\0', f) < 0) {
		free(buf);
		buf = strdup("");
	}
	fclose(f);
	return buf;
}

static int count_parse_errors;

static void on_test_parse_error(const char *file, int line, void *arg)
{
	count_parse_errors++;
}

static char *run_case(const char *tab, const char *types)
{
	struct select_opts opts = {
		.tables = tab,
		.types = types,
		.parse_error = on_test_parse_error,
		.table_rules_only = true,
	};
	struct fs_list list;
	char *failed = NULL;
	char *out = NULL;
	size_t sz = 0, i;
	FILE *f = open_memstream(&out, &sz);
	int rc;

	count_parse_errors = 0;
	rc = mounts_select(&opts, &list, &failed);
	fprintf(f, "status %d\n", rc);
	for (i = 0; rc >= 0 && i < list.count; i++)
		fprintf(f, "%s %s %s\n", list.entries[i].target, list.entries[i].source,
			list.entries[i].fstype);
	if (count_parse_errors)
		fprintf(f, "parse errors %d\n", count_parse_errors);
	fclose(f);
	if (rc >= 0)
		fs_list_free(&list);
	free(failed);
	return out;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[PATH_MAX], path[PATH_MAX + 32], *names[256];
	struct dirent *de;
	size_t n = 0, i;
	int failures = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/tests/fixtures/tables", top ? top : ".");
	d = opendir(dir);
	if (!d) {
		printf("Bail out! cannot open %s\n", dir);
		return 1;
	}
	while ((de = readdir(d)) && n < 256) {
		size_t l = strlen(de->d_name);

		if (l > 4 && !strcmp(de->d_name + l - 4, ".tab"))
			names[n++] = strndup(de->d_name, l - 4);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);

	printf("1..%zu\n", n);
	for (i = 0; i < n; i++) {
		char *want, *got, *types;

		snprintf(path, sizeof(path), "%s/%s.types", dir, names[i]);
		types = slurp(path);
		if (types)
			types[strcspn(types, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/%s.expected", dir, names[i]);
		want = slurp(path);
		snprintf(path, sizeof(path), "%s/%s.tab", dir, names[i]);
		got = run_case(path, types);
		if (want && got && !strcmp(want, got)) {
			printf("ok %zu - %s\n", i + 1, names[i]);
		} else {
			failures++;
			printf("not ok %zu - %s\n# expected:\n%s# got:\n%s", i + 1,
			       names[i], want ? want : "(missing)\n",
			       got ? got : "(none)\n");
		}
		free(want);
		free(got);
		free(types);
		free(names[i]);
	}
	return failures ? 1 : 0;
}
