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
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#include "audit.h"
#include "caps.h"
#include "compat.h"
#include "journal.h"
#include "mounts.h"
#include "report.h"
#include "report-json.h"
#include "report-metrics.h"
#include "run.h"
#include "sizes.h"

struct fstrim_control {
	struct run_opts run; /* what a filesystem's run needs (lib/run) */
	const char *tables; /* -a, -A, -I: the tables to read */
	const char *types; /* -t */
	struct report_json *json; /* --json: the document of the run */
	const char *metrics_file; /* --metrics */
	struct report_metrics *metrics; /* --metrics: the results so far */
	unsigned int found; /* --audit: filesystems with remnants */
	struct timespec begin, drawn; /* the trim's start, the progress line's update */
	int width; /* of the progress line on the terminal, 0 when none */

	unsigned int verbose : 1;
	unsigned int json_opt : 1; /* -J: build ->json once the options are read */
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
	return run_signal_name(stop_signal);
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

/*
 * warnx(), and with --json the same text in the document, with the
 * filesystem it is about.
 */
static void __attribute__((format(printf, 2, 0)))
vnote(void *arg, const char *fmt, va_list ap)
{
	const struct fstrim_control *ctl = arg;
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0)
		return;
	warnx("%s", msg);
	if (ctl->json)
		report_json_warning(ctl->json, "%s", msg);
	free(msg);
}

static void __attribute__((format(printf, 2, 3)))
note(const struct fstrim_control *ctl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote((void *)ctl, fmt, ap);
	va_end(ap);
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

static double seconds_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Like e2fsck -C: only for a filesystem that takes more than a second. */
static void draw_progress(enum run_progress when, const char *path,
			  const struct trim_progress *p, void *arg)
{
	struct fstrim_control *run = arg;
	char pos[SIZE_HUMAN_MAX], end[SIZE_HUMAN_MAX], done[SIZE_HUMAN_MAX];
	uint64_t span;
	int width;

	if (when == RUN_TRIM_BEGIN) {
		clock_gettime(CLOCK_MONOTONIC, &run->begin);
		return;
	}
	if (when == RUN_TRIM_END) {
		if (run->width)
			fprintf(stderr, "\r%*s\r", run->width, "");
		run->width = 0;
		return;
	}
	if (seconds_since(&run->begin) < 1.0 ||
	    (run->width && p->pos < p->end && seconds_since(&run->drawn) < 0.2))
		return;
	span = p->end - p->start;
	if (p->one_call)
		/* xfs, btrfs, --step 0: the kernel tells nothing until the call ends */
		width = fprintf(stderr, "\r%s: trimming in one FITRIM call, %.0f s", path,
				seconds_since(&run->begin)) -
			1;
	else
		width = fprintf(stderr, "\r%s: trimming at %s of %s (%u%%), %s discarded",
				path, size_to_human(p->pos, pos, sizeof(pos)),
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
		warnx("%s: cannot add to the metrics", res->path);
	if (ctl->json) {
		if (report_json_add(ctl->json, res, jf) != 0)
			warnx("%s: cannot add to the JSON document", res->path);
		return;
	}
	text = report_line(res, ctl->verbose);
	if (text) {
		puts(text);
		free(text);
	}
	if (jf->audit) {
		text = audit_describe(res->path, jf->audit, jf->audit_rc, ctl->verbose);
		if (text) {
			fputs(text, stdout);
			free(text);
		}
	}
}

/* A filesystem that was refused or could not be opened: only --json tells more. */
static void report_not_done(const struct fstrim_control *ctl, const char *path,
			    const char *source, const char *fstype, const char *refused,
			    const char *error)
{
	struct fs_result res = { .path = path, .dry_run = ctl->run.dry_run };
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
	struct run_result r;
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
	if (device && (!ctl->run.audit || ctl->run.journal) &&
	    fs_is_readonly(fd, mnt_id)) {
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
	if (!device && ctl->run.journal && fs_is_readonly(fd, mnt_id)) {
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
	rc = run_fs(&ctl->run, fd, path, device, source, fstype, &r);
	if (r.found)
		ctl->found++;
	report_fs(ctl, &r.res, &r.jf);
	run_result_free(&r);
	close(fd);
	return rc;
}

/* A single path that could not be worked on. */
static int path_failed(const struct fstrim_control *ctl, const char *path,
		       const char *refused, const char *error)
{
	report_not_done(ctl, path, NULL, NULL, refused, error);
	return ctl->run.audit ? audit_status(ctl, 1, 1) : EXIT_FAILURE;
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
	if (ctl->run.audit)
		return audit_status(ctl, 1, rc < 0);
	if (rc == 1 && ctl->run.quiet_unsupp)
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
	struct fs_result res = { .path = sk->target, .dry_run = ctl->run.dry_run };
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
		if (!ctl->run.journal)
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
		.need_discard =
			!ctl->run.audit &&
			!(ctl->run.journal && ctl->run.erase == JOURNAL_ERASE_ZEROOUT),
		.need_writable = !ctl->run.audit || ctl->run.journal,
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
	if (ctl->run.audit)
		return audit_status(ctl, tried, failed_count);
	return report_all_status(tried, failed_count);
}

int main(int argc, char **argv)
{
	struct fstrim_control ctl = {
		.run = {
			.range = { .len = ULLONG_MAX },
			.step = TRIM_STEP_DEFAULT,
			.stop = &stop_signal,
			.message = vnote,
		},
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
			ctl.run.range.start = size_or_err(optarg, "offset");
			break;
		case 'l':
			ctl.run.range.len = size_or_err(optarg, "length");
			break;
		case 'm':
			ctl.run.range.minlen =
				size_or_err(optarg, "minimum extent length");
			break;
		case 't':
			ctl.types = optarg;
			break;
		case 'j':
			ctl.run.journal = true;
			break;
		case OPT_JOURNAL_ONLY:
			ctl.run.journal = true;
			ctl.run.journal_only = true;
			break;
		case OPT_JOURNAL_ERASE:
			if (!strcmp(optarg, "discard"))
				ctl.run.erase = JOURNAL_ERASE_DISCARD;
			else if (!strcmp(optarg, "zeroout"))
				ctl.run.erase = JOURNAL_ERASE_ZEROOUT;
			else {
				warnx("unknown --journal-erase method '%s' "
				      "(use discard or zeroout)",
				      optarg);
				errtryhelp();
			}
			ctl.run.journal = true;
			break;
		case 'v':
			ctl.verbose = 1;
			break;
		case OPT_QUIET_UNSUPP:
			ctl.run.quiet_unsupp = true;
			break;
		case 'n':
			ctl.run.dry_run = true;
			break;
		case OPT_AUDIT:
			ctl.run.audit = true;
			break;
		case 'J':
			ctl.json_opt = 1;
			break;
		case OPT_STEP:
			ctl.run.step = size_or_err(optarg, "step");
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
	if (!ctl.json_opt && isatty(STDERR_FILENO) && !getenv("JOURNAL_STREAM") &&
	    !getenv("INVOCATION_ID"))
		ctl.run.progress = draw_progress;
	ctl.run.arg = &ctl;
	ctl.run.stop_fd = stop_pipe[0];

	if (ctl.json_opt) {
		ctl.json = report_json_new(ctl.run.audit);
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
