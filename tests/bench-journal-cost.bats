#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A small run of bench/journal-cost --opens (a 2 GiB ext4, one run of
# each kind): the counts doc/design.md and bench/README-7.md quote come
# from its parse of strace's log, and the runs it counts must have gone
# as it says.

# shellcheck disable=SC2154 # top_srcdir comes from the environment

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-600}

load test_helper/common-setup

setup() {
	_common_setup
	require_root
	require_cmd mkfs.ext4 losetup strace perl
	[[ -x $FSTRIM_EXT ]] || fail "no fstrim-ext at $FSTRIM_EXT"
}

teardown() {
	_common_teardown
}

# bats test_tags=root
@test "bench/journal-cost --opens: a --journal run opens the filesystem 6 times and reads its bitmaps once" {
	local j u
	run -0 --separate-stderr "$top_srcdir/bench/journal-cost" --opens -S 2 -r 1 \
		--tmpdir "$BATS_TEST_TMPDIR"
	assert_line --regexp '^run +status +opens +bitmaps +ext2fs-reads +ms +direct-reads +ms +wall *$'
	read -r -a j <<<"$(awk '$1 == "journal"' <<<"$output")"
	read -r -a u <<<"$(awk '$1 == "unreachable"' <<<"$output")"
	((${#j[@]} == 9 && ${#u[@]} == 9)) || fail "no rows in: $output"
	# run status opens bitmaps ext2fs-reads ms direct-reads ms wall
	# --journal succeeded; with -m 64M the deleted files FITRIM does not
	# reach are found after the trims: status 1
	assert_equal "${j[1]} ${u[1]}" "0 1"
	# the figures doc/design.md quotes: at most 6 and 7 opens; one bitmap read
	# for --journal, one for each moment of the other (before the trims,
	# the read back, its recheck)
	((j[2] >= 1 && j[2] <= 6)) || fail "--journal opened the device ${j[2]} times: ${j[*]}"
	((u[2] > j[2] && u[2] <= 7)) || fail "-m 64M opened the device ${u[2]} times: ${u[*]}"
	assert_equal "${j[3]} ${u[3]}" "1 3"
	# the checks read the device itself, and libext2fs read something
	((j[4] > 0 && u[4] > 0 && j[6] > 0 && u[6] > j[6])) ||
		fail "read counts: ${j[*]} / ${u[*]}"
}
