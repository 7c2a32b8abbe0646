#!/usr/bin/env bats
# --audit: a read-only look at what a reader of the device could still
# recover, checked against debugfs and against the device itself.
# shellcheck disable=SC2153,SC2154 # LOOPDEV from make_loop_fs, $stderr from run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-900}

setup() {
	load test_helper/common-setup
	_common_setup
}

teardown() {
	_common_teardown
}

# audit_value FILTER ARGS...: run --audit --json and print one value of the
# first filesystem.
audit_value() {
	local filter=$1
	shift
	"$FSTRIM_EXT" --audit --json "$@" 2>/dev/null | jq -r ".filesystems[0] | $filter"
}

# make_quiet_ext4 SIZE_MB [mkfs args...]: an ext4 that writes to its journal
# only when the test does: no lazy initialisation, no atime updates.
make_quiet_ext4() {
	local size=$1
	shift
	MOUNT_OPTS=noatime make_loop_fs ext4 "$size" -b 4096 \
		-E lazy_itable_init=0,lazy_journal_init=0 "$@"
}

# deleted_names_debugfs DEV DIR: distinct names that debugfs lists as
# deleted in DIR and that no live entry of DIR carries.
deleted_names_debugfs() {
	local dev=$1 dir=$2 live="$BATS_TEST_TMPDIR/live" deleted="$BATS_TEST_TMPDIR/deleted"
	debugfs -R "ls $dir" "$dev" 2>/dev/null | grep -o 'PII-SSN-[^ ]*' | sort -u >"$live"
	debugfs -R "ls -d $dir" "$dev" 2>/dev/null | grep -o '<[0-9]*> *([0-9]*) PII-SSN-[^ ]*' |
		awk '{ print $NF }' | sort -u >"$deleted"
	comm -23 "$deleted" "$live" | wc -l
}

@test "the audit's own checks (unit)" {
	local prog="${top_builddir:-$top_srcdir}/tests/unit/test_audit"
	[[ -x $prog ]] || fail "$prog is not built (make check builds it)"
	run -0 "$prog"
	refute_line --partial "not ok"
}

# bats test_tags=root
@test "before --journal the journal holds data and the status says so; after it, nothing" {
	require_root
	require_cmd jq
	make_quiet_ext4 128
	make_pii_files "$MNT/gone" GONE 50
	sync
	rm -rf "$MNT/gone"
	sync

	run -1 "$FSTRIM_EXT" --audit "$MNT"
	assert_line --regexp "^$MNT: audit: [1-9][0-9]* of [0-9]+ journal blocks hold data, "

	run -1 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	jq -e . <<<"$output" >/dev/null || fail "not JSON: $output"
	assert_equal "$(jq -r '.filesystems[0].audit' <<<"$output")" "done"
	assert_equal "$(jq -r '.filesystems[0].audit_found' <<<"$output")" true
	assert_equal "$(jq -r '.filesystems[0].audit_journal_external' <<<"$output")" false
	assert_equal "$(jq -r '.filesystems[0].audit_journal_device' <<<"$output")" "$LOOPDEV"
	(($(jq -r '.filesystems[0].audit_journal_nonzero_blocks' <<<"$output") > 0)) ||
		fail "journal blocks with data expected: $output"
	assert_equal "$(jq -r .status <<<"$output")" 1

	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -0 "$FSTRIM_EXT" --audit "$MNT"
	assert_line --regexp "^$MNT: audit: 0 of [0-9]+ journal blocks hold data, 0 deleted names "
}

# bats test_tags=root
@test "the journal count agrees with the journal read from the device" {
	require_root
	require_cmd jq debugfs blockdev
	make_quiet_ext4 128
	make_pii_files "$MNT/gone" GONE 30
	sync

	local blocks before after count dump="$BATS_TEST_TMPDIR/journal"
	# a commit between the audit and the dump would change the count:
	# take the dump between two audits that agree
	for _ in 1 2 3 4 5; do
		before=$(audit_value .audit_journal_nonzero_blocks "$MNT")
		# debugfs reads through the page cache; drop it first
		blockdev --flushbufs "$LOOPDEV"
		debugfs -R "dump <8> $dump" "$LOOPDEV" >/dev/null 2>&1
		after=$(audit_value .audit_journal_nonzero_blocks "$MNT")
		[[ $before == "$after" ]] && break
		sleep 6
	done
	assert_equal "$after" "$before"
	blocks=$(audit_value .audit_journal_blocks "$MNT")
	assert_equal "$blocks" "$(($(stat -c %s "$dump") / 4096 - 1))"
	# blocks after the journal superblock that are not all zeroes
	count=$(perl -e 'open(my $f, "<", $ARGV[0]) or die; binmode $f; my ($b, $n);
		read($f, $b, 4096);
		while (read($f, $b, 4096) == 4096) { $n++ if $b =~ /[^\0]/ } print $n + 0' "$dump")
	assert_equal "$count" "$after"
}

# bats test_tags=root
@test "--audit changes nothing: the image is the same, no FITRIM, no journal erase" {
	require_root
	require_cmd strace
	make_quiet_ext4 64
	make_pii_files "$MNT/gone" GONE 10
	rm -rf "$MNT/gone"
	sync
	local before after
	before=$(sha256sum <"$IMG")

	run_traced --audit -v "$MNT"
	assert_failure 1
	sync
	after=$(sha256sum <"$IMG")
	assert_equal "$after" "$before"
	# EXT4_IOC_CHECKPOINT is issued only as the DRY_RUN probe (its flags are
	# behind a pointer strace does not follow: the image above is the proof)
	if grep -E 'FITRIM|0x66, 0x2b, 0x8' "$STRACE_LOG"; then
		fail "FITRIM or FS_IOC_CHKPT_JRNL was issued"
	fi
}

# bats test_tags=root
@test "htree directory: the deleted names debugfs finds are counted, and -v names the directory" {
	require_root
	require_cmd jq debugfs
	make_quiet_ext4 192
	local i
	mkdir "$MNT/h"
	for ((i = 0; i < 3000; i++)); do
		: >"$MNT/h/PII-SSN-$(printf %05d "$i")-Jane-Public-long-name.txt"
	done
	sync
	rm -f "$MNT"/h/PII-SSN-*[13579]-Jane-*
	sync

	local want names
	want=$(deleted_names_debugfs "$LOOPDEV" /h)
	names=$(audit_value .audit_deleted_names "$MNT")
	assert_equal "$names" "$want"
	if [[ -e /sys/fs/ext4/features/dirent_pack_wipe ]]; then
		# the patched kernel leaves no name behind
		assert_equal "$names" 0
		return
	fi
	((names > 0)) || fail "an unpatched kernel leaves names in the htree leaves"
	run -1 "$FSTRIM_EXT" --audit -v "$MNT"
	assert_line "$MNT: audit: $names deleted names in /h"
	assert_line --regexp "^$MNT: audit: Linux .*directory-pack fix no$"
	assert_equal "$(audit_value '.audit_directories[0]' "$MNT")" /h
}

# bats test_tags=root
@test "external journal: found by UUID, read, and empty after --journal" {
	require_root
	require_cmd jq mke2fs
	local jimg="$BATS_TEST_TMPDIR/journal.img" jdev uuid
	truncate -s 32M "$jimg"
	jdev=$(losetup --find --show "$jimg") || fail "losetup failed"
	LOOPDEVS+=("$jdev")
	mke2fs -q -F -O journal_dev -b 4096 "$jdev" >/dev/null
	uuid=$(blkid -s UUID -o value "$jdev")
	make_quiet_ext4 64 -J "device=$jdev"
	make_pii_files "$MNT/gone" GONE 20
	sync

	run -1 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_journal_external' <<<"$output")" true
	assert_equal "$(jq -r '.filesystems[0].audit_journal_device' <<<"$output")" "$jdev"
	(($(jq -r '.filesystems[0].audit_journal_nonzero_blocks' <<<"$output") > 0)) ||
		fail "the external journal should hold data: $output"

	run -1 "$FSTRIM_EXT" --audit -v "$MNT"
	assert_line "$MNT: audit: external journal UUID=$uuid on $jdev"

	run -0 "$FSTRIM_EXT" --journal "$MNT"
	assert_equal "$(audit_value .audit_journal_nonzero_blocks "$MNT")" 0
}

# bats test_tags=root
@test "--journal --audit: the steps, then the audit, in one run" {
	require_root
	make_quiet_ext4 64
	make_pii_files "$MNT/gone" GONE 10
	rm -rf "$MNT/gone"
	run -0 "$FSTRIM_EXT" -v --journal --audit "$MNT"
	assert_line --index 0 --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via "
	assert_line --index 1 --regexp "^$MNT: audit: 0 of [0-9]+ journal blocks hold data, "
}

# bats test_tags=root
@test "xfs: not audited, not an error" {
	require_root
	require_cmd mkfs.xfs
	make_loop_fs xfs 300
	run -0 "$FSTRIM_EXT" --audit "$MNT"
	assert_output "$MNT: audit: not an ext2/3/4 filesystem; nothing read"
}

# bats test_tags=root
@test "exit status: 32 when the one path cannot be audited" {
	require_root
	make_quiet_ext4 64
	mkdir "$MNT/sub"
	run -32 --separate-stderr "$FSTRIM_EXT" --audit "$MNT/sub"
	assert_equal "$stderr" "fstrim-ext: $MNT/sub: not the root of a filesystem (mounted on $MNT)"
}

# bats test_tags=root
@test "--listed-in --audit: 1 when one filesystem holds remnants, 0 when none does" {
	require_root
	local tab="$BATS_TEST_TMPDIR/fstab" mnt1 dev1
	make_quiet_ext4 64
	mnt1=$MNT dev1=$LOOPDEV
	make_quiet_ext4 64
	printf '%s %s ext4 defaults 0 0\n%s %s ext4 defaults 0 0\n' \
		"$dev1" "$mnt1" "$LOOPDEV" "$MNT" >"$tab"
	run -0 "$FSTRIM_EXT" --journal -I "$tab"
	run -0 "$FSTRIM_EXT" --audit -I "$tab"

	make_pii_files "$mnt1/gone" GONE 10
	sync
	run -1 "$FSTRIM_EXT" --audit -I "$tab"
	assert_line --regexp "^$mnt1: audit: [1-9][0-9]* of "
	assert_line --regexp "^$MNT: audit: 0 of "
}
