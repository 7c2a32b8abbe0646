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

# deleted_on_external_journal JDEV: a 64 MiB ext4 whose journal is the
# external journal device JDEV, 20 files made, deleted and committed.
deleted_on_external_journal() {
	make_quiet_ext4 64 -J "device=$1"
	make_pii_files "$MNT/gone" GONE 20
	sync
	rm -rf "$MNT/gone"
	sync
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

# deleted_names_raw DEV DIR: distinct names of deleted files (odd numbers,
# in the htree test) in DIR's blocks, read with O_DIRECT.
deleted_names_raw() {
	local b
	for b in $(debugfs -R "blocks $2" "$1" 2>/dev/null); do
		dd if="$1" bs=4096 skip="$b" count=1 iflag=direct status=none
	done | grep -a -o 'PII-SSN-[0-9]*[13579]-Jane' | sort -u | wc -l
}

# count_device DEV PATTERN: lines of the device, read past the page cache, that match.
count_device() {
	device_strings "$1" | grep -c -- "$2" || true
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

	run -2 "$FSTRIM_EXT" --audit "$MNT"
	assert_line --regexp "^$MNT: audit: deleted data found; journal: [1-9][0-9]* of [0-9]+ blocks hold older transactions, "

	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	jq -e . <<<"$output" >/dev/null || fail "not JSON: $output"
	assert_equal "$(jq -r '.filesystems[0].audit' <<<"$output")" "done"
	assert_equal "$(jq -r '.filesystems[0].audit_found' <<<"$output")" true
	# the filesystem's status says what the document's status says
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" found
	assert_equal "$(jq -r '.filesystems[0].audit_journal_external' <<<"$output")" false
	assert_equal "$(jq -r '.filesystems[0].audit_journal_device' <<<"$output")" "$LOOPDEV"
	(($(jq -r '.filesystems[0].audit_journal_nonzero_blocks' <<<"$output") > 0)) ||
		fail "journal blocks with data expected: $output"
	(($(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output") > 0)) ||
		fail "older transactions expected: $output"
	assert_equal "$(jq -r .status <<<"$output")" 2

	# a trim alone erases the free space, not the journal: still found,
	# by the journal alone
	run -0 "$FSTRIM_EXT" "$MNT"
	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0] | "\(.audit_free_nonzero_blocks) \(.audit_deleted_names)"' <<<"$output")" \
		"0 0"
	(($(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output") > 0)) ||
		fail "older transactions expected: $output"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" found

	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -0 "$FSTRIM_EXT" --audit "$MNT"
	assert_line --regexp "^$MNT: audit: nothing found; journal: 0 of [0-9]+ blocks hold older transactions, [0-9]+ the live log; 0 deleted names "
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
	# read-only, the filesystem commits nothing while both are taken
	mount -o remount,ro "$MNT"
	before=$(audit_value .audit_journal_nonzero_blocks "$MNT")
	# debugfs reads through the page cache; drop it first
	blockdev --flushbufs "$LOOPDEV"
	debugfs -R "dump <8> $dump" "$LOOPDEV" >/dev/null 2>&1
	after=$(audit_value .audit_journal_nonzero_blocks "$MNT")
	assert_equal "$after" "$before"
	((after > 0)) || fail "the journal holds nothing: the count is not tested"
	blocks=$(audit_value .audit_journal_blocks "$MNT")
	assert_equal "$blocks" "$(($(stat -c %s "$dump") / 4096 - 1))"
	# blocks after the journal superblock that are not all zeroes
	count=$(perl -e 'open(my $f, "<", $ARGV[0]) or die; binmode $f; my ($b, $n);
		read($f, $b, 4096);
		while (read($f, $b, 4096) == 4096) { $n++ if $b =~ /[^\0]/ } print $n + 0' "$dump")
	assert_equal "$count" "$after"
}

# The fast-commit area after the log: each fsync's fast commit there
# carries the name of the file it created. Once the journal is flushed
# (here: unmounted) they are never replayed, and the names of files since
# deleted stay readable: old data, not the live log (the audit counted the
# whole area live while the journal superblock had its fast_commit flag).
# bats test_tags=root
@test "fast commits of deleted files: the audit counts them as old data, not live log" {
	require_root
	require_cmd jq debugfs blockdev dumpe2fs
	make_loop_fs ext4 128 -b 4096 -O fast_commit -E lazy_itable_init=0,lazy_journal_init=0
	local i fc_len named live dump="$BATS_TEST_TMPDIR/journal"

	for ((i = 0; i < 40; i++)); do
		echo data | dd of="$MNT/FCNAME-$i.txt" conv=fsync status=none
	done
	rm -f "$MNT"/FCNAME-*
	umount "$MNT"
	mount "$LOOPDEV" "$MNT"
	echo other >"$MNT/other"
	sync -f "$MNT"

	fc_len=$(dumpe2fs -h "$LOOPDEV" 2>/dev/null | sed -n 's/^Fast commit length: *//p')
	[[ $fc_len =~ ^[1-9][0-9]*$ ]] || fail "no fast-commit area: ${fc_len:-none}"
	blockdev --flushbufs "$LOOPDEV"
	debugfs -R "dump <8> $dump" "$LOOPDEV" >/dev/null 2>&1
	# blocks of the area (the journal's last fc_len) that hold a deleted name
	named=$(perl -e 'open(my $f, "<", $ARGV[0]) or die; binmode $f; my ($b, $n);
		seek($f, -$ARGV[1] * 4096, 2) or die;
		while (read($f, $b, 4096) == 4096) { $n++ if $b =~ /FCNAME-/ } print $n + 0' \
		"$dump" "$fc_len")
	((named >= 10)) || fail "the writes made $named fast commits with a name"

	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	live=$(jq -r '.filesystems[0].audit_journal_live_blocks' <<<"$output")
	((live < named)) ||
		fail "$live journal blocks counted live, $named fast commits hold deleted names"
}

# bats test_tags=root
@test "--audit changes nothing: the image is the same, no FITRIM, no journal erase" {
	require_root
	require_cmd strace
	make_quiet_ext4 64
	make_pii_files "$MNT/gone" GONE 10
	sync
	rm -rf "$MNT/gone"
	sync
	local before after
	before=$(sha256sum <"$IMG")

	run_traced --audit -v "$MNT"
	assert_failure 2
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
@test "htree directory: every deleted name a raw read of its blocks finds is counted, and -v names the directory" {
	require_root
	require_cmd jq debugfs
	make_quiet_ext4 192
	mkdir "$MNT/h"
	# one process for all 3000, not one subshell each (slow under load)
	(cd "$MNT/h" && printf 'PII-SSN-%05d-Jane-Public-long-name.txt\0' $(seq 0 2999) |
		xargs -0 touch) || fail "could not create the files"
	sync
	rm -f "$MNT"/h/PII-SSN-*[13579]-Jane-*
	sync

	local want raw names
	want=$(deleted_names_debugfs "$LOOPDEV" /h)
	raw=$(deleted_names_raw "$LOOPDEV" /h)
	names=$(audit_value .audit_deleted_names "$MNT")
	echo "# deleted names: audit $names, debugfs $want, raw read $raw, of 1500 deleted" >&3
	# libext2fs's walk sees only removed entries whose rec_len chain holds;
	# the raw read sees every copy, wherever it lies in the block; none of
	# the 1500 live names is a deleted one
	((names >= want && names >= raw && names <= 1500)) ||
		fail "audit $names, debugfs $want, raw read $raw deleted names of 1500"
	run --separate-stderr "$FSTRIM_EXT" --audit -v "$MNT"
	if [[ -e /sys/fs/ext4/features/dirent_pack_wipe ]]; then
		# the patched kernel leaves no name behind
		assert_equal "$names" 0
		[[ $status -eq 0 || $status -eq 2 ]] || fail "status $status: $stderr"
		refute_line --partial "deleted names in"
		assert_line --regexp "^$MNT: audit: Linux .*directory-pack fix yes$"
	else
		((names > 0)) || fail "an unpatched kernel leaves names in the htree leaves"
		assert_equal "$status" 2
		assert_line "$MNT: audit: $names deleted names in /h"
		assert_line --regexp "^$MNT: audit: Linux .*directory-pack fix no$"
		assert_equal "$(audit_value '.audit_directories[0]' "$MNT")" /h
	fi
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
	deleted_on_external_journal "$jdev"

	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_journal_external' <<<"$output")" true
	assert_equal "$(jq -r '.filesystems[0].audit_journal_device' <<<"$output")" "$jdev"
	(($(jq -r '.filesystems[0].audit_journal_nonzero_blocks' <<<"$output") > 0)) ||
		fail "the external journal should hold data: $output"

	run -2 "$FSTRIM_EXT" --audit -v "$MNT"
	assert_line "$MNT: audit: external journal UUID=$uuid on $jdev"

	run -0 "$FSTRIM_EXT" --journal "$MNT"
	assert_equal "$(audit_value .audit_journal_nonzero_blocks "$MNT")" 0
	run -0 "$FSTRIM_EXT" --audit "$MNT"
}

# A copy of the journal device (a clone, a snapshot, an image attached for
# forensics) carries its UUID too, and libblkid returns one of the two by
# probe order: with the clone on the lower loop device it returned the
# clone, whose journal is empty, and the audit said "0 of N blocks hold
# older transactions" while the journal the kernel uses held the deleted
# names. The journal is the device whose number the superblock records.
# bats test_tags=root
@test "external journal: a clone with its UUID attached first: the device the kernel uses is read" {
	require_root
	require_cmd jq mke2fs
	local jimg="$BATS_TEST_TMPDIR/journal.img" clone="$BATS_TEST_TMPDIR/clone.img" jdev cdev
	truncate -s 32M "$jimg"
	mke2fs -q -F -O journal_dev -b 4096 "$jimg" >/dev/null
	cp "$jimg" "$clone"
	attach_loop "$clone"
	cdev=$LOOPDEV
	attach_loop "$jimg"
	jdev=$LOOPDEV
	[[ $(blkid -s UUID -o value "$cdev") == "$(blkid -s UUID -o value "$jdev")" ]] ||
		fail "the clone does not carry the journal's UUID"
	deleted_on_external_journal "$jdev"

	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_journal_device' <<<"$output")" "$jdev"
	(($(jq -r '.filesystems[0].audit_journal_nonzero_blocks' <<<"$output") > 0)) ||
		fail "the journal the kernel uses holds the deletion: $output"

	# the read back of --journal reads that one too: erased, and verified there
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	assert_equal "$(audit_value .audit_journal_nonzero_blocks "$MNT")" 0
	[[ $(strings -a "$jdev" | grep -c PII-SSN-GONE) -eq 0 ]] ||
		fail "deleted names left in the journal on $jdev"
}

# Without udev's links and without a scan (blkid.conf's EVALUATE=udev, as
# on a host whose udev does not run), the UUID finds no device: the
# journal is the device whose number the filesystem recorded, checked
# by the UUID in its superblock. It used to be "journal not read".
# bats test_tags=root
@test "external journal: found by its device number where the UUID finds no device" {
	require_root
	require_cmd jq mke2fs
	local jimg="$BATS_TEST_TMPDIR/journal.img" jdev conf="$BATS_TEST_TMPDIR/blkid.conf"
	truncate -s 32M "$jimg"
	attach_loop "$jimg"
	jdev=$LOOPDEV
	mke2fs -q -F -O journal_dev -b 4096 "$jdev" >/dev/null
	deleted_on_external_journal "$jdev"
	printf 'EVALUATE=udev\nCACHE_FILE=/dev/null\n' >"$conf"
	# the premise: no udev link names the journal's UUID
	[[ ! -e /dev/disk/by-uuid/$(blkid -s UUID -o value "$jdev") ]] ||
		_skip_or_fail "udev links the journal by UUID here"

	run -2 --separate-stderr env BLKID_CONF="$conf" "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_journal_device' <<<"$output")" "$jdev"
	(($(jq -r '.filesystems[0].audit_journal_nonzero_blocks' <<<"$output") > 0)) ||
		fail "the external journal should hold data: $output"
	run -0 env BLKID_CONF="$conf" "$FSTRIM_EXT" --journal "$MNT"
	run -0 env BLKID_CONF="$conf" "$FSTRIM_EXT" --audit "$MNT"
}

# bats test_tags=root
@test "--journal --audit: the steps, then the audit, in one run" {
	require_root
	make_quiet_ext4 64
	make_pii_files "$MNT/gone" GONE 10
	sync
	rm -rf "$MNT/gone"
	sync
	# the deleted files are on the device: an audit alone finds them
	run -2 "$FSTRIM_EXT" -v --audit "$MNT"
	assert_line --index 0 --regexp "^$MNT: audit: "
	refute_line --partial "audit: nothing found"
	# the audit of the same run comes after the trim and the journal step
	run -0 "$FSTRIM_EXT" -v --journal --audit "$MNT"
	assert_line --index 0 --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via "
	assert_line --index 1 --regexp "^$MNT: audit: nothing found; journal: 0 of [0-9]+ blocks hold older transactions, "
}

# bats test_tags=root
@test "xfs: not examined, so never status 0: 32 for the one path, 64 beside an ext4" {
	require_root
	require_cmd mkfs.xfs
	local tab="$BATS_TEST_TMPDIR/fstab"
	make_loop_fs xfs 300
	run -32 "$FSTRIM_EXT" --audit "$MNT"
	assert_output "$MNT: audit: not an ext2/3/4 or btrfs filesystem; nothing examined"
	printf '%s %s xfs defaults 0 0\n' "$LOOPDEV" "$MNT" >"$tab"
	make_quiet_ext4 64
	printf '%s %s ext4 defaults 0 0\n' "$LOOPDEV" "$MNT" >>"$tab"
	run -64 "$FSTRIM_EXT" --audit -I "$tab"
	assert_line --regexp "^$MNT: audit: nothing found; "
	# --json: the xfs filesystem failed, the ext4 is ok
	run -64 --separate-stderr "$FSTRIM_EXT" --audit --json -I "$tab"
	assert_equal "$(jq -r '.filesystems[] | select(.fstype == "xfs") | .status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[] | select(.fstype == "xfs") | .error' <<<"$output")" \
		"audit: not examined in full"
	assert_equal "$(jq -r '.filesystems[] | select(.fstype == "ext4") | .status' <<<"$output")" ok
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
@test "--listed-in --audit: 2 when one filesystem holds remnants, 0 when none does" {
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
	rm -rf "$mnt1/gone"
	sync
	run -2 "$FSTRIM_EXT" --audit -I "$tab"
	assert_line --regexp "^$mnt1: audit: deleted data found; journal: [1-9][0-9]* of "
	assert_line --regexp "^$MNT: audit: nothing found; journal: 0 of "
	# usage errors keep status 1
	run -1 "$FSTRIM_EXT" --audit --bogus -I "$tab"
}

# bats test_tags=root
@test "a fresh filesystem with one file written and synced audits clean: its live log is not deleted data" {
	require_root
	require_cmd jq
	make_quiet_ext4 64
	echo hello >"$MNT/kept"
	sync
	run -0 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_found' <<<"$output")" false
	assert_equal "$(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output")" 0
	# the scenario: the journal does hold the commit of "kept"
	(($(jq -r '.filesystems[0].audit_journal_live_blocks' <<<"$output") > 0)) ||
		fail "the live log should hold the commit: $output"
	run -0 "$FSTRIM_EXT" --audit "$MNT"
	assert_output --regexp "^$MNT: audit: nothing found; journal: 0 of [0-9]+ blocks hold older transactions, [1-9][0-9]* the live log; "
}

# inode_table_copies DEV: how many copies of inode-table blocks the live
# log holds beyond one per block (debugfs logdump, against the tables'
# places in dumpe2fs)
inode_table_copies() {
	local tables
	tables=$(dumpe2fs "$1" 2>/dev/null |
		sed -n 's/^ *Inode table at \([0-9]*\)-\([0-9]*\).*/\1 \2/p')
	debugfs -R "logdump -a" "$1" 2>/dev/null |
		sed -n 's/^ *FS block \([0-9]*\) logged at .*/\1/p' |
		awk -v t="$tables" 'BEGIN { n = split(t, v, /[ \n]/) }
			{ for (i = 1; i < n; i += 2) if ($1 >= v[i] && $1 <= v[i + 1]) seen[$1]++ }
			END { for (b in seen) extra += seen[b] - 1; print extra + 0 }'
}

# Only timestamps change: the inode-table block of 16 files is logged
# again and again in the live log, each older copy differing from the
# newest in the records' times (12 bytes side by side, often all
# printable) and checksums. Nothing was deleted: nothing is found.
# bats test_tags=root
@test "timestamps changed, nothing deleted: older inode-table copies in the live log are no deleted data" {
	require_root
	require_cmd jq debugfs dumpe2fs
	make_quiet_ext4 64
	local i r
	for i in $(seq 16); do echo kept >"$MNT/f$i"; done
	sync
	for r in 1 2 3; do
		for i in $(seq 16); do
			touch -d "@$((1700000000 + i * 7919 + r * 104729))" "$MNT/f$i"
		done
		sync
	done
	# the scenario: the live log holds older copies of an inode table
	(($(inode_table_copies "$LOOPDEV") >= 2)) ||
		fail "no inode-table block logged more than once: $(debugfs -R "logdump -a" "$LOOPDEV" 2>&1)"
	run -0 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_found' <<<"$output")" false
	assert_equal "$(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output")" 0
}

# The rule for inode tables still reads the records' text: an extended
# attribute stored in the inode, removed, leaves its name and value in
# the older copy of the inode-table block in the live log.
# bats test_tags=root
@test "a removed in-inode extended attribute in an older inode-table copy of the live log is found" {
	require_root
	require_cmd jq python3
	make_quiet_ext4 64
	echo kept >"$MNT/f"
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.fsx-secret", b"PII-XATTR-VALUE-42")' "$MNT/f"
	sync
	python3 -c 'import os, sys; os.removexattr(sys.argv[1], "user.fsx-secret")' "$MNT/f"
	sync
	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_found' <<<"$output")" true
	(($(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output") >= 1)) ||
		fail "the older inode copy was not counted: $output"
	run -0 --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	run -0 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output")" 0
}

# utf16_on_device DEV: how many "SECRET-U16-" the device holds in UTF-16LE
utf16_on_device() {
	dd if="$1" iflag=direct bs=1M status=none |
		grep -aoP 'S\x00E\x00C\x00R\x00E\x00T\x00-\x00U\x001\x006\x00-\x00' |
		wc -l
}

# data=journal logs a file's contents, and frees them on deletion without
# a revoke record. A file of 16 blocks written and fsynced, then deleted and its
# directory fsynced: its contents lie in the live log, which no
# checkpoint has passed, in a block the allocator holds free. UTF-16
# text has no run of printable bytes: only that the block is free now
# can tell that the copy is deleted data.
# bats test_tags=root
@test "data=journal: a deleted file's contents in the live log are found, whatever they hold" {
	require_root
	require_cmd jq iconv
	MOUNT_OPTS=noatime,data=journal make_loop_fs ext4 64 -b 4096 \
		-E lazy_itable_init=0,lazy_journal_init=0
	local text
	# 16 blocks of it, 64 KiB
	printf -v text 'SECRET-U16-%04d.' {0..2099}
	iconv -f ASCII -t UTF-16LE <<<"$text" | head -c 65536 >"$MNT/utf16"
	sync "$MNT/utf16"
	rm "$MNT/utf16"
	sync "$MNT"
	# the scenario: the contents are on the device, in the journal only
	run -0 utf16_on_device "$LOOPDEV"
	((output > 0)) || fail "the contents never reached the device"
	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_found' <<<"$output")" true
	# its 16 blocks at least, whatever else the log holds
	(($(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output") >= 16)) ||
		fail "the deleted contents were not counted: $output"
	# --journal erases them, and the audit after agrees with the device
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -0 utf16_on_device "$LOOPDEV"
	assert_output 0
	run -0 "$FSTRIM_EXT" --audit "$MNT"
	assert_output --partial "$MNT: audit: nothing found; journal: 0 of "
}

# physical_blocks FILE: the device blocks FILE lies in, as filefrag -v
# prints its extents
physical_blocks() {
	filefrag -v "$1" | awk '$1 ~ /^[0-9]+:$/ { print $4, $5 }'
}

# The same contents, but the file's blocks are taken by another file
# before the audit: not free now, and the newer copies in the live log
# hold other text. A filesystem filled but for 32 blocks: the deleted
# file takes them, and the next file must take the same. Only the copy
# of the group's block bitmap, logged in between with the blocks free,
# tells that the older copies are a deleted file's. The files are
# written by the shell itself (printf), as ext4 places a process's
# files from the same goal.
# bats test_tags=root
@test "data=journal: a deleted file's contents in blocks another file has taken since are found, whatever they hold" {
	require_root
	require_cmd jq fallocate filefrag
	MOUNT_OPTS=noatime,data=journal make_loop_fs ext4 64 -b 4096 -m 0 \
		-E lazy_itable_init=0,lazy_journal_init=0
	local avail left fmt unit='' c i other
	avail=$(df --output=avail -B4096 "$MNT" | tail -n1)
	fallocate -l $(((avail - 32) * 4096)) "$MNT/filler"
	sync -f "$MNT"
	left=$(($(df --output=avail -B4096 "$MNT" | tail -n1)))
	((left >= 16)) || fail "$left blocks left free"
	# UTF-16LE, 32 bytes a unit, 128 units a block
	for c in S E C R E T - U 1 6 - A B C D .; do
		unit+="$c\\x00"
	done
	for ((i = 0; i < left * 128; i++)); do
		fmt+=$unit
	done
	# shellcheck disable=SC2059 # the format is the contents
	printf "$fmt" >"$MNT/gone"
	sync "$MNT/gone"
	physical_blocks "$MNT/gone" >"$BATS_TEST_TMPDIR/gone.blocks"
	rm "$MNT/gone"
	sync "$MNT"
	printf -v other 'other-%09d.' $(seq 0 $((left * 256 - 1)))
	printf '%s' "$other" >"$MNT/taken"
	sync "$MNT/taken"
	# the scenario: the new file lies where the deleted one did
	assert_equal "$(physical_blocks "$MNT/taken")" "$(cat "$BATS_TEST_TMPDIR/gone.blocks")"
	run -0 utf16_on_device "$LOOPDEV"
	((output > 0)) || fail "the contents never reached the device"
	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	(($(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output") >= left)) ||
		fail "the $left deleted blocks were not all counted: $output"
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -0 utf16_on_device "$LOOPDEV"
	assert_output 0
}

# bats test_tags=root
@test "deleted contents in free space that no FITRIM reached are found: --journal-only, a device without discard" {
	require_root
	require_cmd jq
	make_quiet_ext4 64
	make_pii_files "$MNT/gone" GONE 20
	sync
	rm -rf "$MNT/gone"
	run -2 --separate-stderr "$FSTRIM_EXT" --journal-only --audit --json "$MNT"
	(($(jq -r '.filesystems[0].audit_free_nonzero_blocks' <<<"$output") >= 20)) ||
		fail "the 20 deleted contents lie in free space: $output"
	assert_equal "$(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output")" 0
	# the device agrees: the contents are readable
	run -0 count_device "$LOOPDEV" CONTENT-GONE
	assert_output 20

	make_quiet_ext4 64
	make_pii_files "$MNT/gone" NODISC 20
	sync
	rm -rf "$MNT/gone"
	disable_discard "$LOOPDEV"
	# found (2), and the filesystem failed (32): --journal's read back of
	# the free space that could not be trimmed found the data too
	run -34 --separate-stderr "$FSTRIM_EXT" --journal-erase=zeroout --audit "$MNT"
	assert_equal "${stderr_lines[0]}" "fstrim-ext: $MNT: the discard operation is not supported"
	[[ ${stderr_lines[1]} == "fstrim-ext: $MNT: the free space was not trimmed (the discard operation is not supported): "* ]] ||
		fail "stderr: $stderr"
	assert_output --regexp "^$MNT: audit: deleted data found; .*; free space: [1-9][0-9]* blocks hold data \(the device cannot discard\), "
	run -0 count_device "$LOOPDEV" CONTENT-NODISC
	assert_output 20
}

# A 3 GiB filesystem, a deleted 4 KiB file of markers just past a deleted
# 1.6 MiB one: the audit reads all free space, so it finds them, and says
# it read all of it (a read of 1 GiB in pieces spread over the free space
# missed them and said "nothing found", status 0).
# bats test_tags=root
@test "all free space is read: markers past the first gigabyte's pieces are found" {
	require_root
	require_cmd jq
	make_quiet_ext4 3072 -E lazy_itable_init=1,lazy_journal_init=0
	head -c $((1600 * 1024)) /dev/zero | tr '\0' 'x' >"$MNT/big"
	yes AUDIT-FAR-MARKER | head -c 4096 >"$MNT/marker"
	sync
	rm "$MNT/big" "$MNT/marker"
	sync
	run -0 count_device "$LOOPDEV" AUDIT-FAR-MARKER
	(( output > 0 )) || fail "the markers are not on the device"
	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	local free read
	free=$(jq -r '.filesystems[0].audit_free_bytes' <<<"$output")
	read=$(jq -r '.filesystems[0].audit_free_read_bytes' <<<"$output")
	((free > 2 * 1073741824)) || fail "free space: $output"
	assert_equal "$read" "$free"
	(($(jq -r '.filesystems[0].audit_free_nonzero_blocks' <<<"$output") >= 1)) ||
		fail "the deleted markers were not found: $output"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" found
	run -2 "$FSTRIM_EXT" --audit "$MNT"
	assert_output --regexp "; free space: [1-9][0-9]* blocks hold data.*, (2\.[0-9]+) GiB read of \1 GiB; not examined: freed inodes"
}

# bats test_tags=root
@test "a deleted name without its entry header, in the slack of a live entry, is counted" {
	require_root
	require_cmd jq debugfs
	make_quiet_ext4 64 -O ^metadata_csum
	mkdir "$MNT/d"
	: >"$MNT/d/kept-file-name.txt"
	sync
	umount "$MNT"
	local blk
	blk=$(debugfs -R "blocks /d" "$LOOPDEV" 2>/dev/null | tr -d ' ')
	[[ $blk =~ ^[0-9]+$ ]] || fail "block of /d: $blk"
	# ".", ".." and "kept-file-name.txt" (at byte 24, its name ends at 50,
	# its rec_len runs to the end of the block): an old name right after
	# it, whose header the live entry took over
	printf 'PII-SSN-OVERLAP-Jane-Public.txt' |
		dd of="$LOOPDEV" bs=1 seek=$((blk * 4096 + 50)) conv=notrunc status=none
	# libext2fs's removed-entry walk does not see it
	run -0 debugfs -R "ls -d /d" "$LOOPDEV"
	refute_output --partial OVERLAP
	mount -o noatime "$LOOPDEV" "$MNT"
	run -2 "$FSTRIM_EXT" --audit -v "$MNT"
	assert_line "$MNT: audit: 1 deleted names in /d"
	assert_equal "$(audit_value .audit_deleted_names "$MNT")" 1
}

# 1 KiB blocks on a loop device whose discard granularity is 4 KiB, files
# of one block, one kept and one deleted in turn: FITRIM skips every
# deleted one, each a free extent below the granularity. The last one
# also borders the rest of ext4's group preallocation, free in the
# disk's bitmap but used to the allocator: on the disk it starts a long
# free extent, yet FITRIM still sees one block. Written from one CPU
# without delayed allocation, so that every file comes from the same
# preallocation, in order.
# bats test_tags=root
@test "1 KiB blocks: deleted contents FITRIM cannot reach fail --journal and are found with the reason, and the device is not blamed" {
	require_root
	require_cmd jq filefrag taskset
	local gran n blk
	MOUNT_OPTS=noatime,nodelalloc make_loop_fs ext4 64 -b 1024 \
		-E lazy_itable_init=0,lazy_journal_init=0
	gran=$(cat "/sys/block/${LOOPDEV#/dev/}/queue/discard_granularity")
	[[ $gran == 4096 ]] || fail "loop discard granularity is $gran, not 4096"
	mkdir "$MNT/d"
	# until the last deleted block starts a 4 KiB unit, which a read of
	# the disk's free extents would take as discarded
	n=0
	while :; do
		# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
		blk=$(taskset -c 0 sh -c 'echo "KEPT-CONTENT-$1" >"$2/d/kept-$1" &&
			echo "GONE-CONTENT-$1" >"$2/d/gone-$1" &&
			filefrag -v -b1024 "$2/d/gone-$1"' sh "$n" "$MNT" |
			awk '$1 == "0:" { sub(/\.\./, "", $4); print $4 }')
		[[ $blk =~ ^[0-9]+$ ]] || fail "no block for gone-$n: $blk"
		n=$((n + 1))
		((n < 20 || blk % 4 != 0)) || break
		((n < 200)) || fail "no deleted block at a 4 KiB boundary"
	done
	sync
	rm -f "$MNT"/d/gone-*
	sync

	# the contents stay, so --journal fails, saying where, not blaming the device
	run -1 --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	[[ $stderr != *"erase what"* ]] || fail "the device blamed: $stderr"
	grep -Fxq "fstrim-ext: $MNT: $n free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), $n in free extents shorter than the discard granularity (4 KiB)" <<<"$stderr" ||
		fail "no line for the $n blocks: $stderr"
	run -0 count_device "$LOOPDEV" GONE-CONTENT
	assert_output "$n"

	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit_free_nonzero_blocks' <<<"$output")" "$n"
	assert_equal "$(jq -r '.filesystems[0].audit_free_below_granularity_blocks' <<<"$output")" "$n"
	assert_equal "$(jq -r '.filesystems[0].audit_free_held_blocks' <<<"$output")" 0
	run -2 "$FSTRIM_EXT" --audit "$MNT"
	assert_output --partial "; free space: $n blocks hold data (FITRIM cannot reach $n: $n in free extents below the discard granularity, 0 held by the allocator), "
}
