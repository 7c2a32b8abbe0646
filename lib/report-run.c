// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The run told to the user: the warnings, the progress line, each
 * filesystem's lines or part of the JSON document, the metrics, and at
 * the end the document itself.
 */
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "report-run.h"
#include "sizes.h"

void report_vnote(void *arg, const char *fmt, va_list ap)
{
	const struct report_run *rr = arg;
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0)
		return;
	warnx("%s", msg);
	if (rr->json)
		report_json_warning(rr->json, "%s", msg);
	free(msg);
}

void report_note(const struct report_run *rr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_vnote((void *)rr, fmt, ap);
	va_end(ap);
}

static double seconds_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* The trim's line; returns its width. */
static int draw_trim(const struct report_run *rr, const char *path,
		     const struct trim_progress *p)
{
	char pos[SIZE_HUMAN_MAX], end[SIZE_HUMAN_MAX], done[SIZE_HUMAN_MAX];
	uint64_t span = p->end - p->start;

	if (p->one_call)
		/* xfs, btrfs, --step 0: the kernel tells nothing until the call ends */
		return fprintf(stderr, "\r%s: trimming in one FITRIM call, %.0f s", path,
			       seconds_since(&rr->begin)) -
		       1;
	return fprintf(stderr, "\r%s: trimming at %s of %s (%u%%), %s discarded", path,
		       size_to_human(p->pos, pos, sizeof(pos)),
		       size_to_human(p->end, end, sizeof(end)),
		       span ? (unsigned int)((p->pos - p->start) * 100.0 / (double)span) :
			      100,
		       size_to_human(p->trimmed, done, sizeof(done))) -
	       1;
}

/* A long read's line ("PATH: WHAT, X of Y (N%)"); returns its width. */
static int draw_read(const char *path, const struct audit_read *r)
{
	char done[SIZE_HUMAN_MAX], total[SIZE_HUMAN_MAX];

	return fprintf(stderr, "\r%s: %s%s %s of %s (%u%%)", path, r->what,
		       r->at ? " at" : ",", size_to_human(r->done, done, sizeof(done)),
		       size_to_human(r->total, total, sizeof(total)),
		       r->total ? (unsigned int)(r->done * 100.0 / (double)r->total) :
				  100) -
	       1;
}

/*
 * Like e2fsck -C: only for a trim or a read that takes more than a
 * second, at most five times a second, erased at its end.
 */
void report_progress(enum run_progress when, const char *path,
		     const struct trim_progress *p, const struct audit_read *r, void *arg)
{
	struct report_run *rr = arg;
	bool more;
	int width;

	if (when == RUN_TRIM_BEGIN || when == RUN_READ_BEGIN) {
		clock_gettime(CLOCK_MONOTONIC, &rr->begin);
		return;
	}
	if (when == RUN_TRIM_END || when == RUN_READ_END) {
		if (rr->width)
			fprintf(stderr, "\r%*s\r", rr->width, "");
		rr->width = 0;
		return;
	}
	/* the last update is always drawn */
	more = when == RUN_TRIM_RANGE ? p->pos < p->end : r->done < r->total;
	if (seconds_since(&rr->begin) < 1.0 ||
	    (rr->width && more && seconds_since(&rr->drawn) < 0.2))
		return;
	width = when == RUN_TRIM_RANGE ? draw_trim(rr, path, p) : draw_read(path, r);
	if (width < rr->width)
		fprintf(stderr, "%*s", rr->width - width, "");
	if (width > rr->width)
		rr->width = width;
	clock_gettime(CLOCK_MONOTONIC, &rr->drawn);
}

/* A line, a JSON row or a metric that could not be made: said, and kept for the status. */
static void lose_output(struct report_run *rr, const char *path, const char *what)
{
	warnx("%s: cannot make %s: %s", path, what, strerror(ENOMEM));
	rr->lost = true;
}

void report_fs(struct report_run *rr, const struct fs_result *res,
	       const struct report_json_fs *jf)
{
	char *text;

	if (rr->metrics && report_metrics_add(rr->metrics, res, jf, time(NULL)) != 0)
		lose_output(rr, res->path, "its metrics");
	if (rr->json) {
		if (report_json_add(rr->json, res, jf) != 0)
			lose_output(rr, res->path, "its part of the JSON document");
		return;
	}
	text = report_line(res, rr->verbose);
	if (text) {
		puts(text);
		free(text);
	} else if (errno) {
		lose_output(rr, res->path, "its line");
	}
	if (jf->audit) {
		text = audit_describe(res->path, jf->audit, jf->audit_rc, rr->verbose);
		if (text) {
			fputs(text, stdout);
			free(text);
		} else {
			lose_output(rr, res->path, "the audit's lines");
		}
	}
}

void report_not_done(struct report_run *rr, const char *path, const char *mountpoint,
		     const char *source, const char *fstype, const char *refused,
		     const char *error)
{
	struct fs_result res = { .path = path,
				 .mountpoint = mountpoint,
				 .dry_run = rr->dry_run };
	struct report_json_fs jf = {
		.fstype = fstype,
		.source = source,
		.refused = refused,
		.error = error,
	};

	if (rr->json)
		report_fs(rr, &res, &jf);
	else if (rr->metrics &&
		 report_metrics_add(rr->metrics, &res, &jf, time(NULL)) != 0)
		lose_output(rr, path, "its metrics");
}

int report_skipped(struct report_run *rr, const struct fs_skipped *sk, bool journal)
{
	struct fs_result res = { .path = sk->target, .dry_run = rr->dry_run };
	struct report_json_fs jf = {
		.fstype = sk->fstype,
		.source = sk->source,
		.skipped = sk->reason,
	};
	char error[256];

	if (sk->error) {
		report_note(rr, "cannot open %s: %s", sk->target, strerror(sk->error));
		snprintf(error, sizeof(error), "cannot open: %s", strerror(sk->error));
		report_not_done(rr, sk->target, NULL, sk->source, sk->fstype, NULL,
				error);
		return -sk->error;
	}
	/*
	 * A filesystem seen only through a bind of one of its directories:
	 * the journal step needs its root, so it is not trimmed. Said
	 * without --verbose, and a failure when its journal was to be erased.
	 */
	if (sk->only_subdir) {
		report_note(rr,
			    "%s: not trimmed: %s, and %s is mounted nowhere at its root",
			    sk->target, sk->reason,
			    sk->source ? sk->source : "its filesystem");
		if (!journal)
			return 0;
		snprintf(error, sizeof(error), "not trimmed: %s", sk->reason);
		report_not_done(rr, sk->target, NULL, sk->source, sk->fstype, NULL,
				error);
		return -EXDEV;
	}
	if (rr->json)
		report_fs(rr, &res, &jf);
	else if (rr->verbose)
		printf("%s: skipped: %s\n", sk->target, sk->reason);
	return 0;
}

/*
 * A run that failed writes it too; a file not written, or a line, row or
 * metric not made, fails a run that did not.
 */
int report_run_end(struct report_run *rr, int rc)
{
	if (rr->lost && rc == 0)
		rc = EXIT_FAILURE;
	if (rr->metrics) {
		int mrc = report_metrics_write(rr->metrics, rr->metrics_file, rc);

		if (mrc != 0) {
			report_note(rr, "cannot write %s: %s", rr->metrics_file,
				    strerror(-mrc));
			if (rc == 0)
				rc = EXIT_FAILURE;
		}
		report_metrics_free(rr->metrics);
		rr->metrics = NULL;
	}
	if (rr->json) {
		if (report_json_print(rr->json, rc, stdout) != 0) {
			warnx("cannot print the JSON document");
			if (rc == 0)
				rc = EXIT_FAILURE;
		}
		report_json_free(rr->json);
		rr->json = NULL;
	}
	return rc;
}
