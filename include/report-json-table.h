/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_REPORT_JSON_TABLE_H
#define FSTRIM_EXT_REPORT_JSON_TABLE_H

/*
 * The --json table, shared by what builds it (lib/report-json.c) and what
 * writes JSON text itself (lib/report-json-text.c); not an interface of
 * the library.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <libsmartcols.h>

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
	COL_TRIM_READBACK_SCOPE,
	COL_TRIM_READBACK_WHY,
	COL_TRIM_READBACK_GROUPS,
	COL_BLOCK_GROUPS,
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
	[COL_TRIM_READBACK_SCOPE] = { "trim_readback_scope", V_STRING },
	[COL_TRIM_READBACK_WHY] = { "trim_readback_why", V_STRING },
	[COL_TRIM_READBACK_GROUPS] = { "trim_readback_groups", V_NUMBER },
	[COL_BLOCK_GROUPS] = { "block_groups", V_NUMBER },
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
static inline bool own_text(int col)
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

/* @str as a JSON string, quoted and escaped. */
void put_json_chars(FILE *out, const char *str);

/* A JSON string, for the members written outside libsmartcols. */
void put_json_string(FILE *out, const char *str);

/* The '\n'-separated @list as a JSON array of strings, malloc'ed, or NULL. */
char *list_text(const char *list);

/* The document libsmartcols printed, with "[]" for an empty list. */
void put_document(FILE *out, const char *doc, size_t len);

#if !JSON_SCOLS_TYPES
/* The table printed by hand, for a libsmartcols before 2.33. */
int print_table(struct report_json *rj, char **doc);
#endif

#endif /* FSTRIM_EXT_REPORT_JSON_TABLE_H */
