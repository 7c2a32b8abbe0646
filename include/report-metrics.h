/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_REPORT_METRICS_H
#define FSTRIM_EXT_REPORT_METRICS_H

#include <time.h>

#include "report-json.h"
#include "report.h"

/*
 * --metrics FILE: the run in the Prometheus text exposition format
 * (0.0.4), for node_exporter's textfile collector. The command adds each
 * filesystem's result as it goes and writes the file once at the end,
 * replacing it atomically. Nothing here prints.
 */
struct report_metrics;

/* NULL on ENOMEM. */
struct report_metrics *report_metrics_new(void);

/*
 * Add one filesystem, whose steps ended at @when; @fs->rc is its
 * verdict. An entry of -a, -A or -I that was not chosen (@fs->skipped)
 * is left out. Returns 0 or -ENOMEM.
 */
int report_metrics_add(struct report_metrics *rm, const struct fs_result *res,
		       const struct report_json_fs *fs, time_t when);

/*
 * Write @file with the run's @exit_status: a temporary file in the same
 * directory, fsync'ed, renamed over @file. The last success of a
 * filesystem that did not succeed now is taken from the @file it
 * replaces. Returns 0 or -errno.
 */
int report_metrics_write(struct report_metrics *rm, const char *file, int exit_status);

/*
 * Whether the directory that @file is written in (its temporary file
 * beside it) is there, to be asked before any work: 0; -ENOENT and the
 * like from stat(2); -ENOTDIR when it is not a directory; -ENOMEM. Sets
 * *@dir to that directory's name, for the message (the caller frees it;
 * NULL on ENOMEM).
 */
int report_metrics_check_dir(const char *file, char **dir);

void report_metrics_free(struct report_metrics *rm);

#endif /* FSTRIM_EXT_REPORT_METRICS_H */
