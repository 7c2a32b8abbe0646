#!/usr/bin/env bats
# The journal step on real loop filesystems: what the user would check
# on the device afterwards.
# shellcheck disable=SC2154 # $stderr comes from run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	_common_setup
	require_root
	require_cmd strace debugfs e2fsck strings
}

teardown() {
	_common_teardown
}

# Unmount the test filesystem so that the image can be read as a whole.
unmount_test_fs() {
	umount "$MNT"
}

# journal_nonzero_bytes IMG: sets JOURNAL_NONZERO to the bytes of the
# journal, after its superblock, that are not zero; fails the test when
# debugfs does not dump the whole journal.
journal_nonzero_bytes() {
	local dump="$BATS_TEST_TMPDIR/journal.dump" bs blocks size
	rm -f "$dump"
	bs=$(dumpe2fs -h "$1" 2>/dev/null | awk -F: '/^Block size/ { gsub(/ /, "", $2); print $2 }')
	blocks=$(dumpe2fs -h "$1" 2>/dev/null |
		awk -F: '/^Total journal blocks/ { gsub(/ /, "", $2); print $2 }')
	[[ $bs =~ ^[0-9]+$ && $blocks =~ ^[0-9]+$ ]] ||
		fail "dumpe2fs shows no block size or journal length for $1"
	debugfs -R "dump <8> $dump" "$1" >/dev/null 2>&1
	size=$(stat -c %s "$dump" 2>/dev/null) || fail "debugfs did not dump the journal of $1"
	((size == bs * blocks && blocks > 1)) ||
		fail "the journal dump of $1 has $size bytes, not $((bs * blocks))"
	JOURNAL_NONZERO=$(tail -c +"$((bs + 1))" "$dump" | tr -d '\0' | wc -c)
}

@test "--journal: no deleted name or content of a synced deletion stays on the device" {
	make_loop_fs ext4 192 -b 4096
	make_pii_files "$MNT/keep" KEPT 20
	make_pii_files "$MNT/gone" GONE 50
	sync
	(cd "$MNT/keep" && sha256sum -- *) >"$BATS_TEST_TMPDIR/kept.sum"
	rm -rf "$MNT/gone"
	sync

	# the deletion alone leaves the names and contents readable
	run -0 count_on_image "$IMG" 'PII-SSN-GONE'
	((output > 0)) || fail "expected deleted names on the image before the run"
	run -0 count_on_image "$IMG" 'CONTENT-GONE'
	((output > 0)) || fail "expected deleted contents on the image before the run"

	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* \([0-9]+ bytes\) trimmed, journal checkpointed and discarded via (FS_IOC_CHKPT_JRNL|EXT4_IOC_CHECKPOINT)$"

	unmount_test_fs
	run -0 count_on_image "$IMG" 'PII-SSN-GONE'
	assert_output 0
	run -0 count_on_image "$IMG" 'CONTENT-GONE'
	assert_output 0
	run -0 e2fsck -fn "$IMG"

	mount "$LOOPDEV" "$MNT"
	MOUNTS+=("$MNT")
	(cd "$MNT/keep" && sha256sum -c --quiet "$BATS_TEST_TMPDIR/kept.sum")
}

@test "--journal tries FS_IOC_CHKPT_JRNL, and falls back to EXT4_IOC_CHECKPOINT without the patch" {
	make_loop_fs ext4 64 -b 4096
	run_traced_stdout -v --journal "$MNT"
	assert_success
	# strace names the ioctls by number: size 8 is FS_IOC_CHKPT_JRNL, 4 EXT4_IOC_CHECKPOINT
	run -0 grep -c -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x8\)' "$STRACE_LOG"
	assert_output 1
	if [[ -e /sys/fs/ext4/features/chkpt_jrnl ]]; then
		run -1 grep -c -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x4\)' "$STRACE_LOG"
		assert_output 0
	else
		run grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x8\).*ENOTTY' "$STRACE_LOG"
		assert_success
		run -0 grep -c -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x4\).* = 0$' "$STRACE_LOG"
		assert_output 1
		run -0 --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
		assert_output --partial "via EXT4_IOC_CHECKPOINT"
	fi
	# syncfs, FITRIM, the journal, FITRIM again
	run -0 grep -c FITRIM "$STRACE_LOG"
	assert_output 2
}

@test "--journal leaves the journal blocks reading as zeroes" {
	# no lazy inode table init: its journalled group update could
	# commit after the erase (seen: 55 bytes in the journal)
	load test_helper/workload
	make_quiet_ext4 128
	make_pii_files "$MNT/d" J 200
	sync
	journal_nonzero_bytes "$IMG"
	((JOURNAL_NONZERO > 0)) || fail "the journal held no data before the run"
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	assert_output ""
	unmount_test_fs
	journal_nonzero_bytes "$IMG"
	assert_equal "$JOURNAL_NONZERO" 0
	run -0 e2fsck -fn "$IMG"
}

@test "--journal-erase=zeroout writes zeroes over the journal" {
	# no lazy inode table init: its journalled group update could
	# commit after the erase (seen: 55 bytes in the journal)
	load test_helper/workload
	make_quiet_ext4 128
	make_pii_files "$MNT/d" Z 200
	sync
	journal_nonzero_bytes "$IMG"
	((JOURNAL_NONZERO > 0)) || fail "the journal held no data before the run"
	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal-erase=zeroout "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT$"
	unmount_test_fs
	journal_nonzero_bytes "$IMG"
	assert_equal "$JOURNAL_NONZERO" 0
	run -0 e2fsck -fn "$IMG"
}

@test "--journal-only erases the journal and issues no FITRIM" {
	load test_helper/workload
	make_quiet_ext4 64
	make_pii_files "$MNT/d" JO 100
	sync
	journal_nonzero_bytes "$IMG"
	((JOURNAL_NONZERO > 0)) || fail "the journal held no data before the run"
	run_traced_stdout -v --journal-only "$MNT"
	assert_success
	assert_output --regexp "^$MNT: journal checkpointed and discarded via (FS_IOC_CHKPT_JRNL|EXT4_IOC_CHECKPOINT)$"
	run -1 grep -c FITRIM "$STRACE_LOG"
	assert_output 0
	unmount_test_fs
	journal_nonzero_bytes "$IMG"
	assert_equal "$JOURNAL_NONZERO" 0
}

@test "--dry-run --journal probes and changes nothing" {
	make_loop_fs ext4 64 -b 4096 -E lazy_itable_init=0,lazy_journal_init=0
	make_pii_files "$MNT/d" DRY 20
	rm -rf "$MNT/d"
	sync
	local before
	before=$(sha256sum <"$IMG")
	run_traced --dry-run --journal "$MNT"
	assert_success
	assert_output "$MNT: 0 B (dry run) trimmed, journal discard possible via EXT4_IOC_CHECKPOINT (dry run)"
	run -1 grep -c FITRIM "$STRACE_LOG"
	assert_output 0
	# FS_IOC_CHKPT_JRNL is probed with its own dry run, which this
	# kernel does not have
	run -0 grep -c -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x8\), 0x[0-9a-f]+\) = -1 ENOTTY' "$STRACE_LOG"
	assert_output 1
	sync
	[[ $(sha256sum <"$IMG") == "$before" ]] || fail "the image changed in a dry run"
}

@test "ext4 without a journal: the journal step is unsupported" {
	make_loop_fs ext4 64 -b 4096 -O ^has_journal
	run -1 "$FSTRIM_EXT" --journal "$MNT"
	assert_output "fstrim-ext: $MNT: the journal step is not supported: the filesystem has no journal"
	run -0 "$FSTRIM_EXT" --journal --quiet-unsupported "$MNT"
	assert_output ""
}

# No journal to erase, but the free space holds what deleted files left
# all the same: read back as on a journaled ext4, and a failure, quiet or
# not (it passed as done, status 0, with the deleted file on the device),
# as is a read back that could not be made.
@test "ext4 without a journal: the free space is read back; a deleted file FITRIM cannot reach fails the run" {
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_first b_last c_first c_last d_first d_last
	local eio
	require_cmd filefrag jq
	load test_helper/workload
	# after the sanitizers' runtime, in their build
	eio=$(PAUSE_SHIM="${top_builddir:-$top_srcdir}/tests/preload/eio.so" _pause_preload) ||
		exit 1
	make_loop_fs ext4 64 -b 4096 -O ^has_journal
	delete_between 200K
	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal --quiet-unsupported -m 1M "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, but 50 free blocks FITRIM cannot reach still hold data\$"
	assert_equal "$stderr" "fstrim-ext: $MNT: 50 free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), 50 in free extents shorter than FITRIM's minimum (1 MiB)"
	# without -m FITRIM discards it, and the read back shows it gone
	run -0 --separate-stderr "$FSTRIM_EXT" -J --journal --quiet-unsupported "$MNT"
	assert_equal "$(jq -r '.filesystems[0] | "\(.status) \(.trim_verified)"' <<<"$output")" \
		'unsupported zero'
	run -1 grep -c "Jane Q. Public" < <(device_strings "$LOOPDEV")
	assert_output 0
	# the reads of the deleted file's blocks alone fail (the journal, the
	# directories and the rest of the free space read well): the free
	# space is not proven erased, status 1
	FSTRIM_EXT_EIO="$LOOPDEV:$((c_first * 4096)):$(((c_last - c_first + 1) * 4096))" \
		LD_PRELOAD="$eio" run -1 --separate-stderr "$FSTRIM_EXT" -v --journal \
		--quiet-unsupported --read-back=all "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, but the free space could not be read back\$"
	assert_equal "$stderr" \
		"fstrim-ext: $MNT: the discarded free space could not be read back: Input/output error"
	# every read of the device fails: no proof, never status 0
	FSTRIM_EXT_EIO="$LOOPDEV:0:$((64 << 20))" LD_PRELOAD="$eio" \
		run -1 --separate-stderr "$FSTRIM_EXT" --journal --quiet-unsupported "$MNT"
	[[ $stderr == *"could not be read"* ]] || fail "stderr: $stderr"
}

@test "a journal device without discard: not done, never quiet, with the hint; zeroout works" {
	make_loop_fs ext4 64 -b 4096
	disable_discard "$LOOPDEV"
	run -1 "$FSTRIM_EXT" --journal-only "$MNT"
	assert_output "fstrim-ext: $MNT: journal step not done: the journal device does not support discard (try --journal-erase=zeroout)"
	# a journal that holds deletions and was not erased is a failure,
	# whatever --quiet-unsupported says (fstrim-ext.service passes it)
	run -1 "$FSTRIM_EXT" --journal-only --quiet-unsupported "$MNT"
	assert_output "fstrim-ext: $MNT: journal step not done: the journal device does not support discard (try --journal-erase=zeroout)"
	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal-only --journal-erase=zeroout "$MNT"
	assert_output "$MNT: journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT"
}

# A device without discard: FITRIM is not supported, so the free space is
# never trimmed; --journal-erase=zeroout still erases the journal. What the
# deleted files left in free space is read back, and fails the filesystem:
# --journal asked for it to be gone (it passed with status 0 before).
@test "a device without discard: the untrimmed free space is read back, and data there fails the run" {
	require_cmd jq
	local n
	make_loop_fs ext4 64 -b 4096
	make_pii_files "$MNT/gone" NOTRIM 20
	sync
	rm -rf "$MNT/gone"
	sync
	disable_discard "$LOOPDEV"

	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal-erase=zeroout "$MNT"
	assert_equal "${stderr_lines[0]}" "fstrim-ext: $MNT: the discard operation is not supported"
	[[ ${stderr_lines[1]} =~ ^"fstrim-ext: $MNT: the free space was not trimmed (the discard operation is not supported): "([1-9][0-9]*)" free blocks hold data ("[0-9.]+" "[KMG]"iB read back)"$ ]] ||
		fail "stderr: $stderr"
	n=${BASH_REMATCH[1]}
	assert_equal "${#stderr_lines[@]}" 2
	assert_output "$MNT: journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT, but $n free blocks, not trimmed, still hold data"
	# the device agrees: the deleted contents are there to read
	((n >= 20)) || fail "$n blocks for 20 deleted files"
	[[ $(strings -a "$LOOPDEV" | grep -c CONTENT-NOTRIM) -eq 20 ]] ||
		fail "the device does not hold the 20 deleted contents"

	# never quiet, whatever --quiet-unsupported says; --json says why
	run -1 --separate-stderr "$FSTRIM_EXT" --quiet-unsupported --journal-erase=zeroout "$MNT"
	assert_output ""
	[[ $stderr == "fstrim-ext: $MNT: the free space was not trimmed"* ]] || fail "stderr: $stderr"
	run -1 --separate-stderr "$FSTRIM_EXT" --json --journal-erase=zeroout "$MNT"
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" data-left
	[[ $(jq -r '.filesystems[0].error' <<<"$output") == "free space: "*" blocks, not trimmed, still hold data" ]] ||
		fail "json: $output"

	# chosen from a table (the unit's way), where fstrim is silent about a
	# filesystem that cannot discard: still a failure, and said
	printf '%s %s ext4 defaults 0 0\n' "$LOOPDEV" "$MNT" >"$BATS_TEST_TMPDIR/tab"
	run -32 --separate-stderr "$FSTRIM_EXT" --journal-erase=zeroout -I "$BATS_TEST_TMPDIR/tab"
	[[ $stderr == *"fstrim-ext: $MNT: the free space was not trimmed"* ]] || fail "stderr: $stderr"

	# --journal-only was not asked to trim: the free space is not its business
	run -0 "$FSTRIM_EXT" --journal-only --journal-erase=zeroout "$MNT"
}

# The same device with -m: a deleted file's free extent shorter than the
# minimum is read before the run and again after, and its blocks are told
# by where they lie (the line said "0 held ..., 0 in free extents shorter
# than FITRIM's minimum" of its 50 before: they were never read again).
@test "a device without discard, -m 1M: a deleted 200 KiB file's blocks are counted as in an extent below the minimum" {
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_first b_last c_first c_last d_first d_last
	require_cmd filefrag
	make_loop_fs ext4 64 -b 4096
	delete_between 200K
	disable_discard "$LOOPDEV"

	run -1 --separate-stderr "$FSTRIM_EXT" --journal-erase=zeroout -m 1M "$MNT"
	assert_equal "${stderr_lines[0]}" "fstrim-ext: $MNT: the discard operation is not supported"
	assert_equal "${stderr_lines[1]}" "fstrim-ext: $MNT: 50 free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), 50 in free extents shorter than FITRIM's minimum (1 MiB)"
	assert_equal "${#stderr_lines[@]}" 2
	[[ $(strings -a "$LOOPDEV" | grep -c "Jane Q. Public") -ge 5000 ]] ||
		fail "the deleted contents are not on the device"
}

@test "xfs: trimmed, the journal step is unsupported (tests/xfs.bats: what stays)" {
	require_cmd mkfs.xfs
	make_loop_fs xfs 320
	run -1 "$FSTRIM_EXT" -v --journal "$MNT"
	assert_line --regexp "^$MNT: .* \([0-9]+ bytes\) trimmed$"
	assert_line --partial "fstrim-ext: $MNT: the journal step is not supported: xfs keeps the names"
	run -0 "$FSTRIM_EXT" --journal --quiet-unsupported "$MNT"
	assert_output ""
}

@test "data=journal: deleted contents leave the journal too" {
	MOUNT_OPTS=data=journal make_loop_fs ext4 192 -b 4096
	make_pii_files "$MNT/keep" DJKEEP 20
	make_pii_files "$MNT/gone" DJGONE 60
	sync
	rm -rf "$MNT/gone"
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	unmount_test_fs
	run -0 count_on_image "$IMG" 'DJGONE'
	assert_output 0
	run -0 count_on_image "$IMG" 'CONTENT-DJKEEP'
	((output > 0)) || fail "kept contents are missing"
	run -0 e2fsck -fn "$IMG"
}

@test "--journal on a read-only filesystem: refused with one line, no ioctl, the image unchanged" {
	make_loop_fs ext4 64 -b 4096 -E lazy_itable_init=0,lazy_journal_init=0
	make_pii_files "$MNT/d" RO 20
	rm -rf "$MNT/d"
	sync
	mount -o remount,ro "$MNT"
	local before opt
	before=$(sha256sum <"$IMG")
	for opt in --journal --journal-only --journal-erase=zeroout; do
		run_traced_stdout "$opt" "$MNT"
		assert_failure 1
		assert_output ""
		assert_equal "$stderr" "fstrim-ext: $MNT: read-only filesystem: the journal step would write to it; nothing done"
		assert_no_trim_ioctl
	done
	sync
	[[ $(sha256sum <"$IMG") == "$before" ]] || fail "the read-only filesystem's image changed"
	# FITRIM alone stays as fstrim has it
	run_traced_stdout "$MNT"
	assert_success
	run -0 grep -c FITRIM "$STRACE_LOG"
	assert_output 1
}

# fail_second_fitrim ARGS...: run fstrim-ext ARGS with the second FITRIM
# failing with EIO. Each FITRIM is made by a child process, which strace's
# fault injection counts apart: the shim tests/preload/pause.so counts
# them across processes and makes the second fail.
fail_second_fitrim() {
	local preload log="$BATS_TEST_TMPDIR/fitrims"
	load test_helper/workload
	preload=$(_pause_preload) || exit 1
	rm -f "$log"
	run --separate-stderr env LD_PRELOAD="$preload" FSTRIM_EXT_FITRIM_LOG="$log" \
		FSTRIM_EXT_FAIL_FITRIM=2 "$FSTRIM_EXT" "$@"
	[[ $(stat -c %s "$log") -eq 2 ]] || fail "not two FITRIM calls: $(stat -c %s "$log")"
}

@test "the FITRIM after the checkpoint fails: reported, status 1, the line does not say all went well" {
	require_cmd jq
	make_loop_fs ext4 64 -b 4096
	fail_second_fitrim -v --journal-erase=zeroout "$MNT"
	assert_failure 1
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and zeroed via EXT4_IOC_CHECKPOINT, but the FITRIM after it failed$"
	grep -Fxq "fstrim-ext: $MNT: FITRIM after the journal checkpoint failed: Input/output error; blocks the checkpoint freed (a deleted directory's) may still hold names" <<<"$stderr" ||
		fail "no line about the failed FITRIM: $stderr"

	fail_second_fitrim --json --journal-erase=zeroout "$MNT"
	assert_failure 1
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" "FITRIM after the journal checkpoint: Input/output error"
}

@test "--journal reads the journal and all the discarded free space back: zero" {
	require_cmd jq
	make_loop_fs ext4 64 -b 4096
	make_pii_files "$MNT/gone" RB 20
	sync
	rm -rf "$MNT/gone"
	run -0 --separate-stderr "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].journal_verified' <<<"$output")" zero
	assert_equal "$(jq -r '.filesystems[0].journal_readback_blocks' <<<"$output")" 0
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" zero
	# all of the free space: on 64 MiB, more than the 64 extents of 1 MiB once read
	(($(jq -r '.filesystems[0].trim_readback_bytes' <<<"$output") >= 48 << 20)) ||
		fail "not all read back: $output"
}

# A drive may answer each read of a block it was told to discard with
# other data (tests/preload/unsteady.so: the freed blocks of a deleted
# file read back with a new pattern at every O_DIRECT read). Whether it
# still holds what was deleted cannot be told: the run is not verified
# and fails, where it counted such blocks as erased. A block that reads
# other data once and then the same (a writer's) is not that.
# unsteady_run MODE ARGS...: fstrim-ext ARGS on a 64 MiB ext4 whose deleted
# file's 64 KiB read back so.
unsteady_run() {
	local mode=$1 shim blk
	shift
	load test_helper/workload
	shim=$(PAUSE_SHIM="$top_builddir/tests/preload/unsteady.so" _pause_preload) || exit 1
	make_loop_fs ext4 64 -b 4096
	head -c $((64 << 10)) /dev/urandom >"$MNT/gone"
	sync
	blk=$(debugfs -R "blocks /gone" "$LOOPDEV" 2>/dev/null | awk '{ print $1 }')
	[[ $blk =~ ^[0-9]+$ ]] || fail "no block for /gone: '$blk'"
	rm "$MNT/gone"
	sync
	run --separate-stderr env LD_PRELOAD="$shim" \
		FSTRIM_EXT_UNSTEADY="$LOOPDEV:$((blk * 4096)):$((64 << 10)):$mode" "$FSTRIM_EXT" "$@" "$MNT"
}

# bats test_tags=root
@test "--journal: free blocks that read back other data at every read after the second discard: not verified, status 1" {
	require_cmd jq
	unsteady_run each -v --journal
	assert_equal "$status" 1
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+, but 16 free blocks read back other data at each read: not verified$"
	[[ $stderr == *"fstrim-ext: $MNT: 16 free blocks read back after a second discard with other data than before, and other again at the read right after: the device does not read discarded blocks back the same way twice, so their erase is not verified"* ]] ||
		fail "stderr: $stderr"
	unsteady_run each --json --journal
	assert_equal "$status" 1
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" not-verified
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" \
		"free space: 16 blocks read back other data at each read: not verified"
}

# The journal read as fresh noise at each read (an SSD without
# deterministic read after TRIM): no transaction explains its blocks, and
# what they hold cannot be told. Counted as "committed since" before, with
# status 0; not verified now, after a zeroout too.
# bats test_tags=root
@test "--journal: journal blocks that read back other data at every read: not verified, status 1" {
	local shim first n range
	require_cmd jq
	load test_helper/workload
	shim=$(PAUSE_SHIM="$top_builddir/tests/preload/unsteady.so" _pause_preload) || exit 1
	make_loop_fs ext4 64 -b 4096
	# the journal's last extent, all of it in the log (after block 0)
	read -r first n < <(debugfs -R "ex <8>" "$LOOPDEV" 2>/dev/null |
		awk '$1 ~ /^[0-9]+\/$/ { phys = $(NF - 3); len = $NF }
			END { print phys, len }')
	[[ $first =~ ^[0-9]+$ && $n =~ ^[0-9]+$ ]] && ((n > 100)) ||
		fail "no journal extent: '$first' '$n'"
	range="$LOOPDEV:$((first * 4096)):$((n * 4096)):each"
	run --separate-stderr env LD_PRELOAD="$shim" FSTRIM_EXT_UNSTEADY="$range" \
		"$FSTRIM_EXT" -v --journal-only "$MNT"
	assert_equal "$status" 1
	assert_output --regexp "^$MNT: journal checkpointed and discarded via [A-Z_0-9]+; $n blocks read back other data at each read: not verified$"
	[[ $stderr == *"fstrim-ext: $MNT: $n journal blocks read back other data at each of three reads, after "*" ZEROOUT too, and no transaction explains them: the device does not read them back the same way twice, so the journal's erase is not verified"* ]] ||
		fail "stderr: $stderr"
	run --separate-stderr env LD_PRELOAD="$shim" FSTRIM_EXT_UNSTEADY="$range" \
		"$FSTRIM_EXT" --json --journal-only "$MNT"
	assert_equal "$status" 1
	assert_equal "$(jq -r '.filesystems[0].journal_verified' <<<"$output")" not-verified
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" \
		"journal: $n blocks read back other data at each read: not verified"
}

# bats test_tags=root
@test "--journal: free blocks that read back other data once, then the same: verified, status 0" {
	require_cmd jq
	unsteady_run once --json --journal
	assert_equal "$status" 0
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" zero
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" ok
}

# A FITRIM that discards nothing (the FITRIM_ERRNO=0 shim) leaves a
# deleted file in free space. The file begins with 2 MiB of zeroes, so
# the free extent it leaves begins with them: a read of the first MiB of
# each extent (main before this) found nothing and said "zero", status 0.
# bats test_tags=root
@test "--journal reads back all of each discarded extent: deleted data past its first MiB fails the run" {
	require_cmd jq
	load test_helper/workload
	local shim
	make_loop_fs ext4 64 -b 4096
	{
		head -c $((2 << 20)) /dev/zero
		for ((i = 0; i < 2000; i++)); do
			printf 'FAR-MARKER-%05d PII-SSN-FAR\n' "$i"
		done
	} >"$MNT/gone"
	sync
	rm "$MNT/gone"
	sync
	shim=$(PAUSE_SHIM="$top_builddir/tests/preload/enosys.so" _pause_preload)
	run -1 --separate-stderr env FITRIM_ERRNO=0 LD_PRELOAD="$shim" \
		"$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" data-left
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	(($(jq -r '.filesystems[0].trim_readback_bytes' <<<"$output") >= 48 << 20)) ||
		fail "not all read back: $output"
	# what it said is so: the markers are on the device
	(($(device_strings "$LOOPDEV" | grep -c FAR-MARKER-) >= 2000)) ||
		fail "the markers are not on the device"
}

# A file of 128 KiB is deleted, then a small file is written: ext4 cuts
# it from a new group preallocation (512 blocks) that starts where the
# deleted file lay. The rest of the preallocation is free on the disk but
# not to the allocator, so no FITRIM discards it until it is released.
# bats test_tags=root
@test "deleted contents in blocks a preallocation holds: --journal fails and says why; after a remount, clean" {
	require_root
	require_cmd jq
	load test_helper/workload
	local i cpu held
	require_cmd taskset
	# Both files are written out by their own fsync, by one process on one
	# CPU: ext4 cuts a small file from the preallocation of the CPU that
	# allocates, so writeback by a flusher thread on another CPU (a busy
	# machine) could place it in another CPU's preallocation, elsewhere.
	cpu=$(awk '$1 == "Cpus_allowed_list:" { split($2, c, "[-,]"); print c[1] }' /proc/self/status)
	make_quiet_ext4 128
	for ((i = 0; i < 4096; i++)); do
		echo "HELD-CONTENT-$i-of-a-deleted-file"
	done | taskset -c "$cpu" dd of="$MNT/big" conv=fsync status=none
	rm "$MNT/big"
	sync -f "$MNT"
	echo kept | taskset -c "$cpu" dd of="$MNT/small" conv=fsync status=none
	# the layout the test is about, seen read-only by the audit
	held=$("$FSTRIM_EXT" --audit --json "$MNT" 2>/dev/null |
		jq -r '.filesystems[0].audit_free_held_blocks')
	((held > 0)) || fail "no preallocation over the deleted file: $held blocks held"
	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+, but [1-9][0-9]* free blocks FITRIM cannot reach still hold data$"
	grep -Eq "^fstrim-ext: $MNT: ([1-9][0-9]*) free blocks that FITRIM cannot reach still hold data of deleted files: \1 held by the allocator \(preallocated, until used or the filesystem is unmounted\), 0 in free extents shorter than the discard granularity \(4 KiB\)$" <<<"$stderr" ||
		fail "stderr: $stderr"
	# what the failure says is so: the contents are on the device
	(($(count_held_lines "$LOOPDEV") > 0)) || fail "nothing of the deleted file on the device"
	run -1 --separate-stderr "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	[[ $(jq -r '.filesystems[0].error' <<<"$output") =~ ^"free space: "[1-9][0-9]*" blocks FITRIM cannot reach still hold data"$ ]] ||
		fail "JSON: $output"
	# and the audit gives the same reason for them
	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	(($(jq -r '.filesystems[0].audit_free_held_blocks' <<<"$output") > 0)) ||
		fail "the audit does not say the allocator holds them: $output"

	# unmounting releases the preallocation: the next run erases it all
	umount "$MNT"
	mount -o noatime "$LOOPDEV" "$MNT"
	run --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	((status == 0)) || fail "status $status after the remount: $output; $stderr"
	assert_equal "$(count_held_lines "$LOOPDEV")" 0
}

# count_held_lines DEV: the deleted file's lines on DEV, read with O_DIRECT
count_held_lines() {
	device_strings "$1" | grep -c -- "HELD-CONTENT-" || true
}

# A free extent exactly FITRIM's minimum long is discarded (ext4 takes
# extents of at least the minimum), so the read back must read it: on a
# device that ignores discard, a deleted 1 MiB file between two live ones
# with -m 1M is found, all 256 blocks of it.
@test "a device that ignores discard, -m 1M: a deleted file whose free extent is exactly the minimum is read back" {
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_first b_last c_first c_last d_first d_last
	require_cmd filefrag
	attach_discard_ignoring_disk 64
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0 "$LOOPDEV" >/dev/null
	track_mount -o noatime "$LOOPDEV" "$MNT"
	delete_between 1M
	((c_last - c_first + 1 == 256)) || fail "c is $c_first-$c_last, not 1 MiB"

	run -1 --separate-stderr "$FSTRIM_EXT" --journal -m 1M "$MNT"
	[[ $stderr == *"fstrim-ext: $MNT: the device did not erase what FITRIM discarded: 256 free blocks still hold data after a second discard"* ]] ||
		fail "c's 256 blocks not all found: $stderr"
}

# A device that ignores discard: attach_discard_ignoring_disk.
# The loop driver turns a write-zeroes without NOUNMAP (jbd2's zeroout)
# into a hole punch, which this disk ignores too: the ZEROOUT checkpoint
# leaves the journal as the discard did. Nothing else is tried (zeroing
# the blocks through the device would need the filesystem frozen), so the
# journal's data left is said and fails the run.
@test "a device that ignores discard: the journal is erased again, what stays is said, the run fails" {
	require_cmd jq
	attach_discard_ignoring_disk 64
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0 "$LOOPDEV" >/dev/null
	track_mount -o noatime "$LOOPDEV" "$MNT"
	make_pii_files "$MNT/gone" IGN 20
	sync
	rm -rf "$MNT/gone"
	sync
	# deleted contents stay readable in free space: never status 0
	run -1 --separate-stderr strace -f -o "$BATS_TEST_TMPDIR/strace" -e trace=ioctl \
		"$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+; [1-9][0-9]* blocks still hold data after EXT4_IOC_CHECKPOINT ZEROOUT too, but [1-9][0-9]* discarded free blocks still hold data$"
	grep -Eq "^fstrim-ext: $MNT: [1-9][0-9]* journal blocks still hold data after the erase and EXT4_IOC_CHECKPOINT ZEROOUT$" <<<"$stderr" ||
		fail "stderr: $stderr"
	grep -Eq "^fstrim-ext: $MNT: the device did not erase what FITRIM discarded: [1-9][0-9]* free blocks still hold data after a second discard \(.* read back\)$" <<<"$stderr" ||
		fail "stderr: $stderr"
	# the second discard walked every group again, those ext4 marks as
	# trimmed too: first with a group's size as minimum, then with none
	grep -A1 -E 'FITRIM, \{start=0, len=[0-9]+, minlen=134217728\}' "$BATS_TEST_TMPDIR/strace" |
		grep -Eq 'FITRIM, \{start=0, len=[0-9]+, minlen=0\}' ||
		fail "no second discard over the groups marked trimmed: $(grep FITRIM "$BATS_TEST_TMPDIR/strace")"
	# one erase, one ZEROOUT for the data read back; no freeze, no write to the device
	assert_equal "$(grep -c -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x4\), 0x[0-9a-f]+\) = 0' "$BATS_TEST_TMPDIR/strace")" 2
	! grep -E 'FIFREEZE|FITHAW|BLKZEROOUT' "$BATS_TEST_TMPDIR/strace" || fail "froze or zeroed the device"
	# what the run said is so: the journal and the free space still hold data
	run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	(($(jq -r '.filesystems[0].audit_journal_old_blocks' <<<"$output") > 0)) ||
		fail "the journal reads zero: $output"
	(($(jq -r '.filesystems[0].audit_free_nonzero_blocks' <<<"$output") >= 20)) ||
		fail "the ignored discard left the contents: $output"
	run -1 --separate-stderr "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].journal_verified' <<<"$output")" data-left
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" data-left
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" failed
	[[ $(jq -r '.filesystems[0].error' <<<"$output") =~ ^"free space: "[1-9][0-9]*" discarded blocks still hold data"$ ]] ||
		fail "JSON error: $output"
	# with -a the filesystem counts as failed: 32, all failed
	load test_helper/workload
	write_table "$BATS_TEST_TMPDIR/table" "$MNT"
	run -32 --separate-stderr "$FSTRIM_EXT" --journal -I "$BATS_TEST_TMPDIR/table"
}

# A stop that comes during the journal checkpoint: the checkpoint ends,
# the FITRIM after it is not begun, and nothing claims it was cut short
# at some byte: it is named as not done, and the run ends 143.
@test "SIGTERM during the checkpoint: the FITRIM after it is not done, and said so" {
	local preload req=0x4004662b
	require_cmd jq
	load test_helper/workload
	[[ ! -e /sys/fs/ext4/features/chkpt_jrnl ]] || req=0x4008662b
	make_loop_fs ext4 64 -b 4096
	preload=$(_pause_preload) || exit 1
	run -143 --separate-stderr env LD_PRELOAD="$preload" FSTRIM_EXT_SIGTERM_AT=$req \
		"$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+, but the FITRIM after it was interrupted$"
	assert_equal "$stderr" "fstrim-ext: $MNT: FITRIM after the journal checkpoint not done: interrupted by SIGTERM; blocks the checkpoint freed (a deleted directory's) may still hold names
fstrim-ext: interrupted by SIGTERM"
	run -143 --separate-stderr env LD_PRELOAD="$preload" FSTRIM_EXT_SIGTERM_AT=$req \
		"$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].status' <<<"$output")" interrupted
	assert_equal "$(jq -r '.filesystems[0].journal' <<<"$output")" "done"
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" \
		"FITRIM after the journal checkpoint: not done: interrupted"
	# and the metrics say the same
	run -143 --separate-stderr env LD_PRELOAD="$preload" FSTRIM_EXT_SIGTERM_AT=$req \
		"$FSTRIM_EXT" --metrics "$BATS_TEST_TMPDIR/m.prom" --journal "$MNT"
	grep -Fxq "fstrim_ext_filesystem_status{mountpoint=\"$MNT\",device=\"$LOOPDEV\",fstype=\"ext4\",status=\"interrupted\"} 1" \
		"$BATS_TEST_TMPDIR/m.prom" || fail "metrics: $(cat "$BATS_TEST_TMPDIR/m.prom")"
}

# ignoring_disk_with_journal: an ext4 on attach_discard_ignoring_disk whose
# journal holds transactions (checked): sets IMG to the FUSE disk's file,
# read past the FUSE server and the loop device.
ignoring_disk_with_journal() {
	attach_discard_ignoring_disk 64
	IMG="$BATS_TEST_TMPDIR/disk.img"
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
		"$LOOPDEV" >/dev/null
	track_mount -o noatime,noinit_itable "$LOOPDEV" "$MNT"
	make_pii_files "$MNT/d" IGNJ 100
	sync
	journal_nonzero_bytes "$IMG"
	((JOURNAL_NONZERO > 0)) || fail "the journal held no data before the run"
}

# The discard of --journal-only leaves the journal's data on such a device,
# and so does --journal-erase=zeroout: jbd2 zeroes with write-zeroes that
# may unmap, which a loop device turns into PUNCH_HOLE, ignored here as a
# discard. The read-back after either finds the data, erases once more
# with EXT4_IOC_CHECKPOINT ZEROOUT (ignored the same way), and says that
# the data stays: status 1. Nothing else is tried (no freeze, no write to
# the device), and what the run said is so: the journal holds data.
#
# unerased_journal ERASE DONE: --journal-only --journal-erase=ERASE on
# ignoring_disk_with_journal; the -v line says DONE ("discarded", "zeroed").
unerased_journal() {
	ignoring_disk_with_journal
	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal-only --journal-erase="$1" "$MNT"
	assert_output --regexp "^$MNT: journal checkpointed and $2 via [A-Z_0-9]+; [1-9][0-9]* blocks still hold data after EXT4_IOC_CHECKPOINT ZEROOUT too\$"
	[[ $stderr =~ "fstrim-ext: $MNT: "[1-9][0-9]*" journal blocks still hold data after the erase and EXT4_IOC_CHECKPOINT ZEROOUT" ]] ||
		fail "stderr: $stderr"
	umount "$MNT"
	journal_nonzero_bytes "$IMG"
	((JOURNAL_NONZERO > 0)) || fail "the run said data stays, and the journal reads zero"
}

@test "a device that ignores discard: --journal-only finds the discarded journal holding data and fails" {
	unerased_journal discard discarded
}

@test "a device that ignores discard: --journal-erase=zeroout finds the journal holding data and fails" {
	unerased_journal zeroout zeroed
}

# ext4's FITRIM discards every free extent at least its minimum long, all
# of it, and the read back reads all of it. A deleted 40 MiB file between
# live ones is such an extent for -m 32M, and no placement lets whole
# 32 MiB units cover it: a read back cut to them (as before 2026-12-06)
# missed a fifth of the file at least. On a device that ignores discard
# every block of it is still there, and must be counted.
@test "a device that ignores discard, -m 32M: every block of a deleted 40 MiB file is found holding data" {
	local n
	attach_discard_ignoring_disk 320
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
		"$LOOPDEV" >/dev/null
	track_mount -o noatime,noinit_itable "$LOOPDEV" "$MNT"
	# each file written out before the next is begun: on a busy machine
	# writeback may otherwise take a part of one before the others are
	# written, and the deleted file lies in pieces, some below 32 MiB
	dd if=/dev/urandom of="$MNT/before" bs=1M count=20 conv=fsync status=none
	yes "Name: Jane Q. Public SSN: 078-05-1120" | head -c 40M |
		dd of="$MNT/secret" bs=1M iflag=fullblock conv=fsync status=none
	dd if=/dev/urandom of="$MNT/after" bs=1M count=20 conv=fsync status=none
	rm "$MNT/secret"
	sync
	run -1 --separate-stderr "$FSTRIM_EXT" --journal -m 32M "$MNT"
	[[ $stderr =~ "the device did not erase what FITRIM discarded: "([0-9]+)" free blocks still hold data" ]] ||
		fail "stderr: $stderr"
	n=${BASH_REMATCH[1]}
	((n >= 40 * 1024 * 1024 / 4096)) ||
		fail "$n free blocks found holding data; the deleted file alone has 10240: $stderr"
}

# On a device that discards in 64 KiB units, ext4 raises FITRIM's minimum
# to 64 KiB and discards every free extent at least that long, all of it:
# a deleted 200 KiB file's ends lie in parts of units, and a deleted 40 KiB
# file is a free extent FITRIM cannot reach. The device ignores discard, so
# every block of both is still there, and each is counted where it belongs.
@test "a device that discards in 64 KiB units and ignores it: a deleted 200 KiB file is read back whole, a 40 KiB one is found unreachable" {
	# shellcheck disable=SC2034 # a's are set by file_extent, and not needed
	local f a_first a_last b_first b_last c_first c_last d_first d_last
	local e_first e_last x_first x_last g_first g_last cpu
	require_cmd filefrag taskset
	attach_discard_ignoring_disk 256 65536
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
		"$LOOPDEV" >/dev/null
	track_mount -o noatime,noinit_itable "$LOOPDEV" "$MNT"
	# the first CPU this test may run on
	cpu=$(awk '$1 == "Cpus_allowed_list:" { split($2, c, "[-,]"); print c[1] }' /proc/self/status)
	# a, b, c, d of 200 KiB (the first lies apart, then one after another);
	# e, x, g of 40 KiB, each written out by its own fsync on one CPU: ext4
	# places small files one after another in a preallocation of the CPU
	# that allocates. c and x are deleted.
	for f in a b c d e x g; do
		case $f in
		c | x) yes "Name: Jane Q. Public SSN: 078-05-1120" ;;
		*) cat /dev/urandom ;;
		esac | if [[ $f == [abcd] ]]; then
			head -c 200K >"$MNT/$f"
			sync -f "$MNT"
		else
			head -c 40K | taskset -c "$cpu" dd of="$MNT/$f" conv=fsync status=none
		fi
		file_extent "$MNT/$f" "$f"
	done
	((c_first == b_last + 1 && d_first == c_last + 1)) ||
		fail "b, c, d are not one after another: $b_first-$b_last $c_first-$c_last $d_first-$d_last"
	((x_first == e_last + 1 && g_first == x_last + 1)) ||
		fail "e, x, g are not one after another: $e_first-$e_last $x_first-$x_last $g_first-$g_last"
	((c_first % 16 && (c_last + 1) % 16)) || fail "c is aligned: $c_first-$c_last"
	rm "$MNT/c" "$MNT/x"
	sync -f "$MNT"

	run -1 --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	[[ $stderr == *"fstrim-ext: $MNT: the device did not erase what FITRIM discarded: 50 free blocks still hold data after a second discard"* ]] ||
		fail "c's 50 blocks not all found: $stderr"
	# of them, only c's ends lie in units c's free extent does not cover whole
	[[ $stderr == *", $(((16 - c_first % 16) + (c_last + 1) % 16)) of them in 64 KiB discard units that their free extent does not cover whole, which a device that erases whole units only keeps"* ]] ||
		fail "c's ends not told apart: $c_first-$c_last: $stderr"
	[[ $stderr == *"fstrim-ext: $MNT: 10 free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), 10 in free extents shorter than the discard granularity (64 KiB)"* ]] ||
		fail "x's 10 blocks not found unreachable: $stderr"
	# with -m 1M, c's extent is shorter than FITRIM's minimum too, and said so
	run -1 --separate-stderr "$FSTRIM_EXT" --journal -m 1M "$MNT"
	[[ $stderr == *"fstrim-ext: $MNT: 60 free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), 60 in free extents shorter than FITRIM's minimum (1 MiB)"* ]] ||
		fail "c's and x's 60 blocks not found unreachable: $stderr"
}

# A device that erases whole units of its discard granularity only: FITRIM
# discards a deleted file's whole free extent, and the parts of units at
# its ends keep their data. The failure says how many of the blocks left
# lie there. (The journal's erase leaves the parts of units at its ends
# too, and here its zeroout as well: the loop device makes a discard of
# the write-zeroes jbd2 sends. Not this test's subject.)
@test "a device that erases whole 64 KiB units only: a deleted file's ends are left, and the failure says they lie in parts of units" {
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_first b_last c_first c_last d_first d_last ends head tail
	require_cmd filefrag
	attach_discard_ignoring_disk 256 65536 units
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
		"$LOOPDEV" >/dev/null
	track_mount -o noatime,noinit_itable "$LOOPDEV" "$MNT"
	delete_between 200K
	((c_first % 16 && (c_last + 1) % 16)) || fail "c is aligned: $c_first-$c_last"
	ends=$(((16 - c_first % 16) + (c_last + 1) % 16))

	run -1 --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	grep -Eqx "fstrim-ext: $MNT: the device did not erase what FITRIM discarded: $ends free blocks still hold data after a second discard \([0-9.]+ [KMG]iB read back\), $ends of them in 64 KiB discard units that their free extent does not cover whole, which a device that erases whole units only keeps" <<<"$stderr" ||
		fail "c's $ends blocks in parts of units ($c_first-$c_last) not told: $stderr"
	# what it says is so: c's ends hold its contents, the whole units between are erased
	head=$(((c_first / 16 + 1) * 16))
	tail=$(((c_last + 1) / 16 * 16))
	c_blocks() {
		dd if="$BATS_TEST_TMPDIR/disk.img" bs=4096 skip="$1" count="$2" status=none
	}
	(($(c_blocks "$c_first" $((head - c_first)) | grep -ac "Jane Q. Public") > 0)) ||
		fail "c's first blocks ($c_first-$((head - 1))) do not hold its contents"
	(($(c_blocks "$tail" $((c_last + 1 - tail)) | grep -ac "Jane Q. Public") > 0)) ||
		fail "c's last blocks ($tail-$c_last) do not hold its contents"
	assert_equal "$(c_blocks "$head" $((tail - head)) | tr -d '\0' | wc -c)" 0
}

# The same on a partition that begins 56 KiB past a unit boundary: the
# device's units are the disk's, so a unit boundary lies 8 KiB into the
# partition (its discard_alignment), and the blocks left are counted in
# the units of the disk, not of the partition. The offset is chosen so
# that, where ext4 puts c, counting in the partition's units would find
# fewer of them (checked).
@test "a partition 56 KiB past a 64 KiB unit boundary: the blocks in parts of units are counted in the disk's units" {
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_first b_last c_first c_last d_first d_last ends head tail part b u wrong=0
	# the partition's first block is block 270 of the disk: 14 past a unit's start
	local at=270
	require_cmd filefrag addpart
	DISK_PARTSCAN=1 attach_discard_ignoring_disk 256 65536 units
	addpart "$LOOPDEV" 1 $((at * 8)) $(((65536 - at - 16) * 8)) || fail "addpart failed"
	part=${LOOPDEV}p1
	[[ -b $part ]] || fail "$part did not appear"
	assert_equal "$(<"/sys/class/block/${part#/dev/}/discard_alignment")" $(((16 - at % 16) * 4096))
	mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
		"$part" >/dev/null
	track_mount -o noatime,noinit_itable "$part" "$MNT"
	delete_between 200K
	# c's whole units on the disk: [head, tail); its ends outside them stay
	head=$((((c_first + at + 15) / 16) * 16))
	tail=$(((c_last + at + 1) / 16 * 16))
	ends=$((head - c_first - at + c_last + at + 1 - tail))
	(((c_first + at) % 16 && (c_last + at + 1) % 16)) ||
		fail "an end of c is aligned on the disk: $c_first-$c_last"
	# of those, how many lie in parts of the partition's own units
	for ((b = c_first; b <= c_last; b++)); do
		((b + at < head || b + at >= tail)) || continue
		u=$((b / 16 * 16))
		((u >= c_first && u + 16 <= c_last + 1)) || wrong=$((wrong + 1))
	done
	((wrong != ends)) ||
		fail "c's ends count the same in the partition's units: $c_first-$c_last"

	run -1 --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	grep -Eqx "fstrim-ext: $MNT: the device did not erase what FITRIM discarded: $ends free blocks still hold data after a second discard \([0-9.]+ [KMG]iB read back\), $ends of them in 64 KiB discard units that their free extent does not cover whole, which a device that erases whole units only keeps" <<<"$stderr" ||
		fail "c's $ends blocks in parts of units ($c_first-$c_last, disk +$at) not told: $stderr"
	# what it says is so, on the disk: c's ends hold its contents, the whole units between are erased
	disk_blocks() {
		dd if="$BATS_TEST_TMPDIR/disk.img" bs=4096 skip="$1" count="$2" status=none
	}
	(($(disk_blocks $((c_first + at)) $((head - c_first - at)) | grep -ac "Jane Q. Public") > 0)) ||
		fail "c's first blocks do not hold its contents"
	(($(disk_blocks "$tail" $((c_last + at + 1 - tail)) | grep -ac "Jane Q. Public") > 0)) ||
		fail "c's last blocks do not hold its contents"
	assert_equal "$(disk_blocks "$head" $((tail - head)) | tr -d '\0' | wc -c)" 0
}
