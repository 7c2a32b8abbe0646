// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fstrim-ext -- discard the unused blocks of mounted filesystems and, on
 * request, checkpoint the ext4 journal and erase it, so that what was
 * deleted is gone from the device and not only from the directory tree.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#include "audit.h"
#include "caps.h"
#include "compat.h"
#include "ext4-ioctl.h"
#include "fslog.h"
#include "journal.h"
#include "mounts.h"
#include "remnants.h"
#include "report.h"
#include "report-json.h"
#include "report-metrics.h"
#include "sizes.h"
#include "trim.h"

struct fstrim_control {
	struct fstrim_range range;
	const char *tables; /* -a, -A, -I: the tables to read */
	const char *types; /* -t */
	enum journal_erase erase;
	struct report_json *json; /* --json: the document of the run */
	const char *metrics_file; /* --metrics */
	struct report_metrics *metrics; /* --metrics: the results so far */
	unsigned int found; /* --audit: filesystems with remnants */
	uint64_t step; /* --step: bytes per FITRIM call, 0 for one call */

	unsigned int verbose : 1;
	unsigned int quiet_unsupp : 1;
	unsigned int dryrun : 1;
	unsigned int journal : 1; /* the journal step after FITRIM */
	unsigned int journal_only : 1; /* the journal step, no FITRIM */
	unsigned int audit : 1; /* read-only check, after the steps if any */
	unsigned int json_opt : 1; /* -J: build ->json once the options are read */
	unsigned int progress : 1; /* a progress line on stderr, a terminal */
};

/* What this build does without the newer libraries' features, if anything. */
static void print_compat_notes(FILE *out)
{
	if (*COMPAT_NOTES)
		fprintf(out, "\nBuilt against older libraries:\n%s", COMPAT_NOTES);
}

static void __attribute__((__noreturn__)) usage(void)
{
	FILE *out = stdout;

	fputs("\nUsage:\n", out);
	fprintf(out, " %s [options] <mountpoint>\n", program_invocation_short_name);
	fputs("\nDiscard the unused blocks of a mounted filesystem and, with --journal,\n"
	      "checkpoint its ext4 journal and erase the journal's blocks.\n",
	      out);
	fputs("\nOptions:\n", out);
	fputs(" -a, --all                  trim every mounted filesystem that supports it\n"
	      " -A, --fstab                trim the filesystems listed in /etc/fstab\n"
	      " -I, --listed-in <list>     trim the filesystems of the first usable file\n"
	      "                              of a colon-separated list\n"
	      " -o, --offset <num>         byte offset in the filesystem where discarding starts\n"
	      " -l, --length <num>         number of bytes to discard\n"
	      " -m, --minimum <num>        minimum length of a free extent to discard\n"
	      " -t, --types <list>         limit -a, -A and -I to these filesystem types\n"
	      " -j, --journal              also checkpoint the ext4 journal and erase its blocks\n"
	      "     --journal-only         checkpoint and erase the journal, without FITRIM\n"
	      "     --journal-erase <how>  erase the journal by discard (default) or zeroout;\n"
	      "                              implies --journal\n"
	      " -v, --verbose              report what was done on each filesystem\n"
	      "     --quiet-unsupported    be silent about filesystems that cannot do a step\n"
	      " -n, --dry-run              select and check, but discard nothing\n"
	      "     --audit                check, read-only, what the device still holds of\n"
	      "                              deleted data (after the steps with --journal);\n"
	      "                              status 2 when found, 32/64 when not all examined\n"
	      " -J, --json                 print one JSON document for the whole run\n"
	      "     --step <num>           FITRIM in calls of at most <num> bytes, each sized\n"
	      "                              to about 0.25 s, to show progress and where a\n"
	      "                              stop came (default 64GiB; 0: one call, as fstrim)\n"
	      "     --metrics <file>       write the run's results to <file> as Prometheus\n"
	      "                              metrics, for node_exporter's textfile collector\n",
	      out);
	fputs("\n -h, --help                 display this help\n"
	      " -V, --version              display version\n",
	      out);
	fputs("\nArguments:\n"
	      " <num> takes the suffixes KiB (=1024), MiB, GiB, TiB, PiB and EiB (\"iB\" is\n"
	      " optional: K means KiB), or KB (=1000), MB, GB, TB, PB and EB.\n",
	      out);
	print_compat_notes(out);
	fprintf(out, "\nFor more details see %s(8).\n", program_invocation_short_name);
	exit(EXIT_SUCCESS);
}

static void __attribute__((__noreturn__)) errtryhelp(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n",
		program_invocation_short_name);
	exit(EXIT_FAILURE);
}

/*
 * Output that could not be made (no memory for a line, a JSON row or a
 * metric): said at once, and an error at exit, as one not written is.
 */
static bool output_lost;

static void lose_output(const char *path, const char *what)
{
	warnx("%s: cannot make %s: %s", path, what, strerror(ENOMEM));
	output_lost = true;
}

/* Like util-linux: output that could not be written is an error. */
static void close_stdout(void)
{
	int failed = ferror(stdout);

	errno = 0;
	if (fflush(stdout) != 0)
		failed = 1;
	if (fclose(stdout) != 0)
		failed = 1;
	if (failed && errno != EPIPE) {
		if (errno)
			warn("write error");
		else
			warnx("write error");
		_exit(EXIT_FAILURE);
	}
	if (output_lost)
		_exit(EXIT_FAILURE);
}

/* SIGINT or SIGTERM, once one has come: the run stops after this filesystem. */
static volatile sig_atomic_t stop_signal;
/* a pipe written when one comes: its read end wakes the wait for a FITRIM */
static int stop_pipe[2] = { -1, -1 };

static void on_stop_signal(int sig)
{
	int saved_errno = errno;

	stop_signal = sig;
	if (stop_pipe[1] >= 0 && write(stop_pipe[1], "", 1) < 0) {
		/* full: it is readable already */
	}
	errno = saved_errno;
}

/*
 * SIGINT and SIGTERM are caught, so that what was done is reported, where
 * a trim stopped, what was not done is named, and the exit status is 128
 * + the signal. A caught signal does not stop a FITRIM in the kernel, so
 * lib/trim makes each call in a child that it kills when the pipe becomes
 * readable: the kernel stops the trim where it stops fstrim's (on ext4
 * after the free extent in progress). The journal checkpoint runs to its
 * end. A second signal kills.
 */
static void catch_stop_signals(void)
{
	struct sigaction sa = {
		.sa_handler = on_stop_signal,
		.sa_flags = SA_RESETHAND | SA_RESTART,
	};

	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		stop_pipe[0] = stop_pipe[1] = -1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/*
	 * SIGCHLD ignored, as a parent may leave it across exec, reaps the
	 * FITRIM child by itself: its waitpid() would fail with ECHILD.
	 */
	signal(SIGCHLD, SIG_DFL);
}

static const char *stop_signal_name(void)
{
	return stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
}

static uint64_t size_or_err(const char *str, const char *what)
{
	uint64_t val;
	int rc = size_parse(str, &val);

	if (rc) {
		errno = -rc;
		err(EXIT_FAILURE, "failed to parse %s: '%s'", what, str);
	}
	return val;
}

/* Combine the results of two steps: a failure wins over "unsupported". */
static int worse(int a, int b)
{
	if (a < 0 || b < 0)
		return a < 0 ? a : b;
	return a > b ? a : b;
}

/*
 * warnx(), and with --json the same text in the document, with the
 * filesystem it is about.
 */
static void __attribute__((format(printf, 2, 3)))
note(const struct fstrim_control *ctl, const char *fmt, ...)
{
	char *msg;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return;
	warnx("%s", msg);
	if (ctl->json)
		report_json_warning(ctl->json, "%s", msg);
	free(msg);
}

/* ---- FITRIM in ranges: stop between them, show progress ---------------- */

/*
 * The most one FITRIM call covers. lib/trim sizes each call, in whole
 * block groups, to take about a quarter of a second (a group already
 * trimmed costs microseconds, one to discard on a slow device more than a
 * second), and a stop does not wait for the call in progress; so this
 * bound only keeps the position reported, and the progress shown, close
 * to the work on a fast device.
 */
#define TRIM_STEP_DEFAULT (64ULL << 30)

struct trim_run {
	const struct fstrim_control *ctl;
	const char *path;
	struct timespec begin, drawn; /* the trim's start, the line's last update */
	int width; /* of the progress line on the terminal, 0 when none */
};

static double seconds_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Like e2fsck -C: only for a filesystem that takes more than a second. */
static void draw_progress(struct trim_run *run, const struct trim_progress *p)
{
	char pos[SIZE_HUMAN_MAX], end[SIZE_HUMAN_MAX], done[SIZE_HUMAN_MAX];
	uint64_t span = p->end - p->start;
	int width;

	if (seconds_since(&run->begin) < 1.0 ||
	    (run->width && p->pos < p->end && seconds_since(&run->drawn) < 0.2))
		return;
	if (p->one_call)
		/* xfs, btrfs, --step 0: the kernel tells nothing until the call ends */
		width = fprintf(stderr, "\r%s: trimming in one FITRIM call, %.0f s",
				run->path, seconds_since(&run->begin)) -
			1;
	else
		width = fprintf(stderr, "\r%s: trimming at %s of %s (%u%%), %s discarded",
				run->path, size_to_human(p->pos, pos, sizeof(pos)),
				size_to_human(p->end, end, sizeof(end)),
				span ? (unsigned int)((p->pos - p->start) * 100.0 /
						      (double)span) :
				       100,
				size_to_human(p->trimmed, done, sizeof(done))) -
			1;
	if (width < run->width)
		fprintf(stderr, "%*s", run->width - width, "");
	if (width > run->width)
		run->width = width;
	clock_gettime(CLOCK_MONOTONIC, &run->drawn);
}

static bool after_range(const struct trim_progress *p, void *arg)
{
	struct trim_run *run = arg;

	if (run->ctl->progress)
		draw_progress(run, p);
	return stop_signal != 0;
}

/*
 * FITRIM over the requested range in steps, taking SIGINT and SIGTERM
 * between them; adds to @res what was trimmed, and where it stopped.
 * Returns as trim_fs_steps() does.
 */
static int trim_in_steps(const struct fstrim_control *ctl, int fd, const char *path,
			 struct fs_result *res)
{
	struct trim_run run = { .ctl = ctl, .path = path };
	struct trim_progress p;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &run.begin);
	rc = trim_fs_steps(fd, &ctl->range, ctl->step, stop_pipe[0], after_range, &run,
			   &p);
	if (run.width)
		fprintf(stderr, "\r%*s\r", run.width, "");
	res->trimmed += p.trimmed;
	res->trim_ranges += p.ranges;
	if (p.stopped) {
		res->trim_stopped = true;
		res->trim_pos = p.pos;
		res->trim_end = p.end;
	}
	return rc;
}

/* A trim cut short: say so on stderr, whether or not --verbose prints the line. */
static void note_stopped(const struct fstrim_control *ctl, const struct fs_result *res)
{
	note(ctl,
	     "%s: trimming interrupted by %s at byte %" PRIu64 " of %" PRIu64 ": %" PRIu64
	     " bytes trimmed, the rest not",
	     res->path, stop_signal_name(), res->trim_pos, res->trim_end, res->trimmed);
}

/*
 * --audit: 2 when something recoverable was found, a status nothing else
 * gives; 32 when no filesystem could be audited in full, 64 when some
 * could not (a failed step counts as such); or-ed, so 66 is "found on
 * one, could not look at all of another".
 */
static int audit_status(const struct fstrim_control *ctl, unsigned int tried,
			unsigned int failed)
{
	return report_all_status(tried, failed) | (ctl->found ? EXIT_AUDIT_FOUND : 0);
}

/* What the user reads about a filesystem: lines, or its part of the JSON document. */
static void report_fs(const struct fstrim_control *ctl, const struct fs_result *res,
		      const struct report_json_fs *jf)
{
	char *text;

	if (ctl->metrics && report_metrics_add(ctl->metrics, res, jf, time(NULL)) != 0)
		lose_output(res->path, "its metrics");
	if (ctl->json) {
		if (report_json_add(ctl->json, res, jf) != 0)
			lose_output(res->path, "its part of the JSON document");
		return;
	}
	text = report_line(res, ctl->verbose);
	if (text) {
		puts(text);
		free(text);
	} else if (errno) {
		lose_output(res->path, "its line");
	}
	if (jf->audit) {
		text = audit_describe(res->path, jf->audit, jf->audit_rc, ctl->verbose);
		if (text) {
			fputs(text, stdout);
			free(text);
		} else {
			lose_output(res->path, "the audit's lines");
		}
	}
}

/* A filesystem that was refused or could not be opened: only --json tells more. */
static void report_not_done(const struct fstrim_control *ctl, const char *path,
			    const char *source, const char *fstype, const char *refused,
			    const char *error)
{
	struct fs_result res = { .path = path, .dry_run = ctl->dryrun };
	struct report_json_fs jf = {
		.fstype = fstype,
		.source = source,
		.refused = refused,
		.error = error,
	};

	if (ctl->json)
		report_fs(ctl, &res, &jf);
	else if (ctl->metrics &&
		 report_metrics_add(ctl->metrics, &res, &jf, time(NULL)) != 0)
		warnx("%s: cannot add to the metrics", path);
}

/*
 * Say what the steps could not remove, as far as the kernel shows it:
 * free space in chunks below the discard granularity, which FITRIM
 * skips, measured.
 */
static void warn_remnants(const struct fstrim_control *ctl, int fd, const char *path)
{
	char size[SIZE_HUMAN_MAX], gran[SIZE_HUMAN_MAX];
	struct remnants rem = { 0 };
	struct statfs sfs;
	struct stat st;

	if (fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0 ||
	    remnants_check_dev(st.st_dev, (unsigned int)sfs.f_bsize, &rem) != 0)
		return;
	if (rem.small_free_bytes)
		note(ctl,
		     "%s: warning: up to %s of free space lies in extents smaller "
		     "than the discard granularity (%s) and was not discarded",
		     path, size_to_human(rem.small_free_bytes, size, sizeof(size)),
		     size_to_human(rem.discard_granularity, gran, sizeof(gran)));
}

/*
 * Names of deleted files can stay inside live directory blocks, where
 * no discard reaches (a kernel without the directory-pack fix leaves
 * the old copies that an htree leaf split moves): read every directory
 * back, as --audit does, and fail the filesystem on what is found.
 */
static void check_names(const struct fstrim_control *ctl, int fd, const char *path,
			struct fs_result *res)
{
	const struct audit_dirents *d = &res->names_check;
	char why[256];
	int rc;

	res->names_checked = true;
	rc = audit_dirents_fd(fd, &res->names_check);
	if (rc) {
		res->names_check.error = -rc;
		note(ctl, "%s: the directories could not be read back: %s", path,
		     audit_dirents_why(d, why, sizeof(why)));
	} else if (d->removed_names) {
		note(ctl,
		     "%s: %" PRIu64 " names of deleted files remain in live blocks of "
		     "%zu %s (first: %s)%s",
		     path, d->removed_names, d->ndirs,
		     d->ndirs == 1 ? "directory" : "directories",
		     d->ndirs ? d->dirs[0].path : "?",
		     audit_ext4_feature(EXT4_FEATURE_DIRENT_PACK_WIPE) ?
			     "" :
			     "; the kernel lacks the directory-pack fix");
	}
}

/*
 * Discard is a hint: lib/journal read the journal back after the erase,
 * and where blocks of erased transactions still held data, erased once
 * more with zeroout. Data left, and a journal not read back, fail the
 * filesystem: an erase that was not read back is not a result.
 */
static void note_journal_verify(const struct fstrim_control *ctl, const char *path,
				const struct journal_verify *v)
{
	if (v->state == JOURNAL_VERIFY_UNREAD)
		note(ctl, "%s: the journal could not be read back after the erase: %s",
		     path, strerror(v->error));
	else if (v->state == JOURNAL_VERIFY_DATA_LEFT)
		note(ctl,
		     "%s: %" PRIu64
		     " journal blocks still hold data after the erase and %s%s%s",
		     path, v->left, v->redo, v->error ? ": " : "",
		     v->error ? strerror(v->error) : "");
}

/*
 * Before the trims: the free blocks FITRIM will not reach (held by the
 * allocator, or in free extents below its minimum), read for what
 * deleted files left there; verify_trim() reads those again after.
 */
static struct audit_free_marks *note_unreachable(const struct fstrim_control *ctl, int fd,
						 struct fs_result *res)
{
	struct audit_free_marks *marks = NULL;

	audit_free_unreachable(fd, ctl->range.start, ctl->range.len, ctl->range.minlen,
			       UINT64_MAX, &res->unreached_check, &marks);
	return marks;
}

/*
 * The same for free space: all that FITRIM discarded is read back, so
 * that a device that ignores discard is reported, not trusted;
 * and the blocks @unreached (note_unreachable()) that held data before
 * the trims. Data in either fails the filesystem, as data left in the
 * journal does. Where FITRIM is not supported (a device without
 * discard), the free space was never trimmed and is read back all the
 * same: what deleted files left there is still on the device.
 */
static void verify_trim(const struct fstrim_control *ctl, int fd, const char *path,
			struct fs_result *res, struct audit_free_marks *unreached)
{
	struct audit_free *f = &res->trim_check, *u = &res->unreached_check;
	struct audit_free_marks *marks = NULL;
	char size[SIZE_HUMAN_MAX];
	bool trimmed = res->trim_done;
	uint64_t more;
	int rc, urc = 0;

	res->trim_checked = true;
	rc = audit_free_readback(fd, ctl->range.start, ctl->range.len, ctl->range.minlen,
				 f, &marks);
	/*
	 * Blocks freed by a transaction that committed after FITRIM passed
	 * them were not discarded, a preallocation may have been released,
	 * and a writer may take and free blocks meanwhile: commit, discard
	 * once more, and count only the blocks that still hold what they
	 * held, free all along.
	 */
	if ((marks || unreached) && syncfs(fd) == 0 &&
	    (!trimmed || trim_fs_again(fd, &ctl->range, &more) == 0)) {
		if (!rc && marks)
			rc = audit_free_recheck(fd, marks, f);
		if (unreached)
			urc = audit_free_recheck(fd, unreached, u);
	}
	audit_free_marks_free(marks);
	if (rc) {
		f->read = false;
		f->error = -rc;
		note(ctl, "%s: the %s free space could not be read back: %s", path,
		     trimmed ? "discarded" : "untrimmed", strerror(-rc));
	} else if (f->nonzero_blocks && !trimmed) {
		note(ctl,
		     "%s: the free space was not trimmed (the discard operation is not "
		     "supported): %" PRIu64 " free blocks hold data (%s read back)",
		     path, f->nonzero_blocks,
		     size_to_human(f->read_bytes, size, sizeof(size)));
	} else if (f->nonzero_blocks) {
		note(ctl,
		     "%s: the device did not erase what FITRIM discarded: %" PRIu64
		     " free blocks still hold data after a second discard (%s read back)",
		     path, f->nonzero_blocks,
		     size_to_human(f->read_bytes, size, sizeof(size)));
	}
	if (urc) {
		u->read = false;
		u->error = -urc;
	}
	/* not read and no error: the scan was skipped for a stop signal */
	if (!u->read && u->error) {
		note(ctl, "%s: the free blocks FITRIM cannot reach could not be read: %s",
		     path, strerror(u->error));
	} else if (u->nonzero_blocks) {
		note(ctl,
		     "%s: %" PRIu64 " free blocks that FITRIM cannot reach still hold "
		     "data of deleted files: %" PRIu64 " held by the allocator "
		     "(preallocated, until used or the filesystem is unmounted), %" PRIu64
		     " in free extents shorter than the discard granularity",
		     path, u->nonzero_blocks, u->held_blocks, u->short_blocks);
	}
}

/*
 * The steps on one filesystem, through the descriptor that was checked,
 * then the audit. Returns 0, 1 when a step is unsupported, or -errno.
 */
static int process_fs(struct fstrim_control *ctl, int fd, const char *path,
		      const char *device, const char *source, const char *fstype)
{
	/* --audit alone changes nothing; with --journal it looks afterwards */
	bool steps = !ctl->audit || ctl->journal;
	struct fs_result res = {
		.path = path,
		.device = device,
		.dry_run = ctl->dryrun,
		.erase = ctl->erase,
	};
	struct report_json_fs jf = {
		.fstype = fstype,
		.source = source,
		.trim_asked = steps && !ctl->journal_only,
		.journal_asked = ctl->journal,
	};
	struct audit_result audit = { 0 };
	struct audit_free_marks *unreached = NULL;
	char reason[REPORT_REASON_MAX];
	int trim_rc = 0, journal_rc = 0, rc;
	char error[256];

	if (jf.trim_asked) {
		/*
		 * Blocks freed by a transaction that has not committed are
		 * not free on disk yet, so FITRIM would skip them: commit
		 * first when the point is to erase what was deleted.
		 */
		if (ctl->journal && !ctl->dryrun && syncfs(fd) != 0) {
			rc = -errno;
			note(ctl, "%s: syncfs failed: %s", path, strerror(-rc));
			snprintf(error, sizeof(error), "syncfs: %s", strerror(-rc));
			jf.error = error;
			goto out;
		}
		if (ctl->dryrun) {
			res.trim_done = true;
		} else {
			/* nothing more once a stop is asked for: not even a read */
			if (ctl->journal && !stop_signal && fslog_type(fd) == FSLOG_EXT4)
				unreached = note_unreachable(ctl, fd, &res);
			trim_rc = trim_in_steps(ctl, fd, path, &res);
			if (res.trim_stopped)
				note_stopped(ctl, &res);
			if (trim_rc < 0) {
				note(ctl, "%s: FITRIM ioctl failed: %s", path,
				     strerror(-trim_rc));
				rc = trim_rc;
				goto out;
			}
			res.trim_done = trim_rc == 0;
			if (trim_rc == 1 && !ctl->quiet_unsupp)
				note(ctl, "%s: the discard operation is not supported",
				     path);
		}
	}

	/* cut short: the journal step waits for a run that trims it all */
	if (ctl->journal && res.trim_stopped) {
		note(ctl, "%s: journal step not done: interrupted", path);
	} else if (ctl->journal) {
		/* ext4's journal erase, or btrfs's commit (lib/fslog) */
		journal_rc = fslog_journal_step(fd, ctl->erase, ctl->dryrun, &res.journal,
						&res.verify);
		note_journal_verify(ctl, path, &res.verify);
		if (journal_rc == 0) {
			res.journal_done = true;
			/*
			 * Trim again: the checkpoint commits what syncfs left
			 * and writes metadata home, and the blocks of a
			 * deleted directory, freed as metadata that the
			 * journal forgets, keep every name until a FITRIM
			 * after that commit (bench/remnants: "rm -rf").
			 */
			if (res.trim_done && !ctl->dryrun && stop_signal) {
				/* a stop during the checkpoint: no FITRIM, no read begun */
				res.retrim_rc = -EINTR;
				note(ctl,
				     "%s: FITRIM after the journal checkpoint not done: "
				     "interrupted by %s; blocks the checkpoint freed (a "
				     "deleted directory's) may still hold names",
				     path, stop_signal_name());
			} else if (res.trim_done && !ctl->dryrun) {
				res.retrim_rc = trim_in_steps(ctl, fd, path, &res);
				if (res.trim_stopped)
					note_stopped(ctl, &res);
			}
			if (res.trim_done && !ctl->dryrun && !res.retrim_rc &&
			    !res.trim_stopped)
				verify_trim(ctl, fd, path, &res, unreached);
			else if (trim_rc == 1 && !ctl->dryrun && !stop_signal)
				verify_trim(ctl, fd, path, &res, NULL);
			if (res.retrim_rc && res.retrim_rc != -EINTR)
				note(ctl,
				     "%s: FITRIM after the journal checkpoint failed: %s; "
				     "blocks the checkpoint freed (a deleted directory's) "
				     "may still hold names",
				     path,
				     res.retrim_rc == 1 ? "not supported" :
							  strerror(-res.retrim_rc));
			/* the audit says all of it, and more */
			if (!ctl->dryrun && !ctl->audit && !stop_signal &&
			    res.journal.iface != JOURNAL_IFACE_BTRFS_SYNC) {
				warn_remnants(ctl, fd, path);
				check_names(ctl, fd, path, &res);
			}
		} else if (journal_rc == 1 && journal_not_erased(&res.journal)) {
			/* a journal to erase that was not: never quiet */
			note(ctl, "%s: journal step not done: %s", path,
			     report_journal_reason(&res.journal, fstype, reason,
						   sizeof(reason)));
		} else if (journal_rc == 1 && !ctl->quiet_unsupp) {
			note(ctl, "%s: the journal step is not supported: %s", path,
			     report_journal_reason(&res.journal, fstype, reason,
						   sizeof(reason)));
		} else if (journal_rc < 0) {
			note(ctl, "%s: journal checkpoint failed: %s", path,
			     strerror(-journal_rc));
		}
	}
	rc = worse(worse(trim_rc, journal_rc), res.retrim_rc);
	if (journal_rc == 1 && journal_not_erased(&res.journal))
		rc = worse(rc, -EOPNOTSUPP);
	if (res.verify.state == JOURNAL_VERIFY_DATA_LEFT ||
	    res.verify.state == JOURNAL_VERIFY_UNREAD || report_discarded_left(&res) ||
	    report_free_unread(&res) || report_unreached_left(&res) ||
	    report_names_left(&res) || (res.names_checked && res.names_check.error))
		rc = worse(rc, -EIO);

	if (ctl->audit) {
		jf.audit = &audit;
		jf.audit_rc = audit_fs(fd, &audit);
		if (jf.audit_rc == 0 && audit_found_remnants(&audit))
			ctl->found++;
		/* a filesystem the audit did not examine is never clean */
		if (jf.audit_rc < 0)
			rc = worse(rc, jf.audit_rc);
		else if (jf.audit_rc == 1)
			rc = worse(rc, -EOPNOTSUPP);
		else if (audit_incomplete(&audit))
			rc = worse(rc, -EIO);
	}
out:
	jf.trim_rc = trim_rc;
	jf.journal_rc = journal_rc;
	jf.rc = rc;
	report_fs(ctl, &res, &jf);
	audit_dirents_free(&res.names_check);
	audit_result_free(&audit);
	audit_free_marks_free(unreached);
	return rc;
}

/* Whether the filesystem itself is read-only, not only this view of it. */
static bool fs_is_readonly(int fd, int mnt_id)
{
	struct statvfs vfs;

	return fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) &&
	       mounts_fs_readonly(mnt_id) != 0;
}

/* Open a chosen filesystem and run the steps; reports its own errors. */
static int open_and_process(struct fstrim_control *ctl, const char *path,
			    const char *target, int mnt_id, dev_t dev, const char *device,
			    const char *source, const char *fstype)
{
	char error[256];
	int fd, rc;

	fd = fs_open_root(target, mnt_id, dev);
	if (fd == -ESTALE) {
		note(ctl, "%s: the mount changed after it was chosen; not trimmed", path);
		report_not_done(ctl, path, source, fstype, NULL,
				"the mount changed after it was chosen");
		return fd;
	}
	if (fd < 0) {
		note(ctl, "cannot open %s: %s", path, strerror(-fd));
		snprintf(error, sizeof(error), "cannot open: %s", strerror(-fd));
		report_not_done(ctl, path, source, fstype, NULL, error);
		return fd;
	}
	/*
	 * -a, -A and -I (the callers that name a device) choose writable
	 * filesystems when a step writes (all but --audit alone); one
	 * remounted read-only since is left alone too:
	 * FITRIM and the journal checkpoint would still write to it. A
	 * read-only view of a writable filesystem is no reason to stop.
	 */
	if (device && (!ctl->audit || ctl->journal) && fs_is_readonly(fd, mnt_id)) {
		note(ctl, "%s: remounted read-only after it was chosen; not trimmed",
		     path);
		report_not_done(ctl, path, source, fstype, NULL,
				"remounted read-only after it was chosen");
		close(fd);
		return -EROFS;
	}
	/*
	 * A single path is trimmed read-only or not, as fstrim does; but the
	 * journal checkpoint writes the journal and the metadata home.
	 */
	if (!device && ctl->journal && fs_is_readonly(fd, mnt_id)) {
		note(ctl,
		     "%s: read-only filesystem: the journal step would write to it; "
		     "nothing done",
		     path);
		report_not_done(
			ctl, path, source, fstype,
			"read-only filesystem: the journal step would write to it", NULL);
		close(fd);
		return -EROFS;
	}
	rc = process_fs(ctl, fd, path, device, source, fstype);
	close(fd);
	return rc;
}

/* A single path that could not be worked on. */
static int path_failed(const struct fstrim_control *ctl, const char *path,
		       const char *refused, const char *error)
{
	report_not_done(ctl, path, NULL, NULL, refused, error);
	return ctl->audit ? audit_status(ctl, 1, 1) : EXIT_FAILURE;
}

static int fstrim_path(struct fstrim_control *ctl, const char *path)
{
	char why_text[PATH_MAX * 2 + 64];
	struct path_lookup why;
	struct fs_entry fs;
	struct stat st;
	int rc;

	if (stat(path, &st) != 0) {
		rc = errno;
		note(ctl, "stat of %s failed: %s", path, strerror(rc));
		return path_failed(ctl, path, NULL, strerror(rc));
	}
	if (!S_ISDIR(st.st_mode)) {
		note(ctl, "%s: not a directory", path);
		return path_failed(ctl, path, "not a directory", NULL);
	}

	rc = mounts_lookup_path(path, &fs, &why);
	if (rc < 0) {
		note(ctl, "%s: cannot read %s: %s", path, PATH_MOUNTINFO, strerror(-rc));
		return path_failed(ctl, path, NULL, strerror(-rc));
	}
	switch (why.refusal) {
	case PATH_OK:
		break;
	case PATH_INSIDE:
		if (why.mountpoint)
			snprintf(why_text, sizeof(why_text),
				 "not the root of a filesystem (mounted on %s)",
				 why.mountpoint);
		else
			snprintf(why_text, sizeof(why_text),
				 "not the root of a filesystem");
		break;
	case PATH_BIND_SUBDIR:
		if (why.root)
			snprintf(
				why_text, sizeof(why_text),
				"not the root of a filesystem (bind mount of %s from %s)",
				why.root, why.source);
		else
			snprintf(
				why_text, sizeof(why_text),
				"not the root of a filesystem (a bind mount of a directory)");
		break;
	case PATH_NOT_MOUNTED:
		snprintf(why_text, sizeof(why_text), "not the root of a filesystem");
		break;
	case PATH_UNPROVEN:
		snprintf(why_text, sizeof(why_text),
			 "cannot tell whether it is the root of a filesystem without %s "
			 "(mount /proc)",
			 PATH_MOUNTINFO);
		break;
	}
	if (why.refusal != PATH_OK) {
		note(ctl, "%s: %s", path, why_text);
		path_lookup_free(&why);
		return path_failed(ctl, path, why_text, NULL);
	}

	/* one path: its source goes to --json only, fstrim prints no " on DEVICE" */
	rc = open_and_process(ctl, path, fs.mountpoint, fs.mnt_id, fs.dev, NULL,
			      fs.source, fs.fstype);
	fs_entry_free(&fs);
	if (stop_signal) {
		note(ctl, "interrupted by %s", stop_signal_name());
		return 128 + stop_signal;
	}
	if (ctl->audit)
		return audit_status(ctl, 1, rc < 0);
	if (rc == 1 && ctl->quiet_unsupp)
		rc = 0;
	return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static void report_parse_error(const char *file, int line, void *arg)
{
	note(arg, "%s: parse error at line %d -- ignored", file, line);
}

/*
 * An entry of the table that looks like a block-device filesystem and
 * was not chosen: with --verbose or --json, why. One that could not be
 * looked at is a failure, reported as one that cannot be opened is.
 */
static int report_skipped(const struct fstrim_control *ctl, const struct fs_skipped *sk)
{
	struct fs_result res = { .path = sk->target, .dry_run = ctl->dryrun };
	struct report_json_fs jf = {
		.fstype = sk->fstype,
		.source = sk->source,
		.skipped = sk->reason,
	};
	char error[256];

	if (sk->error) {
		note(ctl, "cannot open %s: %s", sk->target, strerror(sk->error));
		snprintf(error, sizeof(error), "cannot open: %s", strerror(sk->error));
		report_not_done(ctl, sk->target, sk->source, sk->fstype, NULL, error);
		return -sk->error;
	}
	/*
	 * A filesystem seen only through a bind of one of its directories:
	 * the journal step needs its root, so it is not trimmed. Said
	 * without --verbose, and a failure when its journal was to be erased.
	 */
	if (sk->only_subdir) {
		note(ctl, "%s: not trimmed: %s, and %s is mounted nowhere at its root",
		     sk->target, sk->reason, sk->source ? sk->source : "its filesystem");
		if (!ctl->journal)
			return 0;
		snprintf(error, sizeof(error), "not trimmed: %s", sk->reason);
		report_not_done(ctl, sk->target, sk->source, sk->fstype, NULL, error);
		return -EXDEV;
	}
	if (ctl->json)
		report_fs(ctl, &res, &jf);
	else if (ctl->verbose)
		printf("%s: skipped: %s\n", sk->target, sk->reason);
	return 0;
}

static int fstrim_all(struct fstrim_control *ctl)
{
	/* a table entry is chosen when any step asked for can work on it */
	struct select_opts opts = {
		.tables = ctl->tables,
		.types = ctl->types,
		.parse_error = report_parse_error,
		.arg = ctl,
		.need_discard = !ctl->audit &&
				!(ctl->journal && ctl->erase == JOURNAL_ERASE_ZEROOUT),
		.need_writable = !ctl->audit || ctl->journal,
	};
	unsigned int tried = 0, failed_count = 0;
	struct fs_list list;
	char why[64];
	char *failed;
	size_t i;
	int rc;

	rc = mounts_select(&opts, &list, &failed);
	/* what the table's parser said is about the run, not the first filesystem */
	if (ctl->json)
		report_json_run_warnings(ctl->json);
	if (rc < 0) {
		note(ctl, "failed to parse %s: %s", failed ? failed : ctl->tables,
		     strerror(-rc));
		free(failed);
		return EXIT_ALL_FAILED;
	}
	if (rc == SELECT_NO_TABLE) {
		note(ctl, "no readable mount table in '%s'", ctl->tables);
		return EXIT_ALL_FAILED;
	}
	if (rc == SELECT_EMPTY) {
		note(ctl, "no filesystem is listed in '%s'", ctl->tables);
		return EXIT_ALL_FAILED;
	}

	for (i = 0; i < list.nskipped; i++) {
		if (report_skipped(ctl, &list.skipped[i]) < 0) {
			tried++;
			failed_count++;
		}
	}
	for (i = 0; i < list.count; i++) {
		const struct fs_entry *fs = &list.entries[i];

		if (stop_signal) {
			note(ctl, "%s: not trimmed: interrupted by %s", fs->target,
			     stop_signal_name());
			snprintf(why, sizeof(why), "interrupted by %s",
				 stop_signal_name());
			report_not_done(ctl, fs->target, fs->source, fs->fstype, NULL,
					why);
			continue;
		}
		tried++;
		if (open_and_process(ctl, fs->target, fs->mountpoint, fs->mnt_id, fs->dev,
				     fs->source, fs->source, fs->fstype) < 0)
			failed_count++;
	}
	fs_list_free(&list);
	if (stop_signal)
		return 128 + stop_signal;
	if (ctl->audit)
		return audit_status(ctl, tried, failed_count);
	return report_all_status(tried, failed_count);
}

int main(int argc, char **argv)
{
	struct fstrim_control ctl = {
		.range = { .len = ULLONG_MAX },
		.step = TRIM_STEP_DEFAULT,
	};
	int c, rc, table_opt = 0;

	enum {
		OPT_QUIET_UNSUPP = CHAR_MAX + 1,
		OPT_JOURNAL_ONLY,
		OPT_JOURNAL_ERASE,
		OPT_AUDIT,
		OPT_STEP,
		OPT_METRICS,
	};
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "fstab", no_argument, NULL, 'A' },
		{ "listed-in", required_argument, NULL, 'I' },
		{ "offset", required_argument, NULL, 'o' },
		{ "length", required_argument, NULL, 'l' },
		{ "minimum", required_argument, NULL, 'm' },
		{ "types", required_argument, NULL, 't' },
		{ "journal", no_argument, NULL, 'j' },
		{ "journal-only", no_argument, NULL, OPT_JOURNAL_ONLY },
		{ "journal-erase", required_argument, NULL, OPT_JOURNAL_ERASE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet-unsupported", no_argument, NULL, OPT_QUIET_UNSUPP },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "audit", no_argument, NULL, OPT_AUDIT },
		{ "json", no_argument, NULL, 'J' },
		{ "step", required_argument, NULL, OPT_STEP },
		{ "metrics", required_argument, NULL, OPT_METRICS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};

	/* getopt names the program by argv[0] in its messages */
	argv[0] = program_invocation_short_name;
	atexit(close_stdout);

	while ((c = getopt_long(argc, argv, "AahI:Jjl:m:no:t:Vv", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'a':
		case 'A':
		case 'I':
			/* fstrim names the three in this order */
			if (table_opt && table_opt != c)
				errx(EXIT_FAILURE, "mutually exclusive arguments: "
						   "--fstab --listed-in --all");
			table_opt = c;
			ctl.tables = c == 'a' ? PATH_MOUNTINFO :
				     c == 'A' ? PATH_FSTAB :
						optarg;
			break;
		case 'o':
			ctl.range.start = size_or_err(optarg, "offset");
			break;
		case 'l':
			ctl.range.len = size_or_err(optarg, "length");
			break;
		case 'm':
			ctl.range.minlen = size_or_err(optarg, "minimum extent length");
			break;
		case 't':
			ctl.types = optarg;
			break;
		case 'j':
			ctl.journal = 1;
			break;
		case OPT_JOURNAL_ONLY:
			ctl.journal = 1;
			ctl.journal_only = 1;
			break;
		case OPT_JOURNAL_ERASE:
			if (!strcmp(optarg, "discard"))
				ctl.erase = JOURNAL_ERASE_DISCARD;
			else if (!strcmp(optarg, "zeroout"))
				ctl.erase = JOURNAL_ERASE_ZEROOUT;
			else {
				warnx("unknown --journal-erase method '%s' "
				      "(use discard or zeroout)",
				      optarg);
				errtryhelp();
			}
			ctl.journal = 1;
			break;
		case 'v':
			ctl.verbose = 1;
			break;
		case OPT_QUIET_UNSUPP:
			ctl.quiet_unsupp = 1;
			break;
		case 'n':
			ctl.dryrun = 1;
			break;
		case OPT_AUDIT:
			ctl.audit = 1;
			break;
		case 'J':
			ctl.json_opt = 1;
			break;
		case OPT_STEP:
			ctl.step = size_or_err(optarg, "step");
			break;
		case OPT_METRICS:
			ctl.metrics_file = optarg;
			break;
		case 'h':
			usage();
		case 'V': {
			char libs[256];

			compat_library_versions(libs, sizeof(libs));
			printf("%s\n%s\n", PACKAGE_STRING, libs);
			print_compat_notes(stdout);
			return EXIT_SUCCESS;
		}
		default:
			errtryhelp();
		}
	}

	if (!ctl.tables && optind == argc)
		errx(EXIT_FAILURE, "no mountpoint specified");
	if (optind + (ctl.tables ? 0 : 1) != argc) {
		warnx("unexpected number of arguments");
		errtryhelp();
	}
	if (ctl.types && !ctl.tables) {
		warnx("--types works only with --all, --fstab or --listed-in");
		errtryhelp();
	}

	if (!caps_have_sys_admin())
		errx(EXIT_FAILURE, "CAP_SYS_ADMIN is required to trim filesystems");
	/* from here on, hold only what FITRIM and the journal ioctls need */
	if (caps_drop_to_minimum() != 0)
		errx(EXIT_FAILURE, "cannot drop capabilities");
	catch_stop_signals();

	/* progress for a person at a terminal, not for the journal or a pipe */
	ctl.progress = !ctl.json_opt && isatty(STDERR_FILENO) &&
		       !getenv("JOURNAL_STREAM") && !getenv("INVOCATION_ID");

	if (ctl.json_opt) {
		ctl.json = report_json_new(ctl.audit);
		if (!ctl.json)
			errx(EXIT_FAILURE, "cannot allocate the JSON document");
	}

	if (ctl.metrics_file) {
		ctl.metrics = report_metrics_new();
		if (!ctl.metrics)
			errx(EXIT_FAILURE, "cannot allocate the metrics");
	}

	rc = ctl.tables ? fstrim_all(&ctl) : fstrim_path(&ctl, argv[optind]);

	/* a run that failed writes it too; a file not written fails a run that did not */
	if (ctl.metrics) {
		int mrc = report_metrics_write(ctl.metrics, ctl.metrics_file, rc);

		if (mrc != 0) {
			note(&ctl, "cannot write %s: %s", ctl.metrics_file,
			     strerror(-mrc));
			if (rc == 0)
				rc = EXIT_FAILURE;
		}
		report_metrics_free(ctl.metrics);
	}

	if (ctl.json) {
		if (report_json_print(ctl.json, rc, stdout) != 0)
			warnx("cannot print the JSON document");
		report_json_free(ctl.json);
	}
	return rc;
}
