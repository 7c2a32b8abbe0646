/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_REPORT_H
#define FSTRIM_EXT_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "audit.h"
#include "journal.h"
#include "readset.h"

/* fstrim's exit statuses for -a, -A and -I, those of mount -a */
#define EXIT_ALL_FAILED 32
#define EXIT_SOME_FAILED 64
/* --audit found deleted data: a status neither fstrim nor the rest of the run gives */
#define EXIT_AUDIT_FOUND 2

/* What happened to one filesystem. */
struct fs_result {
	const char *path; /* as the user or the table named it */
	/* the same as /proc/self/mountinfo has it (decoded), NULL when not known */
	const char *mountpoint;
	const char *device; /* NULL for a single path */
	bool dry_run;
	bool trim_done; /* FITRIM issued (or would be, in a dry run) */
	uint64_t trimmed;
	unsigned int trim_ranges; /* trim_progress.ranges of both trims of --journal */
	bool trim_stopped; /* a signal stopped FITRIM between ranges */
	uint64_t trim_pos; /* then: every byte before it was trimmed */
	uint64_t trim_end; /* then: the end of the range asked for */
	bool log_step_done; /* the journal step ran (or would, dry run): ext4's
			     * journal erase, btrfs's commit (lib/fslog) */
	enum journal_erase erase;
	struct journal_result journal;
	int retrim_rc; /* the FITRIM after the checkpoint: 0, 1 unsupported, -errno */
	struct journal_verify verify; /* the journal read back after the erase */
	bool trim_checked; /* free space read back after the last FITRIM */
	struct audit_free trim_check;
	struct readset_summary readback; /* what trim_check covered, and why */
	/*
	 * The read backs read through a device-mapper layer that fstrim-ext
	 * cannot map: "dm-3 (vg-pool), a thin target"; "" when none
	 */
	char unproven_below[192];
	/* free blocks FITRIM cannot reach, read before the trims and after */
	struct audit_free unreached_check;
	/* ext4's directories read back after the journal step */
	bool names_checked;
	struct audit_dirents names_check;
};

/*
 * The line fstrim-ext prints on stdout for a filesystem, or NULL: with
 * errno 0 when there is nothing to say (not verbose, nothing done), with
 * errno ENOMEM when the line could not be made. Caller frees.
 */
char *report_line(const struct fs_result *res, bool verbose);

/*
 * Why the journal step cannot run, for "PATH: the journal step is not
 * supported: %s": a constant string, or @buf (of @size bytes, at least
 * REPORT_REASON_MAX) filled.
 */
#define REPORT_REASON_MAX 256
const char *report_journal_reason(const struct journal_result *jr, const char *fstype,
				  char *buf, size_t size);

/*
 * Free blocks found still holding data after the last FITRIM, when the
 * run read them back, else 0: those FITRIM discarded (the device kept
 * them), and those it cannot reach. Either fails the filesystem.
 */
uint64_t report_discarded_left(const struct fs_result *res);
/*
 * The errno of a read back of the free space (discarded, or that FITRIM
 * cannot reach) that failed, or 0: the filesystem fails, as for data left.
 */
int report_free_unread(const struct fs_result *res);
uint64_t report_unreached_left(const struct fs_result *res);
/*
 * Discarded free blocks read back after the second discard that the
 * device gave other data at each read (trim_check's unsteady_blocks),
 * when the run read them back, else 0: their erase is not verified, which
 * fails the filesystem.
 */
uint64_t report_unsteady(const struct fs_result *res);

/*
 * Names of deleted files read back in live directory blocks after the
 * journal step, when the directories were read, else 0. Fails the
 * filesystem too.
 */
uint64_t report_names_left(const struct fs_result *res);

/*
 * Where the read backs read through a layer fstrim-ext cannot map, so
 * that what lies below it was not read: the layer, else NULL. Fails the
 * filesystem too: the erase is not proven.
 */
const char *report_unproven_below(const struct fs_result *res);

/* Status of -a/-A/-I from the number of filesystems tried and failed. */
int report_all_status(unsigned int tried, unsigned int failed);

/*
 * @val as UTF-8 text, for the JSON document and the metrics: a byte that
 * is not part of valid UTF-8 becomes "\xNN", as findmnt and lsblk print
 * such bytes, and a backslash before an "x" becomes "\x5c" so that the
 * escape cannot be mistaken. NULL when @val needs no change, or on
 * ENOMEM (*err set then); the caller frees.
 */
char *report_utf8_safe(const char *val, int *err);

#endif
