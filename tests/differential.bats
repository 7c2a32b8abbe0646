#!/usr/bin/env bats
# fstrim-ext against the installed util-linux fstrim: for every scenario
# both can run, the same stdout, stderr and exit status, with only the
# program name and the byte counts the kernel reports normalised.
# Without --journal the output must be fstrim's.
# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-420}

setup() {
	load test_helper/common-setup
	_common_setup
	require_root
	require_cmd fstrim
}

teardown() {
	_common_teardown
}

normalise() {
	sed -E -e 's/^(fstrim-ext|fstrim): /PROG: /' \
		-e "s/^Try '(fstrim-ext|fstrim) --help'/Try 'PROG --help'/" \
		-e 's/: [0-9.]+ [KMGTPE]?i?B \([0-9]+ bytes\) trimmed/: N (N bytes) trimmed/'
}

# same_as_fstrim ARGS...: run both tools, compare the three results.
# With -v, fstrim-ext also names each entry of a table it did not
# choose ("TARGET: skipped: REASON"), which fstrim never prints: those
# lines are left out of the comparison.
same_as_fstrim() {
	local ours theirs arg verbose=no
	for arg in "$@"; do
		[[ $arg == -v || $arg == --verbose ]] && verbose=yes
	done
	# FITRIM_PRELOAD: a shim preloaded into both
	local -a pre=()
	[[ -n ${FITRIM_PRELOAD:-} ]] && pre=(env "LD_PRELOAD=$FITRIM_PRELOAD")
	run --separate-stderr "${pre[@]}" fstrim "$@"
	local t_status=$status t_out t_err
	t_out=$(normalise <<<"$output")
	t_err=$(normalise <<<"$stderr")
	run --separate-stderr "${pre[@]}" "$FSTRIM_EXT" "$@"
	local o_status=$status o_out o_err
	if [[ $verbose == yes ]]; then
		output=$(grep -v ': skipped: ' <<<"$output" || true)
	fi
	o_out=$(normalise <<<"$output")
	o_err=$(normalise <<<"$stderr")
	ours="status $o_status"$'\n'"$o_out"$'\n--stderr--\n'"$o_err"
	theirs="status $t_status"$'\n'"$t_out"$'\n--stderr--\n'"$t_err"
	if [[ "$ours" != "$theirs" ]]; then
		fail "fstrim-ext $* differs from fstrim:"$'\n'"--- fstrim"$'\n'"$theirs"$'\n'"--- fstrim-ext"$'\n'"$ours"
	fi
}

@test "bad command lines" {
	touch "$BATS_TEST_TMPDIR/file"
	same_as_fstrim
	same_as_fstrim / /tmp
	same_as_fstrim /nonexistent
	same_as_fstrim "$BATS_TEST_TMPDIR/file"
	same_as_fstrim -x /
	same_as_fstrim --bogus /
	same_as_fstrim -a -A
	same_as_fstrim -A -I /etc/fstab
	same_as_fstrim -o
}

@test "bad and good sizes" {
	local opt value
	for opt in -o -l -m; do
		for value in 1X -1 '' 99999999999999999999999 16EiB 1.5 1e3 5b 5iB; do
			same_as_fstrim "$opt" "$value" -n /
		done
		for value in 0 4096 1K 1KiB 1KB 1.5M 0x10 010 ' 5' 1EiB; do
			same_as_fstrim "$opt" "$value" -n /
		done
	done
}

@test "one ext4, xfs and btrfs mountpoint, verbose and dry run" {
	require_cmd mkfs.xfs mkfs.btrfs
	make_loop_fs ext4 64
	same_as_fstrim -v "$MNT"
	same_as_fstrim "$MNT"
	same_as_fstrim -n "$MNT"
	same_as_fstrim -n -v -o 1M -l 8M -m 64K "$MNT"
	make_loop_fs xfs 320
	same_as_fstrim -v "$MNT"
	make_loop_fs btrfs 256
	same_as_fstrim -v "$MNT/"
}

@test "a tmpfs, with and without --quiet-unsupported" {
	mkdir "$BATS_TEST_TMPDIR/t"
	track_mount -t tmpfs tmpfs "$BATS_TEST_TMPDIR/t"
	same_as_fstrim -v "$BATS_TEST_TMPDIR/t"
	same_as_fstrim --quiet-unsupported "$BATS_TEST_TMPDIR/t"
	same_as_fstrim --quiet "$BATS_TEST_TMPDIR/t"
}

# FUSE filesystems (bindfs and the like) answer FITRIM with ENOSYS on
# kernels without "fuse: ioctl: translate ENOSYS": fstrim 2.38.1 counts
# that as not supported. tests/preload/enosys.so fails every FITRIM so.
@test "a FITRIM that fails with ENOSYS is not supported, one path and a table" {
	local tab="$BATS_TEST_TMPDIR/fstab" lines=()
	FITRIM_PRELOAD="$top_builddir/tests/preload/enosys.so"
	[[ -f $FITRIM_PRELOAD ]] || fail "$FITRIM_PRELOAD is not built (make check builds it)"
	make_loop_fs ext4 64
	lines+=("$LOOPDEV $MNT ext4 defaults 0 0")
	# the shim is in effect: fstrim itself says so
	run -1 --separate-stderr env LD_PRELOAD="$FITRIM_PRELOAD" fstrim "$MNT"
	assert_equal "$stderr" "fstrim: $MNT: the discard operation is not supported"
	same_as_fstrim -v "$MNT"
	same_as_fstrim "$MNT"
	same_as_fstrim --quiet-unsupported "$MNT"
	same_as_fstrim --quiet-unsupported -v "$MNT"
	make_loop_fs ext4 64
	lines+=("$LOOPDEV $MNT ext4 defaults 0 0")
	printf '%s\n' "${lines[@]}" >"$tab"
	same_as_fstrim -v -I "$tab"
	same_as_fstrim -I "$tab"
	same_as_fstrim --quiet-unsupported -v -I "$tab"
}

# The journal step does not depend on FITRIM: with FITRIM failing with
# ENOSYS it does what it does with EOPNOTSUPP (a device without discard).
@test "a FITRIM that fails with ENOSYS leaves the journal step as EOPNOTSUPP does" {
	local so="$top_builddir/tests/preload/enosys.so" want
	[[ -f $so ]] || fail "$so is not built (make check builds it)"
	make_loop_fs ext4 64
	# FITRIM unsupported on the one path: status 1, as for fstrim
	run -1 --separate-stderr env LD_PRELOAD="$so" FITRIM_ERRNO=95 \
		"$FSTRIM_EXT" -v --journal "$MNT"
	want="status $status"$'\n'"$output"$'\n--stderr--\n'"$stderr"
	assert_line --regexp "^$MNT: journal checkpointed and discarded via "
	run --separate-stderr env LD_PRELOAD="$so" "$FSTRIM_EXT" -v --journal "$MNT"
	assert_equal "status $status"$'\n'"$output"$'\n--stderr--\n'"$stderr" "$want"
	run --separate-stderr env LD_PRELOAD="$so" "$FSTRIM_EXT" -v --journal-only "$MNT"
	assert_success
	assert_line --regexp "^$MNT: journal checkpointed and discarded via "
}

@test "-I over a table of loop filesystems, bind mounts, xfs, btrfs, tmpfs, read-only and notrim" {
	require_cmd mkfs.xfs mkfs.btrfs
	local tab="$BATS_TEST_TMPDIR/fstab" lines=()
	make_loop_fs ext4 64
	lines+=("$LOOPDEV $MNT ext4 defaults 0 0")
	mkdir "$BATS_TEST_TMPDIR/bind" "$MNT/sub" "$BATS_TEST_TMPDIR/subbind"
	track_mount --bind "$MNT" "$BATS_TEST_TMPDIR/bind"
	lines+=("$LOOPDEV $BATS_TEST_TMPDIR/bind none bind 0 0")
	track_mount --bind "$MNT/sub" "$BATS_TEST_TMPDIR/subbind"
	lines+=("$LOOPDEV $BATS_TEST_TMPDIR/subbind none bind 0 0")
	make_loop_fs ext4 64
	lines+=("$LOOPDEV $MNT ext4 defaults,X-fstrim.notrim 0 0")
	make_loop_fs ext4 64
	mount -o remount,ro "$MNT"
	lines+=("$LOOPDEV $MNT ext4 ro 0 0")
	make_loop_fs xfs 320
	lines+=("$LOOPDEV $MNT xfs defaults 0 0")
	make_loop_fs btrfs 256
	lines+=("$LOOPDEV $MNT btrfs defaults 0 0")
	make_loop_fs ext4 64
	lines+=("$LOOPDEV $MNT ext4 defaults 0 0")
	mkdir "$BATS_TEST_TMPDIR/t"
	track_mount -t tmpfs tmpfs "$BATS_TEST_TMPDIR/t"
	lines+=("tmpfs $BATS_TEST_TMPDIR/t tmpfs defaults 0 0")
	lines+=("/dev/nonexistent $BATS_TEST_TMPDIR/absent ext4 defaults 0 0")
	printf '%s\n' "${lines[@]}" >"$tab"

	same_as_fstrim -v -I "$tab"
	same_as_fstrim -n -I "$tab"
	same_as_fstrim -I "$tab"
	same_as_fstrim -v -I "/nonexistent:$tab"
	same_as_fstrim --quiet-unsupported -v -I "$tab"
}

# The generator of tests/difftables.py (make check-differential runs it
# long): the named cases, then a few random tables with a fixed seed,
# each also from a copy of mountinfo numbered as another namespace would
# (--foreign: its mount IDs must not decide).
run_difftables() {
	require_cmd /usr/bin/python3 mkfs.xfs mkfs.btrfs blkid unshare
	run /usr/bin/python3 "$top_srcdir/tests/difftables.py" --fstrim-ext "$FSTRIM_EXT" \
		--foreign "$@"
	assert_success
	assert_line --regexp ', 0 unexplained$'
}

@test "generated tables: overlay root on ext4, composefs /sysroot, no / in fstab, no fstab" {
	run_difftables --named-only
	assert_line --regexp '^seed 1: 5 cases, '
}

@test "generated tables: 25 random layouts and tables (seed 1)" {
	run_difftables --seed 1 --count 25
	assert_line --regexp '^seed 1: 25 cases, '
}
