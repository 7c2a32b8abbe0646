/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_AUDIT_READ_H
#define FSTRIM_EXT_AUDIT_READ_H

/*
 * What the audit's parts share: the reader (lib/audit-read.c) that the
 * backends (lib/audit-ext4.c for ext2/3/4, lib/audit-btrfs.c for btrfs)
 * read devices through, and the backends' entry points, which
 * lib/audit-fs.c calls; not an interface of the library.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ext2fs/ext2fs.h>

#include "audit.h"

/* Device reads go through a buffer of this size, aligned for O_DIRECT. */
#define READ_CHUNK (1024 * 1024)
/* The read of free space (struct audit_scan), in pieces of this size, as dd bs=4M. */
#define SCAN_CHUNK (4 * READ_CHUNK)
#define DIRECT_ALIGN 4096

/*
 * A run of at least this many name bytes outside every live entry is a
 * piece of a name even without its entry's header. The leftovers of
 * do_split() (dx_map_entry: a hash, then an offset and a size below
 * 4096) and of the htree index never hold more than six in a row.
 */
#define NAME_FRAGMENT_MIN 8

/*
 * A block read again after the second discard, against the crc32c @sum
 * of what it held before: the @len bytes at @off of the device open at
 * @dev are read into @buf, the block being the @bsize bytes at @at of
 * them. AUDIT_REREAD_SAME: it holds what it held, not erased.
 * AUDIT_REREAD_GONE: zero, or other data that a read right after gives
 * again (a writer's, a reused block). AUDIT_REREAD_UNSTEADY: other data
 * that the read right after changes again: what the device returns for
 * a discarded block changes from read to read, and whether it still
 * holds the old data cannot be told. Or -errno.
 */
enum audit_reread {
	AUDIT_REREAD_SAME,
	AUDIT_REREAD_GONE,
	AUDIT_REREAD_UNSTEADY
};

int audit_block_reread(int dev, unsigned char *buf, size_t len, uint64_t off, size_t at,
		       size_t bsize, uint32_t sum);

/* Fill @out with the discard and write-zeroes limits of the disk holding @devno. */
void audit_describe_device(dev_t devno, struct audit_device *out);

/*
 * Whether the unit of a device's discard granularity around byte @at
 * (units of @unit bytes, the first beginning at byte @align) lies partly
 * outside the discarded range [@start, @end): a device that erases whole
 * units only keeps what such a discard covered of it.
 */
bool audit_in_part_unit(uint64_t at, uint64_t unit, uint64_t align, uint64_t start,
			uint64_t end);

/*
 * Open @path for O_DIRECT reads and allocate @buf, @size bytes aligned
 * for them. Returns the descriptor, or -errno with nothing left open.
 */
int audit_direct_open(const char *path, size_t size, unsigned char **buf);

bool audit_block_is_zero(const unsigned char *p, size_t len);

/*
 * Tell @progress (NULL for none) where the read @r stands: @when is
 * AUDIT_READ_BEGIN before its first piece, AUDIT_READ_PIECE after each,
 * AUDIT_READ_END once it is over, whatever the outcome.
 */
void audit_read_tell(const struct audit_progress *progress, enum audit_read_when when,
		     const struct audit_read *r);

/*
 * Room for one more element in the array at *@array (a pointer to the
 * array's pointer), which holds @count of @alloc elements of @size bytes:
 * when full, doubled (@first elements at first). Returns 0, or -ENOMEM
 * with the array as it was.
 */
int audit_grow(void *array, size_t *alloc, size_t count, size_t size, size_t first);

/*
 * audit_grow() for two arrays that share one count and one @alloc: the
 * element of @array1 (of @size1 bytes) and that of @array2 (@size2) at the
 * same index describe one thing. On -ENOMEM @alloc is unchanged, so both
 * arrays still hold at least @alloc elements.
 */
int audit_grow2(void *array1, size_t size1, void *array2, size_t size2, size_t *alloc,
		size_t count, size_t first);

/*
 * A device read with O_DIRECT in pieces of at most the @size given to
 * audit_reader_open(), each read while the caller looks at the one
 * before: audit_reader_next() asks for the piece at @off of @len bytes
 * (aligned for O_DIRECT) and hands back in *@done the piece asked before
 * it, read in full (@done->len 0 when there was none);
 * audit_reader_last() hands back the piece asked last. A piece handed
 * back stays readable until the next call. Each returns 0, or -errno
 * (-EIO for a short read) of the piece that could not be read.
 * audit_reader_close() waits for the read in flight and frees it all.
 */
struct audit_reader;

struct audit_piece {
	const unsigned char *data;
	uint64_t off;
	size_t len;
};

int audit_reader_open(struct audit_reader **out, const char *path, size_t size);
int audit_reader_next(struct audit_reader *r, uint64_t off, size_t len,
		      struct audit_piece *done);
int audit_reader_last(struct audit_reader *r, struct audit_piece *done);
void audit_reader_close(struct audit_reader *r);

/*
 * Free space read all through, and each block that is not zero handed to
 * found() (with what it holds; non-zero stops the read):
 * audit_scan_begin() tells @progress (NULL for none) of the read @read;
 * set found and arg; then, for each device, audit_scan_device() opens it
 * and audit_scan_extent() reads each of its free extents [@z, @s) in
 * blocks, in order. audit_scan_end(@rc) closes it (testing the piece
 * read last only where @rc is 0), tells @progress it is over, and returns
 * @rc or the error that came up. @f->read_bytes counts what was read;
 * @read->done is that count, or with @read->at the end of the last piece.
 */
struct audit_scan {
	uint64_t bsize;
	uint64_t offset; /* where block 0 lies on the device read (audit_scan_device_at()) */
	struct audit_reader *reader;
	struct audit_free *f;
	int (*found)(void *arg, uint64_t blk, const unsigned char *data);
	void *arg;
	const struct audit_progress *progress;
	struct audit_read read;
};

void audit_scan_begin(struct audit_scan *sc, uint64_t bsize, struct audit_free *f,
		      const struct audit_read *read,
		      const struct audit_progress *progress);
int audit_scan_device(struct audit_scan *sc, const char *path);
/* The same for a device where block 0 lies @offset bytes in (below a mapping). */
int audit_scan_device_at(struct audit_scan *sc, const char *path, uint64_t offset);
int audit_scan_extent(struct audit_scan *sc, uint64_t z, uint64_t s);
int audit_scan_end(struct audit_scan *sc, int rc);

/*
 * Blocks found holding data that are kept, with what they held, to be
 * read again: 12 MiB at most. A device that ignores discard fills it
 * long before a run ends; the blocks past it count as holding data.
 */
#define BLOCK_LIST_MAX (1U << 20)

struct block_list {
	blk64_t *v;
	uint32_t *sum; /* crc32c of each block's contents when read */
	size_t count, alloc;
	uint64_t over; /* blocks with data past BLOCK_LIST_MAX, not kept */
};

struct audit_btrfs_marks;
struct audit_backend;

/* Free blocks that read back with data after FITRIM, and what they held. */
struct audit_free_marks {
	char *devpath; /* the filesystem's device */
	char *readpath; /* the device the blocks are read on (NULL: @devpath) */
	uint64_t offset; /* where block 0 lies on it, in bytes */
	uint64_t bsize;
	uint64_t gran; /* FITRIM's minimum, to tell why it left them; or 0 */
	uint32_t unit, unit_align; /* the device's discard granularity, and
					 * where its first unit begins (bytes) */
	struct block_list blocks;
	struct audit_btrfs_marks *btrfs; /* on btrfs, instead of the above */
	const struct audit_backend *backend; /* that made them */
};

int blocks_add(struct block_list *l, blk64_t blk, const unsigned char *data, size_t len);
void blocks_free(struct block_list *l);

/*
 * Calls @fn with each data block of inode @ino, its index in the file and
 * its block number, in order, until @fn returns non-zero. Returns 0 (also
 * when @fn stopped the walk: its caller keeps why) or libext2fs's code.
 */
errcode_t audit_inode_blocks(ext2_filsys fs, ext2_ino_t ino,
			     int (*fn)(blk64_t lblk, blk64_t pblk, void *priv),
			     void *priv);

/*
 * A filesystem type's part of the audit (lib/audit-ext4.c,
 * lib/audit-btrfs.c), which lib/audit-fs.c chooses by the filesystem's
 * magic, once for each call:
 * - @audit: audit_fs() past the kernel (and, unless @own_devices, the
 *   device @out->data names);
 * - @readback, @unreachable and @recheck: its parts of
 *   audit_free_readback(), audit_free_unreachable() and
 *   audit_free_recheck(); the marks the first two make name the backend
 *   that reads them again.
 */
struct audit_backend {
	unsigned long magic; /* statfs's f_type */
	bool own_devices; /* several devices, which @audit describes itself */
	int (*audit)(int fd, struct audit_result *out,
		     const struct audit_progress *progress);
	int (*readback)(int fd, const struct audit_span *span, struct audit_free *out,
			struct audit_free_marks **marks,
			const struct audit_progress *progress);
	int (*unreachable)(int fd, const struct audit_span *span, struct audit_free *out,
			   struct audit_free_marks **marks,
			   const struct audit_progress *progress);
	int (*recheck)(int fd, struct audit_free_marks *marks, struct audit_free *out);
};

/*
 * ext4 (and ext2, ext3): its journal, its directories and its free space
 * (block bitmap, GETFSMAP). btrfs: its free space on each of its devices
 * (the readback: all that FITRIM discards, space of chunks in the range
 * in free extents at least its minimum long, or the smallest discard
 * granularity of the devices when that is larger, and device space in no
 * chunk; the unreachable: what it skips, in shorter free extents).
 */
extern const struct audit_backend audit_ext4_backend;
extern const struct audit_backend audit_btrfs_backend;

/* The sectors btrfs's readback found holding data (lib/audit-btrfs.c). */
void audit_btrfs_marks_free(struct audit_btrfs_marks *marks);

/*
 * Read every directory of @fs for names of removed entries (lib/audit-dirents.c),
 * told to @progress (NULL for none) as the read @what, at each inode of
 * the inode tables. Returns 0 with @d filled, or -errno.
 */
int audit_dirents(ext2_filsys fs, struct audit_dirents *d, const char *what,
		  const struct audit_progress *progress);

#endif /* FSTRIM_EXT_AUDIT_READ_H */
