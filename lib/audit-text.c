// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the audit found, as lines for the user ("PATH: audit: ...").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "sizes.h"

static const char *yes_no(int val)
{
	return val == 1 ? "yes" : val == 0 ? "no" : "unknown";
}

static void describe_device_line(FILE *f, const char *path, const char *what,
				 const struct audit_device *d)
{
	if (!d->known) {
		fprintf(f, "%s: audit: %s %s: queue limits unknown\n", path, what,
			d->path ? d->path : "device");
		return;
	}
	fprintf(f, "%s: audit: %s %s: discard %s, write-zeroes %s\n", path, what,
		d->path ? d->path : "device", yes_no(d->discard_max_bytes > 0),
		yes_no(d->write_zeroes_max_bytes > 0));
}

/* The summary line's first words. */
static const char *verdict(const struct audit_result *res)
{
	if (audit_found_remnants(res))
		return "deleted data found";
	return audit_incomplete(res) ? "incomplete, nothing found in what was read" :
				       "nothing found";
}

/* "; free space: ..." of the summary line */
static void describe_free(FILE *f, const struct audit_result *res)
{
	char size[SIZE_HUMAN_MAX], total[SIZE_HUMAN_MAX];

	if (!res->free.read) {
		fprintf(f, "; free space not read (%s)", strerror(res->free.error));
		return;
	}
	fprintf(f, "; free space: %" PRIu64 " blocks hold data",
		res->free.nonzero_blocks);
	/* deleted data that FITRIM cannot reach, with the reason */
	if (res->free.nonzero_blocks && res->data.known && !res->data.discard_max_bytes)
		fputs(" (the device cannot discard)", f);
	else if (res->free.short_blocks || res->free.held_blocks)
		fprintf(f,
			" (FITRIM cannot reach %" PRIu64 ": %" PRIu64
			" in free extents below the discard granularity, %" PRIu64
			" held by the allocator)",
			res->free.short_blocks + res->free.held_blocks,
			res->free.short_blocks, res->free.held_blocks);
	fprintf(f, ", %s read of %s",
		size_to_human(res->free.read_bytes, size, sizeof(size)),
		size_to_human(res->free.free_bytes, total, sizeof(total)));
}

/*
 * btrfs: free space alone. Its old tree blocks and deleted extents are
 * there; what stays inside live tree blocks is not examined.
 */
static void describe_btrfs(FILE *f, const char *path, const struct audit_result *res)
{
	const struct audit_btrfs *b = &res->btrfs_space;
	char size[SIZE_HUMAN_MAX];

	fprintf(f, "%s: audit: %s", path, verdict(res));
	describe_free(f, res);
	if (res->free.read) {
		fprintf(f, " (%s in no chunk",
			size_to_human(b->unallocated_bytes, size, sizeof(size)));
		fprintf(f, ", %s in chunks)",
			size_to_human(b->chunk_free_bytes, size, sizeof(size)));
	}
	if (b->striped_free_bytes)
		fprintf(f, "; not read: %s free in RAID0/10/5/6 chunks",
			size_to_human(b->striped_free_bytes, size, sizeof(size)));
	fputs("; not examined: unused bytes inside live tree blocks\n", f);
}

char *audit_describe(const char *path, const struct audit_result *res, int rc,
		     bool verbose)
{
	const struct audit_kernel *k = &res->kernel;
	char size[SIZE_HUMAN_MAX], why[256];
	char *text = NULL;
	size_t len = 0, i;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	if (rc < 0) {
		fprintf(f, "%s: audit: not done: %s\n", path, strerror(-rc));
		goto out;
	}
	if (rc == 1) {
		fprintf(f,
			"%s: audit: not an ext2/3/4 or btrfs filesystem; nothing examined\n",
			path);
		goto kernel;
	}
	if (res->btrfs) {
		describe_btrfs(f, path, res);
		if (verbose)
			describe_device_line(f, path, "data device", &res->data);
		goto out;
	}

	fprintf(f, "%s: audit: %s; ", path, verdict(res));
	if (!res->journal.present)
		fputs("no journal", f);
	else if (!res->journal.read)
		fprintf(f, "journal not read (%s)",
			audit_journal_why(res->journal.error));
	else
		fprintf(f,
			"journal: %" PRIu64 " of %" PRIu64 " blocks hold older "
			"transactions, %" PRIu64 " the live log",
			res->journal.old_blocks, res->journal.blocks,
			res->journal.live_blocks);
	if (!res->dirents.scanned)
		fprintf(f, "; directories not read (%s)",
			audit_dirents_why(&res->dirents, why, sizeof(why)));
	else
		fprintf(f,
			"; %" PRIu64 " deleted names in %zu of %" PRIu64 " directories",
			res->dirents.removed_names, res->dirents.ndirs,
			res->dirents.directories);
	describe_free(f, res);
	if (res->ext4 && res->free_error)
		fprintf(f, "; free extents' sizes not read (%s)",
			strerror(res->free_error));
	/* what no step here reads, said every time */
	fputs("; not examined: freed inodes (inline data, extended attributes)", f);
	fputc('\n', f);

	if (!verbose)
		goto out;
	for (i = 0; i < res->dirents.ndirs; i++)
		fprintf(f, "%s: audit: %" PRIu64 " deleted names in %s\n", path,
			res->dirents.dirs[i].removed_names, res->dirents.dirs[i].path);
	if (res->free_known)
		fprintf(f,
			"%s: audit: up to %s of free space in extents below the discard "
			"granularity\n",
			path, size_to_human(res->small_free_bytes, size, sizeof(size)));
	if (res->journal.external)
		fprintf(f, "%s: audit: external journal UUID=%s on %s\n", path,
			res->journal.uuid,
			res->journal_dev.path ? res->journal_dev.path :
						"no device found");
kernel:
	if (!verbose)
		goto out;
	fprintf(f,
		"%s: audit: Linux %s: EXT4_IOC_CHECKPOINT %s "
		"(discard %s, zeroout %s), "
		"FS_IOC_CHKPT_JRNL %s, names wiped on unlink %s, "
		"directory-pack fix %s\n",
		path, k->release, yes_no(k->checkpoint), yes_no(k->checkpoint_discard),
		yes_no(k->checkpoint_zeroout), yes_no(k->chkpt_jrnl),
		yes_no(k->wipes_dirents), yes_no(k->dirent_pack_wipe));
	describe_device_line(f, path, "data device", &res->data);
	if (res->journal.external)
		describe_device_line(f, path, "journal device", &res->journal_dev);
out:
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
