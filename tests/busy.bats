#!/usr/bin/env bats
# --journal on a filesystem that is being written: the weekly run on a
# busy server must be quiet and true. What writers commit after the erase
# is new work, not a leftover: it never fails the run and never brings a
# second checkpoint or a freeze. On a fast_commit filesystem, where a
# checkpoint can deadlock with an fsync on kernels without the fix, no
# checkpoint is issued at all, and the run says so and fails.
# shellcheck disable=SC2154 # $stderr comes from run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	_common_setup
	require_root
	require_cmd strace e2fsck dd
	FSYNC_STOP="$BATS_TEST_TMPDIR/writer.stop"
	FSYNC_PID=
}

teardown() {
	fsync_writer_stop
	_common_teardown
}

# fsync_writer_start DIR: in the background, rewrite 50 small files in DIR
# one after the other, each with an fsync (dd conv=fsync), until
# fsync_writer_stop; returns once every file has been written once.
fsync_writer_start() {
	local dir=$1 i
	mkdir -p "$dir"
	(
		i=0
		while [[ ! -e $FSYNC_STOP ]]; do
			printf 'row %d of a busy database\n' "$i" |
				dd of="$dir/f$((i % 50))" conv=fsync status=none
			i=$((i + 1))
		done
	) 3>&- &
	FSYNC_PID=$!
	for ((i = 0; i < 600; i++)); do
		[[ -e $dir/f49 ]] && return 0
		kill -0 "$FSYNC_PID" 2>/dev/null || fail "the writer ended early"
		sleep 0.05
	done
	fail "the writer wrote nothing in 30 s"
}

fsync_writer_stop() {
	[[ -n ${FSYNC_PID:-} ]] || return 0
	touch "$FSYNC_STOP"
	wait "$FSYNC_PID" || true
	FSYNC_PID=
}

# checkpoints LOG: journal checkpoints that an strace log shows issued and
# done (EXT4_IOC_CHECKPOINT, or FS_IOC_CHKPT_JRNL where the kernel has it)
checkpoints() {
	grep -c -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x[48]\), 0x[0-9a-f]+\) = 0' "$1" || true
}

# bats test_tags=root
@test "a writer fsyncing beside --journal: every run status 0, one checkpoint, no freeze" {
	local r log committed_since=0

	make_loop_fs ext4 256 -b 4096
	fsync_writer_start "$MNT/db"
	for r in 1 2 3 4 5 6 7 8 9 10; do
		log="$BATS_TEST_TMPDIR/strace.$r"
		run --separate-stderr strace -f -o "$log" -e trace=ioctl \
			"$FSTRIM_EXT" -v --journal "$MNT"
		[[ $status -eq 0 ]] ||
			fail "run $r: status $status: $output / $stderr"
		[[ $output =~ ^"$MNT: ".*" trimmed, journal checkpointed and discarded via "[A-Z_0-9]+(\;\ [0-9]+\ journal\ blocks\ committed\ since)?$ ]] ||
			fail "run $r: $output"
		[[ $output == *"committed since" ]] && committed_since=$((committed_since + 1))
		assert_equal "$(checkpoints "$log")" 1
		! grep -E 'FIFREEZE|FITHAW|BLKZEROOUT' "$log" || fail "run $r froze or zeroed the device"
	done
	fsync_writer_stop
	# the writer's commits did meet the read back: the test saw the case
	((committed_since > 0)) || fail "no run read back a transaction committed after its erase"
	umount "$MNT"
	run -0 e2fsck -fn "$LOOPDEV"
}

# bats test_tags=root
@test "fast_commit on a kernel without the fix: no checkpoint, the run says why and fails" {
	local why

	[[ ! -e /sys/fs/ext4/features/jbd2_fc_checkpoint_fix ]] ||
		_skip_or_fail "this kernel advertises the fix"
	make_loop_fs ext4 256 -b 4096 -O fast_commit
	fsync_writer_start "$MNT/db"
	why="journal step not done: the filesystem has fast_commit, and on this kernel a journal checkpoint can deadlock with an fsync (no /sys/fs/ext4/features/jbd2_fc_checkpoint_fix)"

	run -1 --separate-stderr strace -f -o "$BATS_TEST_TMPDIR/strace" -e trace=ioctl \
		"$FSTRIM_EXT" -v --journal --quiet-unsupported "$MNT"
	assert_output --regexp "^$MNT: .* trimmed$"
	assert_equal "$stderr" "fstrim-ext: $MNT: $why"
	grep -q FITRIM "$BATS_TEST_TMPDIR/strace" || fail "FITRIM was not issued"
	! grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, ' "$BATS_TEST_TMPDIR/strace" ||
		fail "a journal ioctl was issued"

	run -1 --separate-stderr "$FSTRIM_EXT" -n --journal "$MNT"
	assert_equal "$stderr" "fstrim-ext: $MNT: $why"

	load test_helper/workload
	write_table "$BATS_TEST_TMPDIR/table" "$MNT"
	run -32 --separate-stderr "$FSTRIM_EXT" --json --journal --quiet-unsupported \
		-I "$BATS_TEST_TMPDIR/table"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" "journal: ${why#journal step not done: }"

	# the writer was never held up
	fsync_writer_stop
	umount "$MNT"
	run -0 e2fsck -fn "$LOOPDEV"
}
