#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A small run of bench/remnants (one trial of one scenario): its
# recovery-tool columns count what ext4magic, extundelete and sleuthkit
# get back after a plain rm, and nothing after fstrim-ext --journal.

# shellcheck disable=SC2154 # top_srcdir comes from the environment

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-600}

load test_helper/common-setup

setup() {
	_common_setup
	require_root
	require_cmd mkfs.ext4 e2fsck debugfs ext4magic extundelete fls ils perl
	[[ -x $FSTRIM_EXT ]] || fail "no fstrim-ext at $FSTRIM_EXT"
}

teardown() {
	_common_teardown
}

# row OUTPUT METHOD: the table row of METHOD, as words
row() {
	awk -v m="$2" '$1 == "4k-unsynced" && $2 == m' <<<"$1"
}

# bats test_tags=root
@test "bench/remnants: recovery tools get deleted files back after rm, none after --journal" {
	local rm_row ext_row
	run -0 --separate-stderr "$top_srcdir/bench/remnants" --trials 1 --jobs 2 \
		--scenarios 4k-unsynced --methods rm,fstrim-ext --tmpdir "$BATS_TEST_TMPDIR"
	# the header names the tools' columns
	assert_line --regexp '^scenario +method +n +total max of +total max of +magic +delete +names +inodes +secs +mnt'
	rm_row=$(row "$output" rm)
	ext_row=$(row "$output" fstrim-ext)
	[[ -n $rm_row && -n $ext_row ]] || fail "no row for rm or fstrim-ext in: $output"
	# scenario method n names max/of contents max/of ext4magic extundelete
	# fls ils secs mounted intact fsck errors
	read -r -a r <<<"$rm_row"
	read -r -a e <<<"$ext_row"
	assert_equal "${r[2]} ${e[2]}" "1 1"
	((r[3] > 0 && r[5] > 0)) || fail "rm left no deleted name or content: $rm_row"
	((r[7] > 0)) || fail "ext4magic got nothing back after rm: $rm_row"
	[[ ${r[8]} =~ ^[0-9]+$ && ${r[9]} =~ ^[0-9]+$ && ${r[10]} =~ ^[0-9]+$ ]] ||
		fail "extundelete, fls or ils column is not a count: $rm_row"
	# after --journal: no name, no content, no file recovered by either tool,
	# no deleted name listed by fls
	assert_equal "${e[3]} ${e[5]} ${e[7]} ${e[8]} ${e[9]}" "0 0 0 0 0"
	# both stayed mounted, kept files intact, e2fsck clean, no error
	assert_equal "${r[12]} ${r[13]} ${r[14]} ${r[15]}" "yes 1/1 1/1 0"
	assert_equal "${e[12]} ${e[13]} ${e[14]} ${e[15]}" "yes 1/1 1/1 0"
}
