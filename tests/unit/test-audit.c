// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * TAP test of the audit's pure helpers (lib/audit.c).
 */
#include <stdbool.h>
#include <stdio.h>

#include "audit.h"

/* TAP over the pure helpers. */
static int tap_count, tap_failed;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_count, what);
	if (!ok)
		tap_failed++;
}

int main(void)
{
	printf("1..14\n");
	check(audit_name_plausible("PII-SSN-001.txt", 15), "plain name");
	check(audit_name_plausible("\xc3\xa9t\xc3\xa9", 5), "UTF-8 name");
	check(!audit_name_plausible("", 0), "empty name");
	check(!audit_name_plausible("a\0b", 3), "NUL inside");
	check(!audit_name_plausible("\0\0\0\0", 4), "wiped name");
	check(!audit_name_plausible("a/b", 3), "slash");
	check(!audit_name_plausible("..", 2), "dot-dot");
	check(!audit_name_plausible(".", 1), "dot");
	check(!audit_name_plausible("\x01\x02", 2), "control bytes");
	check(audit_release_at_least("5.13.0", 5, 13), "5.13.0 >= 5.13");
	check(audit_release_at_least("6.1.0-13-amd64", 5, 13), "6.1 >= 5.13");
	check(!audit_release_at_least("5.10.0-28-amd64", 5, 13), "5.10 < 5.13");
	check(!audit_release_at_least("4.19.0", 5, 13), "4.19 < 5.13");
	check(!audit_release_at_least("junk", 5, 13), "junk");
	return tap_failed ? 1 : 0;
}
