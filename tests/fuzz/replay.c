// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Replay a fuzz target's corpus without libFuzzer, as a TAP test for
 * make check: every file of the corpus (and of its crashes/ folder,
 * where inputs that once failed are kept) goes through the target
 * once. A crash, a sanitizer report or an abort() fails the test.
 *
 * Usage: replay [FILE|DIR]...; without arguments the corpus and the
 * crashes of the target named at build time (FUZZ_TARGET), under
 * $top_srcdir/tests/fuzz/corpus/ and tests/fuzz/crashes/.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *inputs[8192];
static size_t count;

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_path(const char *path)
{
	struct stat st;
	struct dirent *de;
	DIR *d;

	if (stat(path, &st) != 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		if (count < sizeof(inputs) / sizeof(inputs[0]))
			inputs[count++] = strdup(path);
		return;
	}
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		add_path(sub);
	}
	closedir(d);
}

static int replay(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -errno;
	for (;;) {
		size_t n;

		if (len == cap) {
			uint8_t *p = realloc(buf, cap ? cap * 2 : 4096);

			if (!p) {
				fclose(f);
				free(buf);
				return -ENOMEM;
			}
			buf = p;
			cap = cap ? cap * 2 : 4096;
		}
		n = fread(buf + len, 1, cap - len, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	size_t i;
	int failures = 0;

	if (argc > 1) {
		for (i = 1; i < (size_t)argc; i++)
			add_path(argv[i]);
	} else {
		const char *top = getenv("top_srcdir");

		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top ? top : ".",
			 FUZZ_TARGET);
		add_path(dir);
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/crashes/%s", top ? top : ".",
			 FUZZ_TARGET);
		add_path(dir);
	}
	if (!count) {
		printf("Bail out! no corpus found\n");
		return 1;
	}
	qsort(inputs, count, sizeof(inputs[0]), cmp_names);
	printf("1..%zu\n", count);
	for (i = 0; i < count; i++) {
		int rc = replay(inputs[i]);

		/* a crash never comes back here: the driver counts it as failed */
		printf("%sok %zu - %s\n", rc ? "not " : "", i + 1, inputs[i]);
		fflush(stdout);
		failures += rc != 0;
		free(inputs[i]);
	}
	return failures ? 1 : 0;
}
