/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_TRIM_H
#define FSTRIM_EXT_TRIM_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/fs.h>

/*
 * Open the root of a chosen filesystem for the ioctls, without
 * following symbolic links, and check the descriptor itself: it must be
 * the root of the mount @mnt_id (when > 0) and of a filesystem on @dev
 * (when not 0). Returns a descriptor, or -ESTALE when the mount is no
 * longer the one chosen, or -errno.
 */
int fs_open_root(const char *path, int mnt_id, dev_t dev);

/*
 * FITRIM over @range (copied, the kernel rewrites it). Returns 0 and
 * the bytes the kernel discarded, 1 when the filesystem or device
 * cannot discard, or -errno.
 */
int trim_fs(int fd, const struct fstrim_range *range, uint64_t *trimmed);

/*
 * A filesystem to trim, described once by trim_target_init(): what no
 * trim of it changes. The ranges of trim_fs_steps() follow ext4's
 * geometry, which comes from the superblock (all in blocks but the
 * shifts).
 */
struct trim_target {
	int fd; /* the root of the filesystem, as fs_open_root() checked it */
	unsigned long fs_type; /* statfs f_type; 0 when unknown */
	uint64_t fs_size; /* f_blocks * f_frsize; 0 when unknown */
	bool ext4; /* an ext4 whose geometry below was read */
	unsigned int block_bits;
	unsigned int cluster_bits; /* bigalloc: log2 of blocks per cluster */
	uint64_t first_data_block;
	uint64_t blocks_per_group;
	uint64_t blocks_count;
	uint64_t discard_granularity; /* bytes; 0 when unknown */
	char sysfs_name[NAME_MAX + 1]; /* keys /sys/fs/ext4/; "" when unknown */
	uint8_t uuid[16]; /* which mount of which filesystem (lib/readset) */
	uint32_t mount_count;
	uint64_t mount_time;
	/*
	 * Set by the caller: where trim_fs_steps() adds what each FITRIM
	 * discarded, per block group (it then calls FITRIM one group at a
	 * time); NULL for none.
	 */
	uint64_t *group_trimmed;
};

/*
 * Describe the filesystem whose root is @fd for its trims. On ext4 the
 * superblock is read through libext2fs (its statfs fsid, which ext4
 * derives from the UUID, must match, or the node read is not the
 * filesystem trimmed); without it, the trims make one FITRIM call each.
 */
void trim_target_init(int fd, struct trim_target *t);

/*
 * trim_fs() once more, for a check that found free blocks still holding
 * data: on ext4, over every group of @range, also those it remembers as
 * trimmed. Returns as trim_fs() does, the bytes of the second call.
 */
int trim_fs_again(const struct trim_target *t, const struct fstrim_range *range,
		  uint64_t *trimmed);

/* Where a trim in ranges stands. Byte offsets in the filesystem. */
struct trim_progress {
	uint64_t start; /* the first byte of the request (as ext4 rounds it) */
	uint64_t end; /* the end of the request within the filesystem, exclusive */
	uint64_t pos; /* every byte before it was covered by a FITRIM */
	uint64_t trimmed; /* what the kernel reported discarded, so far */
	unsigned int ranges; /* ranges of the request handed to FITRIM, a cut one too */
	bool stopped; /* stopped with ranges left, or in one (@cut) */
	bool cut; /* the call from @pos on was cut short, its part in @trimmed */
	bool one_call; /* one call for the request: the kernel reports no position */
};

/*
 * Called after each range; true stops the trim before the next one. Also
 * called, its answer ignored, every quarter of a second while a call
 * runs in a child (see @stop_fd below), so that progress can be shown
 * during a long call.
 */
typedef bool trim_after_range_fn(const struct trim_progress *prog, void *arg);

/*
 * FITRIM over @range as a series of calls over whole block groups, each
 * sized to take about a quarter of a second and at most @step bytes, with
 * @after called between them (and once at the end), so that the caller
 * can show progress and stop. The ranges together do what one call over
 * @range does, and the bytes reported add up to what that call reports.
 * @step 0, a filesystem other than ext4, or one whose geometry cannot be
 * read: one call, as fstrim makes. With @t->group_trimmed, each call
 * covers one block group (two where the range begins inside one), and
 * what it discarded is added there to every group it covered.
 *
 * When @stop_fd (-1 for none) becomes readable, the call in progress is
 * cut short: it runs in a child process, killed then, so that the kernel
 * stops where it stops for fstrim killed by a signal (ext4: its next extent)
 * (@prog->cut; on ext4 and btrfs what it discarded until then counts in
 * @prog->trimmed). Without a child (fork refused) the call runs here and
 * the stop waits for its end.
 *
 * Returns 0 (@prog->stopped when stopped early), 1 when the filesystem
 * or device cannot discard, or -errno; @prog says what was done before.
 */
int trim_fs_steps(const struct trim_target *t, const struct fstrim_range *range,
		  uint64_t step, int stop_fd, trim_after_range_fn *after, void *arg,
		  struct trim_progress *prog);

#endif
