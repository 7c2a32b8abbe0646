// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Stand-ins for what older libraries lack (see include/compat.h), and
 * the versions of the libraries in use, for --version.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <blkid.h>
#include <ext2fs/ext2fs.h>
#include <libmount.h>
#include <libsmartcols.h>

#include "compat.h"
#include "devno.h"

/* The value of the last "root=" word of the command line in @file, or NULL. */
static char *cmdline_root(const char *file)
{
	char line[4096], *p, *found = NULL;
	size_t n;
	FILE *f = fopen(file, "re");

	if (!f)
		return NULL;
	n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	for (p = line; *p; p += strcspn(p, " \t\n")) {
		p += strspn(p, " \t\n");
		if (!strncmp(p, "root=", 5))
			found = p + 5;
	}
	return found ? strndup(found, strcspn(found, " \t\n")) : NULL;
}

static bool all_xdigits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

int compat_guess_system_root(const char *cmdline, dev_t devno, struct libmnt_cache *cache,
			     char **path)
{
	unsigned int maj, min;
	char *spec, *dev = NULL;
	int rc = 1;

	*path = NULL;
	/* a pseudo, network or btrfs filesystem's devno names no device */
	if (major(devno)) {
		*path = blkid_devno_to_devname(devno);
		if (*path)
			return 0;
	}
	spec = cmdline_root(cmdline);
	if (!spec)
		return 1;
	if (sscanf(spec, "%u:%u", &maj, &min) == 2) {
		dev = blkid_devno_to_devname(makedev(maj, min));
	} else if (all_xdigits(spec)) {
		/* the kernel's encoding of dev_t: minor bits around the major */
		unsigned long n = strtoul(spec, NULL, 16);

		dev = blkid_devno_to_devname(devno_decode_kernel((uint32_t)n));
	} else {
		/* a path or a tag (LABEL=, UUID=, PARTUUID=); owned by @cache if given */
		char *res = mnt_resolve_spec(spec, cache);

		dev = res ? strdup(res) : NULL;
		if (res && !dev)
			rc = -ENOMEM;
		if (res && !cache)
			free(res);
	}
	free(spec);
	if (dev) {
		*path = dev;
		rc = 0;
	}
	return rc;
}

void compat_library_versions(char *buf, size_t size)
{
	const char *mount = "?", *blkid = "?", *smartcols = "?", *ext2fs = "?";

	mnt_get_library_version(&mount);
	blkid_get_library_version(&blkid, NULL);
	scols_get_library_version(&smartcols);
	ext2fs_get_library_version(&ext2fs, NULL);
	snprintf(buf, size, "libmount %s, libblkid %s, libsmartcols %s, libext2fs %s",
		 mount, blkid, smartcols, ext2fs);
}

#ifdef TEST_PROGRAM_COMPAT
/*
 * ./test_compat CMDLINE: the root device found by the stand-in from the
 * command line in the file CMDLINE, and by libmount when it has
 * mnt_guess_system_root() (which reads /proc/cmdline), one a line.
 */
int main(int argc, char **argv)
{
	struct libmnt_cache *cache;
	char *path = NULL;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CMDLINE\n", argv[0]);
		return 2;
	}
	cache = mnt_new_cache();
	rc = compat_guess_system_root(argv[1], 0, cache, &path);
	printf("compat: %d %s\n", rc, path ? path : "-");
	free(path);
	path = NULL;
#if HAVE_DECL_MNT_GUESS_SYSTEM_ROOT
	rc = mnt_guess_system_root(0, cache, &path);
	printf("libmount: %d %s\n", rc, path ? path : "-");
	free(path);
#endif
	mnt_unref_cache(cache);
	return 0;
}
#endif
