// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the audit's backends share to read a device: its queue limits, an
 * O_DIRECT open, the read of free space one piece ahead, the zero test,
 * growing arrays, and the list of blocks found holding data.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
	/* the device's own: a partition's says where its first unit begins */
	if (!sysfs_blkdev_read_u64(devno, "discard_alignment", &gran))
		out->discard_alignment = (uint32_t)gran;
	out->known = true;
}

bool audit_in_part_unit(uint64_t at, uint64_t unit, uint64_t align, uint64_t start,
			uint64_t end)
{
	uint64_t u0;

	align %= unit;
	/* before the first boundary: a unit that begins before the device */
	if (at < align)
		return true;
	u0 = (at - align) / unit * unit + align;
	return u0 < start || u0 + unit > end;
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
	static const unsigned char zeroes[4096];
	size_t n;

	/* the C library's memcmp() reads with the widest vectors the CPU has */
	for (; len; p += n, len -= n) {
		n = len < sizeof(zeroes) ? len : sizeof(zeroes);
		if (memcmp(p, zeroes, n))
			return false;
	}
	return true;
}

/* Read @len bytes at @off into @buf, and give the crc32c of the @bsize at @at. */
static int read_sum(int dev, unsigned char *buf, size_t len, uint64_t off, size_t at,
		    size_t bsize, uint32_t *sum)
{
	ssize_t got = pread(dev, buf, len, (off_t)off);

	if (got < 0 || (size_t)got < at + bsize)
		return got < 0 ? -errno : -EIO;
	*sum = ext2fs_crc32c_le(~0U, buf + at, bsize);
	return 0;
}

int audit_block_reread(int dev, unsigned char *buf, size_t len, uint64_t off, size_t at,
		       size_t bsize, uint32_t sum)
{
	uint32_t now = 0, again = 0;
	int rc = read_sum(dev, buf, len, off, at, bsize, &now);

	if (rc)
		return rc;
	if (now == sum)
		return AUDIT_REREAD_SAME;
	if (audit_block_is_zero(buf + at, bsize))
		return AUDIT_REREAD_GONE;
	rc = read_sum(dev, buf, len, off, at, bsize, &again);
	if (rc)
		return rc;
	return again == now ? AUDIT_REREAD_GONE : AUDIT_REREAD_UNSTEADY;
}

void audit_read_tell(const struct audit_progress *progress, enum audit_read_when when,
		     const struct audit_read *r)
{
	if (progress && progress->fn)
		progress->fn(when, r, progress->arg);
}

/*
 * An O_DIRECT read pins each page of its buffer: for the pieces of the
 * free-space read, pinning 4 MiB in 4 KiB pages costs the kernel more
 * than the read itself where the device serves it from memory (a hole
 * of a loop device's file), and a full audit ran at 57% of dd there
 * (bench/audit-speed). A buffer of 2 MiB or more is aligned for huge
 * pages and the kernel asked to back it with them; where it cannot, the
 * advice is ignored and the buffer works as any other.
 */
#define HUGE_ALIGN (2 * 1024 * 1024)

int audit_direct_open(const char *path, size_t size, unsigned char **buf)
{
	size_t align = size >= HUGE_ALIGN ? HUGE_ALIGN : DIRECT_ALIGN;
	int dev = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);

	*buf = NULL;
	if (dev < 0)
		return -errno;
	if (posix_memalign((void **)buf, align, size)) {
		*buf = NULL;
		close(dev);
		return -ENOMEM;
	}
	if (align == HUGE_ALIGN)
		(void)madvise(*buf, size, MADV_HUGEPAGE);
	return dev;
}

/* ---- reading ahead ---------------------------------------------------- */

enum reader_state {
	READER_IDLE,
	READER_ASKED,
	READER_DONE,
	READER_QUIT
};

/*
 * A thread of its own makes the reads, one piece ahead of the caller,
 * who tests the piece before for zeroes meanwhile: as for dd, the device
 * is not left waiting while the CPU looks at what it read. The fields
 * from @state on are shared, under @lock.
 */
struct audit_reader {
	int dev;
	unsigned char *buf[2];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum reader_state state;
	unsigned int which; /* the buffer of the read asked */
	uint64_t off;
	size_t len;
	ssize_t got;
	int err;
};

static void *reader_main(void *arg)
{
	struct audit_reader *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		ssize_t got;
		int err;

		while (r->state != READER_ASKED && r->state != READER_QUIT)
			pthread_cond_wait(&r->cond, &r->lock);
		if (r->state == READER_QUIT)
			break;
		pthread_mutex_unlock(&r->lock);
		got = pread(r->dev, r->buf[r->which], r->len, (off_t)r->off);
		err = errno;
		pthread_mutex_lock(&r->lock);
		r->got = got;
		r->err = err;
		r->state = READER_DONE;
		pthread_cond_signal(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int audit_reader_open(struct audit_reader **out, const char *path, size_t size)
{
	struct audit_reader *r = calloc(1, sizeof(*r));
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->dev = audit_direct_open(path, 2 * size, &r->buf[0]);
	if (r->dev < 0) {
		rc = r->dev;
		free(r);
		return rc;
	}
	r->buf[1] = r->buf[0] + size;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	/* signals are the caller's: the thread takes none */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&r->thread, NULL, reader_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->lock);
		close(r->dev);
		free(r->buf[0]);
		free(r);
		return -rc;
	}
	*out = r;
	return 0;
}

/* Wait for the read asked last; hand back its piece (none: @done->len 0). */
static int reader_wait(struct audit_reader *r, struct audit_piece *done)
{
	int rc = 0;

	memset(done, 0, sizeof(*done));
	pthread_mutex_lock(&r->lock);
	while (r->state == READER_ASKED)
		pthread_cond_wait(&r->cond, &r->lock);
	if (r->state == READER_DONE) {
		if (r->got == (ssize_t)r->len) {
			done->data = r->buf[r->which];
			done->off = r->off;
			done->len = r->len;
		} else {
			rc = r->got < 0 ? -r->err : -EIO;
		}
		r->state = READER_IDLE;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int audit_reader_next(struct audit_reader *r, uint64_t off, size_t len,
		      struct audit_piece *done)
{
	int rc = reader_wait(r, done);

	if (rc)
		return rc;
	pthread_mutex_lock(&r->lock);
	/* into the other buffer than that of the piece handed back */
	r->which ^= 1;
	r->off = off;
	r->len = len;
	r->state = READER_ASKED;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int audit_reader_last(struct audit_reader *r, struct audit_piece *done)
{
	return reader_wait(r, done);
}

void audit_reader_close(struct audit_reader *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	while (r->state == READER_ASKED)
		pthread_cond_wait(&r->cond, &r->lock);
	r->state = READER_QUIT;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	close(r->dev);
	free(r->buf[0]);
	free(r);
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

void audit_scan_begin(struct audit_scan *sc, uint64_t bsize, struct audit_free *f,
		      const struct audit_read *read,
		      const struct audit_progress *progress)
{
	memset(sc, 0, sizeof(*sc));
	sc->bsize = bsize;
	sc->f = f;
	sc->progress = progress;
	sc->read = *read;
	audit_read_tell(progress, AUDIT_READ_BEGIN, &sc->read);
}

/* Count the piece @p that was read, and test each of its blocks. */
static int scan_piece(struct audit_scan *sc, const struct audit_piece *p)
{
	uint64_t bsize = sc->bsize, at = (p->off - sc->offset) / bsize,
		 n = p->len / bsize, k;
	int rc = 0;

	if (!p->len)
		return 0;
	sc->f->read_bytes += p->len;
	sc->read.done = sc->read.at ? p->off - sc->offset + p->len : sc->f->read_bytes;
	audit_read_tell(sc->progress, AUDIT_READ_PIECE, &sc->read);
	for (k = 0; k < n && !rc; k++)
		if (!audit_block_is_zero(p->data + k * bsize, bsize))
			rc = sc->found(sc->arg, at + k, p->data + k * bsize);
	return rc;
}

/* Close the device open; with @rc 0, test the piece read last first. */
static int scan_close(struct audit_scan *sc, int rc)
{
	struct audit_piece p;

	if (!sc->reader)
		return rc;
	if (!rc)
		rc = audit_reader_last(sc->reader, &p);
	if (!rc)
		rc = scan_piece(sc, &p);
	audit_reader_close(sc->reader);
	sc->reader = NULL;
	return rc;
}

int audit_scan_device(struct audit_scan *sc, const char *path)
{
	return audit_scan_device_at(sc, path, 0);
}

int audit_scan_device_at(struct audit_scan *sc, const char *path, uint64_t offset)
{
	int rc = scan_close(sc, 0);

	sc->offset = offset;
	return rc ? rc : audit_reader_open(&sc->reader, path, SCAN_CHUNK);
}

int audit_scan_extent(struct audit_scan *sc, uint64_t z, uint64_t s)
{
	uint64_t per_chunk = SCAN_CHUNK / sc->bsize;
	int rc = 0;

	while (z < s && !rc) {
		uint64_t n = s - z < per_chunk ? s - z : per_chunk;
		struct audit_piece p;

		rc = audit_reader_next(sc->reader, sc->offset + z * sc->bsize,
				       n * sc->bsize, &p);
		if (!rc)
			rc = scan_piece(sc, &p);
		z += n;
	}
	return rc;
}

int audit_scan_end(struct audit_scan *sc, int rc)
{
	rc = scan_close(sc, rc);
	audit_read_tell(sc->progress, AUDIT_READ_END, &sc->read);
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
