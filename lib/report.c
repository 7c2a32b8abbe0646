// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the user reads about each filesystem.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext4-ioctl.h"
#include "fslog.h"
#include "report.h"
#include "sizes.h"

static const char *erase_verb(enum journal_erase how)
{
	return how == JOURNAL_ERASE_ZEROOUT ? "zeroed" : "discarded";
}

/*
 * What the read back of the journal adds to the line: nothing when it
 * read zeroes (the erase the line names is the one verified).
 */
static const char *verify_text(const struct journal_verify *v, char *buf, size_t size)
{
	switch (v->state) {
	case JOURNAL_VERIFY_ZEROED:
		snprintf(buf, size,
			 "; %" PRIu64 " blocks read back with data, zeroed via %s",
			 v->found, v->redo);
		return buf;
	case JOURNAL_VERIFY_DATA_LEFT:
		snprintf(buf, size, "; %" PRIu64 " blocks still hold data after %s too",
			 v->left, v->redo ? v->redo : "erasing again");
		return buf;
	case JOURNAL_VERIFY_UNREAD:
		return "; not read back";
	case JOURNAL_VERIFY_UNSTEADY:
		snprintf(buf, size,
			 "; %" PRIu64
			 " blocks read back other data at each read: not verified",
			 v->unsteady);
		return buf;
	case JOURNAL_VERIFY_ZERO:
		if (!v->new_blocks)
			return "";
		/* writers' new transactions, not what the erase was to remove */
		snprintf(buf, size, "; %" PRIu64 " journal blocks committed since",
			 v->new_blocks);
		return buf;
	default:
		return "";
	}
}

/*
 * What the run left, as the line's ", but ...": the device kept what
 * FITRIM discarded, the allocator holds free blocks with data
 * (verify_trim() in lib/run.c), or deleted names stay. The first only.
 */
static void kept_text(const struct fs_result *res, char *kept, size_t size)
{
	const struct {
		uint64_t count;
		const char *what;
	} left[] = {
		{ report_discarded_left(res),
		  res->trim_done ? "discarded free blocks still hold data" :
				   "free blocks, not trimmed, still hold data" },
		{ report_unreached_left(res),
		  "free blocks FITRIM cannot reach still hold data" },
		{ report_unsteady(res),
		  "free blocks read back other data at each read: not verified" },
		{ report_names_left(res),
		  "names of deleted files remain in directory blocks" },
	};
	size_t i;

	if (report_free_unread(res)) {
		snprintf(kept, size, ", but the free space could not be read back");
		return;
	}
	for (i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
		if (left[i].count) {
			snprintf(kept, size, ", but %" PRIu64 " %s", left[i].count,
				 left[i].what);
			return;
		}
	}
	if (res->names_checked && res->names_check.error)
		snprintf(kept, size, ", but the directories could not be read back");
	else if (report_unproven_below(res))
		snprintf(kept, size, ", but the erase is not proven below %s",
			 report_unproven_below(res));
}

char *report_line(const struct fs_result *res, bool verbose)
{
	char size[SIZE_HUMAN_MAX], trim[96] = "", journal[256] = "", on[4096] = "";
	char pos[SIZE_HUMAN_MAX], end[SIZE_HUMAN_MAX], stopped[96] = "", kept[256] = "";
	char verified[128];
	char *line = NULL;
	const char *iface = journal_iface_name(res->journal.iface);

	errno = 0;
	if (!verbose && !res->dry_run)
		return NULL;
	if (!res->trim_done && !res->log_step_done)
		return NULL;

	if (res->device)
		snprintf(on, sizeof(on), " on %s", res->device);

	if (res->trim_done) {
		if (res->dry_run)
			snprintf(trim, sizeof(trim), "0 B (dry run) trimmed");
		else
			snprintf(trim, sizeof(trim), "%s (%" PRIu64 " bytes) trimmed",
				 size_to_human(res->trimmed, size, sizeof(size)),
				 res->trimmed);
	}
	if (res->log_step_done && res->journal.iface == JOURNAL_IFACE_BTRFS_SYNC) {
		snprintf(journal, sizeof(journal), "transaction %s via %s%s",
			 res->dry_run ? "commit possible" : "committed", iface,
			 res->dry_run ? " (dry run)" : "");
	} else if (res->log_step_done) {
		if (res->dry_run)
			snprintf(journal, sizeof(journal),
				 "journal %s possible via %s (dry run)",
				 res->erase == JOURNAL_ERASE_ZEROOUT ? "zeroout" :
								       "discard",
				 iface);
		else
			snprintf(journal, sizeof(journal),
				 "journal checkpointed and %s via %s%s%s",
				 erase_verb(res->erase), iface,
				 verify_text(&res->verify, verified, sizeof(verified)),
				 res->retrim_rc == -EINTR ?
					 ", but the FITRIM after it was interrupted" :
				 res->retrim_rc < 0 ? ", but the FITRIM after it failed" :
				 res->retrim_rc == 1 ?
						      ", but the FITRIM after it was not "
						      "supported" :
						      "");
	}

	kept_text(res, kept, sizeof(kept));
	if (res->trim_stopped)
		snprintf(stopped, sizeof(stopped), ", interrupted at %s of %s",
			 size_to_human(res->trim_pos, pos, sizeof(pos)),
			 size_to_human(res->trim_end, end, sizeof(end)));

	/* fstrim's line, then the journal after a comma, then where a trim stopped */
	if (res->trim_done && res->log_step_done) {
		if (asprintf(&line, "%s: %s%s, %s%s%s", res->path, trim, on, journal,
			     kept, stopped) < 0) {
			errno = ENOMEM;
			line = NULL;
		}
	} else if (asprintf(&line, "%s: %s%s%s%s", res->path,
			    res->trim_done ? trim : journal, on, kept, stopped) < 0) {
		errno = ENOMEM;
		line = NULL;
	}
	return line;
}

const char *report_journal_reason(const struct journal_result *jr, const char *fstype,
				  char *buf, size_t size)
{
	switch (jr->unsupported) {
	case JOURNAL_NOT_EXT4:
		if (fslog_unsupported_reason(fstype))
			return fslog_unsupported_reason(fstype);
		snprintf(buf, size, "%s has no journal erase interface",
			 fstype && *fstype ? fstype : "this filesystem");
		return buf;
	case JOURNAL_NO_JOURNAL:
		return "the filesystem has no journal";
	case JOURNAL_NO_IOCTL:
		return "the kernel has neither FS_IOC_CHKPT_JRNL nor "
		       "EXT4_IOC_CHECKPOINT (Linux 5.14)";
	case JOURNAL_NO_DISCARD:
		return "the journal device does not support discard "
		       "(try --journal-erase=zeroout)";
	case JOURNAL_FAST_COMMIT:
		return "the filesystem has fast_commit, and on this kernel a journal "
		       "checkpoint can deadlock with an fsync (no " EXT4_FEATURES_DIR
		       "/" EXT4_FEATURE_FC_CHECKPOINT_FIX ")";
	case JOURNAL_FC_NOT_DURABLE:
		return "the filesystem has fast_commit, and on this kernel an fsync "
		       "right after a journal checkpoint is not replayed after a crash "
		       "(no " EXT4_FEATURES_DIR "/" EXT4_FEATURE_FC_FLUSH_FIX ")";
	case JOURNAL_FC_UNKNOWN:
		snprintf(buf, size,
			 "cannot read the superblock to rule out fast_commit, on which "
			 "this kernel's journal checkpoint is not safe: %s",
			 strerror(jr->error));
		return buf;
	default:
		return "unknown reason";
	}
}

uint64_t report_discarded_left(const struct fs_result *res)
{
	return res->trim_checked && res->trim_check.read ?
		       res->trim_check.nonzero_blocks :
		       0;
}

int report_free_unread(const struct fs_result *res)
{
	if (!res->trim_checked)
		return 0;
	if (!res->trim_check.read)
		return res->trim_check.error ? res->trim_check.error : EIO;
	/* not read and no error: the scan was skipped for a stop signal */
	if (!res->unreached_check.read && res->unreached_check.error)
		return res->unreached_check.error;
	return 0;
}

uint64_t report_unreached_left(const struct fs_result *res)
{
	return res->trim_checked && res->unreached_check.read ?
		       res->unreached_check.nonzero_blocks :
		       0;
}

uint64_t report_unsteady(const struct fs_result *res)
{
	return res->trim_checked && res->trim_check.read ?
		       res->trim_check.unsteady_blocks :
		       0;
}

const char *report_unproven_below(const struct fs_result *res)
{
	return res->unproven_below[0] ? res->unproven_below : NULL;
}

uint64_t report_names_left(const struct fs_result *res)
{
	return res->names_checked && !res->names_check.error ?
		       res->names_check.removed_names :
		       0;
}

int report_all_status(unsigned int tried, unsigned int failed)
{
	if (tried && tried == failed)
		return EXIT_ALL_FAILED;
	if (tried && failed)
		return EXIT_SOME_FAILED;
	return 0;
}

/* Length of the valid UTF-8 sequence at @s (RFC 3629), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		/* no overlong forms, no UTF-16 surrogates */
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		/* no overlong forms, nothing above U+10FFFF */
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
				       (s[3] & 0xc0) == 0x80 ?
			       4 :
			       0;
	}
	return 0;
}

/*
 * JSON and the Prometheus text format are UTF-8, and a path need not be
 * (report.h says how it is made so).
 */
char *report_utf8_safe(const char *val, int *err)
{
	const unsigned char *p = (const unsigned char *)val;
	size_t n, len = 0, i;
	char *out, *o;

	*err = 0;
	for (i = 0; p[i]; i += n) {
		n = utf8_len(p + i);
		if (!n || (p[i] == '\\' && p[i + 1] == 'x'))
			break;
	}
	if (!p[i])
		return NULL;
	len = strlen(val);
	out = malloc(len * 4 + 1);
	if (!out) {
		*err = -ENOMEM;
		return NULL;
	}
	for (o = out, i = 0; p[i]; i += n) {
		n = utf8_len(p + i);
		if (!n || (p[i] == '\\' && p[i + 1] == 'x')) {
			o += sprintf(o, "\\x%02x", p[i]);
			n = 1;
		} else {
			memcpy(o, p + i, n);
			o += n;
		}
	}
	*o = '\0';
	return out;
}

#ifdef TEST_PROGRAM_REPORT

static int tap_count;

static void check_line(const struct fs_result *res, bool verbose, const char *want)
{
	char *got = report_line(res, verbose);
	bool ok = want ? got && !strcmp(got, want) : !got;

	printf("%sok %d - line '%s' (got '%s')\n", ok ? "" : "not ", ++tap_count,
	       want ? want : "(none)", got ? got : "(none)");
	free(got);
}

static void check_status(unsigned int tried, unsigned int failed, int want)
{
	int got = report_all_status(tried, failed);

	printf("%sok %d - %u tried, %u failed: status %d (got %d)\n",
	       got == want ? "" : "not ", ++tap_count, tried, failed, want, got);
}

static void check_left(const struct fs_result *res, uint64_t discarded,
		       uint64_t unreached)
{
	uint64_t d = report_discarded_left(res), u = report_unreached_left(res);

	printf("%sok %d - left: %" PRIu64 " discarded, %" PRIu64
	       " unreached (got %" PRIu64 ", %" PRIu64 ")\n",
	       d == discarded && u == unreached ? "" : "not ", ++tap_count, discarded,
	       unreached, d, u);
}

int main(void)
{
	struct fs_result r = { .path = "/mnt", .trim_done = true, .trimmed = 24111104 };

	printf("1..22\n");
	check_line(&r, false, NULL);
	check_line(&r, true, "/mnt: 23 MiB (24111104 bytes) trimmed");
	r.device = "/dev/loop0";
	check_line(&r, true, "/mnt: 23 MiB (24111104 bytes) trimmed on /dev/loop0");
	r.log_step_done = true;
	r.journal.iface = JOURNAL_IFACE_EXT4_CHECKPOINT;
	check_line(&r, true,
		   "/mnt: 23 MiB (24111104 bytes) trimmed on /dev/loop0, "
		   "journal checkpointed and discarded via EXT4_IOC_CHECKPOINT");
	r.device = NULL;
	r.erase = JOURNAL_ERASE_ZEROOUT;
	check_line(&r, true,
		   "/mnt: 23 MiB (24111104 bytes) trimmed, "
		   "journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT");
	r.retrim_rc = -5;
	check_line(&r, true,
		   "/mnt: 23 MiB (24111104 bytes) trimmed, "
		   "journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT, "
		   "but the FITRIM after it failed");
	r.retrim_rc = 0;
	r.trim_done = false;
	r.erase = JOURNAL_ERASE_DISCARD;
	r.journal.iface = JOURNAL_IFACE_CHKPT_JRNL;
	r.device = "/dev/sda1";
	check_line(&r, true,
		   "/mnt: journal checkpointed and discarded via "
		   "FS_IOC_CHKPT_JRNL on /dev/sda1");
	r.dry_run = true;
	r.trim_done = true;
	r.trimmed = 0;
	check_line(&r, false,
		   "/mnt: 0 B (dry run) trimmed on /dev/sda1, journal discard "
		   "possible via FS_IOC_CHKPT_JRNL (dry run)");
	r.log_step_done = false;
	r.device = NULL;
	check_line(&r, false, "/mnt: 0 B (dry run) trimmed");

	r = (struct fs_result){ .path = "/big",
				.device = "/dev/sdb1",
				.trim_done = true,
				.trimmed = 5368709120ULL,
				.trim_stopped = true,
				.trim_pos = 12884901888ULL,
				.trim_end = 68719476736ULL };
	check_line(&r, false, NULL);
	check_line(&r, true,
		   "/big: 5 GiB (5368709120 bytes) trimmed on /dev/sdb1, "
		   "interrupted at 12 GiB of 64 GiB");

	/* free space read back after the last FITRIM */
	r = (struct fs_result){ .path = "/mnt",
				.trim_done = true,
				.trimmed = 1048576,
				.log_step_done = true,
				.journal.iface = JOURNAL_IFACE_CHKPT_JRNL,
				.trim_checked = true,
				.trim_check = { .read = true },
				.unreached_check = { .read = true,
						     .nonzero_blocks = 12 } };
	check_line(&r, true,
		   "/mnt: 1 MiB (1048576 bytes) trimmed, journal checkpointed and "
		   "discarded via FS_IOC_CHKPT_JRNL, but 12 free blocks FITRIM "
		   "cannot reach still hold data");
	r.trim_check = (struct audit_free){ .read = true, .nonzero_blocks = 3 };
	check_line(&r, true,
		   "/mnt: 1 MiB (1048576 bytes) trimmed, journal checkpointed and "
		   "discarded via FS_IOC_CHKPT_JRNL, but 3 discarded free blocks "
		   "still hold data");
	check_left(&r, 3, 12);
	/* blocks the device reads back anew at each read: not verified */
	r.trim_check = (struct audit_free){ .read = true, .unsteady_blocks = 4 };
	r.unreached_check = (struct audit_free){ .read = true };
	check_line(&r, true,
		   "/mnt: 1 MiB (1048576 bytes) trimmed, journal checkpointed and "
		   "discarded via FS_IOC_CHKPT_JRNL, but 4 free blocks read back other "
		   "data at each read: not verified");
	r.unreached_check = (struct audit_free){ .read = true, .nonzero_blocks = 12 };
	/* what was not read back counts for no block, and fails the line */
	r.trim_check = (struct audit_free){ .error = EIO };
	r.unreached_check.read = false;
	check_left(&r, 0, 0);
	check_line(&r, true,
		   "/mnt: 1 MiB (1048576 bytes) trimmed, journal checkpointed and "
		   "discarded via FS_IOC_CHKPT_JRNL, but the free space could not be "
		   "read back");

	check_status(0, 0, 0);
	check_status(3, 0, 0);
	check_status(3, 3, EXIT_ALL_FAILED);
	check_status(3, 1, EXIT_SOME_FAILED);
	check_status(1, 1, EXIT_ALL_FAILED);
	return 0;
}
#endif
