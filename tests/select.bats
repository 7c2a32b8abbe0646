#!/usr/bin/env bats
# -a, -A and -I: which filesystems are chosen, and where fstrim-ext
# means to differ from fstrim; and the lookup of a single path.
# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

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

# Run fstrim-ext with system calls failing: seccomp_errno SYSCALL=ERRNO... -- ARGS...
seccomp_errno() {
	local rules=()
	while [[ $1 != -- ]]; do
		rules+=("$1")
		shift
	done
	shift
	/usr/bin/python3 "$top_srcdir/tests/test_helper/seccomp-errno.py" "${rules[@]}" -- \
		"$FSTRIM_EXT" "$@"
}

require_seccomp() {
	require_cmd /usr/bin/python3
	/usr/bin/python3 -c 'import seccomp' 2>/dev/null || _skip_or_fail "needs python3-seccomp"
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
	run -0 our_lines <<<"$output"
	assert_output - <<-EOT
	$c: skipped: X-fstrim.notrim is set
	$BATS_TEST_TMPDIR/not-mounted: skipped: $adev is trimmed through $a
	$b: N trimmed on $bdev
	$a: N trimmed on $adev
	EOT
	# without -v, only what fstrim prints (nothing: it is not a dry run)
	run -0 "$FSTRIM_EXT" -I "$TAB"
	assert_output ""
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

# util-linux 2.39's fstrim, the first with --types, matches the type the
# table gives (is_unwanted_fs(), read at tag v2.39), not the mounted
# filesystem's: fstrim-ext does the same, so -t picks the same entries.
@test "-t matches the table's type, as fstrim 2.39: an fstab entry of type auto only with -t auto" {
	make_loop_fs ext4 64
	printf '%s\n' "$LOOPDEV $MNT auto defaults 0 0" >"$TAB"
	run -0 "$FSTRIM_EXT" -n -v -t ext4 -I "$TAB"
	run -0 our_lines <<<"$output"
	assert_output "$MNT: skipped: not of the types given with -t"
	run -0 "$FSTRIM_EXT" -n -t auto -I "$TAB"
	assert_output "$MNT: 0 B (dry run) trimmed on $LOOPDEV"
	run -0 "$FSTRIM_EXT" -n -t noext4 -I "$TAB"
	assert_output "$MNT: 0 B (dry run) trimmed on $LOOPDEV"
}

@test "-a: a filesystem mounted twice is trimmed once; a bind mount of a subdirectory never" {
	make_loop_fs ext4 64
	mkdir "$MNT/sub" "$BATS_TEST_TMPDIR/again" "$BATS_TEST_TMPDIR/subbind"
	track_mount "$LOOPDEV" "$BATS_TEST_TMPDIR/again"
	track_mount --bind "$MNT/sub" "$BATS_TEST_TMPDIR/subbind"
	run -0 "$FSTRIM_EXT" -n -a
	run -0 our_lines <<<"$output"
	assert_output "$MNT: 0 B (dry run) trimmed on $LOOPDEV"
}

@test "-a: a read-only filesystem is skipped, as fstrim does" {
	make_loop_fs ext4 64
	mount -o remount,ro "$MNT"
	run -0 "$FSTRIM_EXT" -n -a
	run -0 our_lines <<<"$output"
	assert_output ""
	run -0 fstrim -n -a
	run -0 our_lines <<<"$output"
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
	run -0 our_lines <<<"$output"
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
	run -0 our_lines <<<"$output"
	assert_line --regexp "^$e: N trimmed on $edev, journal checkpointed and discarded via [A-Z_0-9]+$"
	assert_line "$x: N trimmed on $xdev"
	assert_line --partial "fstrim-ext: $x: the journal step is not supported: xfs keeps the names"
	run -0 "$FSTRIM_EXT" -v --journal --quiet-unsupported -I "$TAB"
	refute_output --partial "not supported"
}

# bats test_tags=root
@test "-I on a device without discard: chosen for zeroout and --audit, -v says why not for FITRIM" {
	make_loop_fs ext4 64 -b 4096
	disable_discard "$LOOPDEV"
	printf '%s\n' "$LOOPDEV $MNT ext4 defaults 0 0" >"$TAB"

	run -0 --separate-stderr "$FSTRIM_EXT" -v -I "$TAB"
	assert_output "$MNT: skipped: the device cannot discard"
	run -0 --separate-stderr "$FSTRIM_EXT" -I "$TAB"
	assert_output ""

	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal-erase=zeroout -I "$TAB"
	assert_output "$MNT: journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT on $LOOPDEV"
	run -0 grep -cx "fstrim-ext: $MNT: the discard operation is not supported" <<<"$stderr"

	run -0 --separate-stderr "$FSTRIM_EXT" --audit -I "$TAB"
	assert_line --index 0 --regexp "^$MNT: "
	run -0 --separate-stderr "$FSTRIM_EXT" --json --audit -I "$TAB"
	assert_equal "$(jq -r '.filesystems | length' <<<"$output")" 1
	assert_equal "$(jq -r '.filesystems[0].target' <<<"$output")" "$MNT"
	refute [ "$(jq -r '.filesystems[0].status' <<<"$output")" = skipped ]
}

# bats test_tags=root
@test "-I: an fstab mountpoint named through a symbolic link or with /./ is trimmed, as by fstrim" {
	make_loop_fs ext4 64
	ln -s "$MNT" "$BATS_TEST_TMPDIR/link"
	local name
	for name in "$BATS_TEST_TMPDIR/link" "$BATS_TEST_TMPDIR/./mnt0" "$BATS_TEST_TMPDIR//mnt0/"; do
		printf '%s\n' "$LOOPDEV $name ext4 defaults 0 0" >"$TAB"
		run -0 fstrim -n -I "$TAB"
		assert_output "$name: 0 B (dry run) trimmed on $LOOPDEV"
		run -0 "$FSTRIM_EXT" -n -I "$TAB"
		assert_output "$name: 0 B (dry run) trimmed on $LOOPDEV"
	done
	# an entry that still matches nothing is named with -v
	printf '%s\n' "$LOOPDEV $BATS_TEST_TMPDIR/link/lost+found ext4 defaults 0 0" >"$TAB"
	run -0 "$FSTRIM_EXT" -v -I "$TAB"
	assert_output "$BATS_TEST_TMPDIR/link/lost+found: skipped: not mounted"
}

# bats test_tags=root
@test "without STATX_MNT_ID (Linux before 5.8): -I and a single path choose as with it" {
	require_seccomp
	make_loop_fs ext4 64
	local a=$MNT adev=$LOOPDEV
	make_loop_fs ext4 64
	mkdir "$MNT/sub" "$BATS_TEST_TMPDIR/subbind"
	track_mount --bind "$MNT/sub" "$BATS_TEST_TMPDIR/subbind"
	printf '%s\n' "$adev $a ext4 defaults 0 0" "$LOOPDEV $BATS_TEST_TMPDIR/subbind ext4 defaults 0 0" \
		>"$TAB"

	run -0 "$FSTRIM_EXT" -n -v -I "$TAB"
	local with=$output
	assert_line "$a: 0 B (dry run) trimmed on $adev"
	# statx answers ENOSYS: glibc emulates it, without the mount ID
	run -0 seccomp_errno statx=ENOSYS -- -n -v -I "$TAB"
	assert_output "$with"
	run -0 seccomp_errno statx=ENOSYS -- -v "$a"
	assert_output --regexp "^$a: .* trimmed$"
	run -1 --separate-stderr seccomp_errno statx=ENOSYS -- -n "$BATS_TEST_TMPDIR/subbind"
	assert_equal "$stderr" "fstrim-ext: $BATS_TEST_TMPDIR/subbind: not the root of a filesystem (bind mount of /sub from $LOOPDEV)"
}

# bats test_tags=root
@test "openat2 refused with EPERM (a seccomp policy without it): open falls back, as for ENOSYS" {
	require_seccomp
	make_loop_fs ext4 64
	printf '%s\n' "$LOOPDEV $MNT ext4 defaults 0 0" >"$TAB"
	run -0 --separate-stderr seccomp_errno openat2=EPERM -- -v "$MNT"
	assert_output --regexp "^$MNT: .* trimmed$"
	run -0 --separate-stderr seccomp_errno openat2=EPERM -- -v --journal -I "$TAB"
	assert_output --regexp "^$MNT: .* trimmed on $LOOPDEV, journal checkpointed and discarded via [A-Z_0-9]+$"
	refute [ -n "$(grep -F 'cannot open' <<<"$stderr")" ]
}

# A mount tucked under a propagated bind mount: mountinfo lists it last
# at the same mountpoint, but what the path reaches is the other one.
make_tucked_mount() {
	TUCKED="$BATS_TEST_TMPDIR/tucked"
	mkdir "$TUCKED"
	track_mount -t tmpfs tmpfs "$TUCKED"
	mount --make-shared "$TUCKED"
	track_mount --bind "$TUCKED" "$TUCKED"
	make_loop_fs ext4 64
	umount "$MNT"
	track_mount "$LOOPDEV" "$TUCKED"
	# the propagated copy, hidden, comes last
	MOUNTS+=("$TUCKED")
	[[ $(grep -c " $TUCKED " /proc/self/mountinfo) -eq 4 ]] ||
		fail "no tucked mount: $(grep " $TUCKED " /proc/self/mountinfo)"
}

# bats test_tags=root
@test "a mount tucked under a propagated bind mount: the path and -a find the visible one" {
	make_tucked_mount
	run -0 --separate-stderr "$FSTRIM_EXT" -v "$TUCKED"
	assert_output --regexp "^$TUCKED: .* trimmed$"
	run -0 "$FSTRIM_EXT" -n -I /proc/self/mountinfo
	run -0 our_lines <<<"$output"
	assert_output "$TUCKED: 0 B (dry run) trimmed on $LOOPDEV"
	run -0 fstrim -n -I /proc/self/mountinfo
	run -0 our_lines <<<"$output"
	assert_output "$TUCKED: 0 B (dry run) trimmed on $LOOPDEV"
}

# The sanitizers' runtime reads its options from /proc and cannot run
# without it: the ASan and UBSan pass leaves this test out by its tag.
# bats test_tags=root,no-sanitizer
@test "a single path without /proc: the root of ext4 is trimmed, anything unproven refused with why" {
	require_cmd unshare mkfs.xfs
	make_loop_fs ext4 64
	local e=$MNT
	mkdir "$e/sub"
	make_loop_fs xfs 320
	local x=$MNT
	# shellcheck disable=SC2016 # expanded by the inner shell
	run -0 unshare -m --propagation private bash -c '
		umount -l /proc || exit 99
		[[ ! -e /proc/self ]] || exit 98
		"$1" -v "$2"; echo "status $?"
		"$1" -v "$2/sub"; echo "status $?"
		"$1" -v "$3"; echo "status $?"' sh "$FSTRIM_EXT" "$e" "$x"
	assert_line --index 0 --regexp "^$e: .* trimmed$"
	assert_line --index 1 "status 0"
	assert_line --index 2 "fstrim-ext: $e/sub: not the root of a filesystem"
	assert_line --index 3 "status 1"
	assert_line --index 4 "fstrim-ext: $x: cannot tell whether it is the root of a filesystem without /proc/self/mountinfo (mount /proc)"
	assert_line --index 5 "status 1"
}

# bats test_tags=root
@test "without CAP_DAC_READ_SEARCH: a 0700 root and a 0700 parent fail alike, named" {
	require_cmd capsh
	make_loop_fs ext4 64
	local r=$MNT
	chown 4321 "$r"
	chmod 700 "$r"
	mkdir -p "$BATS_TEST_TMPDIR/private/m"
	make_loop_fs ext4 64
	umount "$MNT"
	track_mount "$LOOPDEV" "$BATS_TEST_TMPDIR/private/m"
	chown 4321 "$BATS_TEST_TMPDIR/private"
	chmod 700 "$BATS_TEST_TMPDIR/private"
	printf '%s\n' "$LOOPDEV $BATS_TEST_TMPDIR/private/m ext4 defaults 0 0" \
		"${LOOPDEVS[0]} $r ext4 defaults 0 0" >"$TAB"

	# shellcheck disable=SC2016 # expanded by the inner shell
	run -32 --separate-stderr capsh --drop=cap_dac_read_search,cap_dac_override -- \
		-c '"$0" -v -I "$1"' "$FSTRIM_EXT" "$TAB"
	assert_output ""
	assert_equal "$stderr" "fstrim-ext: cannot open $BATS_TEST_TMPDIR/private/m: Permission denied
fstrim-ext: cannot open $r: Permission denied"
}

# bats test_tags=root
@test "-I: a table that cannot be read is named alone, not with the rest of the list" {
	require_cmd capsh
	make_loop_fs ext4 64
	printf '%s\n' "$LOOPDEV $MNT ext4 defaults 0 0" >"$TAB"
	touch "$BATS_TEST_TMPDIR/unreadable"
	chmod 000 "$BATS_TEST_TMPDIR/unreadable"
	# shellcheck disable=SC2016 # expanded by the inner shell
	run -32 --separate-stderr capsh --drop=cap_dac_read_search,cap_dac_override -- \
		-c '"$0" -n -I "$1"' "$FSTRIM_EXT" "$BATS_TEST_TMPDIR/unreadable:$TAB"
	assert_equal "$stderr" "fstrim-ext: failed to parse $BATS_TEST_TMPDIR/unreadable: Permission denied"
}

# The mount table of another mount namespace (a container's
# /proc/PID/mountinfo, or a copy of it) numbers its mounts its own way:
# its mount IDs must not decide what is overmounted here, or every entry
# is dropped. The paths decide, as for fstrim, which chooses the same.
# bats test_tags=root
@test "-I: a mountinfo of another mount namespace chooses as fstrim does" {
	local ns_pid ours theirs
	make_loop_fs ext4 64 -b 4096
	unshare -m --propagation private sleep 120 &
	ns_pid=$!
	ours=$(readlink /proc/self/ns/mnt)
	for ((i = 0; i < 200; i++)); do
		theirs=$(readlink "/proc/$ns_pid/ns/mnt" 2>/dev/null) || break
		[[ $theirs != "$ours" ]] && break
		sleep 0.05
	done
	[[ -n $theirs && $theirs != "$ours" ]] || fail "no mount namespace of its own"
	grep -F " $MNT " "/proc/$ns_pid/mountinfo" >"$TAB" || fail "the namespace lacks $MNT"
	kill "$ns_pid"
	wait "$ns_pid" 2>/dev/null || true
	# its mount ID is not this namespace's
	[[ $(cut -d' ' -f1 "$TAB") != $(findmnt -n -o ID --mountpoint "$MNT") ]] ||
		fail "the same mount ID: the case is not tested"

	run -0 --separate-stderr fstrim -n -v -I "$TAB"
	local want=$output
	assert_equal "$want" "$MNT: 0 B (dry run) trimmed on $LOOPDEV"
	run -0 --separate-stderr "$FSTRIM_EXT" -n -v -I "$TAB"
	assert_equal "$output" "$want"
}

# difftables.py --foreign, seed 1, case 11: an ext4 mounted at A and at
# B (with an overlay whose lower layer is in B), then a btrfs mounted
# over A. fstrim keeps the last entry of each mountpoint, so the ext4
# entry at A is gone before it looks at devices, and the ext4 is trimmed
# through B. Where the mount IDs are not this namespace's the paths
# decide as much: the ext4 must not be taken as seen at A, where the
# btrfs's device number (0:N) cannot tell it is not. The overlay changes
# nothing: both tools leave it out as a pseudo filesystem.
# bats test_tags=root
@test "-I: in a copy of mountinfo, of two mounts at one place the later decides, as for fstrim" {
	require_cmd fstrim mkfs.btrfs
	local a b ext4 btrfs want
	make_loop_fs ext4 64
	ext4=$LOOPDEV a=$MNT b="$BATS_TEST_TMPDIR/b"
	mkdir "$b" "$BATS_TEST_TMPDIR/ovl" "$BATS_TEST_TMPDIR/up"
	track_mount "$ext4" "$b"
	mkdir "$b/lower" "$BATS_TEST_TMPDIR/up/u" "$BATS_TEST_TMPDIR/up/w"
	track_mount -t overlay overlay \
		-o "lowerdir=$b/lower,upperdir=$BATS_TEST_TMPDIR/up/u,workdir=$BATS_TEST_TMPDIR/up/w" \
		"$BATS_TEST_TMPDIR/ovl"
	make_loop_fs btrfs 256
	btrfs=$LOOPDEV
	umount "$MNT"
	track_mount "$btrfs" "$a"
	# numbered as another namespace would, and a plain copy
	awk '{ $1 += 100000; $2 += 100000; print }' /proc/self/mountinfo >"$TAB"
	cp /proc/self/mountinfo "$BATS_TEST_TMPDIR/copy"

	want="$a: 0 B (dry run) trimmed on $btrfs"$'\n'"$b: 0 B (dry run) trimmed on $ext4"
	run -0 fstrim -n -I "$TAB"
	run -0 our_lines <<<"$output"
	assert_output "$want"
	run -0 "$FSTRIM_EXT" -n -I "$TAB"
	run -0 our_lines <<<"$output"
	assert_output "$want"
	run -0 "$FSTRIM_EXT" -n -I "$BATS_TEST_TMPDIR/copy"
	run -0 our_lines <<<"$output"
	assert_output "$want"
	# this namespace's table: the mount IDs decide, with the same result
	run -0 "$FSTRIM_EXT" -n -I /proc/self/mountinfo
	run -0 our_lines <<<"$output"
	assert_output "$want"
}

# A filesystem mounted only through binds of one of its directories (a
# chroot, a container's volume) is not trimmed: the journal step needs
# the filesystem's root. fstrim trims it; fstrim-ext names it, always,
# and with --journal counts it as not done.
# bats test_tags=root
@test "-I: a filesystem seen only through a bind of a subdirectory is named, and fails --journal" {
	local b="$BATS_TEST_TMPDIR/view"
	make_loop_fs ext4 64 -b 4096
	mkdir "$MNT/sub" "$b"
	track_mount --bind "$MNT/sub" "$b"
	umount "$MNT"
	printf '%s %s ext4 defaults 0 0\n' "$LOOPDEV" "$b" >"$TAB"
	local why="fstrim-ext: $b: not trimmed: bind mount of /sub, not the root of its filesystem, and $LOOPDEV is mounted nowhere at its root"

	run -0 --separate-stderr "$FSTRIM_EXT" -I "$TAB"
	assert_equal "$stderr" "$why"
	assert_equal "$output" ""
	run -32 --separate-stderr "$FSTRIM_EXT" --journal -I "$TAB"
	assert_equal "$stderr" "$why"
	run -32 --separate-stderr "$FSTRIM_EXT" --journal --json -I "$TAB"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed

	# where its root is mounted too, the view is only a duplicate: quiet
	mount "$LOOPDEV" "$MNT"
	printf '%s %s ext4 defaults 0 0\n' "$LOOPDEV" "$MNT" >>"$TAB"
	run -0 --separate-stderr "$FSTRIM_EXT" --journal -I "$TAB"
	assert_equal "$stderr" ""
}
