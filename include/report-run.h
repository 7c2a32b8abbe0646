/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_REPORT_RUN_H
#define FSTRIM_EXT_REPORT_RUN_H

#include <stdarg.h>
#include <stdbool.h>
#include <time.h>

#include "mounts.h"
#include "report.h"
#include "report-json.h"
#include "report-metrics.h"
#include "run.h"

/*
 * Where the run is told: lines on stdout and warnings on stderr, or the
 * --json document; the --metrics file; the progress line on stderr.
 */
struct report_run {
	struct report_json *json; /* --json: the document of the run, or NULL */
	const char *metrics_file; /* --metrics */
	struct report_metrics *metrics; /* --metrics: the results so far */
	bool verbose;
	bool dry_run;
	struct timespec begin, drawn; /* the trim's or read's start, the line's update */
	int width; /* of the progress line on the terminal, 0 when none */
	bool lost; /* a line, a JSON row or a metric could not be made */
};

/*
 * warnx(), and with --json the same text in the document, with the
 * filesystem it is about. report_vnote() is run_opts' message callback,
 * @arg a struct report_run.
 */
void report_vnote(void *arg, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void report_note(const struct report_run *rr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * run_opts' progress callback, @arg a struct report_run: a line on
 * stderr, redrawn, for a trim or a long read (the audit's, a read back)
 * that takes more than a second.
 */
void report_progress(enum run_progress when, const char *path,
		     const struct trim_progress *p, const struct audit_read *r,
		     void *arg);

/* What the user reads about a filesystem: lines, or its part of the JSON document. */
void report_fs(struct report_run *rr, const struct fs_result *res,
	       const struct report_json_fs *jf);

/*
 * A filesystem that was refused or could not be opened: only --json tells
 * more. @mountpoint as in struct fs_result, NULL when not known.
 */
void report_not_done(struct report_run *rr, const char *path, const char *mountpoint,
		     const char *source, const char *fstype, const char *refused,
		     const char *error);

/*
 * An entry of the table that looks like a block-device filesystem and
 * was not chosen: with --verbose or --json, why. One that could not be
 * looked at is a failure, reported as one that cannot be opened is, and
 * so is one seen only through a bind of a directory when @journal (its
 * journal was to be erased). Returns 0 or -errno for such a failure.
 */
int report_skipped(struct report_run *rr, const struct fs_skipped *sk, bool journal);

/*
 * The end of the run with exit status @rc: the metrics file written, the
 * JSON document printed, both freed. Returns the exit status, EXIT_FAILURE
 * for a run that succeeded but whose metrics file was not written, whose
 * document could not be printed, or one of whose lines, JSON rows or
 * metrics could not be made.
 */
int report_run_end(struct report_run *rr, int rc);

#endif /* FSTRIM_EXT_REPORT_RUN_H */
