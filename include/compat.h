/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_COMPAT_H
#define FSTRIM_EXT_COMPAT_H

/*
 * What older libraries lack, done here instead (configure's checks; the
 * notes are in COMPAT_NOTES, which --help and --version print).
 */
#include <stddef.h>
#include <sys/types.h>

#include <libmount.h>

/*
 * The root device as mnt_guess_system_root() of libmount 2.34 finds it:
 * from @devno when it names a block device, else from the last root= of
 * @cmdline (a file, /proc/cmdline): MAJ:MIN, the kernel's hexadecimal
 * device number, or a path or tag that libmount resolves. Returns 0 with
 * *path malloc'ed, 1 when not found, or -errno.
 */
int compat_guess_system_root(const char *cmdline, dev_t devno, struct libmnt_cache *cache,
			     char **path);

#if !HAVE_DECL_MNT_GUESS_SYSTEM_ROOT
#define mnt_guess_system_root(devno, cache, path) \
	compat_guess_system_root("/proc/cmdline", devno, cache, path)
#endif

/*
 * The versions of the libraries loaded at run time, as "libmount 2.38.1,
 * libblkid ..." in @buf.
 */
void compat_library_versions(char *buf, size_t size);

#endif
