// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which filesystems of a mount table to trim, chosen with fstrim's rules.
 *
 * fstrim de-duplicates with mnt_table_uniq_fs(), which compares every
 * entry with every other; with tens of thousands of bind mounts that is
 * seconds of CPU. Here both de-duplications sort an index instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <blkid.h>
#include <libmount.h>
#include <linux/magic.h>

#include "compat.h"
#include "mounts.h"
#include "stack.h"
#include "mounts-read.h"
#include "sysfs.h"
/* ---- selection from a table ------------------------------------------ */

struct candidate {
	struct libmnt_fs *fs;
	const char *target;
	const char *source; /* resolved device path */
	size_t order; /* position in the table */
	int live_id; /* mount ID seen at the target now */
	dev_t live_dev; /* and the device of its root */
	bool dropped;
	bool report; /* a block-device filesystem: say why when it is dropped */
	char *mountpoint; /* the target made canonical, once looked at */
	char *reason; /* why it was dropped */
	int error; /* errno when it could not be looked at */
	dev_t source_dev; /* of the source; 0 when not a block device */
	bool discard_ok; /* the source can discard */
	bool encrypted; /* ... or, where it cannot, lies below dm-crypt */
	bool ro_dev; /* the source is a read-only device */
	bool subdir_bind; /* dropped: shows a directory, not the root */
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
	bool table_ids; /* the table's mount IDs are this namespace's */
	const char *types;
	bool need_discard;
	bool journal_below_crypt;
	bool need_writable;
	bool table_rules_only;
};

/* Drop a candidate; for one worth reporting, keep why. Returns false. */
static bool __attribute__((format(printf, 3, 4)))
drop(struct candidate *c, int error, const char *fmt, ...)
{
	va_list ap;

	c->dropped = true;
	if (!c->report || c->reason)
		return false;
	c->error = error;
	va_start(ap, fmt);
	if (vasprintf(&c->reason, fmt, ap) < 0)
		c->reason = NULL;
	va_end(ap);
	return false;
}

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

/*
 * Keep one candidate per mountpoint: the last, as mount -a would mount
 * it, and as fstrim keeps it. Only a table of this namespace keeps them
 * all (see below).
 */
static int dedup_by_target(struct selection *sel)
{
	struct candidate **idx;
	size_t i, n;

	idx = sorted_candidates(sel, cmp_target_order, &n);
	if (!idx)
		return -ENOMEM;

	for (i = 0; i + 1 < n; i++) {
		/*
		 * In this namespace's mountinfo the mount IDs tell which one
		 * is seen there: a mount propagated under another ("tucked")
		 * comes later but is hidden. The live check sorts them out.
		 * Another namespace's IDs tell nothing here, and the device
		 * cannot always (a btrfs over an ext4 shows 0:N): there the
		 * later entry wins, as for fstrim.
		 */
		if (sel->table_ids && mnt_fs_get_id(idx[i]->fs) > 0 &&
		    mnt_fs_get_id(idx[i + 1]->fs) > 0)
			continue;
		if (!cmp_paths(idx[i]->target, idx[i + 1]->target))
			/* the next comes later in the table */
			drop(idx[i], 0, "a later entry has the same mountpoint");
	}
	free(idx);
	return 0;
}

/* Not a filesystem on a block device: dropped without a word, as fstrim does. */
static bool is_not_blockdev_fs(struct libmnt_fs *fs)
{
	return mnt_fs_is_pseudofs(fs) || mnt_fs_is_netfs(fs) || mnt_fs_is_swaparea(fs) ||
	       mnt_fs_match_fstype(fs, "autofs");
}

/* Worth a reason when dropped: a device path or a tag (UUID=, LABEL=) as source. */
static bool looks_like_blockdev_fs(struct libmnt_fs *fs)
{
	const char *src = mnt_fs_get_srcpath(fs);

	if (is_not_blockdev_fs(fs))
		return false;
	if (src)
		return *src == '/';
	return mnt_fs_get_tag(fs, NULL, NULL) == 0;
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

/*
 * Whether the mount IDs of the table @file are this mount namespace's:
 * only /proc/PID/mountinfo of a process that shares it. A copy, or the
 * table of another namespace (a container's /proc/1/mountinfo), numbers
 * its mounts in a way that means nothing here: then the target's path
 * decides which mount is meant, as it does for fstrim.
 */
static bool ids_of_this_namespace(const char *file)
{
	char *real = realpath(file, NULL), link[64], ns[PATH_MAX], self[PATH_MAX];
	unsigned int pid, tid;
	int end = 0;
	ssize_t a, b;

	if (!real)
		return false;
	if (sscanf(real, "/proc/%u/mountinfo%n", &pid, &end) != 1 || real[end])
		end = 0;
	if (!end &&
	    (sscanf(real, "/proc/%u/task/%u/mountinfo%n", &pid, &tid, &end) != 2 ||
	     real[end]))
		end = 0;
	free(real);
	if (!end)
		return false;
	snprintf(link, sizeof(link), "/proc/%u/ns/mnt", pid);
	a = readlink(link, ns, sizeof(ns) - 1);
	b = readlink("/proc/self/ns/mnt", self, sizeof(self) - 1);
	return a > 0 && a == b && !memcmp(ns, self, (size_t)a);
}

static int index_live(struct selection *sel, const char *file, const char *mountinfo)
{
	struct libmnt_iter *itr;
	struct libmnt_fs *fs;
	size_t n = 0;
	int rc;

	if (!mountinfo)
		mountinfo = PATH_MOUNTINFO;
	sel->table_ids = ids_of_this_namespace(file) || paths_equal(file, mountinfo);
	if (paths_equal(file, mountinfo)) {
		/* the table being trimmed is the live one: read it once */
		mnt_ref_table(sel->tab);
		sel->live = sel->tab;
	} else {
		sel->live = read_table(mountinfo, &rc);
		if (!sel->live)
			return rc;
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
 * Whether a device can discard, and whether it is read-only. The queue
 * attributes live with the whole disk; "ro" with the partition itself.
 * A device that sysfs does not know is given the benefit of the doubt,
 * as fstrim does: FITRIM will tell.
 */
static void probe_device(const char *devname, bool *discard_ok, bool *encrypted,
			 bool *ro_dev)
{
	uint64_t granularity = 0, ro = 0;
	struct storage_stack stack;
	dev_t dev, disk = 0;
	struct stat st;

	*discard_ok = true;
	*encrypted = false;
	*ro_dev = false;
	if (stat(devname, &st) != 0 || !S_ISBLK(st.st_mode))
		return;
	dev = st.st_rdev;
	if (blkid_devno_to_wholedisk(dev, NULL, 0, &disk) != 0 || !disk)
		return;
	if (sysfs_discard_granularity(dev, &granularity) != 0)
		granularity = 0;
	sysfs_blkdev_read_u64(dev, "ro", &ro);
	*discard_ok = granularity > 0;
	*ro_dev = ro != 0;
	/* dm-crypt without discards (a crypttab without "discard") */
	if (!*discard_ok && stack_describe(dev, &stack) == 0)
		*encrypted = stack.kind == STACK_MAPPED && stack.encrypted;
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

/* A mountpoint that cannot be reached: missing is a reason, anything else an error. */
static bool drop_unreachable(struct candidate *c, int error)
{
	if (error == ENOENT || error == ENOTDIR)
		return drop(c, 0, "not mounted (no directory %s)", c->target);
	return drop(c, error, "%s", strerror(error));
}

/*
 * The checks that need the live system: the mount now visible at the
 * target must be the entry's own (for fstab: of the device it names),
 * show the root of its filesystem, be a directory, and, as the steps
 * asked for need, be writable and sit on a device that can discard.
 * The target is made canonical first: fstab may name it through a
 * symbolic link or with "/./", as fstrim accepts.
 */
static bool live_usable(struct selection *sel, struct candidate *c)
{
	int table_id = mnt_fs_get_id(c->fs), id, rc;
	struct libmnt_fs *live;
	struct statx stx;

	free(c->mountpoint);
	c->mountpoint = realpath(c->target, NULL);
	if (!c->mountpoint)
		return drop_unreachable(c, errno);
	rc = stat_path(c->mountpoint, &stx, &id);
	if (rc)
		return drop_unreachable(c, -rc);
	if (!S_ISDIR(stx.stx_mode))
		return drop(c, 0, "not a directory");
	live = live_find(sel, id);
	if (!live || !mnt_fs_streq_target(live, c->mountpoint))
		return drop(c, 0, "not mounted");
	if (sel->table_ids && table_id > 0 && table_id != id)
		return drop(c, 0, "overmounted by another mount");
	if (mnt_fs_match_fstype(live, "autofs"))
		return drop(c, 0, "an automount point, not mounted now");
	if (!is_filesystem_root(live, c->mountpoint)) {
		c->subdir_bind = true;
		return drop(c, 0, "bind mount of %s, not the root of its filesystem",
			    mnt_fs_get_root(live));
	}
	if (!is_same_device(live, c))
		return drop(c, 0, "%s is mounted there, not %s",
			    mnt_fs_get_source(live) ? mnt_fs_get_source(live) :
						      "another device",
			    c->source);
	if (sel->need_writable && is_readonly_fs(live))
		return drop(c, 0, "read-only filesystem");
	if (sel->need_writable && c->ro_dev)
		return drop(c, 0, "read-only device");
	if (sel->need_discard && !c->discard_ok &&
	    !(sel->journal_below_crypt && c->encrypted))
		return drop(c, 0, "the device cannot discard");
	c->live_id = id;
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
		else
			c->report = looks_like_blockdev_fs(fs);
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
		if (is_not_blockdev_fs(c->fs)) {
			c->dropped = true;
			continue;
		}
		if (mnt_fs_match_options(c->fs, "+X-fstrim.notrim")) {
			drop(c, 0, "X-fstrim.notrim is set");
			continue;
		}
		if (sel->types && !mnt_fs_match_fstype(c->fs, sel->types)) {
			drop(c, 0, "not of the types given with -t");
			continue;
		}
		src = mnt_fs_get_srcpath(c->fs);
		/* LABEL= and UUID= in fstab become device paths */
		if (!src && sel->cache && mnt_fs_get_source(c->fs))
			src = mnt_resolve_spec(mnt_fs_get_source(c->fs), sel->cache);
		if (!src || *src != '/') {
			if (!sel->cache)
				/* fstrim resolves them only there too */
				drop(c, 0, "%s is resolved only in %s",
				     mnt_fs_get_source(c->fs), PATH_FSTAB);
			else
				drop(c, 0, "no device %s is found",
				     mnt_fs_get_source(c->fs));
			continue;
		}
		c->source = src;
	}
}

static int collect_skipped(struct selection *sel, struct fs_list *list)
{
	size_t i, n = 0;

	list->skipped = calloc(sel->count + 1, sizeof(*list->skipped));
	if (!list->skipped)
		return -ENOMEM;
	for (i = 0; i < sel->count; i++) {
		const struct candidate *c = &sel->cands[i];
		struct fs_skipped *sk = &list->skipped[n];
		const char *src = c->source ? c->source : mnt_fs_get_source(c->fs);
		const char *fstype = mnt_fs_get_fstype(c->fs);

		if (!c->dropped || !c->report)
			continue;
		sk->target = strdup(c->target);
		sk->source = src ? strdup(src) : NULL;
		sk->fstype = strdup(fstype ? fstype : "");
		sk->reason = strdup(c->reason ? c->reason : "not usable");
		sk->error = c->error;
		sk->only_subdir = c->subdir_bind;
		list->nskipped = ++n;
		if (!sk->target || !sk->fstype || !sk->reason || (src && !sk->source))
			return -ENOMEM;
	}
	return 0;
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
		rc = dup_entry(c->fs, c->target,
			       c->mountpoint ? c->mountpoint : c->target, c->source,
			       &list->entries[n]);
		if (rc)
			return rc;
		list->entries[n].mnt_id = c->live_id;
		list->entries[n].dev = c->live_dev;
		list->count = ++n;
	}
	return collect_skipped(sel, list);
}

static bool is_usable(struct selection *sel, struct candidate *c)
{
	if (sel->table_rules_only)
		return true;
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
		struct candidate *found = NULL;
		bool discard_ok, encrypted, ro_dev;
		struct stat st;
		dev_t dev = 0;

		for (j = i + 1; j < n && !cmp_paths(idx[i]->source, idx[j]->source); j++)
			;
		if (stat(idx[i]->source, &st) == 0 && S_ISBLK(st.st_mode))
			dev = st.st_rdev;
		probe_device(idx[i]->source, &discard_ok, &encrypted, &ro_dev);

		for (k = i; k < j; k++) {
			struct candidate *c = idx[k];

			c->source_dev = dev;
			c->discard_ok = discard_ok;
			c->encrypted = encrypted;
			c->ro_dev = ro_dev;
			if (found && !cmp_paths(c->target, found->target))
				drop(c, 0, "another mount of %s here is trimmed",
				     c->source);
			else if (found)
				drop(c, 0, "%s is trimmed through %s", c->source,
				     found->target);
			else if (is_usable(sel, c))
				found = c;
		}
		/* a view of a directory matters only where it is the only one */
		for (k = i; found && k < j; k++)
			idx[k]->subdir_bind = false;
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

static void selection_free(struct selection *sel)
{
	size_t i;

	for (i = 0; sel->cands && i < sel->count; i++) {
		free(sel->cands[i].mountpoint);
		free(sel->cands[i].reason);
	}
	free(sel->cands);
	free(sel->live_by_id);
	mnt_unref_table(sel->live);
	mnt_unref_table(sel->tab);
	mnt_unref_cache(sel->cache);
}

int mounts_select(const struct select_opts *opts, struct fs_list *list, char **failed)
{
	char *files, *file, *save = NULL;
	int status = SELECT_NO_TABLE, rc = 0;

	memset(list, 0, sizeof(*list));
	*failed = NULL;

	files = strdup(opts->tables);
	if (!files)
		return -ENOMEM;

	for (file = strtok_r(files, ":", &save); file;
	     file = strtok_r(NULL, ":", &save)) {
		struct selection sel = {
			.types = opts->types,
			.need_discard = opts->need_discard,
			.journal_below_crypt = opts->journal_below_crypt,
			.need_writable = opts->need_writable,
			.table_rules_only = opts->table_rules_only,
		};
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
		rc = mnt_table_parse_file(sel.tab, file);
		if (rc != 0) {
			rc = rc < 0 ? rc : -EINVAL;
			/* the file alone, not the rest of the list */
			*failed = strdup(file);
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
		if (!rc && !sel.table_rules_only)
			rc = index_live(&sel, file, opts->mountinfo);
		if (!rc)
			rc = select_from_table(&sel, list);

		selection_free(&sel);
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
