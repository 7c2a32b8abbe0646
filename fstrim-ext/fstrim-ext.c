// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fstrim-ext -- discard the unused blocks of mounted filesystems and, on
 * request, checkpoint the ext4 journal and erase it, so that what was
 * deleted is gone from the device and not only from the directory tree.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

#include "caps.h"
#include "compat.h"
#include "journal.h"
#include "mounts.h"
#include "report.h"
#include "report-json.h"
#include "report-metrics.h"
#include "report-run.h"
#include "run.h"
#include "sizes.h"
#include "stop.h"

struct fstrim_control {
	struct run_opts run; /* what a filesystem's run needs (lib/run) */
	const char *tables; /* -a, -A, -I: the tables to read */
	const char *types; /* -t */
	struct report_run out; /* where the run is told (lib/report-run) */
	unsigned int found; /* --audit: filesystems with remnants */
	unsigned int json_opt : 1; /* -J: build out.json once the options are read */
	unsigned int range_opt : 1; /* -o, -l, -m or --step: how FITRIM is called */
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
	      "     --read-back <scope>    what --journal reads back of the free space on\n"
	      "                              ext4: changed (default: where blocks were freed\n"
	      "                              since the last run proved it) or all\n"
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
 * --metrics FILE is written after the work, through a temporary file in
 * FILE's directory: a directory that is not there would fail the run only
 * once every filesystem was trimmed and erased, so refuse it now.
 */
static void check_metrics_dir(const char *file)
{
	char *dir;
	int rc = report_metrics_check_dir(file, &dir);

	if (rc == 0) {
		free(dir);
		return;
	}
	if (!dir)
		errx(EXIT_FAILURE, "cannot allocate memory");
	if (rc == -ENOENT)
		warnx("--metrics %s: directory %s does not exist", file, dir);
	else if (rc == -ENOTDIR)
		warnx("--metrics %s: %s is not a directory", file, dir);
	else
		warnx("--metrics %s: %s: %s", file, dir, strerror(-rc));
	free(dir);
	errtryhelp();
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
 * The most one FITRIM call covers. lib/trim sizes each call, in whole
 * block groups, to take about a quarter of a second (a group already
 * trimmed costs microseconds, one to discard on a slow device more than a
 * second), and a stop does not wait for the call in progress; so this
 * bound only keeps the position reported, and the progress shown, close
 * to the work on a fast device.
 */
#define TRIM_STEP_DEFAULT (64ULL << 30)

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

/* Open a chosen filesystem and run the steps; reports its own errors. */
static int open_and_process(struct fstrim_control *ctl, const char *path,
			    const char *target, int mnt_id, dev_t dev, const char *device,
			    const char *source, const char *fstype)
{
	struct run_result r;
	int fd, rc;

	fd = run_open(&ctl->run, path, target, mnt_id, dev, device, &r);
	if (fd < 0) {
		report_not_done(&ctl->out, path, target, source, fstype, r.jf.refused,
				r.jf.error);
		return fd;
	}
	rc = run_fs(&ctl->run, fd, path, device, source, fstype, &r);
	r.res.mountpoint = target;
	if (r.found)
		ctl->found++;
	report_fs(&ctl->out, &r.res, &r.jf);
	run_result_free(&r);
	close(fd);
	return rc;
}

/* A single path that could not be worked on. */
static int path_failed(struct fstrim_control *ctl, const char *path, const char *refused,
		       const char *error)
{
	report_not_done(&ctl->out, path, NULL, NULL, NULL, refused, error);
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
		report_note(&ctl->out, "stat of %s failed: %s", path, strerror(rc));
		return path_failed(ctl, path, NULL, strerror(rc));
	}
	if (!S_ISDIR(st.st_mode)) {
		report_note(&ctl->out, "%s: not a directory", path);
		return path_failed(ctl, path, "not a directory", NULL);
	}

	rc = mounts_lookup_path(path, &fs, &why);
	if (rc < 0) {
		report_note(&ctl->out, "%s: cannot read %s: %s", path, PATH_MOUNTINFO,
			    strerror(-rc));
		return path_failed(ctl, path, NULL, strerror(-rc));
	}
	if (why.refusal != PATH_OK) {
		path_lookup_reason(&why, why_text, sizeof(why_text));
		report_note(&ctl->out, "%s: %s", path, why_text);
		path_lookup_free(&why);
		return path_failed(ctl, path, why_text, NULL);
	}

	/* one path: its source goes to --json only, fstrim prints no " on DEVICE" */
	rc = open_and_process(ctl, path, fs.mountpoint, fs.mnt_id, fs.dev, NULL,
			      fs.source, fs.fstype);
	fs_entry_free(&fs);
	if (stop_signal) {
		report_note(&ctl->out, "interrupted by %s", stop_signal_name());
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
	report_note(arg, "%s: parse error at line %d -- ignored", file, line);
}

static int fstrim_all(struct fstrim_control *ctl)
{
	/* a table entry is chosen when any step asked for can work on it */
	struct select_opts opts = {
		.tables = ctl->tables,
		.types = ctl->types,
		.parse_error = report_parse_error,
		.arg = &ctl->out,
		.need_discard =
			!ctl->run.audit &&
			!(ctl->run.journal && ctl->run.erase == JOURNAL_ERASE_ZEROOUT),
		.journal_below_crypt = ctl->run.journal,
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
	if (ctl->out.json)
		report_json_run_warnings(ctl->out.json);
	if (rc < 0) {
		report_note(&ctl->out, "failed to parse %s: %s",
			    failed ? failed : ctl->tables, strerror(-rc));
		free(failed);
		return EXIT_ALL_FAILED;
	}
	if (rc == SELECT_NO_TABLE) {
		report_note(&ctl->out, "no readable mount table in '%s'", ctl->tables);
		return EXIT_ALL_FAILED;
	}
	if (rc == SELECT_EMPTY) {
		report_note(&ctl->out, "no filesystem is listed in '%s'", ctl->tables);
		return EXIT_ALL_FAILED;
	}

	for (i = 0; i < list.nskipped; i++) {
		if (report_skipped(&ctl->out, &list.skipped[i], ctl->run.journal) < 0) {
			tried++;
			failed_count++;
		}
	}
	for (i = 0; i < list.count; i++) {
		const struct fs_entry *fs = &list.entries[i];

		if (stop_signal) {
			report_note(&ctl->out, "%s: not trimmed: interrupted by %s",
				    fs->target, stop_signal_name());
			snprintf(why, sizeof(why), "interrupted by %s",
				 stop_signal_name());
			report_not_done(&ctl->out, fs->target, fs->mountpoint, fs->source,
					fs->fstype, NULL, why);
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
			.message = report_vnote,
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
		OPT_READ_BACK,
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
		{ "read-back", required_argument, NULL, OPT_READ_BACK },
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
			ctl.range_opt = 1;
			break;
		case 'l':
			ctl.run.range.len = size_or_err(optarg, "length");
			ctl.range_opt = 1;
			break;
		case 'm':
			ctl.run.range.minlen =
				size_or_err(optarg, "minimum extent length");
			ctl.range_opt = 1;
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
			ctl.out.verbose = 1;
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
			ctl.range_opt = 1;
			break;
		case OPT_METRICS:
			ctl.out.metrics_file = optarg;
			break;
		case OPT_READ_BACK:
			if (!strcmp(optarg, "changed"))
				ctl.run.readback_all = false;
			else if (!strcmp(optarg, "all"))
				ctl.run.readback_all = true;
			else {
				warnx("unknown --read-back scope '%s' (use changed or all)",
				      optarg);
				errtryhelp();
			}
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
	if (ctl.run.journal_only && ctl.range_opt) {
		warnx("--journal-only issues no FITRIM: it takes no --offset, --length, "
		      "--minimum or --step");
		errtryhelp();
	}
	if (ctl.out.metrics_file)
		check_metrics_dir(ctl.out.metrics_file);

	if (!caps_have_sys_admin())
		errx(EXIT_FAILURE, "CAP_SYS_ADMIN is required to trim filesystems");
	/* from here on, hold only what FITRIM and the journal ioctls need */
	if (caps_drop_to_minimum() != 0)
		errx(EXIT_FAILURE, "cannot drop capabilities");
	ctl.run.stop_fd = stop_catch();

	/* progress for a person at a terminal, not for the journal or a pipe */
	if (!ctl.json_opt && isatty(STDERR_FILENO) && !getenv("JOURNAL_STREAM") &&
	    !getenv("INVOCATION_ID"))
		ctl.run.progress = report_progress;
	ctl.run.arg = &ctl.out;
	ctl.out.dry_run = ctl.run.dry_run;

	if (ctl.json_opt) {
		ctl.out.json = report_json_new(ctl.run.audit);
		if (!ctl.out.json)
			errx(EXIT_FAILURE, "cannot allocate the JSON document");
	}

	if (ctl.out.metrics_file) {
		ctl.out.metrics = report_metrics_new();
		if (!ctl.out.metrics)
			errx(EXIT_FAILURE, "cannot allocate the metrics");
	}

	rc = ctl.tables ? fstrim_all(&ctl) : fstrim_path(&ctl, argv[optind]);

	return report_run_end(&ctl.out, rc);
}
