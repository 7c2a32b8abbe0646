/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_AUDIT_H
#define FSTRIM_EXT_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * What --audit finds on one mounted filesystem. Nothing is written: the
 * filesystem is opened read-only with libext2fs, the journal is read
 * from the device with O_DIRECT, and the journal ioctl is only probed
 * with DRY_RUN. On btrfs its free space alone is read (lib/audit-btrfs.c).
 */

/*
 * A long read of a device (the audit's, a read back), for a progress
 * line: @done of @total bytes read; or, with @at, a walk that reads only
 * part of its span, at byte @done of @total.
 */
struct audit_read {
	const char *what; /* "audit: reading free space", ... */
	uint64_t done, total;
	bool at;
};

enum audit_read_when {
	AUDIT_READ_BEGIN,
	AUDIT_READ_PIECE, /* after each piece read */
	AUDIT_READ_END
};

/* Where the reads are told: @fn, or nowhere when it (or the pointer) is NULL. */
struct audit_progress {
	void (*fn)(enum audit_read_when when, const struct audit_read *r, void *arg);
	void *arg;
};

/* What a block device offers, from /sys/dev/block/M:m/queue of its disk. */
struct audit_device {
	char *path; /* device node; NULL when not found */
	dev_t devno; /* 0 when not a block device */
	bool known; /* sysfs answered */
	uint64_t discard_max_bytes; /* 0: no discard */
	uint64_t write_zeroes_max_bytes; /* 0: no write-zeroes */
	uint32_t discard_granularity;
	uint32_t discard_alignment; /* where its first discard unit begins, in
					 * bytes past its start */
};

struct audit_journal {
	bool present; /* the filesystem has a journal */
	bool external; /* on its own device (mke2fs -O journal_dev) */
	char uuid[37]; /* the external journal's UUID, "" otherwise */
	bool read; /* the blocks below were counted */
	bool live_log; /* the journal holds transactions not yet checkpointed */
	uint32_t block_size;
	uint64_t blocks; /* journal blocks after its superblock */
	uint64_t nonzero_blocks; /* of these, holding non-zero bytes: */
	uint64_t live_blocks; /* the log recovery would replay, newest copies */
	uint64_t old_blocks; /* older transactions, and copies a later one
					 * logs again or revokes: history */
	uint64_t unsteady_blocks; /* other data at each of three reads, which
					 * no transaction explains: the device
					 * does not read them back the same way
					 * twice, and what they hold is not known */
	int error; /* 0, or the errno that stopped the count */
};

/* The free space of the block bitmap, read back from the device. */
struct audit_free {
	bool read; /* the figures below were read */
	uint32_t block_size;
	uint64_t free_bytes; /* free space in the bitmap */
	uint64_t read_bytes; /* how much of it was read */
	uint64_t nonzero_blocks; /* free blocks read that are not zero */
	bool classified; /* the allocator told why FITRIM left them: */
	uint64_t short_blocks; /* in its free extents below FITRIM's
					 * minimum (the discard granularity, or
					 * -m when larger), which FITRIM skips */
	uint64_t held_blocks; /* not free to it: preallocated, or freed by a
					 * transaction not yet committed */
	uint64_t passed_blocks; /* btrfs: in the block group FITRIM's start
					 * lies inside, which it passes over */
	uint64_t nodiscard_blocks; /* btrfs: on a device that cannot discard,
					 * of several */
	uint64_t short_below; /* of audit_free_unreachable(): FITRIM's
					 * minimum in bytes, which extents of
					 * @short_blocks are shorter than */
	bool short_below_gran; /* that minimum is the discard granularity */
	uint64_t part_unit_blocks; /* of @nonzero_blocks, discarded: in a unit
					 * of the device's discard granularity
					 * that the free extent around them does
					 * not cover whole, which a device that
					 * erases whole units only keeps
					 * (audit_free_recheck()) */
	uint32_t discard_unit; /* that granularity, in bytes; 0 when devices
					 * of several have such blocks (btrfs) */
	uint64_t once_blocks; /* btrfs: of @nonzero_blocks, in device space
					 * no chunk holds, which btrfs's FITRIM
					 * discards once: it passes over space
					 * it discarded until a chunk is
					 * allocated there (CHUNK_TRIMMED) */
	uint64_t unsteady_blocks; /* discarded, read back after the second
					 * discard with other data than before,
					 * and other again at a read right
					 * after: the device does not read them
					 * back deterministically
					 * (audit_free_recheck()) */
	int error; /* 0, or the errno that stopped the read */
};

/* A directory whose live blocks still hold names of removed entries. */
struct audit_dir {
	char *path; /* relative to the filesystem root */
	uint64_t ino;
	uint64_t removed_names;
};

struct audit_dirents {
	bool scanned;
	uint64_t directories; /* directories read */
	uint64_t removed_names; /* distinct readable names of removed entries
					 * that no live entry of the directory carries */
	struct audit_dir *dirs; /* where they are, in inode order */
	size_t ndirs;
	int error; /* 0, or the errno that stopped the scan */
	uint64_t unwalked; /* directories whose blocks could not be listed, twice */
	uint32_t unwalked_ino; /* the first of them */
	long unwalked_err; /* libext2fs's code for it */
	uint64_t unread_inodes; /* inodes the inode scan could not read */
};

/* Answers of a journal ioctl probe: 1 yes, 0 no, -errno when it failed otherwise. */
struct audit_kernel {
	bool chkpt_jrnl; /* /sys/fs/ext4/features/chkpt_jrnl */
	int checkpoint; /* EXT4_IOC_CHECKPOINT DRY_RUN answered */
	int checkpoint_discard; /* ... with DISCARD: the journal discards */
	int checkpoint_zeroout; /* ... with ZEROOUT */
	bool jbd2_erase_fix; /* /sys/fs/ext4/features/jbd2_erase_fix */
	bool wipes_dirents; /* Linux 5.13+: unlink wipes the entry */
	bool dirent_pack_wipe; /* /sys/fs/ext4/features/dirent_pack_wipe */
	char release[65]; /* uname -r */
};

/* btrfs: where the free space read back lies (struct audit_free has the counts). */
struct audit_btrfs {
	unsigned int devices; /* the filesystem's devices, every one read */
	uint64_t unallocated_bytes; /* device space in no chunk, after the first MiB */
	uint64_t chunk_free_bytes; /* chunk space no extent covers, every copy */
	uint64_t striped_free_bytes; /* the same in RAID0/10/5/6 chunks: not read */
};

struct audit_result {
	bool ext4; /* ext2/3/4: the checks below apply */
	bool btrfs; /* btrfs: only the free space (and data) applies */
	struct audit_btrfs btrfs_space;
	struct audit_device data; /* the filesystem's device */
	struct audit_device journal_dev; /* the journal's (the same if internal) */
	struct audit_journal journal;
	struct audit_dirents dirents;
	struct audit_kernel kernel;
	struct audit_free free;
	bool free_known; /* the free-space figures below were read */
	uint64_t free_bytes;
	uint64_t small_free_bytes; /* in extents smaller than the discard
					 * granularity: FITRIM cannot reach them */
	int free_error; /* 0, or the errno of the free-space check */
};

/*
 * Read every directory of the ext4 filesystem open at @fd, as the audit
 * does, for names of removed entries left in live directory blocks; the
 * read is told to @progress (NULL for none).
 * Returns 0 with @d filled (free it with audit_dirents_free()) or -errno.
 */
int audit_dirents_fd(int fd, struct audit_dirents *d,
		     const struct audit_progress *progress);
void audit_dirents_free(struct audit_dirents *d);

/*
 * Why the directories of @d were not read in full, in @buf: the
 * directories whose blocks could not be listed, or the error that
 * stopped the scan.
 */
const char *audit_dirents_why(const struct audit_dirents *d, char *buf, size_t len);

/*
 * Why the journal could not be read, for @err (an errno): strerror(), or
 * what ENOTUNIQ means here (external_layout(): several devices carry the
 * external journal's UUID).
 */
const char *audit_journal_why(int err);

/* Whether the kernel advertises @name in /sys/fs/ext4/features. */
bool audit_ext4_feature(const char *name);

/*
 * Audit the filesystem open at @fd (the root of a mount). Returns 0 with
 * @out filled (the parts that could not be done carry their own error;
 * on btrfs only the free space is read), 1 when the filesystem is neither
 * ext2/3/4 nor btrfs (only @out->kernel and @out->data are filled), or
 * -errno when nothing could be done.
 * Reading the device needs read access to its node; the DRY_RUN probe
 * needs CAP_SYS_ADMIN. The long reads (the journal, the free space) are
 * told to @progress (NULL for none).
 */
int audit_fs(int fd, struct audit_result *out, const struct audit_progress *progress);

/*
 * The journal of an ext4 filesystem, opened for the read back of an
 * erase: audit_journal_open() finds it (libext2fs) before the erase,
 * audit_journal_sequence() reads the sequence the next transaction will
 * carry from its superblock right after the erase, and
 * audit_journal_readback_since() then reads every block with O_DIRECT:
 * with @below, where the journal's device lies below a crypt layer
 * (what a reader of the disk reads: a discard's zeroes), through the
 * mapping for what the blocks mean; without, through the mapping alone
 * (where a zeroout wrote its zeroes). audit_journal_encrypted() tells
 * whether there is such a layer.
 * A block counts as old (@j->old_blocks) when no transaction with a
 * sequence from @since on explains it (its descriptor, commit or revoke
 * block, or a copy a descriptor announces), and it held the same bytes
 * in two reads; the rest of the non-zero blocks are @j->live_blocks, what
 * writers committed after the erase; each read of the journal is told
 * to @progress (NULL for none). Each returns 0 or -errno (-ENODEV: no
 * journal).
 */
struct audit_journal_dev;
int audit_journal_open(int fd, struct audit_journal_dev **jd);
bool audit_journal_fast_commit(const struct audit_journal_dev *jd);
bool audit_journal_encrypted(const struct audit_journal_dev *jd);
int audit_journal_sequence(struct audit_journal_dev *jd, uint32_t *seq);
int audit_journal_readback_since(struct audit_journal_dev *jd, uint32_t since, bool below,
				 struct audit_journal *j,
				 const struct audit_progress *progress);
void audit_journal_close(struct audit_journal_dev *jd);

struct audit_free_marks;

/*
 * What a read back of free space covers: FITRIM's request (@start, @len,
 * @minlen), and on ext4 only the block groups whose byte in @groups is
 * not zero (@ngroups of them; NULL: every group), read on @below. btrfs
 * reads its whole span on its own devices.
 */
struct storage_stack;
struct audit_span {
	uint64_t start, len, minlen;
	const uint8_t *groups;
	uint64_t ngroups;
	/*
	 * ext4: where to read, as a reader of the disk would: below the
	 * device's device-mapper layers where they map (include/stack.h);
	 * NULL, or a stack not mapped: the filesystem's device
	 */
	const struct storage_stack *below;
};

/*
 * After FITRIM over @span (its start, length and minimum, its groups)
 * on the filesystem open at @fd: read back with O_DIRECT, in full, every free extent FITRIM
 * discarded (the allocator's free extents as FS_IOC_GETFSMAP reports
 * them, at least FITRIM's minimum long, as ext4_trim_span() and
 * ext4_trim_min_blocks() read the request: all of each, also the ends a
 * device that erases whole units of its discard granularity leaves).
 * @out->free_bytes is what there was to read, @out->read_bytes what was
 * read (all of it, or the call fails), @out->nonzero_blocks what held
 * data: a device that ignores discard, or blocks freed after FITRIM passed
 * them. With @marks, *@marks is set to those blocks and what they held,
 * for audit_free_recheck(), or to NULL when there are none (free it with
 * audit_free_marks_free()). The read is told to @progress (NULL for
 * none). Returns 0 or -errno.
 */
int audit_free_readback(int fd, const struct audit_span *span, struct audit_free *out,
			struct audit_free_marks **marks,
			const struct audit_progress *progress);

/*
 * After another commit and FITRIM: read the blocks @marks names again and
 * set @out->nonzero_blocks to those still free that hold the same data,
 * which a discard covering them did not erase, or which FITRIM could not
 * reach; for marks of audit_free_unreachable(), @out->held_blocks and
 * @out->short_blocks say why (the allocator's view now, @fd's filesystem).
 * Returns 0 or -errno.
 */
int audit_free_recheck(int fd, struct audit_free_marks *marks, struct audit_free *out);

void audit_free_marks_free(struct audit_free_marks *marks);

/*
 * The free blocks that FITRIM over @span cannot reach (in its groups):
 * free on the disk but held by ext4's allocator (the unused part of a
 * preallocation: a locality group's, 512 blocks by default, or an open
 * file's), or in an allocator's free extent shorter than FITRIM's
 * minimum (the discard granularity). FITRIM walks only the allocator's
 * free extents of at least that length, so deleted files' contents there
 * stay until the preallocation is used or released (at unmount) or the
 * extent grows. On btrfs, the free extents in the range shorter than its
 * minimum (-m, or the smallest discard granularity of its devices when
 * larger), which it skips too. Reads them all with O_DIRECT:
 * @out->free_bytes is how much there is, @out->read_bytes what was read,
 * @out->nonzero_blocks the blocks with data, which *@marks names (NULL
 * when none) for audit_free_recheck(). The read is told to @progress
 * (NULL for none). Returns 0 or -errno.
 */
int audit_free_unreachable(int fd, const struct audit_span *span, struct audit_free *out,
			   struct audit_free_marks **marks,
			   const struct audit_progress *progress);

/*
 * Whether the audit found data that a reader of the device could recover:
 * journal blocks of older transactions (not the live log), names of
 * removed entries in directory blocks, free blocks (btrfs: free sectors)
 * that are not zero.
 */
bool audit_found_remnants(const struct audit_result *res);

/* Whether some part of the audit could not be done. */
bool audit_incomplete(const struct audit_result *res);

void audit_result_free(struct audit_result *res);

/*
 * What the audit of the filesystem named @path found, as lines for the
 * user ("PATH: audit: ..."), each ending in a newline: one summary line,
 * and with @verbose the directories, the kernel and the devices. @rc is
 * audit_fs()'s return. NULL on ENOMEM; the caller frees.
 */
char *audit_describe(const char *path, const struct audit_result *res, int rc,
		     bool verbose);

/*
 * Whether @buf of @len bytes holds a name that looks like one a user gave:
 * no NUL, no '/', no control characters, not "." or "..". Exposed for the unit test.
 */
bool audit_name_plausible(const char *buf, size_t len);

/* Whether @release ("6.1.0-13-amd64") is at least @major.@minor. */
bool audit_release_at_least(const char *release, int major, int minor);

#endif /* FSTRIM_EXT_AUDIT_H */
