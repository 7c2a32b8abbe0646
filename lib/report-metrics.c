// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --metrics: the run as a Prometheus text file (exposition format 0.0.4)
 * for node_exporter's textfile collector. Every metric is a gauge, one
 * series per filesystem with the labels mountpoint (as mountinfo has it,
 * as node_exporter's filesystem collector labels it), device and fstype,
 * and the run's own: the build, the duration, the exit status. The
 * families are written one after the other, each with its HELP and TYPE
 * once, so the file is built only when every filesystem is known.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fslog.h"
#include "report-metrics.h"

enum metric {
	M_LAST_RUN,
	M_LAST_SUCCESS,
	M_OK,
	M_STATUS,
	M_TRIMMED,
	M_READBACK,
	M_JOURNAL_ERASED,
	M_JOURNAL_VERIFIED,
	/* where --audit examined the filesystem */
	M_AUDIT_FOUND,
	M_AUDIT_COMPLETE,
	M_AUDIT_JOURNAL_OLD,
	M_AUDIT_DELETED_NAMES,
	M_AUDIT_FREE_NONZERO,
	NMETRICS
};

static const struct {
	const char *name;
	const char *help;
} metrics[NMETRICS] = {
	[M_LAST_RUN] = { "fstrim_ext_last_run_timestamp_seconds",
			 "When the last run of fstrim-ext ended its work on the filesystem." },
	[M_LAST_SUCCESS] = { "fstrim_ext_last_success_timestamp_seconds",
			     "When a run (not a dry run) last did every step asked that "
			     "applies to the filesystem, 0 for never." },
	[M_OK] = { "fstrim_ext_filesystem_ok",
		   "1 when the last run did every step asked that applies to the "
		   "filesystem." },
	[M_STATUS] = { "fstrim_ext_filesystem_status",
		       "The filesystem's status in the last run, 1 for the one it had." },
	[M_TRIMMED] = { "fstrim_ext_trimmed_bytes",
			"Bytes FITRIM discarded in the last run." },
	[M_READBACK] = { "fstrim_ext_readback_bytes",
			 "Bytes of free space the last run read back from the device after "
			 "FITRIM (--journal), to verify the erase." },
	[M_JOURNAL_ERASED] = { "fstrim_ext_journal_erased",
			       "1 when the last run checkpointed and erased the journal "
			       "(on btrfs: committed the transaction)." },
	[M_JOURNAL_VERIFIED] = { "fstrim_ext_journal_verified",
				 "1 when the erased journal read back as zeroes." },
	[M_AUDIT_FOUND] = { "fstrim_ext_audit_found",
			    "1 when --audit found deleted data on the device." },
	[M_AUDIT_COMPLETE] = { "fstrim_ext_audit_complete",
			       "1 when --audit examined all that it looks at." },
	[M_AUDIT_JOURNAL_OLD] = { "fstrim_ext_audit_journal_old_blocks",
				  "Journal blocks of older transactions that --audit found "
				  "holding data." },
	[M_AUDIT_DELETED_NAMES] = { "fstrim_ext_audit_deleted_names",
				    "Names of deleted files that --audit found in directory "
				    "blocks." },
	[M_AUDIT_FREE_NONZERO] = { "fstrim_ext_audit_free_nonzero_blocks",
				   "Free blocks that --audit read back holding data." },
};

#define BUILD_INFO_NAME "fstrim_ext_build_info"
#define BUILD_INFO_HELP \
	"The version of fstrim-ext that wrote this file, as a label; always 1."
#define DURATION_NAME "fstrim_ext_run_duration_seconds"
#define DURATION_HELP \
	"How long the last run of fstrim-ext took, until this file was written."
#define EXIT_STATUS_NAME "fstrim_ext_exit_status"
#define EXIT_STATUS_HELP "The exit status of the last run of fstrim-ext."

/* The values of fstrim_ext_filesystem_status's "status" label. */
enum fs_status {
	ST_OK,
	ST_UNSUPPORTED,
	ST_INTERRUPTED,
	ST_FAILED,
	ST_REFUSED,
	NSTATUS
};

static const char *const status_names[NSTATUS] = {
	[ST_OK] = "ok",
	[ST_UNSUPPORTED] = "unsupported",
	[ST_INTERRUPTED] = "interrupted",
	[ST_FAILED] = "failed",
	[ST_REFUSED] = "refused",
};

struct metrics_fs {
	char *labels; /* mountpoint="...",device="...",fstype="...", escaped */
	char *mountpoint; /* the mountpoint's label value, escaped */
	enum fs_status status;
	bool success; /* every step done, not a dry run */
	bool has[NMETRICS];
	uint64_t value[NMETRICS];
};

struct report_metrics {
	struct metrics_fs *fs;
	size_t count;
	struct timespec begin; /* CLOCK_MONOTONIC, when the run began */
};

struct report_metrics *report_metrics_new(void)
{
	struct report_metrics *rm = calloc(1, sizeof(struct report_metrics));

	if (rm)
		clock_gettime(CLOCK_MONOTONIC, &rm->begin);
	return rm;
}

/* Seconds since @rm was made, to the millisecond. */
static double run_duration(const struct report_metrics *rm)
{
	struct timespec now;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &now);
	s = (double)(now.tv_sec - rm->begin.tv_sec) +
	    (double)(now.tv_nsec - rm->begin.tv_nsec) / 1e9;
	return s < 0 ? 0 : s;
}

void report_metrics_free(struct report_metrics *rm)
{
	size_t i;

	if (!rm)
		return;
	for (i = 0; i < rm->count; i++) {
		free(rm->fs[i].labels);
		free(rm->fs[i].mountpoint);
	}
	free(rm->fs);
	free(rm);
}

/*
 * @val as a label value: UTF-8 (report_utf8_safe()), then a backslash,
 * a double quote and a newline escaped as the format wants. NULL on ENOMEM.
 */
static char *label_value(const char *val)
{
	char *safe, *out, *o;
	const char *s;
	int err;

	safe = report_utf8_safe(val ? val : "", &err);
	if (err)
		return NULL;
	s = safe ? safe : val ? val : "";
	out = malloc(strlen(s) * 2 + 1);
	if (out) {
		for (o = out; *s; s++) {
			if (*s == '\\' || *s == '"' || *s == '\n')
				*o++ = '\\';
			*o++ = *s == '\n' ? 'n' : *s;
		}
		*o = '\0';
	}
	free(safe);
	return out;
}

static enum fs_status fs_status(const struct fs_result *res,
				const struct report_json_fs *fs)
{
	if (fs->refused)
		return ST_REFUSED;
	/* stopped during the checkpoint, nothing else failed: as --json says */
	if (!fs->error && res->retrim_rc == -EINTR && fs->rc == -EINTR)
		return ST_INTERRUPTED;
	if (fs->error || fs->rc < 0)
		return ST_FAILED;
	if (res->trim_stopped)
		return ST_INTERRUPTED;
	return fs->rc == 1 ? ST_UNSUPPORTED : ST_OK;
}

/*
 * Whether the run did every step that applies to the filesystem: all that
 * was asked (status ok), or all but a journal step with nothing to do
 * there (xfs, an ext4 without a journal: status unsupported, as in
 * --json) when the trim was done and, on an ext4 without a journal, its
 * free space read back (lib/run.c). A dry run, which did nothing, as ok.
 */
static bool all_that_applies(const struct fs_result *res, const struct report_json_fs *fs,
			     enum fs_status status)
{
	if (status == ST_OK)
		return true;
	if (status != ST_UNSUPPORTED || fs->trim_rc != 0 || fs->log_step_rc != 1 ||
	    !fslog_nothing_to_do(fs->fstype, &res->journal))
		return false;
	if (fs->trim_asked && !res->trim_done)
		return false;
	return res->dry_run || res->journal.unsupported != JOURNAL_NO_JOURNAL ||
	       (res->trim_checked && res->trim_check.read);
}

static void set(struct metrics_fs *m, enum metric which, uint64_t value)
{
	m->has[which] = true;
	m->value[which] = value;
}

static void add_audit(struct metrics_fs *m, const struct report_json_fs *fs)
{
	const struct audit_result *a = fs->audit;

	/* not examined (failed, unsupported, or the steps failed before) */
	if (!a || fs->audit_rc != 0)
		return;
	set(m, M_AUDIT_FOUND, audit_found_remnants(a));
	set(m, M_AUDIT_COMPLETE, !audit_incomplete(a));
	if (a->journal.read)
		set(m, M_AUDIT_JOURNAL_OLD, a->journal.old_blocks);
	if (a->dirents.scanned)
		set(m, M_AUDIT_DELETED_NAMES, a->dirents.removed_names);
	if (a->free.read)
		set(m, M_AUDIT_FREE_NONZERO, a->free.nonzero_blocks);
}

int report_metrics_add(struct report_metrics *rm, const struct fs_result *res,
		       const struct report_json_fs *fs, time_t when)
{
	const char *device = res->device ? res->device : fs->source;
	struct metrics_fs m = { 0 }, *grown;
	char *dev = NULL, *type = NULL;
	bool ok;
	size_t i;
	int rc;

	if (fs->skipped)
		return 0;
	m.mountpoint = label_value(res->mountpoint ? res->mountpoint : res->path);
	dev = label_value(device);
	type = label_value(fs->fstype);
	rc = m.mountpoint && dev && type ?
		     asprintf(&m.labels, "mountpoint=\"%s\",device=\"%s\",fstype=\"%s\"",
			      m.mountpoint, dev, type) :
		     -1;
	free(dev);
	free(type);
	if (rc < 0) {
		m.labels = NULL;
		goto nomem;
	}

	m.status = fs_status(res, fs);
	ok = all_that_applies(res, fs, m.status);
	m.success = ok && !res->dry_run;
	set(&m, M_LAST_RUN, when < 0 ? 0 : (uint64_t)when);
	set(&m, M_LAST_SUCCESS, m.success ? m.value[M_LAST_RUN] : 0);
	set(&m, M_OK, ok);
	set(&m, M_STATUS, 0);
	set(&m, M_TRIMMED, res->trimmed);
	if (res->trim_checked)
		set(&m, M_READBACK, res->trim_check.read_bytes);
	set(&m, M_JOURNAL_ERASED, res->log_step_done && !res->dry_run);
	set(&m, M_JOURNAL_VERIFIED,
	    res->verify.state == JOURNAL_VERIFY_ZERO ||
		    res->verify.state == JOURNAL_VERIFY_ZEROED);
	add_audit(&m, fs);

	/* a label set appears once in a valid file: the last result wins */
	for (i = 0; i < rm->count; i++) {
		if (!strcmp(rm->fs[i].labels, m.labels)) {
			free(rm->fs[i].labels);
			free(rm->fs[i].mountpoint);
			rm->fs[i] = m;
			return 0;
		}
	}
	grown = reallocarray(rm->fs, rm->count + 1, sizeof(*grown));
	if (!grown)
		goto nomem;
	rm->fs = grown;
	rm->fs[rm->count++] = m;
	return 0;
nomem:
	free(m.labels);
	free(m.mountpoint);
	return -ENOMEM;
}

/* At @p a quoted label value: what follows its closing quote, or NULL. */
static const char *skip_quoted(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p && *p != '"'; p++)
		if (*p == '\\' && !*++p)
			return NULL;
	return *p ? p + 1 : NULL;
}

/*
 * A line of a file written here: the last success of the filesystem whose
 * escaped mountpoint label is @mountpoint, or 0 when the line is not that.
 * Only this file's own layout is read (the mountpoint label first, no
 * timestamp); anything else is not a last success.
 */
static uint64_t previous_success(const char *line, const char *mountpoint)
{
	static const char prefix[] =
		"fstrim_ext_last_success_timestamp_seconds{mountpoint=";
	size_t len = strlen(mountpoint);
	const char *p, *end;
	char *num_end;
	uint64_t value;

	if (strncmp(line, prefix, sizeof(prefix) - 1))
		return 0;
	p = line + sizeof(prefix) - 1;
	end = skip_quoted(p);
	if (!end || (size_t)(end - p) != len + 2 || strncmp(p + 1, mountpoint, len))
		return 0;
	for (p = end; *p == ',';) {
		p += 1 + strcspn(p + 1, "=\",{} ");
		if (*p != '=')
			return 0;
		p = skip_quoted(p + 1);
		if (!p)
			return 0;
	}
	if (*p++ != '}' || *p++ != ' ' || *p < '0' || *p > '9')
		return 0;
	errno = 0;
	value = strtoull(p, &num_end, 10);
	if (errno || (*num_end && *num_end != '\n'))
		return 0;
	return value;
}

/* The last success of every filesystem that did not succeed now, from @prev. */
static void read_previous(struct report_metrics *rm, FILE *prev)
{
	size_t size = 0, i;
	char *line = NULL;
	uint64_t when;

	while (getline(&line, &size, prev) >= 0) {
		for (i = 0; i < rm->count; i++) {
			struct metrics_fs *m = &rm->fs[i];

			if (m->success)
				continue;
			when = previous_success(line, m->mountpoint);
			if (when)
				m->value[M_LAST_SUCCESS] = when;
		}
	}
	free(line);
}

static void print_metrics(const struct report_metrics *rm, double duration,
			  int exit_status, FILE *out)
{
	const struct metrics_fs *m;
	bool head;
	size_t i;
	int k, s;

	for (k = 0; k < NMETRICS; k++) {
		head = false;
		for (i = 0; i < rm->count; i++) {
			m = &rm->fs[i];
			if (!m->has[k])
				continue;
			if (!head)
				fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n",
					metrics[k].name, metrics[k].help,
					metrics[k].name);
			head = true;
			if (k != M_STATUS) {
				fprintf(out, "%s{%s} %" PRIu64 "\n", metrics[k].name,
					m->labels, m->value[k]);
				continue;
			}
			/* an enum as Prometheus has them: a series for each value */
			for (s = 0; s < NSTATUS; s++)
				fprintf(out, "%s{%s,status=\"%s\"} %d\n", metrics[k].name,
					m->labels, status_names[s], s == (int)m->status);
		}
	}
	/* the version needs no escape: configure.ac's, digits and dots */
	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n%s{version=\"%s\"} 1\n",
		BUILD_INFO_NAME, BUILD_INFO_HELP, BUILD_INFO_NAME, BUILD_INFO_NAME,
		PACKAGE_VERSION);
	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %.3f\n", DURATION_NAME,
		DURATION_HELP, DURATION_NAME, DURATION_NAME, duration);
	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", EXIT_STATUS_NAME,
		EXIT_STATUS_HELP, EXIT_STATUS_NAME, EXIT_STATUS_NAME, exit_status);
}

/* The temporary file's name: hidden, and not *.prom, so node_exporter skips it. */
static char *temp_name(const char *file)
{
	const char *base = strrchr(file, '/');
	char *tmp;
	int rc;

	if (base)
		rc = asprintf(&tmp, "%.*s/.%s.XXXXXX", (int)(base - file), file,
			      base + 1);
	else
		rc = asprintf(&tmp, ".%s.XXXXXX", file);
	return rc < 0 ? NULL : tmp;
}

/* Where @file and its temporary file go: as temp_name() and sync_dir() find it. */
static char *file_dir(const char *file)
{
	const char *base = strrchr(file, '/');

	if (!base)
		return strdup(".");
	return base == file ? strdup("/") : strndup(file, base - file);
}

int report_metrics_check_dir(const char *file, char **dir)
{
	struct stat st;

	*dir = file_dir(file);
	if (!*dir)
		return -ENOMEM;
	if (stat(*dir, &st) != 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* fsync the directory that holds @tmp, so that the rename is durable. */
static int sync_dir(char *tmp)
{
	char *slash = strrchr(tmp, '/');
	int fd, rc = 0;

	if (slash)
		*slash = '\0';
	fd = open(slash ? (*tmp ? tmp : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (slash)
		*slash = '/';
	return rc;
}

int report_metrics_write(struct report_metrics *rm, const char *file, int exit_status)
{
	char *tmp;
	FILE *prev, *out;
	struct stat st;
	int fd, rc = 0;

	/* never read from, or rename over, a device, a FIFO (a read would wait) or a directory */
	if (stat(file, &st) == 0 && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	tmp = temp_name(file);
	if (!tmp)
		return -ENOMEM;
	prev = fopen(file, "re");
	if (prev) {
		read_previous(rm, prev);
		fclose(prev);
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	/* node_exporter runs as another user; the file says what /proc/mounts says */
	if (fchmod(fd, 0644) != 0)
		rc = -errno;
	out = fdopen(fd, "w");
	if (!out) {
		rc = -errno;
		close(fd);
		goto fail;
	}
	print_metrics(rm, run_duration(rm), exit_status, out);
	if (fflush(out) != 0 || ferror(out))
		rc = rc ? rc : -(errno ? errno : EIO);
	else if (fsync(fd) != 0)
		rc = rc ? rc : -errno;
	if (fclose(out) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, file) != 0)
		rc = -errno;
	if (!rc)
		rc = sync_dir(tmp);
fail:
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

#ifdef TEST_PROGRAM_REPORT_METRICS
/*
 * TAP: the escaping of label values, the file of a made-up run, the last
 * success read back from a previous file, and the atomic write.
 */
static int tap_count;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_count, what);
}

static void check_label(const char *val, const char *want)
{
	char *got = label_value(val);

	printf("%sok %d - label value '%s' (got '%s')\n",
	       got && !strcmp(got, want) ? "" : "not ", ++tap_count, want, got);
	free(got);
}

static char *printed(const struct report_metrics *rm, int exit_status)
{
	size_t len = 0;
	char *text = NULL;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	print_metrics(rm, 1.5, exit_status, out);
	fclose(out);
	return text;
}

/* The result of a single path with --journal, and of one refused. */
static struct report_metrics *made_up_run(const char *path)
{
	struct report_metrics *rm = report_metrics_new();
	struct fs_result r = { .path = path,
			       .trim_done = true,
			       .trimmed = 24111104,
			       .log_step_done = true,
			       .verify = { .state = JOURNAL_VERIFY_ZERO } };
	struct report_json_fs f = { .fstype = "ext4",
				    .source = "/dev/loop0",
				    .trim_asked = true,
				    .journal_asked = true };

	report_metrics_add(rm, &r, &f, 1700000000);
	r = (struct fs_result){ .path = "/home/user" };
	f = (struct report_json_fs){ .refused = "not the root of a filesystem" };
	report_metrics_add(rm, &r, &f, 1700000001);
	return rm;
}

static const char made_up_text[] =
	"# HELP fstrim_ext_last_run_timestamp_seconds When the last run of fstrim-ext "
	"ended its work on the filesystem.\n"
	"# TYPE fstrim_ext_last_run_timestamp_seconds gauge\n"
	"fstrim_ext_last_run_timestamp_seconds{mountpoint=\"/mnt\",device=\"/dev/loop0\","
	"fstype=\"ext4\"} 1700000000\n"
	"fstrim_ext_last_run_timestamp_seconds{mountpoint=\"/home/user\",device=\"\","
	"fstype=\"\"} 1700000001\n"
	"# HELP fstrim_ext_last_success_timestamp_seconds When a run (not a dry run) "
	"last did every step asked that applies to the filesystem, 0 for never.\n"
	"# TYPE fstrim_ext_last_success_timestamp_seconds gauge\n"
	"fstrim_ext_last_success_timestamp_seconds{mountpoint=\"/mnt\","
	"device=\"/dev/loop0\",fstype=\"ext4\"} 1700000000\n"
	"fstrim_ext_last_success_timestamp_seconds{mountpoint=\"/home/user\",device=\"\","
	"fstype=\"\"} 0\n";

/*
 * The last success written for a --journal run on /srv whose journal step
 * was unsupported for @why on @fstype, after a trim, read back or not;
 * the file's text in *@text when asked.
 */
static uint64_t step_not_applying(const char *fstype, enum journal_unsupported why,
				  bool read_back, char **text)
{
	struct report_metrics *rm = report_metrics_new();
	struct fs_result r = { .path = "/srv",
			       .trim_done = true,
			       .trimmed = 4096,
			       .journal = { .unsupported = why },
			       .trim_checked = read_back,
			       .trim_check = { .read = read_back } };
	struct report_json_fs f = { .fstype = fstype,
				    .trim_asked = true,
				    .journal_asked = true,
				    .log_step_rc = 1,
				    .rc = 1 };
	uint64_t when;

	report_metrics_add(rm, &r, &f, 1700000003);
	when = rm->fs[0].value[M_LAST_SUCCESS];
	if (text)
		*text = printed(rm, 0);
	report_metrics_free(rm);
	return when;
}

int main(void)
{
	struct report_metrics *rm, *rm2;
	struct audit_result a = { 0 };
	struct fs_result r;
	struct report_json_fs f;
	char dir[] = "/tmp/test-report-metrics.XXXXXX", file[64], tmp_left[128];
	char *text, *p;
	char previous[] = "fstrim_ext_last_success_timestamp_seconds{mountpoint="
			  "\"/home/user\",device=\"a\\\"},b\",fstype=\"\"} 1600000000\n"
			  "fstrim_ext_last_success_timestamp_seconds{mountpoint="
			  "\"/mnt\",device=\"\",fstype=\"\"} 1500000000\n";
	struct stat st;
	FILE *prev;

	printf("1..31\n");
	check_label("/mnt", "/mnt");
	check_label("/mnt/a \"b\" \\c\nd", "/mnt/a \\\"b\\\" \\\\c\\nd");
	/* not UTF-8: \xNN as in --json, its backslash escaped again */
	check_label("/mnt/\xff\xc3", "/mnt/\\\\xff\\\\xc3");
	check_label("/mnt/caf\xc3\xa9", "/mnt/caf\xc3\xa9");
	check_label("/mnt/\\x41", "/mnt/\\\\x5cx41");
	check_label(NULL, "");

	rm = made_up_run("/mnt");
	text = printed(rm, 1);
	check(text && !strncmp(text, made_up_text, sizeof(made_up_text) - 1),
	      "timestamps: the run's, the last success's (0 when never)");
	check(text && strstr(text,
			     "fstrim_ext_filesystem_status{mountpoint=\"/home/user\","
			     "device=\"\",fstype=\"\",status=\"refused\"} 1\n"),
	      "a refused filesystem has status refused");
	check(text && strstr(text, "fstrim_ext_filesystem_ok{mountpoint=\"/home/user\","
				   "device=\"\",fstype=\"\"} 0\n"),
	      "... and is not ok");
	check(text && strstr(text, "fstrim_ext_journal_verified{mountpoint=\"/mnt\","
				   "device=\"/dev/loop0\",fstype=\"ext4\"} 1\n"),
	      "the journal read back as zeroes is verified");
	p = text ? strstr(text, "# HELP fstrim_ext_exit_status") : NULL;
	check(p && !strcmp(p,
			   "# HELP fstrim_ext_exit_status " EXIT_STATUS_HELP "\n"
			   "# TYPE fstrim_ext_exit_status gauge\nfstrim_ext_exit_status 1\n"),
	      "the exit status comes last");
	check(text && !strstr(text, "audit"), "no audit series without --audit");
	check(text && strstr(text, "# TYPE fstrim_ext_build_info gauge\n"
				   "fstrim_ext_build_info{version=\"" PACKAGE_VERSION
				   "\"} 1\n"),
	      "the version, as a label of a gauge 1");
	check(text && strstr(text, "# TYPE fstrim_ext_run_duration_seconds gauge\n"
				   "fstrim_ext_run_duration_seconds 1.500\n"),
	      "the run's duration in seconds");
	free(text);

	/* the refused filesystem's last success, from a file written before */
	prev = fmemopen(previous, sizeof(previous) - 1, "r");
	if (!prev)
		return 1;
	read_previous(rm, prev);
	fclose(prev);
	check(rm->fs[1].value[M_LAST_SUCCESS] == 1600000000,
	      "a failed filesystem keeps its last success from the previous file");
	check(rm->fs[0].value[M_LAST_SUCCESS] == 1700000000,
	      "a filesystem that succeeded now has this run's");
	check(previous_success("fstrim_ext_last_success_timestamp_seconds{mountpoint="
			       "\"/home/user\",device=\"\"} 12x\n",
			       "/home/user") == 0,
	      "a line not of this layout is not a last success");

	/* a dry run is ok, but no success; the audit's counts where it looked */
	rm2 = report_metrics_new();
	a.ext4 = a.journal.present = a.journal.read = a.free.read = true;
	a.journal.old_blocks = 20;
	r = (struct fs_result){ .path = "/srv", .dry_run = true, .trim_done = true };
	f = (struct report_json_fs){ .fstype = "ext4", .audit = &a };
	report_metrics_add(rm2, &r, &f, 1700000002);
	text = printed(rm2, 2);
	check(text &&
		      strstr(text,
			     "fstrim_ext_filesystem_ok{mountpoint=\"/srv\",device=\"\","
			     "fstype=\"ext4\"} 1\n") &&
		      strstr(text, "fstrim_ext_last_success_timestamp_seconds{mountpoint="
				   "\"/srv\",device=\"\",fstype=\"ext4\"} 0\n"),
	      "a dry run is ok and not a success");
	check(text &&
		      strstr(text,
			     "fstrim_ext_audit_found{mountpoint=\"/srv\",device=\"\","
			     "fstype=\"ext4\"} 1\n") &&
		      strstr(text,
			     "fstrim_ext_audit_complete{mountpoint=\"/srv\",device=\"\","
			     "fstype=\"ext4\"} 0\n") &&
		      strstr(text,
			     "fstrim_ext_audit_journal_old_blocks{mountpoint=\"/srv\","
			     "device=\"\",fstype=\"ext4\"} 20\n") &&
		      !strstr(text, "fstrim_ext_audit_deleted_names"),
	      "the audit: found, not complete (directories not scanned), its counts");
	free(text);
	report_metrics_free(rm2);

	/* labelled by the mountpoint as mountinfo has it, not as named */
	rm2 = report_metrics_new();
	r = (struct fs_result){ .path = "/srv/../srv/", .mountpoint = "/srv" };
	f = (struct report_json_fs){ .fstype = "ext4" };
	report_metrics_add(rm2, &r, &f, 1700000002);
	text = printed(rm2, 0);
	check(text && strstr(text,
			     "fstrim_ext_last_run_timestamp_seconds{mountpoint=\"/srv\","),
	      "the mountpoint label is mountinfo's");
	free(text);
	report_metrics_free(rm2);

	/* the journal step asked where it has nothing to do: done, if all else is */
	check(step_not_applying("xfs", JOURNAL_NOT_EXT4, false, NULL) == 1700000003,
	      "xfs, trimmed, no journal step: a success");
	check(step_not_applying("ext4", JOURNAL_NO_JOURNAL, true, NULL) == 1700000003,
	      "ext4 without a journal, trimmed and read back: a success");
	check(step_not_applying("ext4", JOURNAL_NO_JOURNAL, false, NULL) == 0,
	      "... not read back: none");
	check(step_not_applying("btrfs", JOURNAL_NOT_EXT4, true, NULL) == 0,
	      "btrfs without its commit (--journal-erase=zeroout): none");
	text = NULL;
	check(step_not_applying("xfs", JOURNAL_NOT_EXT4, false, &text) == 1700000003 &&
		      text &&
		      strstr(text,
			     "fstrim_ext_filesystem_ok{mountpoint=\"/srv\",device=\"\","
			     "fstype=\"xfs\"} 1\n") &&
		      strstr(text,
			     "fstrim_ext_filesystem_status{mountpoint=\"/srv\",device=\"\","
			     "fstype=\"xfs\",status=\"unsupported\"} 1\n"),
	      "... ok, with the status unsupported, as in --json");
	free(text);

	if (!mkdtemp(dir))
		return 1;
	snprintf(file, sizeof(file), "%s/fstrim-ext.prom", dir);
	check(report_metrics_write(rm, file, 0) == 0 && stat(file, &st) == 0 &&
		      (st.st_mode & 0777) == 0644,
	      "written, readable by node_exporter's user");
	snprintf(tmp_left, sizeof(tmp_left), "ls -A %s | grep -qv '^fstrim-ext.prom$'",
		 dir);
	check(system(tmp_left) != 0, "no temporary file is left");
	unlink(file);
	/* root only: a device node in the directory is left alone */
	snprintf(file, sizeof(file), "%s/null", dir);
	if (mknod(file, S_IFCHR | 0666, makedev(1, 3)) == 0) {
		check(report_metrics_write(rm, file, 0) == -EINVAL &&
			      stat(file, &st) == 0 && S_ISCHR(st.st_mode),
		      "a device is not replaced");
		unlink(file);
	} else {
		printf("ok %d # SKIP a device is not replaced: mknod needs root\n",
		       ++tap_count);
	}

	/* the directory --metrics checks before any work */
	check(report_metrics_check_dir("fstrim-ext.prom", &p) == 0 && p &&
		      !strcmp(p, "."),
	      "a name without a directory goes to the current one");
	free(p);
	check(report_metrics_check_dir("/fstrim-ext.prom", &p) == 0 && p &&
		      !strcmp(p, "/"),
	      "a name in the root goes to /");
	free(p);
	snprintf(file, sizeof(file), "%s/none/fstrim-ext.prom", dir);
	snprintf(tmp_left, sizeof(tmp_left), "%s/none", dir);
	check(report_metrics_check_dir(file, &p) == -ENOENT && p && !strcmp(p, tmp_left),
	      "a directory that does not exist is named");
	free(p);
	rmdir(dir);
	report_metrics_free(rm);
	return 0;
}
#endif
