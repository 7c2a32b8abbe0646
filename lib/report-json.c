// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --json: the run as one JSON document, built with libsmartcols like
 * lsblk -J and findmnt -J. One table, "filesystems", one line per
 * filesystem; the run's own warnings and exit status are added after
 * the table, since a libsmartcols table has no place for them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libsmartcols.h>

#include "report-json.h"

/*
 * The value types that this libsmartcols prints (configure's checks):
 * numbers and booleans since 2.33, lists of strings since 2.37, booleans
 * that may be null since 2.38. For a type it lacks, the cell holds the
 * value as JSON text in a column printed raw (SCOLS_JSON_NUMBER); before
 * 2.33, which prints every value as a string, report_json_print() writes
 * the document from the table itself. Either way the document has the
 * same members and types. The unit tests build the older ways too, with
 * these set to 0.
 */
#ifndef JSON_SCOLS_TYPES
#define JSON_SCOLS_TYPES HAVE_DECL_SCOLS_COLUMN_SET_JSON_TYPE
#endif
#if !JSON_SCOLS_TYPES
#undef JSON_SCOLS_LISTS
#undef JSON_SCOLS_NULL_BOOLS
#define JSON_SCOLS_LISTS 0
#define JSON_SCOLS_NULL_BOOLS 0
#endif
#ifndef JSON_SCOLS_LISTS
#define JSON_SCOLS_LISTS HAVE_DECL_SCOLS_JSON_ARRAY_STRING
#endif
#ifndef JSON_SCOLS_NULL_BOOLS
#define JSON_SCOLS_NULL_BOOLS HAVE_DECL_SCOLS_JSON_BOOLEAN_OPTIONAL
#endif

enum value_type {
	V_STRING,
	V_NUMBER,
	V_BOOLEAN,
	V_BOOLEAN_OPTIONAL, /* true, false or null */
	V_LIST, /* of strings; the cell holds them '\n'-separated */
};

enum {
	COL_TARGET,
	COL_SOURCE,
	COL_FSTYPE,
	COL_STATUS,
	COL_DRY_RUN,
	COL_TRIM,
	COL_TRIMMED,
	COL_TRIM_RANGES,
	COL_TRIM_STOPPED_AT,
	COL_TRIM_END,
	COL_JOURNAL,
	COL_JOURNAL_ERASE,
	COL_JOURNAL_IFACE,
	COL_TRIM_VERIFIED,
	COL_TRIM_READBACK,
	COL_JOURNAL_VERIFIED,
	COL_JOURNAL_READBACK,
	COL_REASON,
	COL_ERROR,
	COL_WARNINGS,
	/* with --audit */
	COL_AUDIT_STATUS,
	COL_AUDIT_FOUND,
	COL_AUDIT_JOURNAL_DEVICE,
	COL_AUDIT_JOURNAL_EXTERNAL,
	COL_AUDIT_JOURNAL_BLOCKS,
	COL_AUDIT_JOURNAL_NONZERO,
	COL_AUDIT_JOURNAL_OLD,
	COL_AUDIT_JOURNAL_LIVE,
	COL_AUDIT_DELETED_NAMES,
	COL_AUDIT_DIRECTORIES,
	COL_AUDIT_FREE,
	COL_AUDIT_SMALL_FREE,
	COL_AUDIT_FREE_READ,
	COL_AUDIT_FREE_NONZERO,
	COL_AUDIT_FREE_SHORT,
	COL_AUDIT_FREE_HELD,
	COL_AUDIT_DISCARD,
	COL_AUDIT_WRITE_ZEROES,
	COL_AUDIT_JOURNAL_DISCARD,
	COL_AUDIT_JOURNAL_WRITE_ZEROES,
	COL_AUDIT_CHECKPOINT,
	COL_AUDIT_CHECKPOINT_DISCARD,
	COL_AUDIT_CHECKPOINT_ZEROOUT,
	COL_AUDIT_CHKPT_JRNL,
	COL_AUDIT_UNLINK_WIPES,
	COL_AUDIT_DIRENT_PACK_WIPE,
	COL_AUDIT_ERRORS,
	NCOLS
};

struct colinfo {
	const char *name;
	enum value_type type;
	bool audit;
};

/* Names are the JSON keys; underscores keep them usable as jq .keys. */
static const struct colinfo columns[NCOLS] = {
	[COL_TARGET] = { "target", V_STRING },
	[COL_SOURCE] = { "source", V_STRING },
	[COL_FSTYPE] = { "fstype", V_STRING },
	[COL_STATUS] = { "status", V_STRING },
	[COL_DRY_RUN] = { "dry_run", V_BOOLEAN },
	[COL_TRIM] = { "trim", V_STRING },
	[COL_TRIMMED] = { "trimmed", V_NUMBER },
	[COL_TRIM_RANGES] = { "trim_ranges", V_NUMBER },
	[COL_TRIM_STOPPED_AT] = { "trim_stopped_at", V_NUMBER },
	[COL_TRIM_END] = { "trim_end", V_NUMBER },
	[COL_JOURNAL] = { "journal", V_STRING },
	[COL_JOURNAL_ERASE] = { "journal_erase", V_STRING },
	[COL_JOURNAL_IFACE] = { "journal_interface", V_STRING },
	[COL_TRIM_VERIFIED] = { "trim_verified", V_STRING },
	[COL_TRIM_READBACK] = { "trim_readback_bytes", V_NUMBER },
	[COL_JOURNAL_VERIFIED] = { "journal_verified", V_STRING },
	[COL_JOURNAL_READBACK] = { "journal_readback_blocks", V_NUMBER },
	[COL_REASON] = { "reason", V_STRING },
	[COL_ERROR] = { "error", V_STRING },
	[COL_WARNINGS] = { "warnings", V_LIST },
	[COL_AUDIT_STATUS] = { "audit", V_STRING, true },
	[COL_AUDIT_FOUND] = { "audit_found", V_BOOLEAN_OPTIONAL, true },
	[COL_AUDIT_JOURNAL_DEVICE] = { "audit_journal_device", V_STRING, true },
	[COL_AUDIT_JOURNAL_EXTERNAL] = { "audit_journal_external", V_BOOLEAN_OPTIONAL,
					 true },
	[COL_AUDIT_JOURNAL_BLOCKS] = { "audit_journal_blocks", V_NUMBER, true },
	[COL_AUDIT_JOURNAL_NONZERO] = { "audit_journal_nonzero_blocks", V_NUMBER, true },
	[COL_AUDIT_JOURNAL_OLD] = { "audit_journal_old_blocks", V_NUMBER, true },
	[COL_AUDIT_JOURNAL_LIVE] = { "audit_journal_live_blocks", V_NUMBER, true },
	[COL_AUDIT_FREE_READ] = { "audit_free_read_bytes", V_NUMBER, true },
	[COL_AUDIT_FREE_NONZERO] = { "audit_free_nonzero_blocks", V_NUMBER, true },
	[COL_AUDIT_FREE_SHORT] = { "audit_free_below_granularity_blocks", V_NUMBER,
				   true },
	[COL_AUDIT_FREE_HELD] = { "audit_free_held_blocks", V_NUMBER, true },
	[COL_AUDIT_DELETED_NAMES] = { "audit_deleted_names", V_NUMBER, true },
	[COL_AUDIT_DIRECTORIES] = { "audit_directories", V_LIST, true },
	[COL_AUDIT_FREE] = { "audit_free_bytes", V_NUMBER, true },
	[COL_AUDIT_SMALL_FREE] = { "audit_small_free_bytes", V_NUMBER, true },
	[COL_AUDIT_DISCARD] = { "audit_discard", V_BOOLEAN_OPTIONAL, true },
	[COL_AUDIT_WRITE_ZEROES] = { "audit_write_zeroes", V_BOOLEAN_OPTIONAL, true },
	[COL_AUDIT_JOURNAL_DISCARD] = { "audit_journal_discard", V_BOOLEAN_OPTIONAL,
					true },
	[COL_AUDIT_JOURNAL_WRITE_ZEROES] = { "audit_journal_write_zeroes",
					     V_BOOLEAN_OPTIONAL, true },
	[COL_AUDIT_CHECKPOINT] = { "audit_ext4_ioc_checkpoint", V_BOOLEAN_OPTIONAL,
				   true },
	[COL_AUDIT_CHECKPOINT_DISCARD] = { "audit_checkpoint_discard", V_BOOLEAN_OPTIONAL,
					   true },
	[COL_AUDIT_CHECKPOINT_ZEROOUT] = { "audit_checkpoint_zeroout", V_BOOLEAN_OPTIONAL,
					   true },
	[COL_AUDIT_CHKPT_JRNL] = { "audit_fs_ioc_chkpt_jrnl", V_BOOLEAN_OPTIONAL, true },
	[COL_AUDIT_UNLINK_WIPES] = { "audit_unlink_wipes_names", V_BOOLEAN_OPTIONAL,
				     true },
	[COL_AUDIT_DIRENT_PACK_WIPE] = { "audit_dirent_pack_wipe", V_BOOLEAN_OPTIONAL,
					 true },
	[COL_AUDIT_ERRORS] = { "audit_errors", V_LIST, true },
};

struct report_json {
	struct libscols_table *table;
	struct libscols_column *cols[NCOLS];
	bool with_audit;
	char *pending; /* warnings for the next line, '\n'-separated */
	size_t pending_len;
	char *run; /* warnings about the run itself */
	size_t run_len;
};

/* Does the cell of @col hold its value as JSON text, written here? */
static bool own_text(int col)
{
	switch (columns[col].type) {
	case V_NUMBER:
	case V_BOOLEAN:
		return !JSON_SCOLS_TYPES;
	case V_BOOLEAN_OPTIONAL:
		return !JSON_SCOLS_NULL_BOOLS;
	case V_LIST:
		return !JSON_SCOLS_LISTS;
	default:
		return false;
	}
}

#if JSON_SCOLS_TYPES
/* How libsmartcols prints @col: JSON text written here is printed raw. */
static int scols_type(int col)
{
	if (own_text(col))
		return SCOLS_JSON_NUMBER;
	switch (columns[col].type) {
	case V_NUMBER:
		return SCOLS_JSON_NUMBER;
	case V_BOOLEAN:
		return SCOLS_JSON_BOOLEAN;
#if JSON_SCOLS_NULL_BOOLS
	case V_BOOLEAN_OPTIONAL:
		return SCOLS_JSON_BOOLEAN_OPTIONAL;
#endif
#if JSON_SCOLS_LISTS
	case V_LIST:
		return SCOLS_JSON_ARRAY_STRING;
#endif
	default:
		return SCOLS_JSON_STRING;
	}
}
#endif

void report_json_free(struct report_json *rj)
{
	if (!rj)
		return;
	scols_unref_table(rj->table);
	free(rj->pending);
	free(rj->run);
	free(rj);
}

struct report_json *report_json_new(bool with_audit)
{
	struct report_json *rj = calloc(1, sizeof(*rj));
	size_t i;

	if (!rj)
		return NULL;
	rj->with_audit = with_audit;
	rj->table = scols_new_table();
	if (!rj->table)
		goto fail;
	scols_table_enable_json(rj->table, 1);
	if (scols_table_set_name(rj->table, "filesystems"))
		goto fail;

	for (i = 0; i < NCOLS; i++) {
		const struct colinfo *ci = &columns[i];
		bool wrap = ci->type == V_LIST && !own_text(i);
		struct libscols_column *cl;

		if (ci->audit && !with_audit)
			continue;
		cl = scols_table_new_column(rj->table, ci->name, 0,
					    wrap ? SCOLS_FL_WRAP : 0);
		if (!cl)
			goto fail;
#if JSON_SCOLS_TYPES
		scols_column_set_json_type(cl, scols_type(i));
#endif
#if JSON_SCOLS_LISTS
		/* lists are one item a line, as lsblk's mountpoints */
		if (wrap)
			scols_column_set_wrapfunc(cl, scols_wrapnl_chunksize,
						  scols_wrapnl_nextchunk, NULL);
#endif
		rj->cols[i] = cl;
	}
	return rj;
fail:
	report_json_free(rj);
	return NULL;
}

/* Append a line to a '\n'-separated list; a newline inside an item becomes a space. */
static int list_append(char **list, size_t *len, const char *item)
{
	size_t n = strlen(item), i;
	char *p = realloc(*list, *len + n + 2);

	if (!p)
		return -ENOMEM;
	*list = p;
	if (*len)
		p[(*len)++] = '\n';
	for (i = 0; i < n; i++)
		p[(*len)++] = item[i] == '\n' ? ' ' : item[i];
	p[*len] = '\0';
	return 0;
}

int report_json_warning(struct report_json *rj, const char *fmt, ...)
{
	char *msg;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	rc = list_append(&rj->pending, &rj->pending_len, msg);
	free(msg);
	return rc;
}

void report_json_run_warnings(struct report_json *rj)
{
	char *save = NULL, *w;

	if (!rj->pending)
		return;
	for (w = strtok_r(rj->pending, "\n", &save); w; w = strtok_r(NULL, "\n", &save))
		list_append(&rj->run, &rj->run_len, w);
	free(rj->pending);
	rj->pending = NULL;
	rj->pending_len = 0;
}

/* @str as a JSON string, quoted and escaped. */
static void put_json_chars(FILE *out, const char *str)
{
	const char *s;

	fputc('"', out);
	for (s = str; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* A JSON string, for the members written outside libsmartcols. */
static void put_json_string(FILE *out, const char *str)
{
	int err;
	char *safe = report_utf8_safe(str, &err);

	put_json_chars(out, safe ? safe : str);
	free(safe);
}

/* The '\n'-separated @list as a JSON array of strings, malloc'ed, or NULL. */
static char *list_text(const char *list)
{
	char *text = NULL, *item;
	size_t len = 0, n;
	const char *p;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	fputc('[', out);
	for (p = list; *p; p += n + !!p[n]) {
		n = strcspn(p, "\n");
		item = strndup(p, n);
		if (!item)
			break;
		fputs(p == list ? "" : ", ", out);
		put_json_string(out, item);
		free(item);
	}
	fputc(']', out);
	if (fclose(out) || *p) {
		free(text);
		return NULL;
	}
	return text;
}

static int set(struct report_json *rj, struct libscols_line *ln, int col, const char *val)
{
	char *safe;
	int rc;

	if (!rj->cols[col] || !val)
		return 0;
	if (columns[col].type == V_LIST && own_text(col)) {
		safe = list_text(val);
		rc = !safe || scols_line_set_column_data(ln, rj->cols[col], safe) ?
			     -ENOMEM :
			     0;
		free(safe);
		return rc;
	}
	safe = report_utf8_safe(val, &rc);
	if (rc)
		return rc;
	rc = scols_line_set_column_data(ln, rj->cols[col], safe ? safe : val) ? -ENOMEM :
										0;
	free(safe);
	return rc;
}

static int set_u64(struct report_json *rj, struct libscols_line *ln, int col,
		   uint64_t val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, val);
	return set(rj, ln, col, buf);
}

static int set_bool(struct report_json *rj, struct libscols_line *ln, int col, bool val)
{
	if (own_text(col))
		return set(rj, ln, col, val ? "true" : "false");
	/* libsmartcols reads "0" (and "N") as false, anything else as true */
	return set(rj, ln, col, val ? "1" : "0");
}

/* A probe's answer: 1 yes, 0 no, anything else unknown (null). */
static int set_probe(struct report_json *rj, struct libscols_line *ln, int col, int val)
{
	return val == 0 || val == 1 ? set_bool(rj, ln, col, val) : 0;
}

/* How a step ended, in one word. */
static const char *step_word(int rc, bool done, bool dry_run)
{
	if (rc < 0)
		return "failed";
	if (rc == 1)
		return "unsupported";
	if (!done)
		return "skipped";
	return dry_run ? "dry-run" : "done";
}

static int add_audit(struct report_json *rj, struct libscols_line *ln,
		     const struct report_json_fs *fs)
{
	const struct audit_result *a = fs->audit;
	char *dirs = NULL, *errors = NULL;
	size_t dirs_len = 0, errors_len = 0, i;
	int rc = 0;

	if (!a || fs->audit_rc < 0) {
		if (fs->audit_rc < 0) {
			rc = set(rj, ln, COL_AUDIT_STATUS, "failed");
			if (!rc)
				rc = set(rj, ln, COL_AUDIT_ERRORS,
					 strerror(-fs->audit_rc));
		} else {
			rc = set(rj, ln, COL_AUDIT_STATUS, "skipped");
		}
		return rc;
	}

	rc |= set(rj, ln, COL_AUDIT_STATUS,
		  fs->audit_rc == 1   ? "unsupported" :
		  audit_incomplete(a) ? "incomplete" :
					"done");
	rc |= set_bool(rj, ln, COL_AUDIT_CHKPT_JRNL, a->kernel.chkpt_jrnl);
	rc |= set_bool(rj, ln, COL_AUDIT_UNLINK_WIPES, a->kernel.wipes_dirents);
	rc |= set_bool(rj, ln, COL_AUDIT_DIRENT_PACK_WIPE, a->kernel.dirent_pack_wipe);
	if (a->data.known) {
		rc |= set_bool(rj, ln, COL_AUDIT_DISCARD, a->data.discard_max_bytes > 0);
		rc |= set_bool(rj, ln, COL_AUDIT_WRITE_ZEROES,
			       a->data.write_zeroes_max_bytes > 0);
	}
	if (fs->audit_rc == 1)
		return rc ? -ENOMEM : 0;

	rc |= set_bool(rj, ln, COL_AUDIT_FOUND, audit_found_remnants(a));
	if (a->ext4) {
		rc |= set_probe(rj, ln, COL_AUDIT_CHECKPOINT, a->kernel.checkpoint);
		rc |= set_probe(rj, ln, COL_AUDIT_CHECKPOINT_DISCARD,
				a->kernel.checkpoint_discard);
		rc |= set_probe(rj, ln, COL_AUDIT_CHECKPOINT_ZEROOUT,
				a->kernel.checkpoint_zeroout);
	}
	if (a->journal.present) {
		rc |= set_bool(rj, ln, COL_AUDIT_JOURNAL_EXTERNAL, a->journal.external);
		rc |= set(rj, ln, COL_AUDIT_JOURNAL_DEVICE, a->journal_dev.path);
		if (a->journal_dev.known) {
			rc |= set_bool(rj, ln, COL_AUDIT_JOURNAL_DISCARD,
				       a->journal_dev.discard_max_bytes > 0);
			rc |= set_bool(rj, ln, COL_AUDIT_JOURNAL_WRITE_ZEROES,
				       a->journal_dev.write_zeroes_max_bytes > 0);
		}
	}
	if (a->journal.read) {
		rc |= set_u64(rj, ln, COL_AUDIT_JOURNAL_BLOCKS, a->journal.blocks);
		rc |= set_u64(rj, ln, COL_AUDIT_JOURNAL_NONZERO,
			      a->journal.nonzero_blocks);
		rc |= set_u64(rj, ln, COL_AUDIT_JOURNAL_OLD, a->journal.old_blocks);
		rc |= set_u64(rj, ln, COL_AUDIT_JOURNAL_LIVE, a->journal.live_blocks);
	} else if (a->journal.present) {
		char msg[128];

		snprintf(msg, sizeof(msg), "journal: %s", strerror(a->journal.error));
		rc |= list_append(&errors, &errors_len, msg);
	}
	if (a->dirents.scanned) {
		rc |= set_u64(rj, ln, COL_AUDIT_DELETED_NAMES, a->dirents.removed_names);
		for (i = 0; i < a->dirents.ndirs; i++)
			rc |= list_append(&dirs, &dirs_len, a->dirents.dirs[i].path);
		rc |= set(rj, ln, COL_AUDIT_DIRECTORIES, dirs);
	} else if (a->ext4) {
		char msg[128];

		snprintf(msg, sizeof(msg), "directories: %s", strerror(a->dirents.error));
		rc |= list_append(&errors, &errors_len, msg);
	}
	if (a->free_known)
		rc |= set_u64(rj, ln, COL_AUDIT_SMALL_FREE, a->small_free_bytes);
	if (a->free.read) {
		rc |= set_u64(rj, ln, COL_AUDIT_FREE, a->free.free_bytes);
		rc |= set_u64(rj, ln, COL_AUDIT_FREE_READ, a->free.read_bytes);
		rc |= set_u64(rj, ln, COL_AUDIT_FREE_NONZERO, a->free.nonzero_blocks);
		if (a->free.classified) {
			rc |= set_u64(rj, ln, COL_AUDIT_FREE_SHORT, a->free.short_blocks);
			rc |= set_u64(rj, ln, COL_AUDIT_FREE_HELD, a->free.held_blocks);
		}
	} else {
		char msg[128];

		snprintf(msg, sizeof(msg), "free space: %s", strerror(a->free.error));
		rc |= list_append(&errors, &errors_len, msg);
	}
	rc |= set(rj, ln, COL_AUDIT_ERRORS, errors);
	free(dirs);
	free(errors);
	return rc ? -ENOMEM : 0;
}

int report_json_add(struct report_json *rj, const struct fs_result *res,
		    const struct report_json_fs *fs)
{
	const char *status = "ok", *reason = NULL;
	char error[256] = "";
	struct libscols_line *ln;
	int rc = 0, worst = 0, i;

	ln = scols_table_new_line(rj->table, NULL);
	if (!ln)
		return -ENOMEM;
	/* a list without items is [], where libsmartcols does not print lists */
	for (i = 0; i < NCOLS; i++)
		if (columns[i].type == V_LIST && own_text(i))
			rc |= set(rj, ln, i, "");

	rc |= set(rj, ln, COL_TARGET, res->path);
	rc |= set(rj, ln, COL_SOURCE, res->device ? res->device : fs->source);
	rc |= set(rj, ln, COL_FSTYPE, fs->fstype);
	rc |= set_bool(rj, ln, COL_DRY_RUN, res->dry_run);

	if (fs->refused) {
		status = "refused";
		reason = fs->refused;
	} else if (fs->skipped) {
		status = "skipped";
		reason = fs->skipped;
	} else {
		if (fs->trim_asked) {
			rc |= set(rj, ln, COL_TRIM,
				  res->trim_stopped ?
					  "interrupted" :
					  step_word(fs->trim_rc, res->trim_done,
						    res->dry_run));
			if (res->trim_done)
				rc |= set_u64(rj, ln, COL_TRIMMED, res->trimmed);
			if (res->trim_done && !res->dry_run)
				rc |= set_u64(rj, ln, COL_TRIM_RANGES, res->trim_ranges);
			if (res->trim_stopped) {
				rc |= set_u64(rj, ln, COL_TRIM_STOPPED_AT, res->trim_pos);
				rc |= set_u64(rj, ln, COL_TRIM_END, res->trim_end);
			}
			if (res->trim_checked) {
				const struct audit_free *f = &res->trim_check;

				rc |= set(rj, ln, COL_TRIM_VERIFIED,
					  !f->read	    ? "not-read" :
					  f->nonzero_blocks ? "data-left" :
							      "zero");
				rc |= set_u64(rj, ln, COL_TRIM_READBACK, f->read_bytes);
			}
			if (fs->trim_rc == 1)
				reason = "the discard operation is not supported";
			else if (fs->trim_rc < 0)
				snprintf(error, sizeof(error), "FITRIM: %s",
					 strerror(-fs->trim_rc));
			worst = fs->trim_rc;
			/* the device kept what FITRIM discarded */
			if (report_free_unread(res)) {
				snprintf(error, sizeof(error),
					 "free space: not read back: %s",
					 strerror(report_free_unread(res)));
				worst = -EIO;
			} else if (report_discarded_left(res)) {
				snprintf(error, sizeof(error),
					 res->trim_done ?
						 "free space: %" PRIu64
						 " discarded blocks still hold data" :
						 "free space: %" PRIu64
						 " blocks, not trimmed, still hold data",
					 report_discarded_left(res));
				worst = -EIO;
			} else if (report_unreached_left(res)) {
				snprintf(error, sizeof(error),
					 "free space: %" PRIu64
					 " blocks FITRIM cannot reach still hold data",
					 report_unreached_left(res));
				worst = -EIO;
			}
		}
		if (fs->journal_asked) {
			rc |= set(rj, ln, COL_JOURNAL,
				  step_word(fs->journal_rc, res->journal_done,
					    res->dry_run));
			rc |= set(rj, ln, COL_JOURNAL_ERASE,
				  res->erase == JOURNAL_ERASE_ZEROOUT ? "zeroout" :
									"discard");
			if (res->journal_done)
				rc |= set(rj, ln, COL_JOURNAL_IFACE,
					  journal_iface_name(res->journal.iface));
			if (res->journal_done && !res->dry_run) {
				rc |= set(rj, ln, COL_JOURNAL_VERIFIED,
					  journal_verified_name(res->verify.state));
				/* blocks with data read back after the first erase */
				rc |= set_u64(rj, ln, COL_JOURNAL_READBACK,
					      res->verify.found);
			}
			if (res->verify.state == JOURNAL_VERIFY_DATA_LEFT) {
				if (!*error)
					snprintf(error, sizeof(error),
						 "journal: %" PRIu64
						 " blocks still hold data "
						 "after %s",
						 res->verify.left, res->verify.redo);
				worst = -EIO;
			}
			if (res->verify.state == JOURNAL_VERIFY_UNREAD) {
				if (!*error)
					snprintf(error, sizeof(error),
						 "journal: not read back: %s",
						 strerror(res->verify.error));
				worst = -EIO;
			}
			if (fs->journal_rc == 1 && journal_not_erased(&res->journal)) {
				if (!*error)
					snprintf(error, sizeof(error), "journal: %s",
						 report_journal_reason(&res->journal,
								       fs->fstype));
				worst = -EOPNOTSUPP;
			} else if (fs->journal_rc == 1 && !reason) {
				reason = report_journal_reason(&res->journal, fs->fstype);
			} else if (fs->journal_rc < 0 && !*error)
				snprintf(error, sizeof(error), "journal checkpoint: %s",
					 strerror(-fs->journal_rc));
			if (fs->journal_rc < 0 || (worst >= 0 && fs->journal_rc > worst))
				worst = fs->journal_rc;
			if (res->names_checked && res->names_check.error) {
				if (!*error)
					snprintf(error, sizeof(error),
						 "directories: not read back: %s",
						 strerror(res->names_check.error));
				worst = -EIO;
			} else if (report_names_left(res)) {
				if (!*error)
					snprintf(error, sizeof(error),
						 "directories: %" PRIu64
						 " names of deleted files remain",
						 report_names_left(res));
				worst = -EIO;
			}
			if (res->retrim_rc < 0 && !*error)
				snprintf(error, sizeof(error),
					 "FITRIM after the journal checkpoint: %s",
					 res->retrim_rc == -EINTR ?
						 "not done: interrupted" :
						 strerror(-res->retrim_rc));
			if (res->retrim_rc < 0)
				worst = res->retrim_rc;
		}
		/* a filesystem the audit did not examine in full is never clean */
		if (fs->audit && (fs->audit_rc != 0 || audit_incomplete(fs->audit))) {
			if (!*error)
				snprintf(error, sizeof(error),
					 "audit: not examined in full");
			worst = -EIO;
		}
		status = worst < 0 ? "failed" : worst == 1 ? "unsupported" : "ok";
		if ((res->trim_stopped && worst >= 0) ||
		    (res->retrim_rc == -EINTR && worst == -EINTR))
			status = "interrupted";
		else if (worst == 0 && fs->audit && audit_found_remnants(fs->audit))
			status = "found";
		if (fs->error) {
			status = "failed";
			if (!*error)
				snprintf(error, sizeof(error), "%s", fs->error);
		}
	}
	rc |= set(rj, ln, COL_STATUS, status);
	rc |= set(rj, ln, COL_REASON, reason);
	if (*error)
		rc |= set(rj, ln, COL_ERROR, error);
	if (rj->pending) {
		rc |= set(rj, ln, COL_WARNINGS, rj->pending);
		free(rj->pending);
		rj->pending = NULL;
		rj->pending_len = 0;
	}
	if (rj->with_audit)
		rc |= add_audit(rj, ln, fs);
	return rc ? -ENOMEM : 0;
}

/*
 * The document as libsmartcols printed it, but with "[]" for an empty
 * list: libsmartcols 2.38 prints a list cell with no items as [null].
 */
static void put_document(FILE *out, const char *doc, size_t len)
{
	bool in_string = false;
	size_t i, j;

	for (i = 0; i < len; i++) {
		char c = doc[i];

		if (in_string) {
			fputc(c, out);
			if (c == '\\' && i + 1 < len)
				fputc(doc[++i], out);
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == '"')
			in_string = true;
		if (c == '[') {
			j = i + 1 + strspn(doc + i + 1, " \n");
			if (!strncmp(doc + j, "null", 4)) {
				j += 4 + strspn(doc + j + 4, " \n");
				if (doc[j] == ']') {
					fputs("[]", out);
					i = j;
					continue;
				}
			}
		}
		fputc(c, out);
	}
}

#if !JSON_SCOLS_TYPES
/*
 * The table as libsmartcols 2.33 and later print it, for one that prints
 * every value as a string: the cells of other types hold JSON text.
 */
static int print_table(struct report_json *rj, char **doc)
{
	struct libscols_iter *itr = scols_new_iter(SCOLS_ITER_FORWARD);
	struct libscols_line *ln;
	const char *data;
	size_t len = 0;
	int i, n = 0;
	FILE *out;

	if (!itr)
		return -ENOMEM;
	out = open_memstream(doc, &len);
	if (!out) {
		scols_free_iter(itr);
		return -ENOMEM;
	}
	fputs("{\n   \"filesystems\": [", out);
	while (scols_table_next_line(rj->table, itr, &ln) == 0) {
		const char *sep = "\n         ";

		fputs(n++ ? ",\n      {" : "\n      {", out);
		for (i = 0; i < NCOLS; i++) {
			if (!rj->cols[i])
				continue;
			data = scols_cell_get_data(
				scols_line_get_column_cell(ln, rj->cols[i]));
			fputs(sep, out);
			sep = ",\n         ";
			put_json_chars(out, columns[i].name);
			fputs(": ", out);
			if (!data || !*data)
				fputs(columns[i].type == V_BOOLEAN ? "false" : "null",
				      out);
			else if (own_text(i))
				fputs(data, out);
			else
				put_json_chars(out, data);
		}
		fputs("\n      }", out);
	}
	fputs(n ? "\n   ]\n}\n" : "]\n}\n", out);
	scols_free_iter(itr);
	return fclose(out) ? -ENOMEM : 0;
}
#endif

int report_json_print(struct report_json *rj, int exit_status, FILE *out)
{
	char *doc = NULL, *end;
	int rc;

#if JSON_SCOLS_TYPES
	rc = scols_print_table_to_string(rj->table, &doc);
#else
	rc = print_table(rj, &doc);
#endif
	if (rc || !doc) {
		free(doc);
		return rc ? rc : -ENOMEM;
	}
	/*
	 * The table prints as {"filesystems": [...]}: reopen the object
	 * after the array for the run's own members.
	 */
	end = strrchr(doc, '}');
	if (!end) {
		free(doc);
		return -EINVAL;
	}
	while (end > doc && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	put_document(out, doc, (size_t)(end - doc));
	free(doc);

	/* what no filesystem followed is about the run too */
	report_json_run_warnings(rj);
	fputs(",\n   \"warnings\": [", out);
	if (rj->run) {
		char *save = NULL, *w;
		bool first = true;

		for (w = strtok_r(rj->run, "\n", &save); w;
		     w = strtok_r(NULL, "\n", &save)) {
			fputs(first ? "\n      " : ",\n      ", out);
			put_json_string(out, w);
			first = false;
		}
		fputs("\n   ", out);
	}
	fprintf(out, "],\n   \"status\": %d\n}\n", exit_status);
	return ferror(out) ? -EIO : 0;
}

#ifdef TEST_PROGRAM_REPORT_JSON
/*
 * Print the documents of a few made-up runs, for tests/json.bats to
 * check with jq: ./test_report_json CASE
 */
int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	struct fs_result r = { .path = "/mnt",
			       .device = "/dev/loop0",
			       .trim_done = true,
			       .trimmed = 24111104 };
	struct report_json_fs f = { .fstype = "ext4", .trim_asked = true };
	char dir_path[] = "/h", journal_path[] = "/dev/loop0";
	struct audit_result a = { 0 };
	struct report_json *rj;
	int status = 0;

	if (!strcmp(what, "empty")) {
		rj = report_json_new(false);
		report_json_warning(rj, "no filesystem is listed in '%s'", "/etc/fstab");
		report_json_print(rj, 32, stdout);
		report_json_free(rj);
		return 0;
	}

	rj = report_json_new(!strcmp(what, "audit"));
	if (!rj)
		return 1;
	if (!strcmp(what, "audit")) {
		a.ext4 = true;
		a.journal.present = a.journal.read = true;
		a.journal.blocks = 4095;
		a.journal.nonzero_blocks = 22;
		a.journal.old_blocks = 20;
		a.journal.live_blocks = 2;
		a.free.read = true;
		a.free.free_bytes = a.free.read_bytes = 1 << 20;
		a.dirents.scanned = true;
		a.dirents.removed_names = 66;
		a.dirents.ndirs = 1;
		a.dirents.dirs = &(struct audit_dir){ .path = dir_path,
						      .ino = 12,
						      .removed_names = 66 };
		a.data.known = true;
		a.data.discard_max_bytes = 1 << 30;
		a.journal_dev = a.data;
		a.journal_dev.path = journal_path;
		a.kernel.checkpoint = a.kernel.checkpoint_discard = 1;
		a.kernel.checkpoint_zeroout = 1;
		a.kernel.wipes_dirents = true;
		f.audit = &a;
		f.trim_asked = false;
		r.trim_done = false;
		report_json_add(rj, &r, &f);
		status = EXIT_AUDIT_FOUND;
	} else {
		report_json_add(rj, &r, &f);
		r.path = "/srv \"quoted\"";
		r.device = "/dev/loop1";
		r.journal_done = false;
		f.journal_asked = true;
		f.journal_rc = 1;
		r.journal.unsupported = JOURNAL_NO_JOURNAL;
		report_json_warning(rj, "%s: the journal step is not supported: %s",
				    r.path, report_journal_reason(&r.journal, "ext4"));
		report_json_add(rj, &r, &f);
		r.path = "/data";
		r.device = "/dev/sdb1";
		r.trim_done = false;
		f.fstype = "xfs";
		f.trim_rc = -EIO;
		f.journal_rc = 1;
		r.journal.unsupported = JOURNAL_NOT_EXT4;
		report_json_add(rj, &r, &f);
		f = (struct report_json_fs){ .fstype = "ext4",
					     .refused = "not the root of a filesystem "
							"(mounted on /)" };
		r = (struct fs_result){ .path = "/home/user" };
		report_json_add(rj, &r, &f);
		status = 64;
	}
	report_json_print(rj, status, stdout);
	report_json_free(rj);
	return 0;
}
#endif
