#!/usr/bin/env bats
# What a --journal run reads back on ext4: what it discarded and the
# journal, not the whole free space again and again; and what that
# cheaper read back must still find.
# shellcheck disable=SC2154 # $stderr comes from run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	_common_setup
	require_root
	require_cmd jq dumpe2fs filefrag e2fsck
}

teardown() {
	_common_teardown
}

# The bytes read from $LOOPDEV so far (its sectors-read counter).
bytes_read() {
	local stat
	read -ra stat <"/sys/block/${LOOPDEV#/dev/}/stat"
	echo $((stat[2] * 512))
}

# journal_bytes DEV: the size of the filesystem's journal.
journal_bytes() {
	dumpe2fs -h "$1" 2>/dev/null | awk -F: '
		/^Block size/ { gsub(/ /, "", $2); bs = $2 }
		/^Total journal blocks/ { gsub(/ /, "", $2); n = $2 }
		END { print bs * n }'
}

# run_counted ARGS...: fstrim-ext --json ARGS with the caches dropped
# before, as a weekly run meets them; sets READ (bytes read from the
# device), and JSON, the document.
run_counted() {
	local before
	sync
	echo 3 >/proc/sys/vm/drop_caches
	before=$(bytes_read)
	run --separate-stderr "$FSTRIM_EXT" --json "$@"
	READ=$(($(bytes_read) - before))
	JSON=$output
}

field() {
	jq -r ".filesystems[0].$1" <<<"$JSON"
}

# write_marked DIR N MARK: N files of 8 MiB, every line MARK, each synced.
write_marked() {
	local i
	mkdir -p "$1"
	for ((i = 0; i < $2; i++)); do
		yes "$3-$i" | head -c 8M >"$1/f$i"
		sync -f "$1"
	done
}

@test "--journal: a run with nothing deleted since the last reads the journal, not the free space" {
	local journal free
	make_loop_fs ext4 2048 -b 4096 -J size=64
	journal=$(journal_bytes "$LOOPDEV")
	((journal == 64 << 20)) || fail "journal of $journal bytes"

	# the first run of a mount reads back all it discarded: all the free space
	run_counted --journal "$MNT"
	assert_equal "$status" 0
	free=$(field trim_readback_bytes)
	((free > 1900 << 20)) || fail "the first run read back $free bytes of free space"
	assert_equal "$(field trim_readback_scope)" changed

	run_counted --journal "$MNT"
	assert_equal "$status" 0
	((READ <= journal + (64 << 20))) ||
		fail "the second run read $READ bytes (journal $journal): $JSON"
	assert_equal "$(field trim_verified)" zero
	assert_equal "$(field trim_readback_groups)" 0

	# --read-back=all: every run reads all of it again
	run_counted --journal --read-back=all "$MNT"
	assert_equal "$status" 0
	((READ >= free)) || fail "--read-back=all read $READ bytes, free space $free"
	assert_equal "$(field trim_readback_scope)" all
}

@test "--journal: after 256 MiB deleted, it reads the journal and what FITRIM discarded, and none of it stays" {
	local journal trimmed
	make_loop_fs ext4 2048 -b 4096 -J size=64
	journal=$(journal_bytes "$LOOPDEV")
	write_marked "$MNT/gone" 32 DELETED-256-MIB-MARK
	write_marked "$MNT/kept" 2 KEPT-MARK
	run_counted --journal "$MNT"
	assert_equal "$status" 0

	rm -rf "$MNT/gone"
	sync -f "$MNT"
	run_counted --journal "$MNT"
	assert_equal "$status" 0
	trimmed=$(field trimmed)
	((trimmed >= 256 << 20)) || fail "FITRIM reported $trimmed bytes"
	((READ <= journal + trimmed + (64 << 20))) ||
		fail "the run read $READ bytes (journal $journal, trimmed $trimmed)"
	assert_equal "$(field trim_verified)" zero
	(($(field trim_readback_groups) < $(field block_groups))) ||
		fail "every group was read back: $JSON"

	umount "$MNT"
	run -0 bash -c "dd if='$LOOPDEV' iflag=direct bs=4M status=none | grep -c -a DELETED-256-MIB-MARK || true"
	assert_output 0
	run -0 bash -c "dd if='$LOOPDEV' iflag=direct bs=4M status=none | grep -c -a KEPT-MARK || true"
	((output > 0)) || fail "the kept files are not on the device"
	run -0 e2fsck -fn "$LOOPDEV"
}

@test "--journal: where what a run proved cannot be kept, it says so, and the next run reads all again" {
	make_loop_fs ext4 1024 -b 4096
	# a state directory whose parent does not exist: it cannot be made
	STATE_DIRECTORY=$BATS_TEST_TMPDIR/none/state run_counted --journal "$MNT"
	assert_equal "$status" 0
	assert_equal "$stderr" "fstrim-ext: $MNT: warning: cannot keep what this run read back in $BATS_TEST_TMPDIR/none/state: No such file or directory; the next run reads back all the free space"
	STATE_DIRECTORY=$BATS_TEST_TMPDIR/none/state run_counted --journal "$MNT"
	assert_equal "$status" 0
	(($(field trim_readback_bytes) > 900 << 20)) ||
		fail "the second run read back $(field trim_readback_bytes) bytes"
	# where it can, no word of it
	run_counted --journal "$MNT"
	assert_equal "$status" 0
	assert_equal "$stderr" ""
}

# One process makes the FITRIM calls of a run: a fork for each of the
# block groups of a large filesystem cost more than the trim (issue 41).
@test "--journal on 2,048 block groups: the calls, one a group, are made by one child process" {
	require_cmd strace
	# groups of 1 MiB: 1 KiB blocks, 1,024 a group
	make_loop_fs ext4 2048 -b 1024 -g 1024
	strace -f -qq -e trace=ioctl,clone,clone3,fork,vfork -o "$BATS_TEST_TMPDIR/strace" \
		"$FSTRIM_EXT" --journal "$MNT"
	local calls children
	calls=$(grep -c 'ioctl([0-9]*, FITRIM' "$BATS_TEST_TMPDIR/strace" || true)
	children=$(grep -cE '^[0-9]+ +(clone|clone3|fork|vfork)\(' "$BATS_TEST_TMPDIR/strace" || true)
	((calls >= 2048)) || fail "$calls FITRIM calls"
	((children <= 8)) || fail "$children processes or threads made for $calls FITRIM calls"
}

@test "--journal: after a remount the first run reads back all the free space again" {
	local first
	make_loop_fs ext4 1024 -b 4096
	run_counted --journal "$MNT"
	assert_equal "$status" 0
	first=$(field trim_readback_bytes)
	run_counted --journal "$MNT"
	assert_equal "$status" 0
	assert_equal "$(field trim_readback_bytes)" 0

	umount "$MNT"
	mount "$LOOPDEV" "$MNT"
	run_counted --journal "$MNT"
	assert_equal "$status" 0
	(($(field trim_readback_bytes) >= first - (16 << 20))) ||
		fail "after the remount $(field trim_readback_bytes) bytes read back, first $first"
	[[ $(field trim_readback_why) == *"mount"* ]] || fail "why: $(field trim_readback_why)"
}

# An ext4 without a journal: the device ignores the zeroout of a journal
# too (the loop device turns it into a discard), so a journal would fail
# the run or not by how many of its blocks hold older transactions at
# that moment; the free space alone must decide here.
@test "--journal: a device that ignores discard: the cheaper read back finds what FITRIM left, every run" {
	attach_discard_ignoring_disk 512
	mkfs.ext4 -q -F -b 4096 -O ^has_journal "$LOOPDEV"
	mkdir -p "$MNT"
	track_mount "$LOOPDEV" "$MNT"
	run_counted --journal --quiet-unsupported "$MNT"
	assert_equal "$status" 0
	assert_equal "$(field trim_verified)" zero

	write_marked "$MNT/gone" 2 IGNORED-DISCARD-MARK
	rm -rf "$MNT/gone"
	sync -f "$MNT"
	run_counted --journal --quiet-unsupported "$MNT"
	assert_equal "$status" 1
	[[ $stderr == *"the device did not erase what FITRIM discarded: "* ]] ||
		fail "stderr: $stderr"
	assert_equal "$(field trim_verified)" data-left
	(($(field trim_readback_groups) < $(field block_groups))) ||
		fail "every group was read back: $JSON"

	# a run that found data left proved nothing: the next reads again, and fails again
	run_counted --journal --quiet-unsupported "$MNT"
	assert_equal "$status" 1
	assert_equal "$(field trim_verified)" data-left
}

@test "--journal: a group marked trimmed over a block freed during FITRIM's walk is read back and erased" {
	local shim bs=4096 per block group start
	load test_helper/workload
	# after the sanitizers' runtime, in their build
	shim=$(PAUSE_SHIM="${top_builddir:-$top_srcdir}/tests/preload/trim-race.so" _pause_preload) ||
		exit 1
	make_loop_fs ext4 512 -b 4096
	per=$(dumpe2fs -h "$LOOPDEV" 2>/dev/null | awk -F: '/^Blocks per group/ { gsub(/ /, "", $2); print $2 }')
	write_marked "$MNT/race" 1 RACE-FREED-MARK
	block=$(filefrag -e "$MNT/race/f0" | awk '$1 == "0:" { print $4 + 0 }')
	[[ $block =~ ^[0-9]+$ ]] || fail "no extent for the file"
	group=$((block / per))
	start=$((group * per * bs))
	run_counted --journal "$MNT"
	assert_equal "$status" 0

	# FITRIM of group $group frees the file behind its walk, and later
	# FITRIMs of the group say it was trimmed: only the allocator's account
	# of the group, changed during the run, tells that it must be read
	TRIM_RACE_FILE="$MNT/race/f0" TRIM_RACE_GROUP="$start:$((per * bs))" \
		LD_PRELOAD="$shim" run_counted --journal "$MNT"
	assert_equal "$status" 0
	[[ ! -e $MNT/race/f0 ]] || fail "the shim did not delete the file"
	(($(field trim_readback_groups) >= 1)) || fail "no group read back: $JSON"

	umount "$MNT"
	run -0 bash -c "dd if='$LOOPDEV' iflag=direct bs=4M status=none | grep -c -a RACE-FREED-MARK || true"
	assert_output 0
	run -0 e2fsck -fn "$LOOPDEV"
}

@test "--read-back: an unknown scope is refused before any ioctl" {
	make_loop_fs ext4 64 -b 4096
	run_traced --journal --read-back=some "$MNT"
	assert_equal "$status" 1
	assert_line --index 0 "fstrim-ext: unknown --read-back scope 'some' (use changed or all)"
	assert_no_trim_ioctl
}
