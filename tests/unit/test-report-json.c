// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --json: prints the documents of made-up runs for tests/json.bats (not
 * TAP), as built by lib/report-json.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-json.h"

/*
 * Print the documents of a few made-up runs, for tests/json.bats to
 * check with jq: ./test_report_json CASE
 */
int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	struct fs_result r = { .path = "/mnt",
			       .device = "/dev/loop0",
			       .trim_done = true,
			       .trimmed = 24111104 };
	struct report_json_fs f = { .fstype = "ext4", .trim_asked = true };
	char dir_path[] = "/h", journal_path[] = "/dev/loop0";
	struct audit_result a = { 0 };
	char why[REPORT_REASON_MAX];
	struct report_json *rj;
	int status = 0;

	if (!strcmp(what, "empty")) {
		rj = report_json_new(false);
		report_json_warning(rj, "no filesystem is listed in '%s'", "/etc/fstab");
		report_json_print(rj, 32, stdout);
		report_json_free(rj);
		return 0;
	}

	rj = report_json_new(!strcmp(what, "audit"));
	if (!rj)
		return 1;
	if (!strcmp(what, "audit")) {
		a.ext4 = true;
		a.journal.present = a.journal.read = true;
		a.journal.blocks = 4095;
		a.journal.nonzero_blocks = 22;
		a.journal.old_blocks = 20;
		a.journal.live_blocks = 2;
		a.free.read = true;
		a.free.free_bytes = a.free.read_bytes = 1 << 20;
		a.dirents.scanned = true;
		a.dirents.removed_names = 66;
		a.dirents.ndirs = 1;
		a.dirents.dirs = &(struct audit_dir){ .path = dir_path,
						      .ino = 12,
						      .removed_names = 66 };
		a.data.known = true;
		a.data.discard_max_bytes = 1 << 30;
		a.journal_dev = a.data;
		a.journal_dev.path = journal_path;
		a.kernel.checkpoint = a.kernel.checkpoint_discard = 1;
		a.kernel.checkpoint_zeroout = 1;
		a.kernel.wipes_dirents = true;
		f.audit = &a;
		f.trim_asked = false;
		r.trim_done = false;
		report_json_add(rj, &r, &f);
		status = EXIT_AUDIT_FOUND;
	} else {
		report_json_add(rj, &r, &f);
		r.path = "/srv \"quoted\"";
		r.device = "/dev/loop1";
		r.log_step_done = false;
		f.journal_asked = true;
		f.log_step_rc = 1;
		r.journal.unsupported = JOURNAL_NO_JOURNAL;
		report_json_warning(
			rj, "%s: the journal step is not supported: %s", r.path,
			report_journal_reason(&r.journal, "ext4", why, sizeof(why)));
		report_json_add(rj, &r, &f);
		r.path = "/data";
		r.device = "/dev/sdb1";
		r.trim_done = false;
		f.fstype = "xfs";
		f.trim_rc = -EIO;
		f.log_step_rc = 1;
		r.journal.unsupported = JOURNAL_NOT_EXT4;
		report_json_add(rj, &r, &f);
		f = (struct report_json_fs){ .fstype = "ext4",
					     .refused = "not the root of a filesystem "
							"(mounted on /)" };
		r = (struct fs_result){ .path = "/home/user" };
		report_json_add(rj, &r, &f);
		status = 64;
	}
	report_json_print(rj, status, stdout);
	report_json_free(rj);
	return 0;
}
