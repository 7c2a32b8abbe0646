// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One filesystem's run: FITRIM in ranges, the journal step, the read-backs
 * that check them, the audit, and the verdict. It prints nothing: what it
 * has to say goes to the caller's callback, what it did to the result.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "audit.h"
#include "ext4-ioctl.h"
#include "fslog.h"
#include "mounts.h"
#include "readset.h"
#include "remnants.h"
#include "run.h"
#include "sizes.h"
#include "stack.h"

const char *run_signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

static void __attribute__((format(printf, 2, 3)))
say(const struct run_opts *opts, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	opts->message(opts->arg, fmt, ap);
	va_end(ap);
}

/* Combine the results of two steps: a failure wins over "unsupported". */
static int worse(int a, int b)
{
	if (a < 0 || b < 0)
		return a < 0 ? a : b;
	return a > b ? a : b;
}

/* What the progress callbacks of lib/trim and of the audit's reads need. */
struct progress_run {
	const struct run_opts *opts;
	const char *path;
};

static bool after_range(const struct trim_progress *p, void *arg)
{
	const struct progress_run *run = arg;

	if (run->opts->progress)
		run->opts->progress(RUN_TRIM_RANGE, run->path, p, NULL, run->opts->arg);
	return *run->opts->stop != 0;
}

/* A long read of the device, told as the trim is. */
static void read_step(enum audit_read_when when, const struct audit_read *r, void *arg)
{
	static const enum run_progress run_when[] = {
		[AUDIT_READ_BEGIN] = RUN_READ_BEGIN,
		[AUDIT_READ_PIECE] = RUN_READ_PIECE,
		[AUDIT_READ_END] = RUN_READ_END,
	};
	const struct progress_run *run = arg;

	run->opts->progress(run_when[when], run->path, NULL, r, run->opts->arg);
}

/*
 * FITRIM over the requested range in steps, taking SIGINT and SIGTERM
 * between them; adds to @res what was trimmed, and where it stopped.
 * Returns as trim_fs_steps() does.
 */
static int trim_in_steps(const struct run_opts *opts, const struct trim_target *target,
			 const char *path, struct fs_result *res)
{
	struct progress_run run = { .opts = opts, .path = path };
	struct trim_progress p;
	int rc;

	if (opts->progress)
		opts->progress(RUN_TRIM_BEGIN, path, NULL, NULL, opts->arg);
	rc = trim_fs_steps(target, &opts->range, opts->step, opts->stop_fd, after_range,
			   &run, &p);
	if (opts->progress)
		opts->progress(RUN_TRIM_END, path, &p, NULL, opts->arg);
	res->trimmed += p.trimmed;
	res->trim_ranges += p.ranges;
	if (p.stopped) {
		res->trim_stopped = true;
		res->trim_pos = p.pos;
		res->trim_end = p.end;
	}
	return rc;
}

/* A trim cut short: say so, whether or not --verbose prints the line. */
static void note_stopped(const struct run_opts *opts, const struct fs_result *res)
{
	say(opts,
	    "%s: trimming interrupted by %s at byte %" PRIu64 " of %" PRIu64 ": %" PRIu64
	    " bytes trimmed, the rest not",
	    res->path, run_signal_name(*opts->stop), res->trim_pos, res->trim_end,
	    res->trimmed);
}

/*
 * Say what the steps could not remove, as far as the kernel shows it:
 * free space in chunks below the discard granularity, which FITRIM
 * skips, measured.
 */
static void warn_remnants(const struct run_opts *opts, int fd, const char *path)
{
	char size[SIZE_HUMAN_MAX], gran[SIZE_HUMAN_MAX];
	struct remnants rem = { 0 };
	struct statfs sfs;
	struct stat st;

	if (fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0 ||
	    remnants_check_dev(st.st_dev, (unsigned int)sfs.f_bsize, &rem) != 0)
		return;
	if (rem.small_free_bytes)
		say(opts,
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
static void check_names(const struct run_opts *opts, int fd, const char *path,
			struct fs_result *res, const struct audit_progress *reads)
{
	const struct audit_dirents *d = &res->names_check;
	char why[256];
	int rc;

	res->names_checked = true;
	rc = audit_dirents_fd(fd, &res->names_check, reads);
	if (rc) {
		res->names_check.error = -rc;
		say(opts, "%s: the directories could not be read back: %s", path,
		    audit_dirents_why(d, why, sizeof(why)));
	} else if (d->removed_names) {
		say(opts,
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
static void note_journal_verify(const struct run_opts *opts, const char *path,
				const struct journal_verify *v)
{
	if (v->state == JOURNAL_VERIFY_UNREAD)
		say(opts, "%s: the journal could not be read back after the erase: %s",
		    path, audit_journal_why(v->error));
	else if (v->state == JOURNAL_VERIFY_UNSTEADY)
		say(opts,
		    "%s: %" PRIu64
		    " journal blocks read back other data at each of three "
		    "reads, after %s too, and no transaction explains them: the device "
		    "does not read them back the same way twice, so the journal's erase "
		    "is not verified",
		    path, v->unsteady, v->redo);
	else if (v->state == JOURNAL_VERIFY_DATA_LEFT)
		say(opts,
		    "%s: %" PRIu64
		    " journal blocks still hold data after the erase and %s%s%s",
		    path, v->left, v->redo, v->error ? ": " : "",
		    v->error ? strerror(v->error) : "");
}

/*
 * After the first trim, before the journal step: the free blocks FITRIM
 * does not reach (held by the allocator, or in free extents below its
 * minimum) in the groups of @span, read for what deleted files left
 * there; verify_trim() reads those again after. On a filesystem the
 * audit has no backend for, nothing is read and nothing is said
 * (audit_free_unreachable() fails with EOPNOTSUPP).
 */
static struct audit_free_marks *note_unreachable(int fd, const struct audit_span *span,
						 struct fs_result *res,
						 const struct audit_progress *reads)
{
	struct audit_free_marks *marks = NULL;

	audit_free_unreachable(fd, span, &res->unreached_check, &marks, reads);
	return marks;
}

/*
 * The end of the line of the free blocks FITRIM cannot reach, on btrfs:
 * where --offset lies inside a block group (btrfs_trim_fs() begins at the
 * first block group that starts at or after it), and on a device of
 * several that cannot discard, which FITRIM passes over.
 */
static const char *btrfs_unreached(const struct audit_free *u, char *buf, size_t size)
{
	int n = 0;

	buf[0] = '\0';
	if (u->passed_blocks)
		n = snprintf(buf, size,
			     ", %" PRIu64
			     " in the block group that --offset lies inside, "
			     "which btrfs's FITRIM passes over",
			     u->passed_blocks);
	if (u->nodiscard_blocks && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n,
			 ", %" PRIu64
			 " on a device of the filesystem that cannot discard",
			 u->nodiscard_blocks);
	return buf;
}

/*
 * The end of the line of the discarded blocks that still hold data: how
 * many lie in parts of discard units, which a device that erases whole
 * units only keeps; on btrfs, how many lie in space no chunk holds,
 * which its FITRIM discarded once, not again at the second discard.
 */
static const char *discarded_left(const struct audit_free *f, char *buf, size_t size)
{
	char unit[SIZE_HUMAN_MAX];
	int n = 0;

	buf[0] = '\0';
	if (f->part_unit_blocks)
		/* no size where devices of several sizes have such blocks (btrfs) */
		n = snprintf(buf, size,
			     ", %" PRIu64 " of them in %s%sdiscard units that their free "
			     "extent does not cover whole, which a device that erases "
			     "whole units only keeps",
			     f->part_unit_blocks,
			     f->discard_unit ?
				     size_to_human(f->discard_unit, unit, sizeof(unit)) :
				     "",
			     f->discard_unit ? " " : "");
	if (f->once_blocks && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n,
			 ", %" PRIu64 " of them in space that no chunk holds, which "
			 "btrfs's FITRIM discards once (it passes over space it has "
			 "discarded until a chunk is allocated there)",
			 f->once_blocks);
	return buf;
}

/*
 * The same for free space: all that FITRIM discarded is read back, so
 * that a device that ignores discard is reported, not trusted;
 * and the blocks @unreached (note_unreachable()) that held data before
 * the trims. Data in either fails the filesystem, as data left in the
 * journal does. Where FITRIM is not supported (a device without
 * discard), the free space was never trimmed and is read back all the
 * same, @unreached too: what deleted files left there is still on the
 * device, and each block is told by where it lies.
 */
static void verify_trim(const struct run_opts *opts, const struct trim_target *target,
			const struct audit_span *span, const char *path,
			struct fs_result *res, struct audit_free_marks *unreached,
			const struct audit_progress *reads)
{
	int fd = target->fd;
	struct audit_free *f = &res->trim_check, *u = &res->unreached_check;
	struct audit_free_marks *marks = NULL;
	char size[SIZE_HUMAN_MAX], below[SIZE_HUMAN_MAX], btrfs_why[256], left_why[512];
	bool trimmed = res->trim_done;
	uint64_t more;
	int rc, urc = 0;

	res->trim_checked = true;
	rc = audit_free_readback(fd, span, f, &marks, reads);
	/*
	 * Blocks freed by a transaction that committed after FITRIM passed
	 * them were not discarded, a preallocation may have been released,
	 * and a writer may take and free blocks meanwhile: commit, discard
	 * once more, and count only the blocks that still hold what they
	 * held, free all along.
	 */
	if ((marks || unreached) && syncfs(fd) == 0 &&
	    (!trimmed || trim_fs_again(target, &opts->range, &more) == 0)) {
		if (!rc && marks)
			rc = audit_free_recheck(fd, marks, f);
		if (unreached)
			urc = audit_free_recheck(fd, unreached, u);
	}
	audit_free_marks_free(marks);
	if (rc) {
		f->read = false;
		f->error = -rc;
		say(opts, "%s: the %s free space could not be read back: %s", path,
		    trimmed ? "discarded" : "untrimmed", strerror(-rc));
	} else if (f->nonzero_blocks && !trimmed) {
		say(opts,
		    "%s: the free space was not trimmed (the discard operation is not "
		    "supported): %" PRIu64 " free blocks hold data (%s read back)",
		    path, f->nonzero_blocks,
		    size_to_human(f->read_bytes, size, sizeof(size)));
	} else if (f->nonzero_blocks) {
		say(opts,
		    "%s: the device did not erase what FITRIM discarded: %" PRIu64
		    " free blocks still hold data after %s (%s read back)%s",
		    path, f->nonzero_blocks,
		    f->once_blocks == f->nonzero_blocks ? "its discard" :
							  "a second discard",
		    size_to_human(f->read_bytes, size, sizeof(size)),
		    discarded_left(f, left_why, sizeof(left_why)));
	}
	if (urc) {
		u->read = false;
		u->error = -urc;
	}
	/* not read and no error: the scan was skipped for a stop signal */
	if (!u->read && u->error) {
		say(opts, "%s: the free blocks FITRIM cannot reach could not be read: %s",
		    path, strerror(u->error));
	} else if (u->nonzero_blocks) {
		say(opts,
		    "%s: %" PRIu64 " free blocks that FITRIM cannot reach still hold "
		    "data of deleted files: %" PRIu64 " held by the allocator "
		    "(preallocated, until used or the filesystem is unmounted), %" PRIu64
		    " in free extents shorter than %s (%s)%s",
		    path, u->nonzero_blocks, u->held_blocks, u->short_blocks,
		    u->short_below_gran ? "the discard granularity" : "FITRIM's minimum",
		    size_to_human(u->short_below, below, sizeof(below)),
		    btrfs_unreached(u, btrfs_why, sizeof(btrfs_why)));
	}
	if (report_unsteady(res))
		say(opts,
		    "%s: %" PRIu64 " free blocks read back after a second discard with "
		    "other data than before, and other again at the read right after: "
		    "the device does not read discarded blocks back the same way twice, "
		    "so their erase is not verified",
		    path, report_unsteady(res));
}

/*
 * With --journal on ext4 the read back covers only the block groups that
 * lib/readset chooses; elsewhere, with --read-back=all, or where the
 * choice cannot be made, all free space in the range. Returns whether it
 * is so sized, with why not in @res->readback.all_why.
 */
static bool readset_start(const struct run_opts *opts, struct trim_target *target,
			  struct readset *rs, struct fs_result *res)
{
	const char *why = "--read-back=all";

	if (!opts->readback_all && readset_begin(rs, target, &why) == 0) {
		target->group_trimmed = rs->trimmed;
		return true;
	}
	res->readback.all_why = why;
	return false;
}

/*
 * End the sizing of the read back: keep what it proved (@proved), or
 * nothing, so that the next run reads all. With @why, this run reads all
 * too, for that reason. Returns 0, or -errno of keeping what was proved.
 */
static int readset_stop(struct readset *rs, struct trim_target *target,
			struct fs_result *res, bool proved, const char *why)
{
	int rc;

	if (why) {
		res->readback.sized = false;
		res->readback.all_why = why;
	} else {
		readset_summarize(rs, &res->readback);
	}
	rc = readset_end(rs, proved && !why);
	readset_free(rs);
	target->group_trimmed = NULL;
	return rc;
}

/*
 * Choose the groups to read now (after a trim), into @span; false when
 * the sizing had to stop.
 */
static bool readset_span(struct readset *rs, struct trim_target *target,
			 struct fs_result *res, bool late, struct audit_span *span)
{
	if (readset_choose(rs, late) != 0) {
		readset_stop(rs, target, res, false,
			     "the allocator's accounts (mb_groups) could not be read");
		span->groups = NULL;
		return false;
	}
	span->groups = rs->read;
	span->ngroups = rs->ngroups;
	return true;
}

/*
 * Where the read backs read: below the filesystem's device-mapper layers
 * where they map (linear, crypt), as a reader of the disk would. Where a
 * layer cannot be mapped, the reads go through it, and what they prove
 * stops there: note_unproven() names it.
 */
static void describe_stack(int fd, struct storage_stack *stack)
{
	struct stat st;

	memset(stack, 0, sizeof(*stack));
	if (fstat(fd, &st) != 0 || !major(st.st_dev))
		return;
	stack_describe(st.st_dev, stack);
}

/* The stack's layer that stops the proof, said once the read backs ran. */
static void note_unproven(const struct run_opts *opts, const char *path,
			  const struct storage_stack *stack, struct fs_result *res)
{
	if (stack->kind != STACK_UNMAPPED || !(res->trim_checked || res->verify.state))
		return;
	snprintf(res->unproven_below, sizeof(res->unproven_below), "%s, %s%s%s",
		 stack->layer, strchr(stack->target, ' ') ? "" : "a \"", stack->target,
		 strchr(stack->target, ' ') ? "" : "\" target");
	say(opts,
	    "%s: the erase is not proven below %s: fstrim-ext reads where the bytes lie "
	    "through linear and crypt device-mapper targets only",
	    path, res->unproven_below);
}

/* Whether the run's range covers every block of the ext4 @t describes. */
static bool covers_all(const struct fstrim_range *r, const struct trim_target *t)
{
	uint64_t first = t->first_data_block << t->block_bits;
	uint64_t end = t->blocks_count << t->block_bits;

	return r->start <= first && (r->len >= end || r->start + r->len >= end);
}

/*
 * What the read back proved: all it had to read was read and held
 * nothing, over the whole filesystem.
 */
static bool readback_proved(const struct run_opts *opts, const struct trim_target *t,
			    const struct fs_result *res)
{
	return res->trim_checked && res->trim_check.read && res->unreached_check.read &&
	       !report_free_unread(res) && !report_discarded_left(res) &&
	       !report_unreached_left(res) && !report_unsteady(res) &&
	       covers_all(&opts->range, t);
}

/*
 * Free space that FITRIM could not discard below a crypt layer (one that
 * passes no discards): the disk holds it encrypted, as fstrim leaves it,
 * and it is not read back; the run says FITRIM is not supported, as
 * fstrim does.
 */
static bool untrimmed_encrypted(int trim_rc, const struct storage_stack *stack)
{
	return trim_rc == 1 && stack->kind == STACK_MAPPED && stack->encrypted;
}

/* Whether the filesystem itself is read-only, not only this view of it. */
static bool fs_is_readonly(int fd, int mnt_id)
{
	struct statvfs vfs;

	return fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) &&
	       mounts_fs_readonly(mnt_id) != 0;
}

static int refuse(struct run_result *r, int fd, int rc, const char *refused,
		  const char *error)
{
	r->jf.refused = refused;
	r->jf.error = error;
	if (fd >= 0)
		close(fd);
	return rc;
}

int run_open(const struct run_opts *opts, const char *path, const char *target,
	     int mnt_id, dev_t dev, const char *device, struct run_result *r)
{
	int fd;

	*r = (struct run_result){ 0 };
	fd = fs_open_root(target, mnt_id, dev);
	if (fd == -ESTALE) {
		say(opts, "%s: the mount changed after it was chosen; not trimmed", path);
		return refuse(r, -1, fd, NULL, "the mount changed after it was chosen");
	}
	if (fd < 0) {
		say(opts, "cannot open %s: %s", path, strerror(-fd));
		snprintf(r->error, sizeof(r->error), "cannot open: %s", strerror(-fd));
		return refuse(r, -1, fd, NULL, r->error);
	}
	/*
	 * -a, -A and -I (the callers that name a device) choose writable
	 * filesystems when a step writes (all but --audit alone); one
	 * remounted read-only since is left alone too:
	 * FITRIM and the journal checkpoint would still write to it. A
	 * read-only view of a writable filesystem is no reason to stop.
	 */
	if (device && (!opts->audit || opts->journal) && fs_is_readonly(fd, mnt_id)) {
		say(opts, "%s: remounted read-only after it was chosen; not trimmed",
		    path);
		return refuse(r, fd, -EROFS, NULL,
			      "remounted read-only after it was chosen");
	}
	/*
	 * A single path is trimmed read-only or not, as fstrim does; but the
	 * journal checkpoint writes the journal and the metadata home.
	 */
	if (!device && opts->journal && fs_is_readonly(fd, mnt_id)) {
		say(opts,
		    "%s: read-only filesystem: the journal step would write to it; "
		    "nothing done",
		    path);
		return refuse(r, fd, -EROFS,
			      "read-only filesystem: the journal step would write to it",
			      NULL);
	}
	return fd;
}

/*
 * The steps on one filesystem, through the descriptor that was checked,
 * then the audit, and the verdict from what was asked, done, examined
 * and failed.
 */
int run_fs(const struct run_opts *opts, int fd, const char *path, const char *device,
	   const char *source, const char *fstype, struct run_result *r)
{
	/* --audit alone changes nothing; with --journal it looks afterwards */
	bool steps = !opts->audit || opts->journal;
	struct fs_result *res = &r->res;
	struct report_json_fs *jf = &r->jf;
	struct audit_free_marks *unreached = NULL;
	struct trim_target target = { .fd = fd };
	struct audit_span span = {
		.start = opts->range.start,
		.len = opts->range.len,
		.minlen = opts->range.minlen,
	};
	struct readset rs = { 0 };
	struct storage_stack stack = { 0 };
	bool sized = false, verify, no_journal;
	struct progress_run run = { .opts = opts, .path = path };
	/* the long reads, told as the trim is (not at all without a terminal) */
	const struct audit_progress reads = {
		.fn = opts->progress ? read_step : NULL,
		.arg = &run,
	};
	char reason[REPORT_REASON_MAX];
	int trim_rc = 0, log_step_rc = 0, rc;

	*r = (struct run_result){
		.res = {
			.path = path,
			.device = device,
			.dry_run = opts->dry_run,
			.erase = opts->erase,
		},
		.jf = {
			.fstype = fstype,
			.source = source,
			.trim_asked = steps && !opts->journal_only,
			.journal_asked = opts->journal,
		},
	};

	if (jf->trim_asked) {
		/*
		 * Blocks freed by a transaction that has not committed are
		 * not free on disk yet, so FITRIM would skip them: commit
		 * first when the point is to erase what was deleted.
		 */
		if (opts->journal && !opts->dry_run && syncfs(fd) != 0) {
			rc = -errno;
			say(opts, "%s: syncfs failed: %s", path, strerror(-rc));
			snprintf(r->error, sizeof(r->error), "syncfs: %s", strerror(-rc));
			jf->error = r->error;
			goto out;
		}
		if (opts->dry_run) {
			res->trim_done = true;
		} else {
			/* what the trims need of the filesystem, read once for them all */
			trim_target_init(fd, &target);
			if (opts->journal) {
				sized = readset_start(opts, &target, &rs, res);
				describe_stack(fd, &stack);
				span.below = &stack;
			}
			trim_rc = trim_in_steps(opts, &target, path, res);
			if (res->trim_stopped)
				note_stopped(opts, res);
			if (trim_rc < 0) {
				say(opts, "%s: FITRIM ioctl failed: %s", path,
				    strerror(-trim_rc));
				rc = trim_rc;
				goto out;
			}
			res->trim_done = trim_rc == 0;
			if (trim_rc == 1 && !opts->quiet_unsupp)
				say(opts, "%s: the discard operation is not supported",
				    path);
			/* FITRIM's answers size the read back: without them, all */
			if (sized && trim_rc == 1) {
				readset_stop(&rs, &target, res, false,
					     "FITRIM is not supported");
				sized = false;
			}
			/* nothing more once a stop is asked for: not even a read */
			if (opts->journal && !*opts->stop && !res->trim_stopped &&
			    !untrimmed_encrypted(trim_rc, &stack)) {
				if (sized)
					sized = readset_span(&rs, &target, res, false,
							     &span);
				unreached = note_unreachable(fd, &span, res, &reads);
			}
		}
	}

	/* cut short: the journal step waits for a run that trims it all */
	if (opts->journal && res->trim_stopped) {
		say(opts, "%s: journal step not done: interrupted", path);
	} else if (opts->journal) {
		/* ext4's journal erase, or btrfs's commit (lib/fslog) */
		log_step_rc = fslog_journal_step(fd, opts->erase, opts->dry_run,
						 &res->journal, &res->verify, &reads);
		if (res->journal.zeroed_instead)
			res->erase = JOURNAL_ERASE_ZEROOUT;
		note_journal_verify(opts, path, &res->verify);
		/*
		 * An ext4 without a journal has none to erase, but what FITRIM
		 * discarded and what it cannot reach are read back all the same,
		 * as after an erase: the free space holds what deleted files left.
		 */
		no_journal = log_step_rc == 1 &&
			     res->journal.unsupported == JOURNAL_NO_JOURNAL;
		if (log_step_rc == 1 && journal_not_erased(&res->journal)) {
			/* a journal to erase that was not: never quiet */
			say(opts, "%s: journal step not done: %s", path,
			    report_journal_reason(&res->journal, fstype, reason,
						  sizeof(reason)));
		} else if (log_step_rc == 1 && !opts->quiet_unsupp) {
			say(opts, "%s: the journal step is not supported: %s", path,
			    report_journal_reason(&res->journal, fstype, reason,
						  sizeof(reason)));
		} else if (log_step_rc < 0) {
			say(opts, "%s: journal checkpoint failed: %s", path,
			    strerror(-log_step_rc));
		}
		if (log_step_rc == 0) {
			res->log_step_done = true;
			/*
			 * Trim again: the checkpoint commits what syncfs left
			 * and writes metadata home, and the blocks of a
			 * deleted directory, freed as metadata that the
			 * journal forgets, keep every name until a FITRIM
			 * after that commit (bench/remnants: "rm -rf").
			 */
			if (res->trim_done && !opts->dry_run && *opts->stop) {
				/* a stop during the checkpoint: no FITRIM, no read begun */
				res->retrim_rc = -EINTR;
				say(opts,
				    "%s: FITRIM after the journal checkpoint not done: "
				    "interrupted by %s; blocks the checkpoint freed (a "
				    "deleted directory's) may still hold names",
				    path, run_signal_name(*opts->stop));
			} else if (res->trim_done && !opts->dry_run) {
				res->retrim_rc = trim_in_steps(opts, &target, path, res);
				if (res->trim_stopped)
					note_stopped(opts, res);
			}
		}
		if (log_step_rc == 0 || no_journal) {
			verify = (res->trim_done && !opts->dry_run && !res->retrim_rc &&
				  !res->trim_stopped) ||
				 (trim_rc == 1 && !opts->dry_run && !*opts->stop &&
				  !untrimmed_encrypted(trim_rc, &stack));
			/* groups freed in or changed since the first choice too */
			if (verify && sized)
				sized = readset_span(&rs, &target, res, true, &span);
			if (verify)
				verify_trim(opts, &target, &span, path, res, unreached,
					    &reads);
			/*
			 * A proof not kept costs the next run a read of all the
			 * free space, and every run after it: say so, the run
			 * itself proved what it read.
			 */
			if (verify && sized) {
				int kept_rc = readset_stop(
					&rs, &target, res,
					readback_proved(opts, &target, res), NULL);
				if (kept_rc)
					say(opts,
					    "%s: warning: cannot keep what this run read back in %s: "
					    "%s; the next run reads back all the free space",
					    path, readset_state_dir(),
					    strerror(-kept_rc));
				sized = false;
			}
			if (res->retrim_rc && res->retrim_rc != -EINTR)
				say(opts,
				    "%s: FITRIM after the journal checkpoint failed: %s; "
				    "blocks the checkpoint freed (a deleted directory's) "
				    "may still hold names",
				    path,
				    res->retrim_rc == 1 ? "not supported" :
							  strerror(-res->retrim_rc));
			/* the audit says all of it, and more */
			if (!opts->dry_run && !opts->audit && !*opts->stop &&
			    res->journal.iface != JOURNAL_IFACE_BTRFS_SYNC) {
				warn_remnants(opts, fd, path);
				check_names(opts, fd, path, res, &reads);
			}
		}
	}
	note_unproven(opts, path, &stack, res);
	rc = worse(worse(trim_rc, log_step_rc), res->retrim_rc);
	if (log_step_rc == 1 && journal_not_erased(&res->journal))
		rc = worse(rc, -EOPNOTSUPP);
	if (res->verify.state == JOURNAL_VERIFY_DATA_LEFT ||
	    res->verify.state == JOURNAL_VERIFY_UNREAD ||
	    res->verify.state == JOURNAL_VERIFY_UNSTEADY || report_discarded_left(res) ||
	    report_free_unread(res) || report_unreached_left(res) ||
	    report_unsteady(res) || report_names_left(res) ||
	    report_unproven_below(res) || (res->names_checked && res->names_check.error))
		rc = worse(rc, -EIO);

	if (opts->audit) {
		jf->audit = &r->audit;
		jf->audit_rc = audit_fs(fd, &r->audit, &reads);
		if (jf->audit_rc == 0 && audit_found_remnants(&r->audit))
			r->found = true;
		/* a filesystem the audit did not examine is never clean */
		if (jf->audit_rc < 0)
			rc = worse(rc, jf->audit_rc);
		else if (jf->audit_rc == 1)
			rc = worse(rc, -EOPNOTSUPP);
		else if (audit_incomplete(&r->audit))
			rc = worse(rc, -EIO);
	}
out:
	/* a run that did not read back what it chose proves nothing */
	if (sized)
		readset_stop(&rs, &target, res, false, NULL);
	jf->trim_rc = trim_rc;
	jf->log_step_rc = log_step_rc;
	jf->rc = rc;
	audit_free_marks_free(unreached);
	return rc;
}

void run_result_free(struct run_result *r)
{
	audit_dirents_free(&r->res.names_check);
	audit_result_free(&r->audit);
}
