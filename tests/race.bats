#!/usr/bin/env bats
# Race-free targeting: between choosing a filesystem and issuing an ioctl,
# nothing may make fstrim-ext act on another one. Each test holds the
# command after the choice and before the open (the LD_PRELOAD shim
# tests/preload/pause.so, see test_helper/workload.bash), swaps what the
# chosen path names, and checks that the command refuses: no FITRIM and no
# journal ioctl on the swapped-in filesystem (strace -y), and the deleted
# contents on its device, which any discard would wipe, all still there.

# shellcheck disable=SC2154 # stderr comes from tool_wait and run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-180}

setup() {
	load test_helper/common-setup
	load test_helper/workload
	_common_setup
	require_root
	require_cmd strace mkfifo findmnt
	T=$BATS_TEST_TMPDIR
}

teardown() {
	_common_teardown
}

# Two quiet ext4 filesystems: A (the chosen one) at $T/a, B (the victim)
# at $T/b with MARKERS deleted files whose contents stay on its device.
two_filesystems() {
	make_quiet_ext4 64
	A_DEV=$LOOPDEV
	umount "$MNT"
	mkdir -p "${1:-$T/a}"
	track_mount "$A_DEV" "${1:-$T/a}"
	make_quiet_ext4 64
	B_DEV=$LOOPDEV
	umount "$MNT"
	mkdir -p "$T/b"
	track_mount "$B_DEV" "$T/b"
	plant_markers "$T/b" victim 20
	B_MARKERS=$(markers_on_device "$B_DEV" victim)
	[[ $B_MARKERS -eq 20 ]] || fail "markers not on the device: $B_MARKERS"
}

assert_victim_untouched() {
	assert_no_trim_ioctl
	[[ $(markers_on_device "$B_DEV" victim) -eq $B_MARKERS ]] ||
		fail "the other filesystem was discarded: $(markers_on_device "$B_DEV" victim) of $B_MARKERS markers left"
}

# Let the paused command go on after the swap: it must refuse $T/a, with
# status $1 and the line that says why, and leave the victim alone.
release_and_assert_refused() {
	tool_release
	tool_wait
	[[ $status -eq $1 ]] || fail "status $status, stderr: $stderr"
	[[ $stderr == *"$T/a: the mount changed after it was chosen; not trimmed"* ]] ||
		fail "stderr: $stderr"
	assert_victim_untouched
}

# bats test_tags=root
@test "-I: a symlink planted at the chosen mountpoint is not followed" {
	two_filesystems
	write_table "$T/table" "$T/a"
	tool_start_paused 1 -v --journal -I "$T/table"
	tool_wait_paused
	umount "$T/a"
	rmdir "$T/a"
	ln -s "$T/b" "$T/a"
	tool_release
	tool_wait
	[[ $status -eq 32 ]] || fail "status $status, stderr: $stderr"
	[[ $stderr == *"$T/a"*"symbolic links"* ]] || fail "stderr: $stderr"
	[[ -z $output ]] || fail "a report for a filesystem that was not trimmed: $output"
	assert_victim_untouched
}

# bats test_tags=root
@test "-I: a symlink planted in a parent directory of the mountpoint is not followed" {
	mkdir -p "$T/p" "$T/q/a"
	two_filesystems "$T/p/a"
	umount "$T/b"
	track_mount "$B_DEV" "$T/q/a"
	write_table "$T/table" "$T/p/a"
	tool_start_paused 1 -v --journal -I "$T/table"
	tool_wait_paused
	umount "$T/p/a"
	mv "$T/p" "$T/p.old"
	ln -s "$T/q" "$T/p"
	tool_release
	tool_wait
	[[ $status -eq 32 ]] || fail "status $status, stderr: $stderr"
	[[ $stderr == *"$T/p/a"*"symbolic links"* ]] || fail "stderr: $stderr"
	assert_victim_untouched
}

# bats test_tags=root
@test "-I: another filesystem bind-mounted over the chosen mountpoint is refused" {
	two_filesystems
	write_table "$T/table" "$T/a"
	tool_start_paused 1 -v --journal -I "$T/table"
	tool_wait_paused
	track_mount --bind "$T/b" "$T/a"
	release_and_assert_refused 32
}

# bats test_tags=root
@test "-I: the chosen filesystem replaced by another at the same path is refused" {
	two_filesystems
	write_table "$T/table" "$T/a"
	tool_start_paused 1 -v --journal -I "$T/table"
	tool_wait_paused
	umount "$T/a"
	track_mount "$B_DEV" "$T/a"
	release_and_assert_refused 32
}

# bats test_tags=root
@test "single path: a bind mount placed over the path after the lookup is refused" {
	two_filesystems
	tool_start_paused 1 -v --journal "$T/a"
	tool_wait_paused
	track_mount --bind "$T/b" "$T/a"
	release_and_assert_refused 1
}

# bats test_tags=root
@test "single path: a subdirectory bind-mounted over the path is refused" {
	two_filesystems
	mkdir "$T/a/sub"
	tool_start_paused 1 -v --journal "$T/a"
	tool_wait_paused
	track_mount --bind "$T/a/sub" "$T/a"
	tool_release
	tool_wait
	[[ $status -eq 1 ]] || fail "status $status, stderr: $stderr"
	[[ $stderr == *"the mount changed after it was chosen"* ]] || fail "stderr: $stderr"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a refusal stops only that filesystem: the others of the run are trimmed" {
	two_filesystems
	make_quiet_ext4 64
	C=$MNT
	# trimmed newest entry first: $T/a, then C
	write_table "$T/table" "$C" "$T/a"
	tool_start_paused 1 -v --journal -I "$T/table"
	tool_wait_paused
	track_mount --bind "$T/b" "$T/a"
	tool_release
	tool_wait
	[[ $status -eq 64 ]] || fail "status $status, stderr: $stderr"
	[[ $stderr == *"$T/a: the mount changed after it was chosen; not trimmed"* ]] ||
		fail "stderr: $stderr"
	[[ $output == "$C: "*" trimmed on "*", journal checkpointed and discarded via "* ]] ||
		fail "stdout: $output"
	# every ioctl went to C's descriptor
	if grep -E 'FITRIM|0x66, 0x2b' "$STRACE_LOG" | grep -v "<$C>"; then
		fail "an ioctl went elsewhere than $C"
	fi
	grep -q "ioctl([0-9]*<$C>, FITRIM" "$STRACE_LOG" || fail "C was not trimmed"
	[[ $(markers_on_device "$B_DEV" victim) -eq $B_MARKERS ]] || fail "B was discarded"
}
