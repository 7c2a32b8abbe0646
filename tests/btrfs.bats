#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# --journal on btrfs: the journal step is a transaction commit
# (BTRFS_IOC_SYNC) between two FITRIMs, and afterwards a raw read of the
# device finds no name and no content of a file deleted before the run.
# --audit reads btrfs's free space back, read-only, and agrees with the
# raw read.

# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

load test_helper/common-setup

setup() {
	_common_setup
	require_root
	require_cmd mkfs.btrfs strace
}

teardown() {
	_common_teardown
}

# delete_unsynced N: N kept and N deleted files in $MNT/d, each holding a
# numbered marker; the creation is synced, the deletion is not.
delete_unsynced() {
	local n=$1 i I k d
	mkdir "$MNT/d"
	for ((i = 0; i < n; i++)); do
		printf -v I %05d "$i"
		k=KEEPCONT$I. d=DELCONT$I.
		k=$k$k$k$k$k$k$k$k d=$d$d$d$d$d$d$d$d
		echo "$k$k$k$k$k" >"$MNT/d/KEEPNAME-$I"
		echo "$d$d$d$d$d" >"$MNT/d/DELNAME-$I"
	done
	sync -f "$MNT"
	rm -f "$MNT"/d/DELNAME-*
}

# remnants_on DEV: "NAMES CONTENTS", the distinct deleted names and
# contents a raw read of the device finds, past the page cache.
remnants_on() {
	dd if="$1" iflag=direct bs=1M status=none | LC_ALL=C tr -s '\000' '\n' |
		LC_ALL=C grep -a -o -E 'DELNAME-[0-9]{5}|DELCONT[0-9]{5}' | sort -u |
		awk '/^DELNAME/ { n++ } /^DELCONT/ { c++ } END { print n + 0, c + 0 }'
}

# bats test_tags=root
@test "btrfs: the deleted names and contents on the device before the run, none after --journal" {
	# nodiscard: btrfs (Linux 6.2+) discards freed extents on its own,
	# some time after a commit; without it only a FITRIM removes them,
	# so what is left is what fstrim-ext did
	MOUNT_OPTS=nodiscard make_loop_fs btrfs 512
	delete_unsynced 40
	run -0 remnants_on "$LOOPDEV"
	read -r names contents <<<"$output"
	((names > 0 && contents > 0)) || fail "the deletion left $output: expected remnants"

	run -0 --separate-stderr strace -f -qq -e trace=ioctl,syncfs \
		-o "$BATS_TEST_TMPDIR/strace.log" "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* \([0-9]+ bytes\) trimmed, transaction committed via BTRFS_IOC_SYNC$"
	assert_equal "$stderr" ""
	# the order: commit, FITRIM, commit, FITRIM
	run -0 grep -o -E '^[0-9]+ +(syncfs|ioctl\([0-9]+, (FITRIM|BTRFS_IOC_SYNC))' \
		"$BATS_TEST_TMPDIR/strace.log"
	assert_equal "$(sed -E 's/^[0-9]+ +//; s/ioctl\([0-9]+, //' <<<"$output" | paste -sd,)" \
		syncfs,FITRIM,BTRFS_IOC_SYNC,FITRIM
	run -0 remnants_on "$LOOPDEV"
	assert_output "0 0"
	# the kept files are all there
	run -0 sh -c "cat '$MNT'/d/KEEPNAME-* | grep -o 'KEEPCONT[0-9]*' | sort -u | wc -l"
	assert_output 40
}

# bats test_tags=root
@test "btrfs: --journal in JSON is done, through BTRFS_IOC_SYNC; a dry run commits nothing" {
	require_cmd jq
	make_loop_fs btrfs 256
	run -0 --separate-stderr "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0] | [.status, .trim, .journal, .journal_interface] | join(" ")' <<<"$output")" \
		"ok done done BTRFS_IOC_SYNC"
	assert_equal "$(jq -r .status <<<"$output")" 0
	# what FITRIM discarded was read back, and was zero
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" zero
	(($(jq -r '.filesystems[0].trim_readback_bytes' <<<"$output") > 0)) ||
		fail "nothing read back: $output"

	run -0 strace -f -qq -e trace=ioctl,syncfs -o "$BATS_TEST_TMPDIR/dry.log" \
		"$FSTRIM_EXT" -n --journal "$MNT"
	assert_output "$MNT: 0 B (dry run) trimmed, transaction commit possible via BTRFS_IOC_SYNC (dry run)"
	run grep -E 'FITRIM|BTRFS_IOC_SYNC|syncfs' "$BATS_TEST_TMPDIR/dry.log"
	assert_failure
}

# bats test_tags=root
@test "btrfs: --journal-erase=zeroout is unsupported, with the reason" {
	make_loop_fs btrfs 256
	run -1 --separate-stderr "$FSTRIM_EXT" --journal-erase=zeroout "$MNT"
	assert_equal "$stderr" "fstrim-ext: $MNT: the journal step is not supported: btrfs frees old copies of its metadata to free space, which only FITRIM erases (use --journal-erase=discard)"
}

# bats test_tags=root
@test "btrfs: --audit finds the committed deletion in free space (2) and nothing after --journal (0), and writes nothing" {
	require_cmd jq
	MOUNT_OPTS=nodiscard make_loop_fs btrfs 512
	delete_unsynced 40
	sync -f "$MNT"
	run -0 remnants_on "$LOOPDEV"
	read -r names contents <<<"$output"
	((names > 0 && contents > 0)) || fail "the deletion left $output: expected remnants"

	run -2 --separate-stderr strace -f -qq -e trace=ioctl,syncfs,sync,write,pwrite64 \
		-o "$BATS_TEST_TMPDIR/audit.log" "$FSTRIM_EXT" --audit "$MNT"
	assert_output --regexp "^$MNT: audit: deleted data found; free space: [1-9][0-9]* blocks hold data, [0-9.]+ MiB read of [0-9.]+ MiB \([0-9.]+ MiB in no chunk, [0-9.]+ MiB in chunks\); not examined: unused bytes inside live tree blocks$"
	assert_equal "$stderr" ""
	# read-only: no discard, no commit, no write but the report's to stdout
	run grep -E 'FITRIM|BTRFS_IOC_SYNC|syncfs|[^_]sync\(|write\([^1]|pwrite64' "$BATS_TEST_TMPDIR/audit.log"
	assert_failure
	run -0 remnants_on "$LOOPDEV"
	assert_output "$names $contents"

	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -0 --separate-stderr "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0] | [.audit, .audit_found, .audit_free_nonzero_blocks] | join(" ")' <<<"$output")" \
		"done false 0"
	(($(jq -r '.filesystems[0].audit_free_read_bytes' <<<"$output") > 256 << 20)) ||
		fail "too little free space read: $output"
	run -0 remnants_on "$LOOPDEV"
	assert_output "0 0"
}

# unallocated_with_data DEV: how many 4 KiB blocks of the FUSE disk under
# DEV that no chunk holds hold data: the gaps between DEV's device extents
# (its device tree) past the first MiB, less the superblock copy at 64 MiB.
unallocated_with_data() {
	btrfs inspect-internal dump-tree -t dev "$1" 2>/dev/null |
		awk '/ DEV_EXTENT / { sub(/\)/, "", $6); at = $6 }
			$1 == "chunk_objectid" { print at, $6 }' |
		perl -e '
			my ($img) = @ARGV;
			my @ext = sort { $a->[0] <=> $b->[0] } map { [split] } <STDIN>;
			open(my $fh, "<", $img) or die "$img: $!";
			my ($pos, $n, @gaps) = (1 << 20, 0);
			for (@ext) { push @gaps, [$pos, $_->[0]]; $pos = $_->[0] + $_->[1]; }
			push @gaps, [$pos, -s $img];
			for my $g (@gaps) {
				for (my $b = $g->[0]; $b + 4096 <= $g->[1]; $b += 4096) {
					next if $b >= (64 << 20) && $b < (64 << 20) + 65536;
					sysseek($fh, $b, 0);
					sysread($fh, my $buf, 4096) == 4096 or die "$img: short read";
					$n++ if $buf =~ /[^\0]/;
				}
			}
			print "$n\n";' "$BATS_TEST_TMPDIR/disk.img"
}

# bats test_tags=root
@test "btrfs: a device that ignores discard fails --journal (data read back) and the audit (2)" {
	require_cmd jq
	attach_discard_ignoring_disk 256
	mkfs.btrfs -q -f "$LOOPDEV" >/dev/null
	track_mount -o nodiscard "$LOOPDEV" "$MNT"
	delete_unsynced 40
	sync -f "$MNT"

	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* trimmed, transaction committed via BTRFS_IOC_SYNC, but [1-9][0-9]* discarded free blocks still hold data$"
	# mkfs's first chunks, removed at the first mount, left their data in
	# space no chunk holds, which btrfs's FITRIM discards once, not twice
	[[ $stderr =~ ^"fstrim-ext: $MNT: the device did not erase what FITRIM discarded: "[1-9][0-9]*" free blocks still hold data after a second discard ("[0-9.]+" MiB read back), "([1-9][0-9]*)" of them in space that no chunk holds, which btrfs's FITRIM discards once (it passes over space it has discarded until a chunk is allocated there)"$ ]] ||
		fail "stderr: $stderr"
	assert_equal "${BASH_REMATCH[1]}" "$(unallocated_with_data "$LOOPDEV")"
	run -1 --separate-stderr "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0] | [.status, .trim_verified] | join(" ")' <<<"$output")" \
		"failed data-left"
	run -2 "$FSTRIM_EXT" --audit "$MNT"
	assert_output --regexp "^$MNT: audit: deleted data found; free space: [1-9][0-9]* blocks hold data, "
	run -0 remnants_on "$LOOPDEV"
	read -r names contents <<<"$output"
	((names > 0 && contents > 0)) || fail "the ignored discard should have left remnants: $output"
}

# btrfs's FITRIM discards device space that no chunk holds once, then
# passes over it until a chunk is allocated there (CHUNK_TRIMMED): from
# -o past every chunk, the run discards only that space, once, and what
# mkfs left there stays on a device that ignores discard. The line says
# "after its discard", not "a second", and how many lie there.
# bats test_tags=root
@test "btrfs: -o past every chunk, on a device that ignores discard: the blocks left in space no chunk holds are told as discarded once" {
	local log=$BATS_TEST_TMPDIR/discards n
	require_cmd btrfs perl
	DISCARD_IGNORED_LOG=$log attach_discard_ignoring_disk 256
	mkfs.btrfs -q -f "$LOOPDEV" >/dev/null
	track_mount -o nodiscard "$LOOPDEV" "$MNT"
	n=$(unallocated_with_data "$LOOPDEV")
	((n > 0)) || fail "mkfs left no data in space no chunk holds"
	: >"$log"

	run -1 --separate-stderr "$FSTRIM_EXT" --journal -o 1G "$MNT"
	[[ $stderr =~ ^"fstrim-ext: $MNT: the device did not erase what FITRIM discarded: $n free blocks still hold data after its discard ("[0-9.]+" MiB read back), $n of them in space that no chunk holds, which btrfs's FITRIM discards once (it passes over space it has discarded until a chunk is allocated there)"$ ]] ||
		fail "stderr: $stderr"
	# what it says is so: each range the run discarded, it discarded once
	[[ -s $log ]] || fail "the run discarded nothing"
	assert_equal "$(sort "$log" | uniq -d)" ""
	assert_equal "$(unallocated_with_data "$LOOPDEV")" "$n"
}

# btrfs_delete_between SIZE [MODE]: on a device that discards in 64 KiB
# units and ignores it (MODE erase or units: tests/helpers/discard-ignored),
# btrfs with files a, b, c and d of SIZE, one after another; c, holding a
# name, deleted and committed (delete_between). Sets b_first, c_first,
# c_last and d_last: where the extents lie, in 4 KiB blocks of btrfs's
# address space; and chunk_first, where the chunk holding them begins.
btrfs_delete_between() {
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_last d_first
	require_cmd filefrag btrfs
	attach_discard_ignoring_disk 256 65536 "${2:-ignore}"
	# metadata single: mkfs's first chunks are kept, not left in unallocated
	# space holding what mkfs wrote there (the runs below read it all)
	mkfs.btrfs -q -f -m single "$LOOPDEV" >/dev/null
	track_mount -o nodiscard "$LOOPDEV" "$MNT"
	delete_between "$1"
	# FITRIM passes over the block group its start lies inside
	# (btrfs_trim_fs()): the runs that mean to discard c begin at its chunk
	chunk_first=$(btrfs inspect-internal dump-tree -t chunk "$LOOPDEV" 2>/dev/null |
		awk -v at=$((b_first * 4096)) '
			/ CHUNK_ITEM / { sub(/\)/, "", $6); logical = $6 }
			$1 == "length" && logical <= at && at < logical + $2 { print logical / 4096 }')
	[[ $chunk_first =~ ^[0-9]+$ ]] || fail "no chunk found around block $b_first"
	((chunk_first < b_first)) || fail "b begins its chunk: $chunk_first"
}

# bats test_tags=root
@test "btrfs: a device that discards in 64 KiB units and ignores it: every block of a deleted file is read back, its unaligned ends too" {
	local b_first c_first c_last d_last chunk_first
	btrfs_delete_between 200K
	# the test is of the ends: c must not start or end on a 64 KiB boundary
	((c_first % 16 && (c_last + 1) % 16)) || fail "c is aligned: $c_first-$c_last"

	# FITRIM from the chunk's start to d's end: c's 50 blocks are all the
	# free space there that was ever written
	run -1 --separate-stderr "$FSTRIM_EXT" --journal -o $((chunk_first * 4096)) \
		-l $(((d_last + 1 - chunk_first) * 4096)) "$MNT"
	[[ $stderr =~ "the device did not erase what FITRIM discarded: "([0-9]+)" free blocks still hold data" ]] ||
		fail "stderr: $stderr"
	assert_equal "${BASH_REMATCH[1]}" 50
	# of them, only c's ends lie in units c's free extent does not cover whole
	[[ $stderr == *", $(((16 - c_first % 16) + (c_last + 1) % 16)) of them in 64 KiB discard units that their free extent does not cover whole, which a device that erases whole units only keeps"* ]] ||
		fail "c's ends not told apart: $c_first-$c_last: $stderr"
}

# A device that erases whole units only: what FITRIM discarded of c is
# erased but for its ends, in parts of units, and the failure says so.
# bats test_tags=root
@test "btrfs: a device that erases whole 64 KiB units only: a deleted file's ends are left, and the failure says they lie in parts of units" {
	local b_first c_first c_last d_last chunk_first ends
	btrfs_delete_between 200K units
	((c_first % 16 && (c_last + 1) % 16)) || fail "c is aligned: $c_first-$c_last"
	ends=$(((16 - c_first % 16) + (c_last + 1) % 16))

	run -1 --separate-stderr "$FSTRIM_EXT" --journal -o $((chunk_first * 4096)) \
		-l $(((d_last + 1 - chunk_first) * 4096)) "$MNT"
	[[ $stderr =~ ^"fstrim-ext: $MNT: the device did not erase what FITRIM discarded: $ends free blocks still hold data after a second discard ("[0-9.]+" "[KMG]"iB read back), $ends of them in 64 KiB discard units that their free extent does not cover whole, which a device that erases whole units only keeps"$ ]] ||
		fail "c's $ends blocks in parts of units ($c_first-$c_last) not told: $stderr"
	# what it says is so: c's ends are on the device, its whole units erased
	# (c holds about 5,200 lines, 200 KiB of them)
	umount "$MNT"
	run -0 count_on_image "$BATS_TEST_TMPDIR/disk.img" "Jane Q. Public"
	((output > 0 && output < ends * 4096 / 38 + 2)) ||
		fail "$output of c's lines on the device, for its $ends blocks left"
}

# btrfs's FITRIM begins at the first block group that starts at or after
# --offset (btrfs_trim_fs() looks it up so, 6.1 to 6.18): a block group
# that --offset lies inside is passed over whole. A deleted file there is
# never discarded, on a device that would erase it, and the failure says
# why; the same run from the chunk's start erases it.
# bats test_tags=root
@test "btrfs: --offset inside a block group: FITRIM passes over it, and a deleted file there is found unreachable" {
	local b_first c_first c_last d_last chunk_first
	btrfs_delete_between 200K erase

	run -1 --separate-stderr "$FSTRIM_EXT" --journal -o $((b_first * 4096)) \
		-l $(((d_last + 1 - b_first) * 4096)) "$MNT"
	assert_equal "$stderr" "fstrim-ext: $MNT: 50 free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), 0 in free extents shorter than the discard granularity (64 KiB), 50 in the block group that --offset lies inside, which btrfs's FITRIM passes over"
	run -0 count_on_image "$BATS_TEST_TMPDIR/disk.img" "Jane Q. Public"
	((output > 5000)) || fail "$output of c's lines on the device, after a run that erased none"

	run -0 --separate-stderr "$FSTRIM_EXT" --journal -o $((chunk_first * 4096)) \
		-l $(((d_last + 1 - chunk_first) * 4096)) "$MNT"
	assert_equal "$stderr" ""
	run -0 count_on_image "$BATS_TEST_TMPDIR/disk.img" "Jane Q. Public"
	assert_equal "$output" 0
}

# bats test_tags=root
@test "btrfs: a deleted file in a free extent shorter than the discard granularity, which FITRIM skips, fails --journal" {
	local b_first c_first c_last d_last chunk_first
	btrfs_delete_between 40K erase
	((c_last + 1 - c_first == 10)) || fail "c is not 10 blocks: $c_first-$c_last"

	# btrfs raises FITRIM's minimum to 64 KiB and never discards c's 40 KiB,
	# though the device would erase it
	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal -o $((chunk_first * 4096)) \
		-l $(((d_last + 1 - chunk_first) * 4096)) "$MNT"
	assert_equal "$stderr" "fstrim-ext: $MNT: 10 free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), 10 in free extents shorter than the discard granularity (64 KiB)"
	assert_output --regexp "^$MNT: .* trimmed, transaction committed via BTRFS_IOC_SYNC, but 10 free blocks FITRIM cannot reach still hold data$"
	# what the failure says is so: the deleted contents are on the device
	umount "$MNT"
	run -0 count_on_image "$BATS_TEST_TMPDIR/disk.img" "Jane Q. Public"
	((output > 0)) || fail "the run said data stays, and the device holds none of c"
}

# FITRIM passes over a device that cannot discard (btrfs_discard_extent()
# skips its stripes, btrfs_trim_free_extents() its space in no chunk): of
# RAID1 over two devices, one without discard, a deleted file's copy on
# that one is never discarded. The failure says where it lies, not that a
# device ignored a discard.
# bats test_tags=root
@test "btrfs: of two devices, one cannot discard: a deleted file's copy on it is found unreachable, and why" {
	local img2="$BATS_TEST_TMPDIR/second.img" dev2 n
	truncate -s 300M "$img2"
	attach_loop "$img2"
	dev2=$LOOPDEV
	MOUNT_OPTS=nodiscard make_loop_fs btrfs 300 -d raid1 -m raid1 "$dev2"
	disable_discard "$dev2"
	yes "Name: Jane Q. Public SSN: 078-05-1120" | head -c 200K >"$MNT/c"
	sync -f "$MNT"
	rm "$MNT/c"
	sync -f "$MNT"

	run -1 --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	[[ $stderr =~ ^"fstrim-ext: $MNT: "([0-9]+)" free blocks that FITRIM cannot reach still hold data of deleted files: 0 held by the allocator (preallocated, until used or the filesystem is unmounted), 0 in free extents shorter than the discard granularity ("[0-9.]+" "[KM]"iB), "([0-9]+)" on a device of the filesystem that cannot discard"$ ]] ||
		fail "stderr: $stderr"
	n=${BASH_REMATCH[1]}
	assert_equal "${BASH_REMATCH[2]}" "$n"
	((n >= 50)) || fail "$n blocks for a deleted file of 50"
	# what it says is so: the copy on the device without discard holds c,
	# the other none
	umount "$MNT"
	run -0 count_on_image "$img2" "Jane Q. Public"
	((output > 5000)) || fail "$output of c's lines on $dev2"
	run -0 count_on_image "$IMG" "Jane Q. Public"
	assert_equal "$output" 0
}

# bats test_tags=root
@test "btrfs: RAID0 data is not read, so the audit is incomplete (32), with how much it left" {
	require_cmd jq
	local img2="$BATS_TEST_TMPDIR/second.img" dev2
	truncate -s 300M "$img2"
	attach_loop "$img2"
	dev2=$LOOPDEV
	make_loop_fs btrfs 300 -d raid0 -m raid1 "$dev2"
	# what the mount left of old tree copies, discarded and read back
	run -0 "$FSTRIM_EXT" --journal "$MNT"
	run -32 "$FSTRIM_EXT" --audit "$MNT"
	assert_output --regexp "^$MNT: audit: incomplete, nothing found in what was read; free space: 0 blocks hold data, .*; not read: [0-9.]+ MiB free in RAID0/10/5/6 chunks; not examined: "
	run -32 "$FSTRIM_EXT" --audit --json "$MNT"
	assert_equal "$(jq -r '.filesystems[0].audit' <<<"$output")" incomplete
}

# A drive that answers each read of a discarded block with other data
# (tests/preload/unsteady.so, over 64 KiB of device space in no chunk,
# which FITRIM discards): the erase is not verified and the run fails.
# bats test_tags=root
@test "btrfs: free space that reads back other data at every read after the second discard: not verified, status 1" {
	local shim size
	require_cmd jq
	load test_helper/workload
	shim=$(PAUSE_SHIM="$top_builddir/tests/preload/unsteady.so" _pause_preload) || exit 1
	MOUNT_OPTS=nodiscard make_loop_fs btrfs 512
	size=$(blockdev --getsize64 "$LOOPDEV")
	export FSTRIM_EXT_UNSTEADY="$LOOPDEV:$((size - (1 << 20))):$((64 << 10)):each"
	run -1 --separate-stderr env LD_PRELOAD="$shim" "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" not-verified
	assert_equal "$(jq -r '.filesystems[0].error' <<<"$output")" \
		"free space: 16 blocks read back other data at each read: not verified"
	FSTRIM_EXT_UNSTEADY=${FSTRIM_EXT_UNSTEADY%:each}:once
	run -0 --separate-stderr env LD_PRELOAD="$shim" "$FSTRIM_EXT" --json --journal "$MNT"
	assert_equal "$(jq -r '.filesystems[0].trim_verified' <<<"$output")" zero
}
