// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --json text written here rather than by libsmartcols: JSON strings and
 * lists of them, the document libsmartcols printed mended, and the whole
 * table for a libsmartcols before 2.33, which prints every value as a
 * string.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libsmartcols.h>

#include "report.h"
#include "report-json-table.h"

/* @str as a JSON string, quoted and escaped. */
void put_json_chars(FILE *out, const char *str)
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
void put_json_string(FILE *out, const char *str)
{
	int err;
	char *safe = report_utf8_safe(str, &err);

	put_json_chars(out, safe ? safe : str);
	free(safe);
}

/* The '\n'-separated @list as a JSON array of strings, malloc'ed, or NULL. */
char *list_text(const char *list)
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

/*
 * The document as libsmartcols printed it, but with "[]" for an empty
 * list: libsmartcols 2.38 prints a list cell with no items as [null].
 */
void put_document(FILE *out, const char *doc, size_t len)
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
int print_table(struct report_json *rj, char **doc)
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
