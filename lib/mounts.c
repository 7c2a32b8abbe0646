// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which filesystems to trim: a single path, or the entries of a mount
 * table chosen with fstrim's rules.
 *
 * fstrim de-duplicates with mnt_table_uniq_fs(), which compares every
 * entry with every other; with tens of thousands of bind mounts that is
 * seconds of CPU. Here both de-duplications sort an index instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <blkid.h>
#include <libmount.h>

#include "mounts.h"
#include "sysfs.h"

#define PATH_MOUNTINFO "/proc/self/mountinfo"
#define PATH_FSTAB "/etc/fstab"

/* btrfs gives every subvolume root this inode number */
#define BTRFS_SUBVOL_ROOT_INO 256

bool paths_equal(const char *a, const char *b)
{
	size_t la, lb;

	if (!a || !b)
		return false;
	la = strlen(a);
	lb = strlen(b);
	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	return la == lb && !strncmp(a, b, la);
}

void fs_entry_free(struct fs_entry *fs)
{
	if (!fs)
		return;
	free(fs->target);
	free(fs->source);
	free(fs->fstype);
	memset(fs, 0, sizeof(*fs));
}

void fs_list_free(struct fs_list *list)
{
	size_t i;

	for (i = 0; i < list->count; i++)
		fs_entry_free(&list->entries[i]);
	free(list->entries);
	list->entries = NULL;
	list->count = 0;
}

void path_lookup_free(struct path_lookup *why)
{
	free(why->mountpoint);
	free(why->root);
	free(why->source);
	memset(why, 0, sizeof(*why));
}

/*
 * Whether a mount shows the root of its filesystem. A btrfs subvolume
 * mount is one: the whole filesystem is trimmed through it.
 */
static bool is_filesystem_root(struct libmnt_fs *fs, const char *target)
{
	const char *root = mnt_fs_get_root(fs);
	struct stat st;

	if (!root || !strcmp(root, "/"))
		return true;
	if (!mnt_fs_match_fstype(fs, "btrfs"))
		return false;
	return stat(target, &st) == 0 && st.st_ino == BTRFS_SUBVOL_ROOT_INO;
}

static int dup_entry(struct libmnt_fs *fs, const char *target, const char *source,
		     struct fs_entry *out)
{
	const char *fstype = mnt_fs_get_fstype(fs);

	memset(out, 0, sizeof(*out));
	out->target = strdup(target);
	out->source = source ? strdup(source) : NULL;
	out->fstype = strdup(fstype ? fstype : "");
	out->mnt_id = mnt_fs_get_id(fs);
	if (!out->target || !out->fstype || (source && !out->source)) {
		fs_entry_free(out);
		return -ENOMEM;
	}
	return 0;
}

/* The device of what is mounted at @target now. */
static int root_dev(const char *target, dev_t *dev)
{
	struct statx stx;

	if (statx(AT_FDCWD, target, AT_NO_AUTOMOUNT, STATX_TYPE, &stx) != 0)
		return -errno;
	*dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	return 0;
}

static struct libmnt_table *read_table(const char *file)
{
	struct libmnt_table *tab = mnt_new_table();

	if (!tab)
		return NULL;
	if (mnt_table_parse_file(tab, file) != 0) {
		mnt_unref_table(tab);
		return NULL;
	}
	return tab;
}

/* Read-only is the filesystem's own state, not the view of one mount. */
static bool is_readonly_fs(struct libmnt_fs *live)
{
	const char *opts = mnt_fs_get_fs_options(live);

	return opts && mnt_optstr_get_option(opts, "ro", NULL, NULL) == 0;
}

int mounts_lookup_path(const char *path, struct fs_entry *fs, struct path_lookup *why)
{
	struct libmnt_table *tab;
	struct libmnt_fs *mnt;
	char *rpath;
	int rc = 0;

	memset(why, 0, sizeof(*why));
	rpath = realpath(path, NULL);
	if (!rpath)
		return -errno;
	tab = read_table(PATH_MOUNTINFO);
	if (!tab) {
		free(rpath);
		return -errno ? -errno : -EINVAL;
	}

	/* the last entry for a mountpoint is the one on top */
	mnt = mnt_table_find_mountpoint(tab, rpath, MNT_ITER_BACKWARD);
	if (!mnt) {
		why->refusal = PATH_NOT_MOUNTED;
	} else if (!mnt_fs_streq_target(mnt, rpath)) {
		why->refusal = PATH_INSIDE;
		why->mountpoint = strdup(mnt_fs_get_target(mnt));
	} else if (!is_filesystem_root(mnt, rpath)) {
		why->refusal = PATH_BIND_SUBDIR;
		why->root = strdup(mnt_fs_get_root(mnt));
		why->source = mnt_fs_get_srcpath(mnt) ?
				      strdup(mnt_fs_get_srcpath(mnt)) :
				      strdup(mnt_fs_get_source(mnt) ?
						     mnt_fs_get_source(mnt) :
						     "?");
	} else {
		/* the source is for reports; no " on DEVICE" for a single path */
		rc = dup_entry(mnt, rpath, mnt_fs_get_srcpath(mnt), fs);
		if (!rc)
			rc = root_dev(rpath, &fs->dev);
		if (rc)
			fs_entry_free(fs);
	}

	mnt_unref_table(tab);
	free(rpath);
	return rc;
}

int mounts_fs_readonly(int mnt_id)
{
	struct libmnt_table *tab = read_table(PATH_MOUNTINFO);
	struct libmnt_iter *itr;
	struct libmnt_fs *fs;
	int rc = -ENOENT;

	if (!tab)
		return -EINVAL;
	itr = mnt_new_iter(MNT_ITER_BACKWARD);
	while (itr && mnt_table_next_fs(tab, itr, &fs) == 0) {
		if (mnt_fs_get_id(fs) == mnt_id) {
			rc = is_readonly_fs(fs);
			break;
		}
	}
	mnt_free_iter(itr);
	mnt_unref_table(tab);
	return rc;
}

/* ---- selection from a table ------------------------------------------ */

struct candidate {
	struct libmnt_fs *fs;
	const char *target;
	const char *source; /* resolved device path */
	size_t order; /* position in the table */
	int live_id; /* mount ID seen at the target now */
	dev_t live_dev; /* and the device of its root */
	bool dropped;
	dev_t source_dev; /* of the source; 0 when not a block device */
	bool discard_ok; /* the source can discard and is writable */
};

struct selection {
	struct candidate *cands;
	size_t count;
	struct libmnt_table *tab;
	struct libmnt_table *live; /* the live mount table */
	struct libmnt_fs **live_by_id; /* sorted by mount ID */
	size_t live_count;
	struct libmnt_cache *cache;
	bool is_fstab;
	const char *types;
};

/* Length of a path without its trailing slashes, "/" kept. */
static size_t path_len(const char *p)
{
	size_t l = strlen(p);

	while (l > 1 && p[l - 1] == '/')
		l--;
	return l;
}

static int cmp_paths(const char *a, const char *b)
{
	size_t la = path_len(a), lb = path_len(b);
	int r = memcmp(a, b, la < lb ? la : lb);

	if (r)
		return r;
	return la < lb ? -1 : la > lb;
}

static int cmp_target_order(const void *pa, const void *pb)
{
	const struct candidate *a = *(struct candidate *const *)pa;
	const struct candidate *b = *(struct candidate *const *)pb;
	int r = cmp_paths(a->target, b->target);

	if (r)
		return r;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_source_order(const void *pa, const void *pb)
{
	const struct candidate *a = *(struct candidate *const *)pa;
	const struct candidate *b = *(struct candidate *const *)pb;
	int r = cmp_paths(a->source, b->source);

	if (r)
		return r;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The candidates not dropped yet, sorted by @cmp; NULL without memory. */
static struct candidate **sorted_candidates(struct selection *sel,
					    int (*cmp)(const void *, const void *),
					    size_t *count)
{
	struct candidate **idx;
	size_t i, n = 0;

	idx = calloc(sel->count ? sel->count : 1, sizeof(*idx));
	if (!idx)
		return NULL;
	for (i = 0; i < sel->count; i++)
		if (!sel->cands[i].dropped)
			idx[n++] = &sel->cands[i];
	qsort(idx, n, sizeof(*idx), cmp);
	*count = n;
	return idx;
}

/* Keep one candidate per mountpoint: the last, a later mount hides an earlier one. */
static int dedup_by_target(struct selection *sel)
{
	struct candidate **idx;
	size_t i, n;

	idx = sorted_candidates(sel, cmp_target_order, &n);
	if (!idx)
		return -ENOMEM;

	for (i = 0; i + 1 < n; i++)
		if (!cmp_paths(idx[i]->target, idx[i + 1]->target))
			idx[i]->dropped = true; /* the next comes later in the table */
	free(idx);
	return 0;
}

static bool is_unwanted(const struct selection *sel, struct libmnt_fs *fs)
{
	if (mnt_fs_is_pseudofs(fs) || mnt_fs_is_netfs(fs) || mnt_fs_is_swaparea(fs))
		return true;
	if (mnt_fs_match_fstype(fs, "autofs"))
		return true;
	if (mnt_fs_match_options(fs, "+X-fstrim.notrim"))
		return true;
	if (sel->types && !mnt_fs_match_fstype(fs, sel->types))
		return true;
	return false;
}

static int cmp_live_id(const void *pa, const void *pb)
{
	int a = mnt_fs_get_id(*(struct libmnt_fs *const *)pa);
	int b = mnt_fs_get_id(*(struct libmnt_fs *const *)pb);

	return a < b ? -1 : a > b;
}

static struct libmnt_fs *live_find(const struct selection *sel, int id)
{
	size_t lo = 0, hi = sel->live_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int mid_id = mnt_fs_get_id(sel->live_by_id[mid]);

		if (mid_id == id)
			return sel->live_by_id[mid];
		if (mid_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int index_live(struct selection *sel, const char *file, const char *mountinfo)
{
	struct libmnt_iter *itr;
	struct libmnt_fs *fs;
	size_t n = 0;

	if (!mountinfo)
		mountinfo = PATH_MOUNTINFO;
	if (paths_equal(file, mountinfo)) {
		/* the table being trimmed is the live one: read it once */
		mnt_ref_table(sel->tab);
		sel->live = sel->tab;
	} else {
		sel->live = read_table(mountinfo);
		if (!sel->live)
			return -errno ? -errno : -EINVAL;
	}

	sel->live_by_id =
		calloc(mnt_table_get_nents(sel->live) + 1, sizeof(*sel->live_by_id));
	itr = mnt_new_iter(MNT_ITER_FORWARD);
	if (!sel->live_by_id || !itr) {
		mnt_free_iter(itr);
		return -ENOMEM;
	}
	while (mnt_table_next_fs(sel->live, itr, &fs) == 0)
		sel->live_by_id[n++] = fs;
	mnt_free_iter(itr);
	sel->live_count = n;
	qsort(sel->live_by_id, n, sizeof(*sel->live_by_id), cmp_live_id);
	return 0;
}

/*
 * Whether a device can discard and is writable. The queue attributes
 * live with the whole disk; "ro" with the partition itself. A device
 * that sysfs does not know is given the benefit of the doubt, as fstrim
 * does: FITRIM will tell.
 */
static bool has_discard(const char *devname)
{
	uint64_t granularity = 0, ro = 0;
	dev_t dev, disk = 0;
	struct stat st;

	if (stat(devname, &st) != 0 || !S_ISBLK(st.st_mode))
		return true;
	dev = st.st_rdev;
	if (blkid_devno_to_wholedisk(dev, NULL, 0, &disk) != 0 || !disk)
		return true;
	if (sysfs_blkdev_read_u64(disk, "queue/discard_granularity", &granularity) != 0)
		return false;
	sysfs_blkdev_read_u64(dev, "ro", &ro);
	return granularity > 0 && ro == 0;
}

/*
 * Whether the device a table names is the one mounted. btrfs and other
 * filesystems on anonymous devices (major 0) cannot be compared so.
 */
static bool is_same_device(struct libmnt_fs *live, const struct candidate *c)
{
	dev_t devno = mnt_fs_get_devno(live);

	if (!major(devno) || !c->source_dev)
		return true;
	return c->source_dev == devno;
}

/*
 * The checks that need the live system: the mount now visible at the
 * target must be the entry's own (for fstab: of the device it names),
 * show the root of its filesystem, be writable, a directory, and sit on
 * a device that can discard.
 */
static bool live_usable(struct selection *sel, struct candidate *c)
{
	struct statx stx;
	struct libmnt_fs *live;
	int table_id = mnt_fs_get_id(c->fs);

	if (statx(AT_FDCWD, c->target, AT_NO_AUTOMOUNT, STATX_TYPE | STATX_MNT_ID, &stx))
		return false;
	if (!(stx.stx_mask & STATX_MNT_ID) || !S_ISDIR(stx.stx_mode))
		return false;
	live = live_find(sel, (int)stx.stx_mnt_id);
	if (!live || !mnt_fs_streq_target(live, c->target))
		return false; /* not mounted there, or hidden by another mount */
	if (table_id > 0 && table_id != (int)stx.stx_mnt_id)
		return false; /* overmounted */
	if (mnt_fs_match_fstype(live, "autofs"))
		return false;
	if (!is_filesystem_root(live, c->target) || is_readonly_fs(live))
		return false;
	if (!is_same_device(live, c))
		return false; /* fstab names another filesystem than the one there */
	if (!c->discard_ok)
		return false;
	c->live_id = (int)stx.stx_mnt_id;
	c->live_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	return true;
}

static int load_candidates(struct selection *sel)
{
	struct libmnt_iter *itr = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs;
	size_t n = 0;

	sel->cands = calloc(mnt_table_get_nents(sel->tab) + 1, sizeof(*sel->cands));
	if (!itr || !sel->cands) {
		mnt_free_iter(itr);
		return -ENOMEM;
	}
	while (mnt_table_next_fs(sel->tab, itr, &fs) == 0) {
		struct candidate *c = &sel->cands[n];

		c->fs = fs;
		c->order = n++;
		c->target = mnt_fs_get_target(fs);
		c->dropped = !c->target;
		if (c->dropped)
			c->target = "";
	}
	mnt_free_iter(itr);
	sel->count = n;
	return 0;
}

/* Make sure the root filesystem is trimmed too when fstab omits it. */
static int add_fstab_root(struct selection *sel)
{
	struct libmnt_fs *fs;
	char *rootdev = NULL;
	int rc;

	if (mnt_table_find_target(sel->tab, "/", MNT_ITER_FORWARD))
		return 0;
	if (mnt_guess_system_root(0, sel->cache, &rootdev) != 0 || !rootdev)
		return 0;
	fs = mnt_new_fs();
	if (!fs) {
		free(rootdev);
		return -ENOMEM;
	}
	mnt_fs_set_target(fs, "/");
	mnt_fs_set_source(fs, rootdev);
	mnt_fs_set_fstype(fs, "auto");
	rc = mnt_table_add_fs(sel->tab, fs);
	mnt_unref_fs(fs);
	free(rootdev);
	return rc;
}

/* Table rules that need nothing but the entry itself. */
static void apply_table_rules(struct selection *sel)
{
	size_t i;

	for (i = 0; i < sel->count; i++) {
		struct candidate *c = &sel->cands[i];
		const char *src;

		if (c->dropped)
			continue;
		if (is_unwanted(sel, c->fs)) {
			c->dropped = true;
			continue;
		}
		src = mnt_fs_get_srcpath(c->fs);
		/* LABEL= and UUID= in fstab become device paths */
		if (!src && sel->cache && mnt_fs_get_source(c->fs))
			src = mnt_resolve_spec(mnt_fs_get_source(c->fs), sel->cache);
		if (!src || *src != '/') {
			c->dropped = true;
			continue;
		}
		c->source = src;
	}
}

static int collect(struct selection *sel, struct fs_list *list)
{
	size_t i, n = 0;

	list->entries = calloc(sel->count + 1, sizeof(*list->entries));
	if (!list->entries)
		return -ENOMEM;
	/* newest entry first, as fstrim does */
	for (i = sel->count; i-- > 0;) {
		struct candidate *c = &sel->cands[i];
		int rc;

		if (c->dropped)
			continue;
		rc = dup_entry(c->fs, c->target, c->source, &list->entries[n]);
		if (rc)
			return rc;
		list->entries[n].mnt_id = c->live_id;
		list->entries[n].dev = c->live_dev;
		n++;
	}
	list->count = n;
	return 0;
}

#ifdef TEST_PROGRAM_MOUNTS
static bool skip_live_checks;
#endif

static bool is_usable(struct selection *sel, struct candidate *c)
{
#ifdef TEST_PROGRAM_MOUNTS
	if (skip_live_checks)
		return true;
#endif
	return live_usable(sel, c);
}

/*
 * The live checks and fstrim's de-duplication by device, which keeps the
 * first usable entry: entries of one device are checked in table order
 * until one passes, and the others are dropped without a look. The
 * device itself (a stat and sysfs files) is asked about once. A
 * container host has tens of thousands of bind mounts of a handful of
 * devices; checking every entry was most of the time of a selection.
 */
static int select_per_device(struct selection *sel)
{
	struct candidate **idx;
	size_t i, j, k, n;

	idx = sorted_candidates(sel, cmp_source_order, &n);
	if (!idx)
		return -ENOMEM;

	for (i = 0; i < n; i = j) {
		bool found = false, discard_ok;
		struct stat st;
		dev_t dev = 0;

		for (j = i + 1; j < n && !cmp_paths(idx[i]->source, idx[j]->source); j++)
			;
		if (stat(idx[i]->source, &st) == 0 && S_ISBLK(st.st_mode))
			dev = st.st_rdev;
		discard_ok = has_discard(idx[i]->source);

		for (k = i; k < j; k++) {
			struct candidate *c = idx[k];

			c->source_dev = dev;
			c->discard_ok = discard_ok;
			if (found || !is_usable(sel, c))
				c->dropped = true;
			else
				found = true;
		}
	}
	free(idx);
	return 0;
}

static int select_from_table(struct selection *sel, struct fs_list *list)
{
	int rc;

	rc = load_candidates(sel);
	if (!rc)
		rc = dedup_by_target(sel);
	if (rc)
		return rc;

	apply_table_rules(sel);
	rc = select_per_device(sel);
	if (rc)
		return rc;
	return collect(sel, list);
}

static int on_parse_error(struct libmnt_table *tb, const char *filename, int line)
{
	const struct select_opts *opts = mnt_table_get_userdata(tb);

	if (opts && opts->parse_error)
		opts->parse_error(filename, line, opts->arg);
	return 1; /* skip the line */
}

int mounts_select(const struct select_opts *opts, struct fs_list *list,
		  const char **failed)
{
	char *files, *file, *save = NULL;
	int status = SELECT_NO_TABLE, rc = 0;

	list->entries = NULL;
	list->count = 0;
	*failed = NULL;

	files = strdup(opts->tables);
	if (!files)
		return -ENOMEM;

	for (file = strtok_r(files, ":", &save); file;
	     file = strtok_r(NULL, ":", &save)) {
		struct selection sel = { .types = opts->types };
		struct stat st;

		if (stat(file, &st) < 0 || !S_ISREG(st.st_mode))
			continue;

		sel.tab = mnt_new_table();
		if (!sel.tab) {
			rc = -ENOMEM;
			break;
		}
		mnt_table_set_userdata(sel.tab, (void *)opts);
		mnt_table_set_parser_errcb(sel.tab, on_parse_error);
		if (mnt_table_parse_file(sel.tab, file) != 0) {
			rc = -errno ? -errno : -EINVAL;
			*failed = opts->tables + (file - files);
			mnt_unref_table(sel.tab);
			break;
		}
		if (mnt_table_is_empty(sel.tab)) {
			status = SELECT_EMPTY;
			mnt_unref_table(sel.tab);
			continue;
		}

		sel.is_fstab = paths_equal(file, PATH_FSTAB);
		if (sel.is_fstab) {
			sel.cache = mnt_new_cache();
			rc = sel.cache ? add_fstab_root(&sel) : -ENOMEM;
		}
#ifdef TEST_PROGRAM_MOUNTS
		if (!rc && !skip_live_checks)
#else
		if (!rc)
#endif
			rc = index_live(&sel, file, opts->mountinfo);
		if (!rc)
			rc = select_from_table(&sel, list);

		free(sel.cands);
		free(sel.live_by_id);
		mnt_unref_table(sel.live);
		mnt_unref_table(sel.tab);
		mnt_unref_cache(sel.cache);
		if (!rc)
			status = SELECT_OK;
		break; /* the first non-empty table is the one */
	}

	free(files);
	if (rc) {
		fs_list_free(list);
		return rc;
	}
	return status;
}

#ifdef TEST_PROGRAM_MOUNTS
#include <dirent.h>

/*
 * TAP over tests/fixtures/tables: for each NAME.tab, the table-only
 * rules (no live checks) must yield NAME.expected; NAME.types, when
 * present, holds a -t pattern.
 */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t sz = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &sz, '\0', f) < 0) {
		free(buf);
		buf = strdup("");
	}
	fclose(f);
	return buf;
}

static int count_parse_errors;

static void on_test_parse_error(const char *file, int line, void *arg)
{
	count_parse_errors++;
}

static char *run_case(const char *tab, const char *types)
{
	struct select_opts opts = {
		.tables = tab,
		.types = types,
		.parse_error = on_test_parse_error,
	};
	struct fs_list list;
	const char *failed;
	char *out = NULL;
	size_t sz = 0, i;
	FILE *f = open_memstream(&out, &sz);
	int rc;

	count_parse_errors = 0;
	rc = mounts_select(&opts, &list, &failed);
	fprintf(f, "status %d\n", rc);
	for (i = 0; rc >= 0 && i < list.count; i++)
		fprintf(f, "%s %s %s\n", list.entries[i].target, list.entries[i].source,
			list.entries[i].fstype);
	if (count_parse_errors)
		fprintf(f, "parse errors %d\n", count_parse_errors);
	fclose(f);
	if (rc >= 0)
		fs_list_free(&list);
	return out;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[PATH_MAX], path[PATH_MAX + 32], *names[256];
	struct dirent *de;
	size_t n = 0, i;
	int failures = 0;
	DIR *d;

	skip_live_checks = true;
	snprintf(dir, sizeof(dir), "%s/tests/fixtures/tables", top ? top : ".");
	d = opendir(dir);
	if (!d) {
		printf("Bail out! cannot open %s\n", dir);
		return 1;
	}
	while ((de = readdir(d)) && n < 256) {
		size_t l = strlen(de->d_name);

		if (l > 4 && !strcmp(de->d_name + l - 4, ".tab"))
			names[n++] = strndup(de->d_name, l - 4);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);

	printf("1..%zu\n", n);
	for (i = 0; i < n; i++) {
		char *want, *got, *types;

		snprintf(path, sizeof(path), "%s/%s.types", dir, names[i]);
		types = slurp(path);
		if (types)
			types[strcspn(types, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/%s.expected", dir, names[i]);
		want = slurp(path);
		snprintf(path, sizeof(path), "%s/%s.tab", dir, names[i]);
		got = run_case(path, types);
		if (want && got && !strcmp(want, got)) {
			printf("ok %zu - %s\n", i + 1, names[i]);
		} else {
			failures++;
			printf("not ok %zu - %s\n# expected:\n%s# got:\n%s", i + 1,
			       names[i], want ? want : "(missing)\n",
			       got ? got : "(none)\n");
		}
		free(want);
		free(got);
		free(types);
		free(names[i]);
	}
	return failures ? 1 : 0;
}
#endif
