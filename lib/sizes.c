// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Sizes on the command line and in reports.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "sizes.h"

static const char binary_suffixes[] = "KMGTPEZY";

/* Multiply *v by base^power; -ERANGE on overflow. */
static int scale(uint64_t *v, unsigned int base, int power)
{
	while (power-- > 0) {
		if (*v > UINT64_MAX / base)
			return -ERANGE;
		*v *= base;
	}
	return 0;
}

int size_parse(const char *str, uint64_t *res)
{
	const char *p = str, *frac_start = NULL, *sfx;
	unsigned __int128 frac = 0, frac_div = 1, mult = 1;
	unsigned int base = 1024;
	uint64_t whole, unit;
	int power = 0, rc;
	char *end;

	*res = 0;
	while (isspace((unsigned char)*p))
		p++;
	/* strtoumax would silently wrap a negative number */
	if (*p == '-' || *p == '\0')
		return -EINVAL;

	errno = 0;
	whole = strtoumax(p, &end, 0);
	if (end == p)
		return -EINVAL;
	if (errno)
		return -errno;
	p = end;

	if (*p == '.') {
		frac_start = ++p;
		while (isdigit((unsigned char)*p)) {
			/* digits beyond 18 decimals change nothing that fits 64 bits */
			if (frac_div < 1000000000000000000ULL) {
				frac = frac * 10 + (unsigned int)(*p - '0');
				frac_div *= 10;
			}
			p++;
		}
		if (p == frac_start)
			return -EINVAL;
	}

	if (*p) {
		sfx = strchr(binary_suffixes, toupper((unsigned char)*p));
		if (!sfx)
			return -EINVAL;
		power = (int)(sfx - binary_suffixes) + 1;
		p++;
		if (p[0] == 'i' && (p[1] == 'B' || p[1] == 'b') && !p[2])
			p += 2;
		else if ((p[0] == 'B' || p[0] == 'b') && !p[1]) {
			base = 1000;
			p++;
		}
		if (*p)
			return -EINVAL;
	} else if (frac_start) {
		/* a fraction of a byte is meaningless */
		return -EINVAL;
	}

	unit = 1;
	rc = scale(&unit, base, power);
	if (rc)
		return rc;
	mult = unit;
	if (whole && unit > UINT64_MAX / whole)
		return -ERANGE;
	whole *= unit;
	frac = frac * mult / frac_div;
	if (frac > UINT64_MAX - whole)
		return -ERANGE;
	*res = whole + (uint64_t)frac;
	return 0;
}

char *size_to_human(uint64_t bytes, char *buf, size_t bufsz)
{
	static const char units[] = "BKMGTPE";
	unsigned int shift = 0, idx;
	uint64_t whole, rest, dec = 0;

	while (shift < 60 && bytes >> shift >= 1024)
		shift += 10;
	idx = shift / 10;
	whole = bytes >> shift;
	rest = bytes - (whole << shift);

	if (rest) {
		/* three decimals, then rounded half up to one */
		unsigned __int128 thousandths = (unsigned __int128)rest * 1000 >> shift;

		dec = ((uint64_t)thousandths + 50) / 100;
		if (dec == 10) {
			whole++;
			dec = 0;
		}
	}

	if (!idx)
		snprintf(buf, bufsz, "%" PRIu64 " B", whole);
	else if (dec)
		snprintf(buf, bufsz, "%" PRIu64 ".%" PRIu64 " %ciB", whole, dec,
			 units[idx]);
	else
		snprintf(buf, bufsz, "%" PRIu64 " %ciB", whole, units[idx]);
	return buf;
}

#ifdef TEST_PROGRAM_SIZES
/* TAP over the values util-linux's strtosize and size_to_human_string give. */
static int tap_count;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_count, what);
}

int main(void)
{
	static const struct {
		const char *str;
		int rc;
		uint64_t val;
	} parse[] = {
		{ "0", 0, 0 },
		{ "512", 0, 512 },
		{ " 5", 0, 5 },
		{ "0x10", 0, 16 },
		{ "010", 0, 8 },
		{ "1K", 0, 1024 },
		{ "1k", 0, 1024 },
		{ "1KiB", 0, 1024 },
		{ "1KB", 0, 1000 },
		{ "1.5K", 0, 1536 },
		{ "1.5KB", 0, 1500 },
		{ "0.5M", 0, 524288 },
		{ "1.05K", 0, 1075 },
		{ "2G", 0, 2147483648ULL },
		{ "1EiB", 0, 1ULL << 60 },
		{ "15EiB", 0, 15ULL << 60 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "16EiB", -ERANGE, 0 },
		{ "99999999999999999999999", -ERANGE, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "1Z", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ " -1", -EINVAL, 0 },
		{ "1X", -EINVAL, 0 },
		{ "1.5", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 },
		{ "5b", -EINVAL, 0 },
		{ "5iB", -EINVAL, 0 },
		{ "1.K", -EINVAL, 0 },
		{ "1KiBx", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
	};
	static const struct {
		uint64_t bytes;
		const char *str;
	} human[] = {
		{ 0, "0 B" },
		{ 1, "1 B" },
		{ 1023, "1023 B" },
		{ 1024, "1 KiB" },
		{ 1076, "1.1 KiB" },
		{ 1536, "1.5 KiB" },
		{ 24111104, "23 MiB" },
		{ 47429943296ULL, "44.2 GiB" },
		{ 1ULL << 60, "1 EiB" },
		{ UINT64_MAX, "16 EiB" },
	};
	char buf[SIZE_HUMAN_MAX], what[128];
	size_t i;

	printf("1..%zu\n",
	       2 * (sizeof(parse) / sizeof(parse[0])) + sizeof(human) / sizeof(human[0]));
	for (i = 0; i < sizeof(parse) / sizeof(parse[0]); i++) {
		uint64_t val = 12345;
		int rc = size_parse(parse[i].str, &val);

		snprintf(what, sizeof(what), "parse '%s' returns %d", parse[i].str,
			 parse[i].rc);
		check(rc == parse[i].rc, what);
		snprintf(what, sizeof(what), "parse '%s' gives %" PRIu64, parse[i].str,
			 parse[i].val);
		check(val == parse[i].val, what);
	}
	for (i = 0; i < sizeof(human) / sizeof(human[0]); i++) {
		size_to_human(human[i].bytes, buf, sizeof(buf));
		snprintf(what, sizeof(what), "%" PRIu64 " bytes read as '%s' (got '%s')",
			 human[i].bytes, human[i].str, buf);
		check(!strcmp(buf, human[i].str), what);
	}
	return 0;
}
#endif
