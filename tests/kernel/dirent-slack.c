// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dirent-slack - check that no directory block of an ext4 image keeps bytes
 * past a live entry's name
 *
 * Used by kernel/check-kernel.sh on the images the User-Mode Linux guests
 * leave. For every directory of IMAGE (not inline ones), for every block,
 * for every live entry (inode not 0), every byte from the end of its name
 * to the end of its rec_len must be zero: a non-zero byte there is what is
 * left of an older entry or of kernel scratch data, which no one can see
 * through the filesystem and no trim reaches. The '..' entry of an htree
 * root, whose rec_len covers the index, is not an entry with slack.
 *
 *   dirent-slack IMAGE
 *
 * Prints one line per entry with non-zero slack (directory inode, block,
 * offset, name, count) and a summary line; exits 0 when there is none,
 * 1 when there is, 2 when the image cannot be read.
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
	}
	if (err) {
		fprintf(stderr, "dirent-slack: %s: cannot read (error %ld)\n", argv[1],
			err);
		return 2;
	}
	printf("%s: %lu directories, %lu blocks, %lu live entries; %lu with non-zero bytes past the name (%lu bytes)\n",
	       argv[1], s.dirs, s.blocks, s.entries, s.bad_entries, s.bad_bytes);
	ext2fs_close_free(&s.fs);
	free(s.buf);
	return s.bad_entries ? 1 : 0;
}
