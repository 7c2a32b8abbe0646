#!/usr/bin/env bats
# -a, -A and -I: which filesystems are chosen, and where fstrim-ext
# means to differ from fstrim.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	_common_setup
	require_root
	TAB="$BATS_TEST_TMPDIR/fstab"
}

teardown() {
	_common_teardown
}

# Lines of -v output for our test mounts only, bytes masked.
our_lines() {
	sed -E 's/: [0-9.]+ [KMGTPE]?i?B \([0-9]+ bytes\) trimmed/: N trimmed/' |
		grep -F "$BATS_TEST_TMPDIR" || true
}

@test "-I: newest entry first, each on its device, unwanted entries dropped" {
	make_loop_fs ext4 64
	local a=$MNT adev=$LOOPDEV
	make_loop_fs ext4 64
	local b=$MNT bdev=$LOOPDEV
	make_loop_fs ext4 64
	local c=$MNT cdev=$LOOPDEV
	mkdir "$BATS_TEST_TMPDIR/t"
	track_mount -t tmpfs tmpfs "$BATS_TEST_TMPDIR/t"
	cat >"$TAB" <<-EOT
	$adev $a ext4 defaults 0 0
	$bdev $b ext4 defaults 0 2
	$cdev $c ext4 defaults,X-fstrim.notrim 0 2
	tmpfs $BATS_TEST_TMPDIR/t tmpfs defaults 0 0
	$adev $BATS_TEST_TMPDIR/not-mounted ext4 defaults 0 0
	EOT
	run -0 "$FSTRIM_EXT" -v -I "$TAB"
	run our_lines <<<"$output"
	assert_output - <<-EOT
	$b: N trimmed on $bdev
	$a: N trimmed on $adev
	EOT
}

@test "-t limits the types" {
	require_cmd mkfs.xfs
	make_loop_fs ext4 64
	local a=$MNT adev=$LOOPDEV
	make_loop_fs xfs 320
	local x=$MNT xdev=$LOOPDEV
	printf '%s\n' "$adev $a ext4 defaults 0 0" "$xdev $x xfs defaults 0 0" >"$TAB"
	run -0 "$FSTRIM_EXT" -n -t xfs -I "$TAB"
	assert_output "$x: 0 B (dry run) trimmed on $xdev"
	run -0 "$FSTRIM_EXT" -n -t noxfs -I "$TAB"
	assert_output "$a: 0 B (dry run) trimmed on $adev"
}

@test "-a: a filesystem mounted twice is trimmed once; a bind mount of a subdirectory never" {
	make_loop_fs ext4 64
	mkdir "$MNT/sub" "$BATS_TEST_TMPDIR/again" "$BATS_TEST_TMPDIR/subbind"
	track_mount "$LOOPDEV" "$BATS_TEST_TMPDIR/again"
	track_mount --bind "$MNT/sub" "$BATS_TEST_TMPDIR/subbind"
	run -0 "$FSTRIM_EXT" -n -a
	run our_lines <<<"$output"
	assert_output "$MNT: 0 B (dry run) trimmed on $LOOPDEV"
}

@test "-a: a read-only filesystem is skipped, as fstrim does" {
	make_loop_fs ext4 64
	mount -o remount,ro "$MNT"
	run -0 "$FSTRIM_EXT" -n -a
	run our_lines <<<"$output"
	assert_output ""
	run -0 fstrim -n -a
	run our_lines <<<"$output"
	assert_output ""
}

@test "-I: a read-only bind mount of a writable filesystem is trimmed (fstrim skips it)" {
	make_loop_fs ext4 64
	local ro="$BATS_TEST_TMPDIR/roview"
	mkdir "$ro"
	track_mount --bind "$MNT" "$ro"
	mount -o remount,bind,ro "$ro"
	printf '%s\n' "$LOOPDEV $ro ext4 ro 0 0" >"$TAB"

	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal -I "$TAB"
	assert_output --regexp "^$ro: .* trimmed on $LOOPDEV, journal checkpointed and discarded via [A-Z_0-9]+$"

	# fstrim judges by access(W_OK) on the view and skips it
	run -0 fstrim -v -I "$TAB"
	assert_output ""
}

@test "-I: an overmounted mount is skipped" {
	make_loop_fs ext4 64
	local under=$MNT underdev=$LOOPDEV
	make_loop_fs ext4 64
	local overdev=$LOOPDEV
	umount "$MNT"
	track_mount "$overdev" "$under"
	# the table names the hidden mount first, the visible one later
	printf '%s\n' "$underdev $under ext4 defaults 0 0" >"$TAB"
	run -0 "$FSTRIM_EXT" -n -I "$TAB"
	assert_output ""
	run -0 "$FSTRIM_EXT" -n -I /proc/self/mountinfo
	run our_lines <<<"$output"
	assert_output "$under: 0 B (dry run) trimmed on $overdev"
}

@test "-I stops at the first non-empty table" {
	make_loop_fs ext4 64
	: >"$BATS_TEST_TMPDIR/empty"
	printf '%s\n' "$LOOPDEV $MNT ext4 defaults 0 0" >"$TAB"
	run -0 "$FSTRIM_EXT" -n -I "/nonexistent:$BATS_TEST_TMPDIR/empty:$TAB:/proc/self/mountinfo"
	assert_output "$MNT: 0 B (dry run) trimmed on $LOOPDEV"
}

@test "-a with --journal: per filesystem, unsupported ones are warnings, status 0" {
	require_cmd mkfs.xfs
	make_loop_fs ext4 64
	local e=$MNT edev=$LOOPDEV
	make_loop_fs xfs 320
	local x=$MNT xdev=$LOOPDEV
	printf '%s\n' "$edev $e ext4 defaults 0 0" "$xdev $x xfs defaults 0 0" >"$TAB"
	run -0 "$FSTRIM_EXT" -v --journal -I "$TAB"
	run our_lines <<<"$output"
	assert_line --regexp "^$e: N trimmed on $edev, journal checkpointed and discarded via [A-Z_0-9]+$"
	assert_line "$x: N trimmed on $xdev"
	assert_line "fstrim-ext: $x: the journal step is not supported: xfs has no journal erase interface"
	run -0 "$FSTRIM_EXT" -v --journal --quiet-unsupported -I "$TAB"
	refute_output --partial "not supported"
}
