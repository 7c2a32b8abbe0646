#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# After "fstrim-ext --journal MOUNTPOINT", a raw read of the device finds
# no name and no content of a file deleted before the run; kept files are
# intact and e2fsck -fn is clean. Two trials per scenario (bench/remnants
# runs twenty). Where the tool cannot clean, it says so: free space below
# the discard granularity (1 KiB blocks on a 4 KiB-granular loop device)
# and, on a kernel without the directory-pack fix, names inside live
# htree directory blocks.

# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-240}

load test_helper/common-setup

TRIALS=2

setup() {
	_common_setup
	require_root
	require_cmd mkfs.ext4 e2fsck debugfs losetup md5sum perl
	[[ -x $FSTRIM_EXT ]] || fail "no fstrim-ext at $FSTRIM_EXT"
}

teardown() {
	_common_teardown
}

# fill FILE MARKER I: a small file holding the numbered marker, repeated
fill() {
	local s
	printf -v s '%s%05d.' "$2" "$3"
	s=$s$s$s$s
	s=$s$s$s$s
	printf '%s\n' "$s" >"$1"
}

# populate KIND N: kept files KEEPNAME-i (content KEEPCONTi) in $MNT/d and
# files to delete named DELNAME-i holding DELCONTi, interleaved as files
# arrive over time.
populate() {
	local kind=$1 n=$2 i I
	mkdir "$MNT/d"
	case $kind in
	rename)
		for ((i = 0; i < n; i++)); do
			printf -v I %05d "$i"
			fill "$MNT/d/KEEPNAME-$I" KEEPCONT "$i"
			fill "$MNT/d/VICTIM-$I" DELCONT "$i"
			fill "$MNT/d/DELNAME-$I" NEWCONT "$i"
		done
		;;
	rmdir)
		mkdir -p "$MNT/GONEDIR/sub"
		for ((i = 0; i < n; i++)); do
			printf -v I %05d "$i"
			fill "$MNT/d/KEEPNAME-$I" KEEPCONT "$i"
			if ((i % 2)); then
				fill "$MNT/GONEDIR/sub/DELNAME-$I" DELCONT "$i"
			else
				fill "$MNT/GONEDIR/DELNAME-$I" DELCONT "$i"
			fi
		done
		;;
	*)
		for ((i = 0; i < n; i++)); do
			printf -v I %05d "$i"
			fill "$MNT/d/KEEPNAME-$I" KEEPCONT "$i"
			fill "$MNT/d/DELNAME-$I" DELCONT "$i"
		done
		;;
	esac
	sync -f "$MNT"
}

delete() {
	local kind=$1 n=$2 i I
	case $kind in
	rename)
		for ((i = 0; i < n; i++)); do
			printf -v I %05d "$i"
			mv -f "$MNT/d/DELNAME-$I" "$MNT/d/VICTIM-$I"
		done
		;;
	rmdir) rm -rf "$MNT/GONEDIR" ;;
	*) rm -f "$MNT"/d/DELNAME-* ;;
	esac
	(cd "$MNT/d" && find . -type f -print0 | xargs -0 -r md5sum) >"$BATS_TEST_TMPDIR/sums"
}

# Distinct deleted names and contents on the device, read with O_DIRECT
# past the loop device's page cache: sets NAMES_LEFT and CONTENTS_LEFT.
count_remnants() {
	local counts
	counts=$(dd if="$LOOPDEV" iflag=direct bs=1M status=none |
		LC_ALL=C tr -s '\000' '\n' |
		LC_ALL=C grep -a -o -E 'DELNAME-[0-9]{5}|DELCONT[0-9]{5}' | sort -u |
		awk '/^DELNAME/ { n++ } /^DELCONT/ { c++ } END { print n + 0, c + 0 }')
	read -r NAMES_LEFT CONTENTS_LEFT <<<"$counts"
}

# Unmount, then e2fsck -fn and compare the kept files read by debugfs.
check_fs_after() {
	local out=$BATS_TEST_TMPDIR/out.$1
	umount "$MNT" || fail "umount failed"
	run e2fsck -fn "$LOOPDEV"
	assert_success
	mkdir -p "$out"
	debugfs -R "rdump /d $out" "$LOOPDEV" >/dev/null 2>&1 || fail "debugfs rdump failed"
	(cd "$out/d" && md5sum --quiet -c "$BATS_TEST_TMPDIR/sums") || fail "kept files differ"
}

# one_trial TRIAL KIND N SYNCED [mkfs args...]: a fresh 4 KiB ext4, files
# written, deleted, fstrim-ext --journal, then nothing of them is left.
one_trial() {
	local trial=$1 kind=$2 n=$3 synced=$4
	shift 4
	make_loop_fs ext4 64 -b 4096 "$@"
	populate "$kind" "$n"
	delete "$kind" "$n"
	((synced)) && sync -f "$MNT"

	run --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	assert_success
	# 4 KiB blocks on a 4 KiB-granular device: nothing is below granularity
	[[ $stderr != *"discard granularity"* ]] || fail "unexpected warning: $stderr"

	count_remnants
	[[ $NAMES_LEFT == 0 ]] || fail "trial $trial: $NAMES_LEFT deleted names left on $LOOPDEV"
	[[ $CONTENTS_LEFT == 0 ]] || fail "trial $trial: $CONTENTS_LEFT deleted contents left on $LOOPDEV"
	check_fs_after "$trial"
}

# bats test_tags=root
@test "remnants: 4 KiB blocks, deletion synced: no deleted name or content left" {
	local t
	for ((t = 1; t <= TRIALS; t++)); do
		one_trial "$t" plain 60 1
	done
}

# bats test_tags=root
@test "remnants: 4 KiB blocks, deletion not synced: no deleted name or content left" {
	local t
	for ((t = 1; t <= TRIALS; t++)); do
		one_trial "$t" plain 60 0
	done
}

# bats test_tags=root
@test "remnants: data=journal, deletion not synced: no deleted name or content left" {
	local t
	# shellcheck disable=SC2034 # read by make_loop_fs
	MOUNT_OPTS=data=journal
	for ((t = 1; t <= TRIALS; t++)); do
		one_trial "$t" plain 60 0
	done
}

# bats test_tags=root
@test "remnants: ^metadata_csum, deletion not synced: no deleted name or content left" {
	local t
	for ((t = 1; t <= TRIALS; t++)); do
		one_trial "$t" plain 60 0 -O ^metadata_csum
	done
}

# 40 of each keep the directory one block long, a plain directory: the
# rename itself is measured, not an htree split.
# bats test_tags=root
@test "remnants: file renamed over another: neither the old name nor the old content left" {
	local t
	for ((t = 1; t <= TRIALS; t++)); do
		one_trial "$t" rename 40 0
	done
}

# bats test_tags=root
@test "remnants: directory deleted with its contents: no name or content left" {
	local t
	for ((t = 1; t <= TRIALS; t++)); do
		one_trial "$t" rmdir 60 0
	done
}

# An htree directory keeps old copies of names in the tail that
# dx_pack_dirents() leaves on a leaf split; only a kernel with the
# directory-pack fix clears them. The contents must go in any case; the
# names the directories still hold are read back after the journal step
# and fail the run, said with their number, which the audit confirms.
# bats test_tags=root
@test "remnants: htree directory half deleted: contents gone; names gone, or read back and failed" {
	local n
	make_loop_fs ext4 64 -b 4096
	populate plain 1500
	delete plain 1500

	run --separate-stderr "$FSTRIM_EXT" --journal --verbose "$MNT"
	count_remnants
	[[ $CONTENTS_LEFT == 0 ]] || fail "$CONTENTS_LEFT deleted contents left"
	if [[ -e /sys/fs/ext4/features/dirent_pack_wipe ]]; then
		assert_success
		[[ $NAMES_LEFT == 0 ]] || fail "$NAMES_LEFT deleted names left with dirent_pack_wipe"
	else
		echo "# $NAMES_LEFT deleted names left in live directory blocks (no dirent_pack_wipe)" >&3
		assert_failure 1
		((NAMES_LEFT > 0)) || fail "no name left: the case is not tested"
		[[ $output =~ ", but "([1-9][0-9]*)" names of deleted files remain in directory blocks"$ ]] ||
			fail "output: $output"
		n=${BASH_REMATCH[1]}
		[[ $stderr == *"fstrim-ext: $MNT: $n names of deleted files remain in live blocks of 1 directory (first: /d); the kernel lacks the directory-pack fix"* ]] ||
			fail "stderr: '$stderr'"
		# the audit, a read of its own, finds as many
		run -2 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
		assert_equal "$(jq -r '.filesystems[0].audit_deleted_names' <<<"$output")" "$n"
	fi
	check_fs_after htree
}

# 1 KiB blocks on a loop device whose discard granularity is 4 KiB: ext4's
# FITRIM skips free extents shorter than the granularity, so isolated
# freed blocks keep their contents. The tool must say how much.
# bats test_tags=root
@test "remnants: 1 KiB blocks: free space below the discard granularity is reported" {
	local gran
	make_loop_fs ext4 64 -b 1024
	gran=$(cat "/sys/block/${LOOPDEV#/dev/}/queue/discard_granularity")
	[[ $gran == 4096 ]] || _skip_or_fail "loop discard granularity is $gran, not 4096"
	populate plain 20
	delete plain 20

	run --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	local rc=$status
	[[ $stderr == *"fstrim-ext: $MNT: warning: up to "* ]] || fail "no warning: '$stderr'"
	assert_regex "$stderr" \
		"warning: up to [0-9.]+ (B|KiB|MiB|GiB) of free space lies in extents smaller than the discard granularity \(4 KiB\) and was not discarded"
	count_remnants
	echo "# 1 KiB blocks: $CONTENTS_LEFT of 20 deleted contents left, $NAMES_LEFT names (status $rc)" >&3
	# deleted contents left on the device: never status 0, and the line says where
	if ((CONTENTS_LEFT > 0)); then
		[[ $rc -eq 1 ]] || fail "status $rc with $CONTENTS_LEFT deleted contents on the device"
		assert_regex "$stderr" "fstrim-ext: $MNT: [1-9][0-9]* free blocks that FITRIM cannot reach still hold data of deleted files: [0-9]+ held by the allocator \(preallocated, until used or the filesystem is unmounted\), [0-9]+ in free extents shorter than the discard granularity \(4 KiB\)"
	else
		[[ $rc -eq 0 ]] || fail "status $rc with no deleted content on the device: $stderr"
	fi
	check_fs_after k1
}
