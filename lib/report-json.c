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
#include "report-json-table.h"

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

/* What the read back of the free space covered, and why. */
static int set_readback_scope(struct report_json *rj, struct libscols_line *ln,
			      const struct readset_summary *s)
{
	int rc = set(rj, ln, COL_TRIM_READBACK_SCOPE, s->sized ? "changed" : "all");

	if (!s->sized)
		return rc | set(rj, ln, COL_TRIM_READBACK_WHY, s->all_why);
	rc |= set(rj, ln, COL_TRIM_READBACK_WHY,
		  s->had_proof ? "the block groups where blocks were freed or taken "
				 "since the last run proved them" :
				 "no earlier run of this mount proved any block group");
	rc |= set_u64(rj, ln, COL_TRIM_READBACK_GROUPS, s->groups_read);
	return rc | set_u64(rj, ln, COL_BLOCK_GROUPS, s->groups);
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
	char error[256] = "", why[REPORT_REASON_MAX];
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
					  !f->read	       ? "not-read" :
					  f->nonzero_blocks    ? "data-left" :
					  report_unsteady(res) ? "not-verified" :
								 "zero");
				rc |= set_u64(rj, ln, COL_TRIM_READBACK, f->read_bytes);
				rc |= set_readback_scope(rj, ln, &res->readback);
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
			} else if (report_unsteady(res)) {
				snprintf(
					error, sizeof(error),
					"free space: %" PRIu64
					" blocks read back other data at each read: not verified",
					report_unsteady(res));
				worst = -EIO;
			} else if (report_unproven_below(res)) {
				snprintf(error, sizeof(error),
					 "the erase is not proven below %s",
					 report_unproven_below(res));
				worst = -EIO;
			}
		}
		if (fs->journal_asked) {
			rc |= set(rj, ln, COL_JOURNAL,
				  step_word(fs->log_step_rc, res->log_step_done,
					    res->dry_run));
			rc |= set(rj, ln, COL_JOURNAL_ERASE,
				  res->erase == JOURNAL_ERASE_ZEROOUT ? "zeroout" :
									"discard");
			if (res->log_step_done)
				rc |= set(rj, ln, COL_JOURNAL_IFACE,
					  journal_iface_name(res->journal.iface));
			if (res->log_step_done && !res->dry_run) {
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
			if (res->verify.state == JOURNAL_VERIFY_UNSTEADY) {
				if (!*error)
					snprintf(error, sizeof(error),
						 "journal: %" PRIu64
						 " blocks read back other data at each "
						 "read: not verified",
						 res->verify.unsteady);
				worst = -EIO;
			}
			if (res->verify.state == JOURNAL_VERIFY_UNREAD) {
				if (!*error)
					snprintf(error, sizeof(error),
						 "journal: not read back: %s",
						 audit_journal_why(res->verify.error));
				worst = -EIO;
			}
			if (fs->log_step_rc == 1 && journal_not_erased(&res->journal)) {
				if (!*error)
					snprintf(error, sizeof(error), "journal: %s",
						 report_journal_reason(&res->journal,
								       fs->fstype, why,
								       sizeof(why)));
				worst = -EOPNOTSUPP;
			} else if (fs->log_step_rc == 1 && !reason) {
				reason = report_journal_reason(&res->journal, fs->fstype,
							       why, sizeof(why));
			} else if (fs->log_step_rc < 0 && !*error)
				snprintf(error, sizeof(error), "journal checkpoint: %s",
					 strerror(-fs->log_step_rc));
			if (fs->log_step_rc < 0 ||
			    (worst >= 0 && fs->log_step_rc > worst))
				worst = fs->log_step_rc;
			if (res->names_checked && res->names_check.error) {
				char dirs[256];

				if (!*error)
					snprintf(error, sizeof(error),
						 "directories: not read back: %s",
						 audit_dirents_why(&res->names_check,
								   dirs, sizeof(dirs)));
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
