#!/usr/bin/env bats
# --step: FITRIM in ranges of whole block groups, stopped by SIGINT and
# SIGTERM between them, with a progress line on a terminal. The ranges
# must add up to what one FITRIM does (util-linux fstrim on an identical
# image is the reference), and a signal must stop the trim at the next
# range, reported as cut short.

# shellcheck disable=SC2154 # stderr comes from run --separate-stderr
# shellcheck disable=SC2030,SC2031 # STRACE_PID is per test, for teardown

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	SLOWED_LOOPS=()
}

teardown() {
	if [[ -n ${STRACE_PID:-} ]]; then
		kill -KILL "$STRACE_PID" ${TOOL_PID:+"$TOOL_PID"} 2>/dev/null || true
		wait "$STRACE_PID" 2>/dev/null || true
	fi
	_common_teardown
	restore_slowed_loops
}

# ---- images whose free space is fragmented, in identical copies ----------

# make_fragmented_image FILE SIZE_MB [BLOCK_SIZE]: ext4 (4 KiB blocks by
# default) whose free space is broken up by files deleted in between kept
# ones.
make_fragmented_image() {
	local img=$1 i
	truncate -s "${2}M" "$img"
	mkfs.ext4 -q -F -b "${3:-4096}" \
		-E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$img" >/dev/null
	mkdir -p "$T/build"
	mount -o loop "$img" "$T/build" || fail "mount of $img failed"
	for ((i = 0; i < 120; i++)); do
		head -c $(((i % 7 + 1) * 1024 * 1024 + i * 4096)) /dev/zero >"$T/build/f$i"
	done
	sync -f "$T/build"
	rm -f "$T"/build/f*[02468]
	umount "$T/build"
}

# mount_copy IMG NAME: an identical copy of IMG on its own loop device,
# mounted at $T/NAME; sets DEV_NAME (the device) through printf -v.
mount_copy() {
	cp --sparse=always "$1" "$T/$2.img"
	attach_loop "$T/$2.img"
	mkdir -p "$T/$2"
	# nothing in the background: no inode table zeroing, no bitmap prefetch
	track_mount -o noinit_itable,no_prefetch_block_bitmaps "$LOOPDEV" "$T/$2"
	printf -v "DEV_$2" '%s' "$LOOPDEV"
}

# bytes_trimmed OUTPUT: N of "PATH: SIZE (N bytes) trimmed"
bytes_trimmed() {
	sed -n 's/.*(\([0-9]*\) bytes) trimmed.*/\1/p' <<<"$1"
}

# The data and hole map of a file, as "data START END" lines.
hole_map() {
	perl -e '
		open(my $f, "<", $ARGV[0]) or die;
		my ($pos, $size) = (0, -s $ARGV[0]);
		while ($pos < $size) {
			my $d = sysseek($f, $pos, 3);   # SEEK_DATA
			last unless defined $d;
			my $h = sysseek($f, $d, 4);     # SEEK_HOLE
			print "data $d $h\n";
			$pos = $h;
		}' "$1"
}

# fitrims LOG: the FITRIM calls of an strace log
fitrims() {
	grep -c 'FITRIM' "$1" || true
}

# ---- a loop device slowed to 4 KiB discards ----------------------------

# slow_discard DEV: each discard is split in 4 KiB pieces, each a
# fallocate() on the image, so that every block group takes a while.
# Teardown then detaches DEV itself, see restore_slowed_loops.
slow_discard() {
	local i
	echo 4096 >"/sys/block/${1#/dev/}/queue/discard_max_bytes"
	SLOWED_LOOPS+=("$1")
	for i in "${!LOOPDEVS[@]}"; do
		[[ ${LOOPDEVS[i]} != "$1" ]] || unset "LOOPDEVS[i]"
	done
}

# The lowered limit outlives the attachment and cannot be raised again:
# detach the device, remove it and add it back (REFERENCE.md 7) in one go,
# so that no other user of losetup --find is handed the slowed device in
# between. Runs after teardown has unmounted it.
restore_slowed_loops() {
	local dev
	for dev in "${SLOWED_LOOPS[@]}"; do
		perl -e 'use Fcntl;
			 my $n = $ARGV[0] + 0;
			 sysopen(my $d, "/dev/loop$n", O_RDONLY) or die "loop$n: $!\n";
			 ioctl($d, 0x4C01, 0) or die "LOOP_CLR_FD loop$n: $!\n";
			 close($d);
			 open(my $c, "<", "/dev/loop-control") or die "loop-control: $!\n";
			 for (1 .. 500) {
				 last if ioctl($c, 0x4C81, $n);
				 select(undef, undef, undef, 0.01);
			 }
			 ioctl($c, 0x4C80, $n) or die "cannot add loop$n again: $!\n"' \
			"${dev#/dev/loop}"
	done
	SLOWED_LOOPS=()
}

# ---- tests ------------------------------------------------------------------

@test "--step: a size that does not parse is refused before any ioctl" {
	run -1 "$FSTRIM_EXT" --step 12X /
	assert_output --partial "failed to parse step: '12X'"
}

@test "--help, the man page and the completion describe --step" {
	run -0 "$FSTRIM_EXT" --help
	assert_line --regexp '^ +--step <num> '
	run -0 grep -c -- 'step' "$top_srcdir/man/fstrim-ext.8.in"
	run -0 grep -c -- '--step' "$top_srcdir/bash-completion/fstrim-ext"
}

# bats test_tags=root
@test "ranges of one block group discard what one FITRIM (util-linux fstrim) does" {
	require_root
	require_cmd fstrim strace perl
	make_fragmented_image "$T/base.img" 1024
	mount_copy "$T/base.img" one
	mount_copy "$T/base.img" zero
	mount_copy "$T/base.img" steps

	run -0 fstrim -v "$T/one"
	local want
	want=$(bytes_trimmed "$output")
	[[ $want -gt 0 ]] || fail "fstrim trimmed nothing: $output"

	run -0 strace -qq -e trace=ioctl -o "$T/zero.log" "$FSTRIM_EXT" -v --step 0 "$T/zero"
	[[ $(bytes_trimmed "$output") == "$want" ]] || fail "--step 0: $output, fstrim: $want"
	[[ $(fitrims "$T/zero.log") -eq 1 ]] || fail "--step 0 is not one call: $(cat "$T/zero.log")"

	run -0 strace -qq -e trace=ioctl -o "$T/steps.log" "$FSTRIM_EXT" -v --step 128M "$T/steps"
	[[ $(bytes_trimmed "$output") == "$want" ]] || fail "--step 128M: $output, fstrim: $want"
	[[ $(fitrims "$T/steps.log") -eq 8 ]] || fail "not 8 ranges: $(cat "$T/steps.log")"

	# the same blocks were discarded: the images have the same holes
	umount "$T/one" "$T/steps"
	# shellcheck disable=SC2034 # for teardown
	MOUNTS=("$T/zero")
	diff <(hole_map "$T/one.img") <(hole_map "$T/steps.img") || fail "other blocks discarded"
}

# bats test_tags=root
@test "ranges: -o, -l and -m mid-group cover what one FITRIM covers" {
	require_root
	require_cmd fstrim jq
	make_fragmented_image "$T/base.img" 1024
	mount_copy "$T/base.img" one
	mount_copy "$T/base.img" steps
	# 100 MiB + 5 blocks and a bit, 700 MiB: starts and ends inside a group
	local -a range=(-o $((100 * 1048576 + 5 * 4096 + 100)) -l 700M -m 64K)

	run -0 fstrim -v "${range[@]}" "$T/one"
	local want
	want=$(bytes_trimmed "$output")
	[[ $want -gt 0 ]] || fail "fstrim trimmed nothing: $output"
	run -0 --separate-stderr "$FSTRIM_EXT" -J --step 1 "${range[@]}" "$T/steps"
	[[ $(jq -r '.filesystems[0].trimmed' <<<"$output") == "$want" ]] ||
		fail "ranges: $output, fstrim: $want"
	[[ $(jq -r '.filesystems[0].trim_ranges' <<<"$output") -ge 6 ]] || fail "$output"

	# an offset past the end is the kernel's error, as for one call
	run -1 --separate-stderr "$FSTRIM_EXT" --step 1 -o 2G "$T/steps"
	[[ $stderr == *"FITRIM ioctl failed: Invalid argument"* ]] || fail "stderr: $stderr"
}

# With 1 KiB blocks a group is 8 MiB and the first one starts at block 1,
# not 0: the ranges must follow.
# bats test_tags=root
@test "ranges: 1 KiB blocks, -o and -l mid-group, as one FITRIM" {
	require_root
	require_cmd fstrim jq
	make_fragmented_image "$T/base.img" 600 1024
	mount_copy "$T/base.img" one
	mount_copy "$T/base.img" steps
	local -a range=(-o 3000000 -l 300000000)

	run -0 fstrim -v "${range[@]}" "$T/one"
	local want
	want=$(bytes_trimmed "$output")
	[[ $want -gt 0 ]] || fail "fstrim trimmed nothing: $output"
	run -0 --separate-stderr "$FSTRIM_EXT" -J --step 1 "${range[@]}" "$T/steps"
	[[ $(jq -r '.filesystems[0].trimmed' <<<"$output") == "$want" ]] ||
		fail "ranges: $output, fstrim: $want"
	[[ $(jq -r '.filesystems[0].trim_ranges' <<<"$output") -ge 30 ]] || fail "$output"
}

# ext4 skips a group it remembers as trimmed unless the minimum is lower
# than the last FITRIM's; one call then re-trims them all.
# bats test_tags=root
@test "ranges: a minimum lower than the last FITRIM's re-trims every group, as one call" {
	require_root
	require_cmd fstrim
	make_fragmented_image "$T/base.img" 1024
	mount_copy "$T/base.img" one
	mount_copy "$T/base.img" steps

	run -0 fstrim -v -m 1M "$T/one"
	run -0 "$FSTRIM_EXT" -v --step 128M -m 1M "$T/steps"
	run -0 fstrim -v "$T/one"
	local want
	want=$(bytes_trimmed "$output")
	[[ $want -gt 0 ]] || fail "fstrim trimmed nothing the second time: $output"
	run -0 "$FSTRIM_EXT" -v --step 128M "$T/steps"
	[[ $(bytes_trimmed "$output") == "$want" ]] || fail "ranges: $output, fstrim: $want"
	# and ext4 remembers the lower minimum now: nothing left for either
	run -0 fstrim -v "$T/one"
	assert_output --partial "(0 bytes) trimmed"
	run -0 "$FSTRIM_EXT" -v --step 128M "$T/steps"
	assert_output --partial "(0 bytes) trimmed"
}

# start_slow_trim ARGS...: fstrim-ext ARGS under strace in the background
# on a filesystem of 32 block groups on a slowed loop device; returns once
# its second FITRIM has begun. Sets MNT, STRACE_PID and TOOL_PID (the
# command itself: strace would take a signal sent to it).
start_slow_trim() {
	make_loop_fs ext4 4096 -b 4096 -E nodiscard
	slow_discard "$LOOPDEV"
	: >"$T/strace.log"
	# a background job starts with SIGINT ignored: give it the default
	env --default-signal=INT strace -qq -e trace=ioctl -o "$T/strace.log" \
		"$FSTRIM_EXT" "$@" "$MNT" >"$T/out" 2>"$T/err" 3>&- &
	STRACE_PID=$!
	local i
	for ((i = 0; i < 2400; i++)); do
		TOOL_PID=$(pgrep -P "$STRACE_PID" | head -1)
		[[ -n $TOOL_PID ]] && (($(fitrims "$T/strace.log") >= 2)) && return 0
		kill -0 "$STRACE_PID" 2>/dev/null || fail "fstrim-ext ended: $(cat "$T/err")"
		sleep 0.025
	done
	fail "fstrim-ext never began its second range"
}

# The signal lands during a range (or, rarely, just before one begins):
# that range ends, no other is issued, and where it stopped is the end of
# the last range issued.
assert_stopped_after_signal() {
	local sig=$1 last_start last_len after
	after=$(sed -n "/--- $sig /,\$p" "$T/strace.log" | grep -c FITRIM || true)
	[[ $after -le 1 ]] || fail "$after FITRIM calls after $sig: $(cat "$T/strace.log")"
	[[ $(fitrims "$T/strace.log") -lt 32 ]] || fail "all ranges were issued"
	last_start=$(grep FITRIM "$T/strace.log" | tail -1 | sed -n 's/.*start=\([0-9x a-f]*\),.*/\1/p')
	last_len=$(grep FITRIM "$T/strace.log" | tail -1 | sed -n 's/.*len=\([0-9]*\),.*/\1/p')
	STOPPED_AT=$((last_start + last_len))
	((STOPPED_AT < 4096 * 1048576)) || fail "stopped at the end: $STOPPED_AT"
}

# stop_slow_trim SIGNAL STATUS: send SIGNAL, wait, check the status and
# that the trim stopped where it should.
stop_slow_trim() {
	local rc=0
	kill -s "$1" "$TOOL_PID"
	wait "$STRACE_PID" || rc=$?
	STRACE_PID=
	[[ $rc -eq $2 ]] || fail "status $rc: $(cat "$T/err")"
	assert_stopped_after_signal "$1"
}

# bats test_tags=root
@test "SIGTERM during a slow trim: stopped after the range in progress, reported, 143" {
	require_root
	require_cmd strace
	start_slow_trim -v
	stop_slow_trim SIGTERM 143
	local out err bytes
	out=$(cat "$T/out")
	err=$(cat "$T/err")
	bytes=$(bytes_trimmed "$out")
	[[ $out =~ ^$MNT:\ .*\ \(${bytes}\ bytes\)\ trimmed,\ interrupted\ at\ .*\ of\ 4\ GiB$ ]] ||
		fail "stdout: $out"
	[[ $err == *"$MNT: trimming interrupted by SIGTERM at byte $STOPPED_AT of 4294967296: $bytes bytes trimmed, the rest not"* ]] ||
		fail "stderr: $err"
}

# bats test_tags=root
@test "SIGINT during a slow trim with --journal -J: interrupted, journal skipped, 130" {
	require_root
	require_cmd strace jq
	start_slow_trim --journal -J
	stop_slow_trim SIGINT 130
	# the journal step's ioctls never came
	if grep -E '0x66, 0x2b' "$T/strace.log"; then
		fail "a journal ioctl after the interrupted trim"
	fi
	local doc=$T/out
	[[ $(jq -r .status "$doc") -eq 130 ]] || fail "$(cat "$doc")"
	[[ $(jq -r '.filesystems[0].status' "$doc") == interrupted ]] || fail "$(cat "$doc")"
	[[ $(jq -r '.filesystems[0].trim' "$doc") == interrupted ]] || fail "$(cat "$doc")"
	[[ $(jq -r '.filesystems[0].journal' "$doc") == skipped ]] || fail "$(cat "$doc")"
	[[ $(jq -r '.filesystems[0].trim_stopped_at' "$doc") -eq $STOPPED_AT ]] || fail "$(cat "$doc")"
	[[ $(jq -r '.filesystems[0].trim_end' "$doc") -eq 4294967296 ]] || fail "$(cat "$doc")"
	[[ $(jq -r '.filesystems[0].trim_ranges' "$doc") -eq $(fitrims "$T/strace.log") ]] ||
		fail "$(cat "$doc")"
	[[ $(jq -r '.filesystems[0].trimmed' "$doc") -gt 0 ]] || fail "$(cat "$doc")"
}

# Every ioctl held 1.1 s by strace: the trim of two groups lasts more
# than a second whatever the machine, deterministically.
# run_slowly_in_pty ENV... -- ARGS...: the typescript of fstrim-ext ARGS
# on a two-group filesystem with stdin, stdout and stderr on a terminal.
run_slowly_in_pty() {
	local -a envs=()
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	local cmd
	printf -v cmd '%q ' env -u JOURNAL_STREAM -u INVOCATION_ID "${envs[@]}" \
		strace -qq -o /dev/null -e trace=ioctl -e inject=ioctl:delay_exit=1100000 \
		"$FSTRIM_EXT" --step 128M "$@" "$MNT"
	run script -qec "$cmd" /dev/null
}

# bats test_tags=root
@test "progress: a line on a terminal for a trim of more than a second, erased after" {
	require_root
	require_cmd script strace
	make_loop_fs ext4 256 -b 4096
	run_slowly_in_pty -- -v
	assert_success
	[[ $output == *$'\r'"$MNT: trimming at 128 MiB of 256 MiB (50%), "*" discarded"* ]] ||
		fail "no progress line: $(cat -A <<<"$output")"
	# erased before the report: the last line is the report alone
	[[ $(tail -n1 <<<"$output" | tr -d '\r' | sed 's/^ *//') == "$MNT: "*" trimmed" ]] ||
		fail "$(cat -A <<<"$output")"
}

# bats test_tags=root
@test "progress: none when stderr is not a terminal, under systemd, or with --json" {
	require_root
	require_cmd script strace
	make_loop_fs ext4 256 -b 4096
	local cmd
	# stderr to a file, stdout still a terminal
	printf -v cmd '%q ' strace -qq -o /dev/null -e trace=ioctl \
		-e inject=ioctl:delay_exit=1100000 "$FSTRIM_EXT" --step 128M -v "$MNT"
	run script -qec "$cmd 2>$T/err" /dev/null
	assert_success
	[[ ! -s $T/err ]] || fail "stderr: $(cat -A "$T/err")"
	[[ $output != *trimming\ at* ]] || fail "$output"
	run_slowly_in_pty JOURNAL_STREAM=8:12345 -- -v
	assert_success
	[[ $output != *trimming\ at* ]] || fail "JOURNAL_STREAM: $(cat -A <<<"$output")"
	run_slowly_in_pty INVOCATION_ID=0123456789abcdef0123456789abcdef -- -v
	assert_success
	[[ $output != *trimming\ at* ]] || fail "INVOCATION_ID: $(cat -A <<<"$output")"
	run_slowly_in_pty -- -J
	assert_success
	[[ $output != *trimming\ at* ]] || fail "--json: $(cat -A <<<"$output")"
}
