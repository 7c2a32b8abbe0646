/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_REPORT_JSON_H
#define FSTRIM_EXT_REPORT_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "audit.h"
#include "report.h"

/*
 * --json: one document for the whole run, built with libsmartcols as
 * lsblk -J and findmnt -J are:
 *
 *   { "filesystems": [ { "target": ..., "source": ..., ... }, ... ],
 *     "warnings": [ ... ], "status": 0 }
 *
 * The command feeds each filesystem's result as it goes and prints the
 * document once at the end. Nothing here writes to stderr: the command
 * still prints its warnings there, and hands the same text over with
 * report_json_warning().
 */
struct report_json;

/* What the command knows about a filesystem beyond struct fs_result. */
struct report_json_fs {
	const char *fstype;
	const char *source; /* device when res->device is NULL (one path) */
	bool trim_asked; /* FITRIM was part of the run */
	bool journal_asked; /* --journal, --journal-only or --journal-erase */
	int trim_rc; /* 0, 1 unsupported, or -errno */
	int log_step_rc; /* the journal step (log_step_done): 0, 1 unsupported, or -errno */
	const char *refused; /* why the filesystem was not touched, or NULL */
	const char *skipped; /* why a table entry was not chosen, or NULL */
	const char *error; /* what stopped the work on it (cannot open,
					 * syncfs failed), or NULL */
	int rc; /* the filesystem's verdict: 0, 1 unsupported, or -errno */
	const struct audit_result *audit; /* NULL without --audit */
	int audit_rc; /* audit_fs()'s return */
};

/* @with_audit adds the audit_* members to every filesystem. NULL on ENOMEM. */
struct report_json *report_json_new(bool with_audit);

/*
 * A warning about the next filesystem added, or, when none follows,
 * about the run. Returns 0 or -ENOMEM.
 */
int report_json_warning(struct report_json *rj, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The warnings given so far are about the run, not the next filesystem. */
void report_json_run_warnings(struct report_json *rj);

/* Add one filesystem; @res->path is its target. Returns 0 or -errno. */
int report_json_add(struct report_json *rj, const struct fs_result *res,
		    const struct report_json_fs *fs);

/* Print the document with the run's exit status. Returns 0 or -errno. */
int report_json_print(struct report_json *rj, int exit_status, FILE *out);

void report_json_free(struct report_json *rj);

#endif /* FSTRIM_EXT_REPORT_JSON_H */
