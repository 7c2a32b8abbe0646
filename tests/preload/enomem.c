// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for the test suites, never installed: one allocation
 * made by fstrim-ext's own code fails, as under memory pressure, so that
 * a test can show what fstrim-ext says of a step it could not finish.
 *
 *   FSTRIM_EXT_ENOMEM_NTH=N   the Nth allocation that the program's own
 *                             code makes (1 is the first; malloc, calloc,
 *                             realloc, reallocarray, posix_memalign,
 *                             aligned_alloc, strdup, strndup, asprintf and
 *                             vasprintf alike) fails with ENOMEM; the
 *                             later ones succeed. N = 0 fails none.
 *   FSTRIM_EXT_ENOMEM_LOG=FILE  at exit, the number of such allocations
 *                             the process made is written to FILE, so
 *                             that a test knows how many runs to make.
 *
 * "Own code" is the executable itself (lib/ is linked into it): an
 * allocation whose caller lies in the executable's text. What the
 * libraries allocate inside their own calls is theirs to handle.
 * glibc's __libc_* entry points give the real allocator without dlsym,
 * which itself allocates.
 */
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

static uintptr_t text_lo, text_hi;
static unsigned long long own_count, fail_at;
static int state; /* 0 not set up, 1 setting up, 2 ready */

static int find_exe(struct dl_phdr_info *info, size_t size, void *data)
{
	int i;

	(void)size, (void)data;
	/* the first object is the executable */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (!text_lo || lo < text_lo)
			text_lo = lo;
		if (lo + ph->p_memsz > text_hi)
			text_hi = lo + ph->p_memsz;
	}
	return 1;
}

static void setup(void)
{
	const char *v;

	state = 1;
	dl_iterate_phdr(find_exe, NULL);
	v = getenv("FSTRIM_EXT_ENOMEM_NTH");
	fail_at = v ? strtoull(v, NULL, 10) : 0;
	state = 2;
}

/* Whether this allocation, asked for from @caller, is the one to fail. */
static bool fail_now(const void *caller)
{
	uintptr_t c = (uintptr_t)caller;

	if (state != 2) {
		if (state == 1)
			return false;
		setup();
	}
	if (c < text_lo || c >= text_hi)
		return false;
	own_count++;
	if (own_count != fail_at)
		return false;
	errno = ENOMEM;
	return true;
}

__attribute__((destructor)) static void write_log(void)
{
	const char *path = getenv("FSTRIM_EXT_ENOMEM_LOG");
	FILE *f;

	if (!path)
		return;
	state = 1; /* fopen allocates: not counted */
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%llu\n", own_count);
		fclose(f);
	}
}

#define CALLER __builtin_extract_return_addr(__builtin_return_address(0))

void *malloc(size_t size)
{
	return fail_now(CALLER) ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return fail_now(CALLER) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return fail_now(CALLER) ? NULL : __libc_realloc(p, size);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	if (fail_now(CALLER))
		return NULL;
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, n * size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (fail_now(CALLER))
		return ENOMEM;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	return fail_now(CALLER) ? NULL : __libc_memalign(align, size);
}

static char *copy(const char *s, size_t len)
{
	char *p = __libc_malloc(len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

char *strdup(const char *s)
{
	return fail_now(CALLER) ? NULL : copy(s, strlen(s));
}

char *strndup(const char *s, size_t n)
{
	return fail_now(CALLER) ? NULL : copy(s, strnlen(s, n));
}

static int format(char **out, const char *fmt, va_list ap)
{
	va_list again;
	int len;

	va_copy(again, ap);
	len = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	if (len < 0)
		return -1;
	*out = __libc_malloc((size_t)len + 1);
	if (!*out)
		return -1;
	return vsnprintf(*out, (size_t)len + 1, fmt, ap);
}

int vasprintf(char **out, const char *fmt, va_list ap)
{
	if (fail_now(CALLER))
		return -1;
	return format(out, fmt, ap);
}

int asprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int rc;

	if (fail_now(CALLER))
		return -1;
	va_start(ap, fmt);
	rc = format(out, fmt, ap);
	va_end(ap);
	return rc;
}
