#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# --journal on xfs: nothing erases the names xfs keeps of deleted files,
# and the tool says, per xfs filesystem, what stays and why.

# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

load test_helper/common-setup

XFS_STAYS="xfs keeps the names of deleted files in its directory blocks (a freed entry keeps its name bytes) and in its log, until overwritten; no interface erases them"

setup() {
	_common_setup
	require_root
	require_cmd mkfs.xfs
}

teardown() {
	_common_teardown
}

# bats test_tags=root
@test "xfs: --journal trims, then says what stays and why; the names are indeed there" {
	local i
	make_loop_fs xfs 320
	mkdir "$MNT/d"
	for ((i = 0; i < 40; i++)); do
		echo "kept $i" >"$MNT/d/KEEPNAME-$i"
		echo "gone $i" >"$MNT/d/DELNAME-$(printf %05d "$i")"
	done
	sync -f "$MNT"
	rm -f "$MNT"/d/DELNAME-*

	run -1 --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	assert_output --regexp "^$MNT: .* \([0-9]+ bytes\) trimmed$"
	assert_equal "$stderr" "fstrim-ext: $MNT: the journal step is not supported: $XFS_STAYS"
	# what the line says stays does stay
	run -0 sh -c "dd if='$LOOPDEV' iflag=direct bs=1M status=none | grep -a -o -E 'DELNAME-[0-9]{5}' | sort -u | wc -l"
	((output > 0)) || fail "no deleted name on the device: the report would be wrong"
}

# bats test_tags=root
@test "xfs: each xfs filesystem of -a gets its own line, and --json its reason" {
	local t
	require_cmd jq
	make_loop_fs xfs 320
	make_loop_fs xfs 320
	printf '%s\n' "${LOOPDEVS[0]} $BATS_TEST_TMPDIR/mnt0 xfs defaults 0 0" \
		"${LOOPDEVS[1]} $BATS_TEST_TMPDIR/mnt1 xfs defaults 0 0" >"$BATS_TEST_TMPDIR/tab"
	run -0 --separate-stderr "$FSTRIM_EXT" -I "$BATS_TEST_TMPDIR/tab" --journal
	for t in mnt0 mnt1; do
		assert_equal "$(grep -c -F "$BATS_TEST_TMPDIR/$t: the journal step is not supported: $XFS_STAYS" <<<"$stderr")" 1
	done
	run -0 --separate-stderr "$FSTRIM_EXT" --json -I "$BATS_TEST_TMPDIR/tab" --journal
	assert_equal "$(jq -r '[.filesystems[] | .reason] | unique | .[]' <<<"$output")" "$XFS_STAYS"
	assert_equal "$(jq -r '[.filesystems[] | .journal] | join(" ")' <<<"$output")" \
		"unsupported unsupported"
}
