// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The block groups a --journal run reads back on ext4, and the state file
 * that carries what one run proved to the next (include/readset.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "readset.h"
#include "trim.h"

#ifndef FSTRIM_EXT_STATEDIR
#define FSTRIM_EXT_STATEDIR "/var/lib/fstrim-ext"
#endif

#define STATE_MAGIC "fstrim-ext read set 1"

const char *readset_state_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("STATE_DIRECTORY");

	/* systemd's StateDirectory=: the first of a colon-separated list */
	if (!env || !*env || *env == ':')
		return FSTRIM_EXT_STATEDIR;
	snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(env, ":"), env);
	return dir;
}

uint64_t readset_hash(const char *buf, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)buf[i];
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

/*
 * The allocator's account of every group, from mb_groups: "#G : free
 * frags first [ counts by order ]", hashed from the colon on. A group
 * the file does not list gets 0, which never equals an account.
 */
static int read_accounts(const struct readset *rs, uint64_t *acc)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int rc = 0;

	memset(acc, 0, rs->ngroups * sizeof(*acc));
	f = fopen(rs->mb_groups, "re");
	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		unsigned long long g;
		char *colon, *end;

		if (line[0] != '#' || line[1] < '0' || line[1] > '9')
			continue;
		g = strtoull(line + 1, &end, 10);
		colon = strchr(end, ':');
		if (!colon || g >= rs->ngroups)
			continue;
		/* "I/O error" or a corrupt bitmap: never an account to trust */
		if (strstr(colon, "error") || strstr(colon, "corrupt"))
			continue;
		acc[g] = readset_hash(colon, (size_t)(line + n - colon));
	}
	if (ferror(f))
		rc = -EIO;
	free(line);
	fclose(f);
	return rc;
}

static void make_key(struct readset *rs, const struct trim_target *t)
{
	char boot[64] = "";
	struct stat st;
	size_t i, n;
	FILE *f;
	int len;

	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		fclose(f);
	}
	boot[strcspn(boot, "\n")] = '\0';
	len = snprintf(rs->key, sizeof(rs->key), "mount ");
	for (i = 0; i < sizeof(t->uuid) && len > 0; i++)
		len += snprintf(rs->key + len, sizeof(rs->key) - (size_t)len, "%02x",
				t->uuid[i]);
	/* the device too: two clones of one filesystem mounted at once */
	if (fstat(t->fd, &st) != 0)
		st.st_dev = 0;
	n = strlen(rs->key);
	snprintf(rs->key + n, sizeof(rs->key) - n, " %" PRIu32 " %" PRIu64 " %s %u:%u",
		 t->mount_count, t->mount_time, boot[0] ? boot : "-", major(st.st_dev),
		 minor(st.st_dev));
}

/* The state of the last run of this mount, into @rs->proved; false when none. */
static bool load_state(struct readset *rs)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool ok = false;
	FILE *f;

	f = fopen(rs->state, "re");
	if (!f)
		return false;
	if (getline(&line, &cap, f) <= 0 || strcmp(line, STATE_MAGIC "\n") != 0)
		goto out;
	if ((n = getline(&line, &cap, f)) <= 0 || line[n - 1] != '\n')
		goto out;
	line[n - 1] = '\0';
	if (strcmp(line, rs->key) != 0)
		goto out;
	while ((n = getline(&line, &cap, f)) > 0) {
		unsigned long long g, h;

		if (sscanf(line, "%llu %llx", &g, &h) != 2 || g >= rs->ngroups)
			goto out;
		rs->proved[g] = h;
	}
	ok = !ferror(f);
out:
	if (!ok)
		memset(rs->proved, 0, rs->ngroups * sizeof(*rs->proved));
	free(line);
	fclose(f);
	return ok;
}

int readset_begin(struct readset *rs, const struct trim_target *t, const char **why)
{
	uint64_t n;
	int rc;

	memset(rs, 0, sizeof(*rs));
	*why = "not ext4";
	if (!t->ext4 || !t->sysfs_name[0] || !t->blocks_per_group)
		return -EOPNOTSUPP;
	n = (t->blocks_count - t->first_data_block + t->blocks_per_group - 1) /
	    t->blocks_per_group;
	rs->ngroups = n;
	snprintf(rs->mb_groups, sizeof(rs->mb_groups), "/proc/fs/ext4/%s/mb_groups",
		 t->sysfs_name);
	*why = "no memory";
	rs->read = calloc(n, 1);
	rs->trimmed = calloc(n, sizeof(*rs->trimmed));
	rs->first = calloc(n, sizeof(*rs->first));
	rs->last = calloc(n, sizeof(*rs->last));
	rs->proved = calloc(n, sizeof(*rs->proved));
	if (!rs->read || !rs->trimmed || !rs->first || !rs->last || !rs->proved) {
		readset_free(rs);
		return -ENOMEM;
	}
	rc = read_accounts(rs, rs->first);
	if (rc) {
		*why = "the allocator's accounts (mb_groups) could not be read";
		readset_free(rs);
		return rc;
	}
	memcpy(rs->last, rs->first, n * sizeof(*rs->last));
	make_key(rs, t);
	snprintf(rs->state, sizeof(rs->state), "%s/%.*s", readset_state_dir(), 32,
		 rs->key + strlen("mount "));
	rs->have_state = load_state(rs);
	*why = NULL;
	return 0;
}

int readset_choose(struct readset *rs, bool late)
{
	uint64_t *now, g;
	int rc;

	now = malloc(rs->ngroups * sizeof(*now));
	if (!now)
		return -ENOMEM;
	rc = read_accounts(rs, now);
	if (rc) {
		free(now);
		return rc;
	}
	for (g = 0; g < rs->ngroups; g++) {
		uint8_t why = 0;

		if (!rs->have_state || !rs->proved[g])
			why |= READSET_UNPROVEN;
		else if (rs->proved[g] != rs->first[g])
			why |= READSET_CHANGED;
		if (rs->trimmed[g])
			why |= READSET_TRIMMED;
		if (now[g] != rs->last[g] || !now[g])
			why |= READSET_DURING;
		if (why && !rs->read[g] && late)
			why |= READSET_LATE;
		rs->read[g] |= why;
	}
	free(rs->last);
	rs->last = now;
	return 0;
}

/* Write the state of @rs to a new file beside the old, then over it. */
static int save_state(const struct readset *rs, const uint64_t *now)
{
	char tmp[PATH_MAX + 8];
	uint64_t g;
	FILE *f;
	int fd, rc = 0;

	if (mkdir(readset_state_dir(), 0700) != 0 && errno != EEXIST)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", rs->state);
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	fprintf(f, "%s\n%s\n", STATE_MAGIC, rs->key);
	for (g = 0; g < rs->ngroups; g++) {
		bool clean = !(rs->read[g] & READSET_LATE) &&
			     (rs->read[g] || (rs->have_state && rs->proved[g]));

		/* unchanged since the last look, which followed the read back */
		if (clean && now[g] && now[g] == rs->last[g])
			fprintf(f, "%" PRIu64 " %" PRIx64 "\n", g, now[g]);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, rs->state) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int readset_end(struct readset *rs, bool proved)
{
	uint64_t *now;
	int rc;

	if (!proved) {
		if (unlink(rs->state) != 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	now = malloc(rs->ngroups * sizeof(*now));
	if (!now)
		return -ENOMEM;
	rc = read_accounts(rs, now);
	if (!rc)
		rc = save_state(rs, now);
	free(now);
	/* a state not written is no proof: the next run reads all */
	if (rc)
		unlink(rs->state);
	return rc;
}

void readset_summarize(const struct readset *rs, struct readset_summary *s)
{
	uint64_t g;

	s->sized = true;
	s->had_proof = rs->have_state;
	s->all_why = NULL;
	s->groups = rs->ngroups;
	s->groups_read = s->groups_trimmed = s->groups_changed = 0;
	for (g = 0; g < rs->ngroups; g++) {
		s->groups_read += rs->read[g] != 0;
		s->groups_trimmed += (rs->read[g] & READSET_TRIMMED) != 0;
		s->groups_changed += (rs->read[g] & (READSET_CHANGED | READSET_DURING)) !=
				     0;
	}
}

void readset_free(struct readset *rs)
{
	free(rs->read);
	free(rs->trimmed);
	free(rs->first);
	free(rs->last);
	free(rs->proved);
	rs->read = NULL;
	rs->trimmed = rs->first = rs->last = rs->proved = NULL;
}
