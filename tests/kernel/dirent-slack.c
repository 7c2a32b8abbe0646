// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dirent-slack - check that no directory block of an ext4 image keeps bytes
 * past a live entry's name or past an index block's count
 *
 * Used by kernel/check-kernel.sh on the images the User-Mode Linux guests
 * leave, and by its guest on a device. For every directory of IMAGE (not
 * inline ones), for every block, for every live entry (inode not 0), every
 * byte from the end of its name to the end of its rec_len must be zero: a
 * non-zero byte there is what is left of an older entry or of kernel
 * scratch data, which no one can see through the filesystem and no trim
 * reaches. The '..' entry of an htree root, whose rec_len covers the index,
 * is not an entry with slack. For every htree directory, the index blocks
 * are found from the root down, and in each one every byte past its count
 * of {hash, block} entries, up to the dx tail (metadata_csum) or the end of
 * the block, must be zero: there an index split leaves the entries it moved
 * to the new block, and adding a level the root's old entries.
 *
 *   dirent-slack IMAGE
 *
 * Prints one line per entry with non-zero slack (directory inode, block,
 * offset, name, count), one per index block with non-zero bytes past its
 * count, and a summary line; exits 0 when there are none, 1 when there
 * are, 2 when the image cannot be read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>

struct scan {
	ext2_filsys fs;
	ext2_ino_t dir;
	int htree;
	char *buf;
	unsigned long dirs, blocks, entries, bad_entries, bad_bytes;
	unsigned long dx_blocks, bad_dx_blocks, bad_dx_bytes;
	int dx_levels; /* the most index levels of any directory */
	errcode_t err;
};

static void check_block(struct scan *s, blk64_t blk, e2_blkcnt_t lblk)
{
	unsigned int bs = s->fs->blocksize, off = 0, rec_len, name_len, i, n;
	struct ext2_dir_entry *de;

	s->blocks++;
	while (off + 8 <= bs) {
		de = (struct ext2_dir_entry *)(s->buf + off);
		if (ext2fs_get_rec_len(s->fs, de, &rec_len) || rec_len < 8 ||
		    off + rec_len > bs || rec_len % 4)
			return; /* not a dirent block (or damaged): e2fsck's job */
		name_len = ext2fs_dirent_name_len(de);
		/* an htree root's '..' spans the index: not slack */
		if (de->inode && !(s->htree && lblk == 0 && off > 0) &&
		    8 + name_len <= rec_len) {
			s->entries++;
			for (n = 0, i = 8 + name_len; i < rec_len; i++)
				n += s->buf[off + i] != 0;
			if (n) {
				s->bad_entries++;
				s->bad_bytes += n;
				printf("dir %u block %llu (logical %lld) offset %u '%.*s': %u non-zero bytes past the name\n",
				       s->dir, (unsigned long long)blk, (long long)lblk,
				       off, (int)name_len, de->name, n);
			}
		}
		off += rec_len;
	}
}

static int block_fn(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		    blk64_t ref_blk, int ref_offset, void *priv)
{
	struct scan *s = priv;

	(void)ref_blk;
	(void)ref_offset;
	if (blockcnt < 0)
		return 0; /* an indirect or extent tree block */
	s->err = io_channel_read_blk64(fs->io, *blocknr, 1, s->buf);
	if (s->err)
		return BLOCK_ABORT;
	check_block(s, *blocknr, blockcnt);
	return 0;
}

/*
 * check_dx_block: the index block at logical block LBLK of the directory,
 * LEVEL levels below the root (0: the root itself, LEVELS: the root's
 * indirect_levels, unknown before the root is read), then the index
 * blocks below it. A block that does not look like an index block is left
 * to e2fsck.
 */
static void check_dx_block(struct scan *s, struct ext2_inode *inode, blk64_t lblk,
			   int level, int levels)
{
	unsigned int bs = s->fs->blocksize, off, count, limit, end, i, n;
	struct ext2_dx_root_info *info;
	struct ext2_dx_countlimit *cl;
	struct ext2_dx_entry *ent;
	blk64_t pblk = 0;
	errcode_t err;
	char *buf;

	if (level > 3 || ext2fs_bmap2(s->fs, s->dir, inode, NULL, 0, lblk, NULL, &pblk) ||
	    !pblk)
		return;
	buf = malloc(bs);
	if (!buf) {
		s->err = EXT2_ET_NO_MEMORY;
		return;
	}
	err = io_channel_read_blk64(s->fs->io, pblk, 1, buf);
	if (err) {
		s->err = err;
		goto out;
	}
	if (level == 0) {
		/* '.' (12 bytes), '..' (12), then dx_root_info */
		info = (struct ext2_dx_root_info *)(buf + 24);
		levels = info->indirect_levels;
		off = 24 + info->info_length;
		if (info->info_length < 8 || levels > 2)
			goto out;
	} else {
		off = 8; /* past the fake dirent covering the block */
	}
	cl = (struct ext2_dx_countlimit *)(buf + off);
	count = ext2fs_le16_to_cpu(cl->count);
	limit = ext2fs_le16_to_cpu(cl->limit);
	if (!limit || count > limit || off + limit * 8 > bs)
		goto out;
	end = bs;
	if (ext2fs_has_feature_metadata_csum(s->fs->super) &&
	    off + limit * 8 <= bs - sizeof(struct ext2_dx_tail))
		end = bs - sizeof(struct ext2_dx_tail);
	s->dx_blocks++;
	if (levels + 1 > s->dx_levels)
		s->dx_levels = levels + 1;
	for (n = 0, i = off + count * 8; i < end; i++)
		n += buf[i] != 0;
	if (n) {
		s->bad_dx_blocks++;
		s->bad_dx_bytes += n;
		printf("dir %u index block %llu (logical %llu, level %d of %d, count %u of %u): %u non-zero bytes past the count\n",
		       s->dir, (unsigned long long)pblk, (unsigned long long)lblk, level,
		       levels + 1, count, limit, n);
	}
	if (level < levels) {
		ent = (struct ext2_dx_entry *)(buf + off);
		for (i = 0; i < count; i++)
			check_dx_block(s, inode,
				       ext2fs_le32_to_cpu(ent[i].block) & 0x0fffffff,
				       level + 1, levels);
	}
out:
	free(buf);
}

int main(int argc, char **argv)
{
	struct scan s = { 0 };
	ext2_inode_scan iscan;
	struct ext2_inode inode;
	ext2_ino_t ino;
	errcode_t err;

	if (argc != 2) {
		fputs("usage: dirent-slack IMAGE\n", stderr);
		return 2;
	}
	err = ext2fs_open(argv[1], 0, 0, 0, unix_io_manager, &s.fs);
	if (err) {
		fprintf(stderr, "dirent-slack: %s: cannot open (error %ld)\n", argv[1],
			err);
		return 2;
	}
	s.buf = malloc(s.fs->blocksize);
	err = s.buf ? ext2fs_open_inode_scan(s.fs, 0, &iscan) : EXT2_ET_NO_MEMORY;
	while (!err) {
		err = ext2fs_get_next_inode(iscan, &ino, &inode);
		if (err || !ino)
			break;
		if (!inode.i_links_count || !LINUX_S_ISDIR(inode.i_mode) ||
		    (inode.i_flags & EXT4_INLINE_DATA_FL))
			continue;
		s.dir = ino;
		s.htree = !!(inode.i_flags & EXT2_INDEX_FL);
		s.dirs++;
		err = ext2fs_block_iterate3(s.fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
					    block_fn, &s);
		if (!err)
			err = s.err;
		if (!err && s.htree)
			check_dx_block(&s, &inode, 0, 0, 0);
		if (!err)
			err = s.err;
	}
	if (err) {
		fprintf(stderr, "dirent-slack: %s: cannot read (error %ld)\n", argv[1],
			err);
		return 2;
	}
	printf("%s: %lu directories, %lu blocks, %lu live entries; %lu with non-zero bytes past the name (%lu bytes)\n",
	       argv[1], s.dirs, s.blocks, s.entries, s.bad_entries, s.bad_bytes);
	printf("%s: %lu index blocks, at most %d levels; %lu with non-zero bytes past the count (%lu bytes)\n",
	       argv[1], s.dx_blocks, s.dx_levels, s.bad_dx_blocks, s.bad_dx_bytes);
	ext2fs_close_free(&s.fs);
	free(s.buf);
	return s.bad_entries || s.bad_dx_blocks ? 1 : 0;
}
