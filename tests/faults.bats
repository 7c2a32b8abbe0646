#!/usr/bin/env bats
# Faults: each is reported for its own filesystem, with the documented
# status (one path: 1; -a/-A/-I: 32 all failed, 64 some failed), never a
# crash, a signal death or a half-written report; the other filesystems
# of the run are still done.

# shellcheck disable=SC2154 # stderr comes from tool_wait and run --separate-stderr
# shellcheck disable=SC2030,SC2031 # status and output are set by run and tool_wait

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-600}

setup() {
	load test_helper/common-setup
	load test_helper/workload
	_common_setup
	require_root
	require_cmd strace findmnt mkfifo
	T=$BATS_TEST_TMPDIR
}

teardown() {
	_common_teardown
	if [[ -n ${SMALL:-} ]]; then
		umount -l "$SMALL" 2>/dev/null || true
	fi
}

# loop_dev FILE: attach FILE to a loop device that teardown detaches
loop_dev() {
	LOOPDEV=$(losetup --find --show "$1") || fail "losetup failed"
	LOOPDEVS+=("$LOOPDEV")
}

# An ext4 whose journal lives on its own device, which cannot discard.
# Sets MNT, JDEV.
ext4_with_journal_without_discard() {
	truncate -s 16M "$T/journal.img"
	loop_dev "$T/journal.img"
	JDEV=$LOOPDEV
	mkfs.ext4 -q -F -b 4096 -O journal_dev "$JDEV" >/dev/null
	# the limit outlives the device: disable_discard has teardown remove it
	disable_discard "$JDEV"
	truncate -s 64M "$T/fs.img"
	loop_dev "$T/fs.img"
	mkfs.ext4 -q -F -b 4096 -J device="$JDEV" "$LOOPDEV" >/dev/null
	MNT=$T/ext
	mkdir -p "$MNT"
	track_mount "$LOOPDEV" "$MNT"
}

# journal_device_nonzero_bytes DEV: bytes of the external journal DEV,
# after its ext4 and journal superblocks (blocks 0 and 1), that are not
# zero, read past the page cache.
journal_device_nonzero_bytes() {
	dd if="$1" bs=4096 skip=2 iflag=direct status=none | tr -d '\0' | wc -c
}

# A mount line's fields must never be cut: whole lines or nothing.
assert_whole_lines() {
	local line
	while IFS= read -r line; do
		[[ -n $line ]] || continue
		[[ $line =~ ^/.*:\ .*(trimmed|via\ [A-Z_]+)(\ on\ /dev/[^ ]+)?(,\ journal.*)?$ ]] ||
			fail "a cut or strange report line: '$line'"
	done <<<"$output"
}

# bats test_tags=root
@test "journal device without discard: the journal step is unsupported, FITRIM is done" {
	ext4_with_journal_without_discard
	run_traced -v --journal "$MNT"
	assert_failure 1
	assert_line "fstrim-ext: $MNT: journal step not done: the journal device does not support discard (try --journal-erase=zeroout)"
	assert_line --regexp "^$MNT: .* trimmed$"
	grep -q FITRIM "$STRACE_LOG"
}

# The journal holds what was deleted and was not erased: --quiet-unsupported
# (which fstrim-ext.service passes) keeps fstrim's meaning for filesystems
# that cannot be trimmed at all, and does not hide this.
# bats test_tags=root
@test "journal device without discard: a failure, said, even with --quiet-unsupported and -I" {
	ext4_with_journal_without_discard
	run -1 --separate-stderr "$FSTRIM_EXT" --journal --quiet-unsupported "$MNT"
	assert_equal "$stderr" "fstrim-ext: $MNT: journal step not done: the journal device does not support discard (try --journal-erase=zeroout)"
	write_table "$T/table" "$MNT"
	run -32 --separate-stderr "$FSTRIM_EXT" -v --journal --quiet-unsupported -I "$T/table"
	assert_equal "$stderr" "fstrim-ext: $MNT: journal step not done: the journal device does not support discard (try --journal-erase=zeroout)"
	run -32 --separate-stderr "$FSTRIM_EXT" --json --journal --quiet-unsupported -I "$T/table"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" \
		"journal: the journal device does not support discard (try --journal-erase=zeroout)"
}

# bats test_tags=root
@test "journal device without discard: zeroout erases it, e2fsck clean" {
	ext4_with_journal_without_discard
	make_pii_files "$MNT/d" ZJ 50
	sync
	local before after
	before=$(journal_device_nonzero_bytes "$JDEV")
	((before > 0)) || fail "the journal device held no data before the run"
	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal-erase=zeroout "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT$"
	umount "$MNT"
	after=$(journal_device_nonzero_bytes "$JDEV")
	assert_equal "$after" 0
	run e2fsck -fn -j "$JDEV" "${LOOPDEVS[1]}"
	assert_success
}

# start_paused_before_a: two ext4, A and B, in a table that lists A first
# (newest first), and the tool started on it with --journal, held in its
# open of A, after the choice (tool_start_paused).
start_paused_before_a() {
	make_loop_fs ext4 64 -b 4096
	A=$MNT
	make_loop_fs ext4 64 -b 4096
	B=$MNT
	write_table "$T/table" "$B" "$A"
	tool_start_paused 1 -v --journal -I "$T/table"
	tool_wait_paused
}

# bats test_tags=root
@test "a filesystem unmounted between selection and use is reported, the others trimmed" {
	start_paused_before_a
	umount "$A"
	tool_release
	tool_wait
	[[ $status -eq 64 ]] || fail "status $status: $stderr"
	[[ $stderr == *"$A: the mount changed after it was chosen; not trimmed"* ]] || fail "$stderr"
	[[ $output == "$B: "*"trimmed on "*", journal checkpointed and discarded via "* ]] ||
		fail "stdout: $output"
	assert_no_ioctl_on "$A"
}

# bats test_tags=root
@test "a single path unmounted between lookup and use exits 1 without an ioctl" {
	make_loop_fs ext4 64 -b 4096
	tool_start_paused 1 -v --journal "$MNT"
	tool_wait_paused
	umount "$MNT"
	tool_release
	tool_wait
	[[ $status -eq 1 ]] || fail "status $status: $stderr"
	[[ $stderr == "fstrim-ext: $MNT: the mount changed after it was chosen; not trimmed" ]] ||
		fail "$stderr"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a filesystem remounted read-only between selection and use is not written" {
	start_paused_before_a
	mount -o remount,ro "$A"
	tool_release
	tool_wait
	# selection drops read-only filesystems; the same holds at use
	assert_no_ioctl_on "$A"
	[[ $status -eq 64 ]] || fail "status $status: $stderr"
	[[ $stderr == *"$A: "*"read-only"*"not trimmed"* ]] || fail "$stderr"
	[[ $output == "$B: "*"trimmed on "* ]] || fail "stdout: $output"
}

# An ext4 on a loop device whose backing file sits on a small tmpfs,
# filled up after mkfs: every write to a block not yet written fails.
ext4_on_full_backing_store() {
	SMALL=$T/small
	mkdir -p "$SMALL" "$T/full"
	mount -t tmpfs -o size=24m tmpfs "$SMALL"
	truncate -s 128M "$SMALL/fs.img"
	loop_dev "$SMALL/fs.img"
	FULL_DEV=$LOOPDEV
	mkfs.ext4 -q -F -b 4096 -E nodiscard "$FULL_DEV" >/dev/null
	track_mount "$FULL_DEV" "$T/full"
	local i
	for ((i = 0; i < 40; i++)); do
		head -c 1M /dev/urandom >"$T/full/f$i" 2>/dev/null || break
	done
}

# bats test_tags=root
@test "I/O errors from the device (backing store full): reported for that filesystem" {
	ext4_on_full_backing_store
	make_loop_fs ext4 64 -b 4096
	GOOD=$MNT
	write_table "$T/table" "$GOOD" "$T/full"
	run --separate-stderr "$FSTRIM_EXT" -v --journal-erase=zeroout -I "$T/table"
	[[ $status -eq 64 ]] || fail "status $status: $stderr"
	[[ $stderr == *"fstrim-ext: $T/full: "*"failed: "* ]] || fail "$stderr"
	[[ $output == "$GOOD: "*"trimmed on "*", journal checkpointed and zeroed via "* ]] ||
		fail "stdout: $output"
	assert_whole_lines
}

# bats test_tags=root
@test "EIO from the device (filesystem under the backing file shut down): reported, exit 1" {
	require_cmd mkfs.xfs xfs_io
	make_loop_fs xfs 320
	XFS=$MNT
	truncate -s 64M "$XFS/fs.img"
	loop_dev "$XFS/fs.img"
	# no lazy init, and the file written back before the shutdown: a
	# write after it would fail and turn the ext4 read-only before
	# fstrim-ext runs (seen: "syncfs failed: Read-only file system")
	mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$LOOPDEV" >/dev/null
	mkdir -p "$T/ext"
	track_mount -o noatime "$LOOPDEV" "$T/ext"
	head -c 4M /dev/urandom >"$T/ext/file"
	sync
	# from here every read and write of the backing file fails with EIO
	xfs_io -x -c shutdown "$XFS"
	run --separate-stderr "$FSTRIM_EXT" -v --journal "$T/ext"
	[[ $status -eq 1 ]] || fail "status $status: $stderr"
	# the device's error, not one of fstrim-ext's own refusals
	assert_regex "$stderr" "^fstrim-ext: $T/ext: [^:]+ failed: Input/output error$"
	assert_whole_lines
}

# bats test_tags=root
@test "ENOSPC: a full filesystem is trimmed and its journal erased, e2fsck clean" {
	make_loop_fs ext4 64 -b 4096
	local i
	for ((i = 0; i < 100; i++)); do
		head -c 1M /dev/urandom >"$MNT/f$i" 2>/dev/null || break
	done
	run dd if=/dev/zero of="$MNT/rest" bs=4k status=none
	assert_failure
	assert_output --partial "No space left on device"
	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via "
	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal-erase=zeroout "$MNT"
	umount "$MNT"
	run e2fsck -fn "$LOOPDEV"
	assert_success
}

# Three filesystems, held in the open of the second; SIGNAL sent there,
# and nothing else: the signal alone must end the hold (a command held
# there by a test that died, or by anything else, still ends on SIGTERM).
# The first is done; the second, opened when the signal came, is reported
# as interrupted before its first FITRIM call (none is made once a stop is
# asked for) and its journal step is not done; the third is left and
# reported; the status is 128+N.
interrupted_run() {
	local sig=$1 num=$2
	make_loop_fs ext4 64 -b 4096
	F3=$MNT
	make_loop_fs ext4 64 -b 4096
	F2=$MNT
	make_loop_fs ext4 64 -b 4096
	F1=$MNT
	write_table "$T/table" "$F3" "$F2" "$F1"   # done in the order F1 F2 F3
	tool_start_paused 2 -v --journal -I "$T/table"
	tool_wait_paused
	[[ $PAUSED_PATH == "$F2" ]] || fail "held at $PAUSED_PATH, not $F2"
	kill -s "$sig" "$TOOL_PID"
	tool_wait
	[[ $status -eq $((128 + num)) ]] || fail "status $status, want $((128 + num)): $stderr"
	# what was done is on stdout, whole, even though it was a pipe to a file
	[[ $(grep -c . <<<"$output") -eq 2 ]] || fail "stdout: $output"
	[[ $output == "$F1: "*"trimmed on "*", journal checkpointed and discarded via "*"
$F2: 0 B (0 bytes) trimmed on "*", interrupted at 0 B of 64 MiB" ]] || fail "stdout: $output"
	[[ $stderr == *"$F2: trimming interrupted by $sig at byte 0 of 67108864: 0 bytes trimmed, the rest not"* ]] ||
		fail "stderr: $stderr"
	[[ $stderr == *"$F2: journal step not done: interrupted"* ]] || fail "stderr: $stderr"
	[[ $stderr == *"$F3: not trimmed: interrupted by $sig"* ]] || fail "stderr: $stderr"
	assert_no_ioctl_on "$F2"
	assert_no_ioctl_on "$F3"
}

# bats test_tags=root
@test "SIGTERM during a run of several filesystems: the current one stopped, exit 143" {
	interrupted_run SIGTERM 15
}

# bats test_tags=root
@test "SIGINT during a run of several filesystems: the current one stopped, exit 130" {
	interrupted_run SIGINT 2
}

# bats test_tags=root
@test "stdout full during a run of several filesystems: write error, exit 1" {
	make_loop_fs ext4 64 -b 4096
	A=$MNT
	make_loop_fs ext4 64 -b 4096
	write_table "$T/table" "$MNT" "$A"
	run bash -c "'$FSTRIM_EXT' -v --journal -I '$T/table' >/dev/full"
	assert_failure 1
	assert_output --partial "write error"
}

# bats test_tags=root
@test "a loop device whose discard was turned off is given back with discard" {
	truncate -s 16M "$T/nodiscard.img"
	attach_loop "$T/nodiscard.img"
	local dev=$LOOPDEV
	disable_discard "$dev"
	[[ $(cat "/sys/block/${dev#/dev/}/queue/discard_max_bytes") == 0 ]] ||
		fail "discard could not be turned off"
	# what the teardown of every test does
	_common_teardown
	[[ -b $dev ]] || fail "$dev was removed and not added again"
	# Be its next user: bind it again by its number (it was ours a moment
	# ago; if another user has taken it since, theirs is as good a check).
	if losetup "$dev" "$T/nodiscard.img" 2>/dev/null; then
		LOOPDEVS+=("$dev")
	fi
	[[ $(cat "/sys/block/${dev#/dev/}/queue/discard_max_bytes") != 0 ]] ||
		fail "$dev is left without discard for the next user"
}

# A parent (a shell's trap '' CHLD, a daemon) can leave SIGCHLD ignored
# across exec; the FITRIM child must still be waited for.
# bats test_tags=root
@test "SIGCHLD inherited as ignored: the trim and the journal step still work" {
	make_loop_fs ext4 64 -b 4096
	run -0 --separate-stderr bash -c "trap '' CHLD; exec \"\$0\" -v --journal \"\$1\"" \
		"$FSTRIM_EXT" "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+"
	[[ $stderr != *failed* ]] || fail "stderr: $stderr"
}

# A read that fails is never "nothing found": a directory block that the
# device cannot read (tests/preload/eio.so fails reads of its bytes) makes
# the audit incomplete and --journal's read back of the directories fail.
# bats test_tags=root
@test "a directory block that cannot be read: the audit is incomplete, --journal fails" {
	local shim blk
	# libasan first in an ASan build, as for pause.so
	shim=$(PAUSE_SHIM="${top_builddir:-$top_srcdir}/tests/preload/eio.so" _pause_preload) ||
		exit 1
	require_cmd debugfs
	make_loop_fs ext4 64 -b 4096
	mkdir "$MNT/d"
	for i in $(seq 1 200); do : >"$MNT/d/name-$i"; done
	sync
	blk=$(debugfs -R "blocks /d" "$LOOPDEV" 2>/dev/null | awk '{ print $1 }')
	[[ $blk =~ ^[0-9]+$ ]] || fail "no block for /d: '$blk'"
	export FSTRIM_EXT_EIO="$LOOPDEV:$((blk * 4096)):4096"

	run -32 --separate-stderr env LD_PRELOAD="$shim" "$FSTRIM_EXT" --audit "$MNT"
	assert_output --regexp "^$MNT: audit: incomplete, nothing found in what was read; .*directories not read \(Input/output error\)"
	run -1 --separate-stderr env LD_PRELOAD="$shim" "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+, but the directories could not be read back$"
	[[ $stderr == *"fstrim-ext: $MNT: the directories could not be read back: Input/output error"* ]] ||
		fail "stderr: $stderr"
	run -1 --separate-stderr env LD_PRELOAD="$shim" "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" \
		"directories: not read back: Input/output error"
	unset FSTRIM_EXT_EIO
	# without the fault, the same filesystem is clean
	run -0 "$FSTRIM_EXT" --journal "$MNT"
}

# A directory whose extent header is broken (written with debugfs while
# unmounted): libext2fs's block iterator shows it as empty, and the scan
# took it for read. It was not: the audit is incomplete and --journal fails.
# bats test_tags=root
@test "a directory whose blocks cannot be listed: the audit is incomplete, --journal fails" {
	local ino
	require_cmd debugfs
	make_loop_fs ext4 64 -b 4096
	mkdir "$MNT/d"
	for i in $(seq 1 200); do : >"$MNT/d/name-$i"; done
	umount "$MNT"
	ino=$(debugfs -R "stat /d" "$LOOPDEV" 2>/dev/null | awk '/^Inode:/ { print $2 }')
	[[ $ino =~ ^[0-9]+$ ]] || fail "no inode for /d: '$ino'"
	debugfs -w -R "sif /d block[0] 0" "$LOOPDEV" >/dev/null 2>&1
	mount "$LOOPDEV" "$MNT"
	why="the blocks of 1 directory could not be listed: inode $ino: Corrupt extent header"

	run --separate-stderr "$FSTRIM_EXT" --audit "$MNT"
	((status & 32)) || fail "status $status: $output"
	assert_output --partial "; directories not read ($why);"
	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+, but the directories could not be read back$"
	assert_equal "$stderr" "fstrim-ext: $MNT: the directories could not be read back: $why"
	run -1 --separate-stderr "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" "directories: not read back: $why"
}

# fail_each_alloc SHIM ARGS...: runs "$FSTRIM_EXT ARGS" once to count the
# allocations its own code makes (tests/preload/enomem.so), then once for
# each N of them with the Nth failing with ENOMEM. A run that lost an
# allocation either gives the same status and stdout as a run without the
# fault (the allocation was not needed: a cache, a fallback; the same
# result at another cost: a lost allocation of the read set, lib/readset,
# reads back all the free space, and a run that failed leaves the next
# none of its proof, see same_result), or fails with
# a reason (on stderr, in the JSON document's error, in the audit's line);
# never a signal death, never a cut JSON document.
# Sets CHECKED to the allocations failed, FAILED to the runs that failed.
fail_each_alloc() {
	local shim=$1 n allocs log="$T/allocs.log" ref ref_status
	shift
	# the first run trims what was freed; the reference is a run after it
	"$FSTRIM_EXT" "$@" >/dev/null 2>&1 || true
	run --separate-stderr "$FSTRIM_EXT" "$@"
	ref_status=$status ref=$(same_result "$output" "$@")
	((ref_status == 0)) || fail "without a fault: status $ref_status: $stderr"
	rm -f "$log"
	FSTRIM_EXT_ENOMEM_LOG="$log" LD_PRELOAD="$shim" "$FSTRIM_EXT" "$@" >/dev/null 2>&1
	allocs=$(cat "$log")
	((allocs >= 3)) || fail "only $allocs allocations counted"
	CHECKED=0 FAILED=0
	for ((n = 1; n <= allocs; n++)); do
		run --separate-stderr env FSTRIM_EXT_ENOMEM_NTH="$n" LD_PRELOAD="$shim" \
			"$FSTRIM_EXT" "$@"
		CHECKED=$((CHECKED + 1))
		((status < 128)) || fail "allocation $n of $allocs failed: killed by signal $((status - 128))"
		if [[ " $* " == *" --json "* && -n $output ]]; then
			jq -e . <<<"$output" >/dev/null ||
				fail "allocation $n of $allocs failed: not a JSON document: $output"
		fi
		if ((status == 0)); then
			[[ $(same_result "$output" "$@") == "$ref" ]] ||
				fail "allocation $n of $allocs failed, status 0, and the output changed: $output"
			continue
		fi
		FAILED=$((FAILED + 1))
		# why: on stderr, in the document's error, or in the audit's line
		[[ $stderr == *"fstrim-ext: "* || $output == *": audit: incomplete"* ]] ||
			jq -e '.filesystems[0].error != null' <<<"$output" >/dev/null 2>&1 ||
			fail "allocation $n of $allocs failed: status $status and no reason given: $output"
	done
}

# same_result OUTPUT ARGS...: OUTPUT without what the read back cost
# (--json's trim_readback_* members but trim_verified, block_groups).
same_result() {
	local out=$1
	shift
	if [[ " $* " == *" --json "* && -n $out ]]; then
		# what the read back covered depends on the proof kept before, and a
		# proof this run could not keep is a warning beside the same result
		jq -c '.filesystems[] |= (del(.trim_readback_bytes, .trim_readback_scope,
			.trim_readback_why, .trim_readback_groups, .block_groups) |
			.warnings |= map(select(contains(": warning: cannot keep what this run read back in ") | not)))' <<<"$out"
	else
		printf '%s\n' "$out"
	fi
}

# Each allocation fstrim-ext's own code makes, failed in turn, in the
# runs an administrator makes: never status 0 with less than was asked,
# never a crash. (ASan replaces the allocator the shim wraps.)
# bats test_tags=root,no-sanitizer
@test "each allocation of --audit and --journal runs failed in turn: a failure said, or the same result" {
	local shim="${top_builddir:-$top_srcdir}/tests/preload/enomem.so" args
	[[ -f $shim ]] || fail "no $shim"
	make_loop_fs ext4 64 -b 4096
	make_pii_files "$MNT/d" gone 20
	sync
	rm -f "$MNT"/d/PII-*
	for args in "-v --journal" "--json --journal" "--audit" "--json --audit" "-v"; do
		# shellcheck disable=SC2086 # the options of one run
		fail_each_alloc "$shim" $args "$MNT"
		((FAILED > 0)) || fail "$args: none of $CHECKED lost allocations failed the run"
		echo "# $args: $CHECKED allocations failed in turn, $FAILED runs failed" >&3
	done
}

# fail_each_read SHIM STATUSES ARGS...: runs "$FSTRIM_EXT ARGS" once to
# count the reads of $LOOPDEV it makes, then once for each N of them with
# the Nth read failing (and every later read of the same bytes: a bad
# sector stays bad). A run that failed a read exits with one of STATUSES
# (its documented failures; never 0, never a signal's death), and never
# says "audit: nothing found"; every one of the reads is checked.
# Sets CHECKED to the runs that did fail a read.
fail_each_read() {
	local shim=$1 statuses=$2 n reads log="$T/reads.log" rc
	shift 2
	rm -f "$log"
	FSTRIM_EXT_EIO_NTH="$LOOPDEV:0" FSTRIM_EXT_EIO_LOG="$log" LD_PRELOAD="$shim" \
		"$FSTRIM_EXT" "$@" >/dev/null 2>&1
	reads=$(wc -l <"$log")
	((reads >= 20)) || fail "only $reads reads of $LOOPDEV counted"
	CHECKED=0
	for ((n = 1; n <= reads; n++)); do
		rm -f "$log"
		run --separate-stderr env FSTRIM_EXT_EIO_NTH="$LOOPDEV:$n" \
			FSTRIM_EXT_EIO_LOG="$log" LD_PRELOAD="$shim" "$FSTRIM_EXT" "$@"
		rc=$status
		# the filesystem changed since the count: this run made fewer reads
		(($(wc -l <"$log") >= n)) || continue
		CHECKED=$((CHECKED + 1))
		((rc < 128)) || fail "read $n of $reads failed: killed by signal $((rc - 128))"
		[[ " $statuses " == *" $rc "* ]] ||
			fail "read $n of $reads failed and the run exited $rc, not $statuses: $output"
		[[ $output != *"audit: nothing found"* ]] ||
			fail "read $n of $reads failed and the audit says: $output"
	done
	((CHECKED == reads)) || fail "only $CHECKED of $reads runs reached their read"
}

# Every read a run makes, failed in turn (a disk that fails one sector):
# no run that lost a read passes. The free-space read back of --journal
# used to say "warning" and exit 0; the audit took the superblock of its
# free-extent figures for granted when it could not read it.
# bats test_tags=root
@test "each read of an --audit and of a --journal run failed in turn: never status 0" {
	local shim
	shim=$(PAUSE_SHIM="${top_builddir:-$top_srcdir}/tests/preload/eio.so" _pause_preload) ||
		exit 1
	make_loop_fs ext4 64 -b 4096 -E lazy_itable_init=0,lazy_journal_init=0
	mount -o remount,noinit_itable "$MNT"
	mkdir "$MNT/d"
	for i in $(seq 1 30); do echo "content $i" >"$MNT/d/file-$i"; done
	sync
	rm -f "$MNT"/d/file-1*
	sync
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -0 "$FSTRIM_EXT" --audit "$MNT"

	# not all examined (32), or what was read found data (2)
	fail_each_read "$shim" "2 32" --audit "$MNT"
	echo "# --audit: $CHECKED runs, each with one failed read" >&3
	# every run the same reads: all the free space, whatever the last proved
	fail_each_read "$shim" 1 -v --journal --read-back=all "$MNT"
	echo "# --journal: $CHECKED runs, each with one failed read" >&3
	# and with no fault, the same filesystem is clean
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -0 "$FSTRIM_EXT" --audit "$MNT"
}
