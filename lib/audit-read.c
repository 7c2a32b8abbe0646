// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the audit's backends share to read a device: its queue limits, an
 * O_DIRECT open, the spread or full read of free space, the zero test,
 * growing arrays, and the list of blocks found holding data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blkid.h>
#include <ext2fs/ext2fs.h>

#include "audit.h"
#include "audit-read.h"
#include "sysfs.h"

/* ---- devices -------------------------------------------------------- */

/* The queue limits live with the whole disk, not with a partition. */
void audit_describe_device(dev_t devno, struct audit_device *out)
{
	uint64_t gran = 0;
	dev_t disk = 0;

	out->devno = devno;
	if (!out->path)
		out->path = blkid_devno_to_devname(devno);
	if (blkid_devno_to_wholedisk(devno, NULL, 0, &disk) != 0 || !disk)
		disk = devno;
	if (sysfs_blkdev_read_u64(disk, "queue/discard_max_bytes",
				  &out->discard_max_bytes))
		return;
	sysfs_blkdev_read_u64(disk, "queue/write_zeroes_max_bytes",
			      &out->write_zeroes_max_bytes);
	sysfs_discard_granularity(devno, &gran);
	out->discard_granularity = (uint32_t)gran;
	out->known = true;
}

int audit_grow(void *array, size_t *alloc, size_t count, size_t size, size_t first)
{
	void **p = array, *v;
	size_t n;

	if (count < *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : first;
	v = reallocarray(*p, n, size);
	if (!v)
		return -ENOMEM;
	*p = v;
	*alloc = n;
	return 0;
}

int audit_grow2(void *array1, size_t size1, void *array2, size_t size2, size_t *alloc,
		size_t count, size_t first)
{
	size_t alloc1 = *alloc, alloc2 = *alloc;

	if (audit_grow(array1, &alloc1, count, size1, first) ||
	    audit_grow(array2, &alloc2, count, size2, first))
		return -ENOMEM;
	*alloc = alloc1;
	return 0;
}

bool audit_block_is_zero(const unsigned char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

void audit_read_tell(const struct audit_progress *progress, enum audit_read_when when,
		     const struct audit_read *r)
{
	if (progress && progress->fn)
		progress->fn(when, r, progress->arg);
}

int audit_direct_open(const char *path, size_t size, unsigned char **buf)
{
	int dev = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);

	*buf = NULL;
	if (dev < 0)
		return -errno;
	if (posix_memalign((void **)buf, DIRECT_ALIGN, size)) {
		*buf = NULL;
		close(dev);
		return -ENOMEM;
	}
	return dev;
}

int blocks_add(struct block_list *l, blk64_t blk, const unsigned char *data, size_t len)
{
	if (l->count >= BLOCK_LIST_MAX) {
		l->over++;
		return 0;
	}
	if (audit_grow2(&l->v, sizeof(*l->v), &l->sum, sizeof(*l->sum), &l->alloc,
			l->count, 64))
		return -ENOMEM;
	l->sum[l->count] = ext2fs_crc32c_le(~0U, data, len);
	l->v[l->count++] = blk;
	return 0;
}

void blocks_free(struct block_list *l)
{
	free(l->v);
	free(l->sum);
	memset(l, 0, sizeof(*l));
}

void audit_spread_init(struct audit_spread *sp, uint64_t bsize, uint64_t budget,
		       struct audit_free *f, const char *what,
		       const struct audit_progress *progress)
{
	memset(sp, 0, sizeof(*sp));
	sp->bsize = bsize;
	sp->per_chunk = READ_CHUNK / bsize;
	sp->budget = budget;
	sp->f = f;
	/* read everything, or every stride-th free block in pieces of per_chunk */
	sp->all = f->free_bytes <= budget;
	sp->stride = sp->all ? sp->per_chunk :
			       f->free_bytes / bsize / (budget / READ_CHUNK);
	if (sp->stride < sp->per_chunk)
		sp->stride = sp->per_chunk;
	sp->progress = progress;
	sp->read = (struct audit_read){
		.what = what,
		.total = sp->all ? f->free_bytes : budget,
	};
	audit_read_tell(progress, AUDIT_READ_BEGIN, &sp->read);
}

void audit_spread_end(struct audit_spread *sp)
{
	audit_read_tell(sp->progress, AUDIT_READ_END, &sp->read);
}

int audit_spread_extent(struct audit_spread *sp, int dev, unsigned char *buf, uint64_t z,
			uint64_t s)
{
	struct audit_free *f = sp->f;
	uint64_t bsize = sp->bsize;
	int rc = 0;

	/* the pieces that start in this extent */
	while (sp->next < sp->pos + (s - z) && f->read_bytes < sp->budget && !rc) {
		uint64_t at = z + (sp->next - sp->pos), k;
		uint64_t n = s - at < sp->per_chunk ? s - at : sp->per_chunk;
		ssize_t got;

		if (n > (sp->budget - f->read_bytes) / bsize)
			n = (sp->budget - f->read_bytes) / bsize;
		if (!n)
			break;
		got = pread(dev, buf, n * bsize, (off_t)(at * bsize));
		if (got != (ssize_t)(n * bsize))
			return got < 0 ? -errno : -EIO;
		f->read_bytes += n * bsize;
		sp->read.done = f->read_bytes;
		audit_read_tell(sp->progress, AUDIT_READ_PIECE, &sp->read);
		for (k = 0; k < n && !rc; k++)
			if (!audit_block_is_zero(buf + k * bsize, bsize))
				rc = sp->found(sp->arg, at + k, buf + k * bsize);
		/* reading all of it: go on where this piece ended */
		sp->next += sp->all ? n : sp->stride;
	}
	sp->pos += s - z;
	return rc;
}

/* ---- the blocks of an inode ------------------------------------------ */

struct blocks_walk {
	int (*fn)(blk64_t lblk, blk64_t pblk, void *priv);
	void *priv;
};

static int walk_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		      blk64_t ref_blk, int ref_offset, void *priv)
{
	struct blocks_walk *w = priv;

	(void)fs, (void)ref_blk, (void)ref_offset;
	if (blockcnt < 0)
		return 0;
	return w->fn((blk64_t)blockcnt, *blocknr, w->priv) ? BLOCK_ABORT : 0;
}

/*
 * ext2fs_block_iterate3() returns 0 when it cannot open the extent tree of
 * the inode (a bad header in i_block): it would show a directory whose
 * tree is broken as an empty one. An extent tree is walked here with the
 * extent calls, which return every error; a block map with the iterator.
 */
errcode_t audit_inode_blocks(ext2_filsys fs, ext2_ino_t ino,
			     int (*fn)(blk64_t lblk, blk64_t pblk, void *priv),
			     void *priv)
{
	struct blocks_walk w = { .fn = fn, .priv = priv };
	struct ext2fs_extent e;
	ext2_extent_handle_t h;
	struct ext2_inode inode;
	errcode_t err;
	blk64_t i;

	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (!(inode.i_flags & EXT4_EXTENTS_FL))
		return ext2fs_block_iterate3(fs, ino,
					     BLOCK_FLAG_DATA_ONLY | BLOCK_FLAG_READ_ONLY,
					     NULL, walk_block, &w);
	err = ext2fs_extent_open2(fs, ino, &inode, &h);
	if (err)
		return err;
	for (err = ext2fs_extent_get(h, EXT2_EXTENT_ROOT, &e); !err;
	     err = ext2fs_extent_get(h, EXT2_EXTENT_NEXT, &e)) {
		if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) ||
		    (e.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT))
			continue;
		for (i = 0; i < e.e_len; i++)
			if (fn(e.e_lblk + i, e.e_pblk + i, priv))
				goto out;
	}
	if (err == EXT2_ET_EXTENT_NO_NEXT || err == EXT2_ET_EXTENT_NO_DOWN)
		err = 0;
out:
	ext2fs_extent_free(h);
	return err;
}
