#!/usr/bin/env bats
# Data safety under load: a writer (files written, fsynced, renamed into
# place, their directory fsynced, checksummed, one in four deleted again,
# in several directories) runs while `fstrim-ext --journal` runs again
# and again on the same filesystem, erasing the journal by discard and
# by zeroout. Afterwards, read back from the device after a remount,
# every file that was fsynced is intact, no deleted file is back, and
# `e2fsck -fn` is clean.
#
# Every run must pass. The one truthful failure a writer that deletes
# could cause, contents of its deleted files in free blocks that ext4's
# allocator holds in a group preallocation (FITRIM cannot reach them;
# journal.bats tests that case on its own), is taken away by turning
# group preallocation off on the test filesystem (mb_group_prealloc 0: a
# small file written and closed before its blocks are allocated gets no
# preallocation at all). Until 2026-12-07 such runs were forgiven, up
# to half of them, on the tool's own word; 0 of 400 runs on this
# project's machine needed it then (load 3 to 7).
#
# SAFETY_RUNS runs per erase method, 50 by default as the issue asks
# (half as many for the data=journal case); SAFETY_RUNS=10 for a quick
# run. Each run starts only once the writer has finished a new batch
# since the previous run began, so every run meets the writer at work
# however loaded the machine is (a fixed quota of files in a fixed time
# failed on a busy machine, where the writer can stall for seconds).

# shellcheck disable=SC2154 # stderr comes from tool_wait and run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-600}

setup() {
	load test_helper/common-setup
	load test_helper/workload
	_common_setup
	require_root
	require_cmd e2fsck sha256sum
	: "${SAFETY_RUNS:=50}"
}

teardown() {
	if [[ -n ${WRITER_PID:-} ]]; then
		touch "$WRITER_STOP"
		wait "$WRITER_PID" 2>/dev/null || true
	fi
	_common_teardown
}

# run_under_load ERASE [MOUNT_OPTS]: the writer, SAFETY_RUNS runs of
# fstrim-ext --journal --journal-erase=ERASE, then every check.
run_under_load() {
	local erase=$1 round
	MOUNT_OPTS=${2:-} make_loop_fs ext4 256 -b 4096
	local manifest="$BATS_TEST_TMPDIR/manifest"
	writer_no_group_prealloc "$LOOPDEV" || fail "group preallocation stays on"

	writer_start "$MNT" 4 "$manifest"
	local before during seen
	seen=$(writer_count)
	before=$seen
	for ((round = 1; round <= SAFETY_RUNS; round++)); do
		seen=$(writer_wait_past "$seen")
		run --separate-stderr "$FSTRIM_EXT" -v --journal --journal-erase="$erase" "$MNT"
		if [[ $status -ne 0 ]]; then
			writer_stop
			fail "run $round: status $status: $stderr"
		fi
		[[ $output == "$MNT: "*" trimmed, journal checkpointed and "* ]] ||
			fail "run $round: $output"
	done
	during=$(($(writer_count) - before))
	writer_stop
	WRITER_PID=

	local written kept
	written=$(writer_count)
	kept=$(grep -c . "$manifest" || true)
	((during >= SAFETY_RUNS)) ||
		fail "the writer did too little during the runs: $during files ($written in all)"

	# what the page cache says, then what the device says
	verify_manifest "$manifest"
	umount "$MNT"
	run e2fsck -fn "$LOOPDEV"
	[[ $status -eq 0 ]] || fail "e2fsck -fn: $output"
	mount -t ext4 ${2:+-o "$2"} "$LOOPDEV" "$MNT"
	verify_manifest "$manifest"
	# and no deleted file came back
	diff <(cut -d' ' -f3- "$manifest" | sort) <(find "$MNT"/d* -type f | sort) ||
		fail "the files on the filesystem are not those the writer kept"
	echo "# $erase${2:+ ($2)}: $SAFETY_RUNS runs, every one passed, $written files written ($during during the runs), $kept kept and checked" >&3
}

# bats test_tags=root
@test "--journal (discard) again and again under a writer: fsynced files intact, e2fsck clean" {
	run_under_load discard
}

# bats test_tags=root
@test "--journal-erase=zeroout again and again under a writer: fsynced files intact, e2fsck clean" {
	run_under_load zeroout
}

# bats test_tags=root
@test "data=journal, discard, under a writer: fsynced files intact, e2fsck clean" {
	SAFETY_RUNS=$(((SAFETY_RUNS + 1) / 2)) run_under_load discard data=journal
}
