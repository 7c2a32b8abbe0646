/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_READSET_H
#define FSTRIM_EXT_READSET_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct trim_target;

/*
 * The block groups of an ext4 whose free space a --journal run reads back
 * after FITRIM (--read-back=changed), and the proof that lets it pass over
 * the others.
 *
 * ext4 keeps, for each group, a "trimmed" bit that any free in the group
 * clears and FITRIM sets after walking it, and FITRIM skips a group whose
 * bit is set: so a group where FITRIM of this run discarded nothing had
 * nothing freed since the last FITRIM. That FITRIM may not have been this
 * program's, or its read back may have failed, and the bit itself can be
 * set over a block freed during the walk (the walk lets go of the group
 * lock). So a group is passed over only when all of these hold:
 *  - the last --journal run of this mount of the filesystem (same UUID,
 *    device, mount count, last mount time and boot) read the group back clean and
 *    kept the allocator's account of it from /proc/fs/ext4/DEV/mb_groups
 *    (free count, fragments, first free, free extents by order) in its
 *    state file;
 *  - the account is the same now, before the trims, after them and after
 *    the read back: no block of the group was freed or taken meanwhile
 *    that the account shows;
 *  - FITRIM of this run discarded nothing in it, called group by group.
 * Every other group of the range is read back in full, and a group that
 * changed during this run is left unproven for the next one.
 */

/* Why a group is read back: any of these bits. */
enum {
	READSET_UNPROVEN = 1, /* no earlier run proved it (or no state) */
	READSET_TRIMMED = 2, /* FITRIM of this run discarded in it */
	READSET_CHANGED = 4, /* its account differs from the one proved */
	READSET_DURING = 8, /* its account changed during this run */
	READSET_LATE = 16, /* chosen after the free space FITRIM cannot reach
			    * was read: read back, not proven this run */
};

/* What the read back covered, for the report. */
struct readset_summary {
	bool sized; /* only the groups below were read (else all) */
	bool had_proof; /* an earlier run of this mount proved groups */
	const char *all_why; /* when not sized and asked: why all */
	uint64_t groups; /* the filesystem's block groups */
	uint64_t groups_read; /* of them, read back */
	uint64_t groups_trimmed; /* where FITRIM of this run discarded */
	uint64_t groups_changed; /* changed since the proof, or during the run */
};

struct readset {
	uint64_t ngroups;
	uint8_t *read; /* per group: READSET_* bits, 0 when passed over */
	uint64_t *trimmed; /* per group: what FITRIM of this run discarded */
	uint64_t *first; /* the allocator's accounts when the run began */
	uint64_t *last; /* ... at the last look */
	uint64_t *proved; /* ... the state's, of the groups it proved (0: none) */
	bool have_state;
	char mb_groups[PATH_MAX]; /* /proc/fs/ext4/DEV/mb_groups */
	char state[PATH_MAX]; /* the state file */
	char key[256]; /* this mount of the filesystem, as the state names it */
};

/*
 * The state directory: the first of $STATE_DIRECTORY (which systemd sets
 * for a service with StateDirectory=) when set, else the one configured
 * (/var/lib/fstrim-ext).
 */
const char *readset_state_dir(void);

/*
 * Begin the read set of the ext4 that @t describes (before its first
 * FITRIM): the allocator's accounts now, and the state of the last run.
 * Returns 0, or -errno when the run must read back all of its free space
 * (not ext4, no mb_groups, no memory), with @why saying why.
 */
int readset_begin(struct readset *rs, const struct trim_target *t, const char **why);

/*
 * Choose the groups to read after a trim (call again after each): those
 * FITRIM discarded in (@rs->trimmed), those whose account differs from
 * the proved one or changed since the last look, those no earlier run
 * proved. @late marks the groups first chosen now as READSET_LATE.
 * Returns 0 or -errno (then read all).
 */
int readset_choose(struct readset *rs, bool late);

/*
 * End the run: with @proved (the read back found nothing left, read all
 * it had to, over the whole filesystem), keep in the state the groups
 * read back clean or passed over, whose account has not changed since the
 * last look; else remove the state, so that the next run reads all.
 * Returns 0 or -errno (the next run then reads all).
 */
int readset_end(struct readset *rs, bool proved);

void readset_summarize(const struct readset *rs, struct readset_summary *s);
void readset_free(struct readset *rs);

/* FNV-1a of @len bytes, never 0: an account as the state keeps it. */
uint64_t readset_hash(const char *buf, size_t len);

#endif
