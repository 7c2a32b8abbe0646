/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_RUN_H
#define FSTRIM_EXT_RUN_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "journal.h"
#include "report.h"
#include "report-json.h"
#include "trim.h"

/*
 * When the progress callback is called: before, between and after FITRIM
 * calls; before a long read of the device (the audit's reads, the read
 * backs of --journal), after each of its pieces, and after it.
 */
enum run_progress {
	RUN_TRIM_BEGIN,
	RUN_TRIM_RANGE,
	RUN_TRIM_END,
	RUN_READ_BEGIN,
	RUN_READ_PIECE,
	RUN_READ_END
};

/* What one filesystem's run needs to know of the caller's options. */
struct run_opts {
	struct fstrim_range range; /* -o, -l, -m */
	uint64_t step; /* --step: bytes per FITRIM call, 0 for one call */
	enum journal_erase erase;
	bool dry_run;
	bool quiet_unsupp; /* say nothing about a step that is not supported */
	bool journal; /* the journal step after FITRIM */
	bool journal_only; /* the journal step, no FITRIM */
	bool audit; /* read-only check, after the steps if any */
	bool readback_all; /* --read-back=all: every run reads all free space */
	/*
	 * The stop: the signal that asked for it, 0 while none has, and a
	 * descriptor that becomes readable then (-1 for none), which cuts
	 * the FITRIM call in progress short.
	 */
	const volatile sig_atomic_t *stop;
	int stop_fd;
	/*
	 * NULL for none; @p is the trim's, NULL at RUN_TRIM_BEGIN and for
	 * a read, @r the read's, NULL for the trim
	 */
	void (*progress)(enum run_progress when, const char *path,
			 const struct trim_progress *p, const struct audit_read *r,
			 void *arg);
	/* what a person should read about the filesystem, one message a call */
	void (*message)(void *arg, const char *fmt, va_list ap)
		__attribute__((format(printf, 2, 0)));
	void *arg; /* for both callbacks */
};

/* What the run did, for the report (report_line(), --json, --metrics). */
struct run_result {
	struct fs_result res;
	struct report_json_fs jf; /* jf.rc is the verdict */
	struct audit_result audit; /* --audit */
	bool found; /* --audit found what deleted files left */
	char error[256]; /* jf.error points here when set */
};

/*
 * Open the root of a chosen filesystem for run_fs() (as fs_open_root()
 * does: @target, its mount ID and device), named @path in messages;
 * @device is NULL for a single path. One that a step would write to
 * but that is read-only is refused: a chosen one remounted read-only,
 * and for the journal step a single path on a read-only filesystem.
 * Returns the descriptor, or -errno with r->jf.refused or r->jf.error
 * set for the report.
 */
int run_open(const struct run_opts *opts, const char *path, const char *target,
	     int mnt_id, dev_t dev, const char *device, struct run_result *r);

/*
 * Run the steps asked for on the filesystem open at @fd (its root, named
 * @path; @device NULL for a single path, @source and @fstype for the
 * report) and fill @r, to be freed with run_result_free() whatever the
 * return. Returns the verdict: 0, 1 when a step is unsupported, or -errno.
 */
int run_fs(const struct run_opts *opts, int fd, const char *path, const char *device,
	   const char *source, const char *fstype, struct run_result *r);
void run_result_free(struct run_result *r);

/* "SIGINT" or "SIGTERM", for a stop's messages. */
const char *run_signal_name(int sig);

#endif /* FSTRIM_EXT_RUN_H */
