#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# kernel/check-kernel.sh on a tree that already has a patch of the series,
# as a kernel update that took the fix from upstream would (0006 is
# upstream's commit): it must not apply that patch, must still apply the
# others, and expects that patch's checks to pass on the stock kernel. The
# trees here are Debian's linux-source-6.12 cut down to the files the series
# changes (and checkpatch), packed as check-kernel.sh's
# FSTRIM_EXT_KERNEL_SOURCE wants them.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	_common_setup
	require_cmd patch xz
	[[ -r /usr/src/linux-source-6.12.tar.xz ]] || _skip_or_fail "needs linux-source-6.12"
	SERIES=$top_srcdir/kernel/linux-6.12
	TREE=$BATS_FILE_TMPDIR/linux-source-6.12
	# Once for the file: the files the series changes, unchanged.
	if [[ ! -d $TREE ]]; then
		mkdir -p "$TREE.tmp"
		{
			sed -n 's|^+++ b/||p' "$SERIES"/0*.patch | sort -u
			printf '%s\n' scripts/checkpatch.pl scripts/spelling.txt \
				scripts/const_structs.checkpatch
		} | sed 's|^|linux-source-6.12/|' |
			xargs tar xJf /usr/src/linux-source-6.12.tar.xz -C "$TREE.tmp" --strip-components=1
		mv "$TREE.tmp" "$TREE"
	fi
}

teardown() {
	_common_teardown
}

# source_with PATCH...: a source directory whose linux-source-6.12.tar.xz is
# the cut-down tree with PATCHes applied; sets SOURCE.
source_with() {
	local p

	SOURCE=$BATS_TEST_TMPDIR/source
	rm -rf "$SOURCE" && mkdir -p "$SOURCE/work"
	cp -a "$TREE" "$SOURCE/work/linux-source-6.12"
	for p; do
		patch -d "$SOURCE/work/linux-source-6.12" -p1 --fuzz=0 -s < "$SERIES/$p"
	done
	tar cJf "$SOURCE/linux-source-6.12.tar.xz" -C "$SOURCE/work" linux-source-6.12
}

plan() {
	FSTRIM_EXT_KERNEL_SOURCE=$SOURCE FSTRIM_EXT_KERNEL_VERSIONS=6.12 \
		"$top_srcdir/kernel/check-kernel.sh" --srcdir "$top_srcdir" --print-series
}

@test "kernel series: a tree without the series gets every patch" {
	source_with
	run plan
	assert_success
	assert_equal "$(grep -c '^6\.12 apply 00[0-9][0-9]-' <<< "$output")" 11
	refute_output --partial upstream
}

@test "kernel series: a tree that already has patch 6 gets the other ten, and the key says so" {
	source_with 0006-jbd2-fix-off-by-one-while-erasing-journal.patch
	run plan
	assert_success
	assert_line '6.12 upstream 0006-jbd2-fix-off-by-one-while-erasing-journal.patch'
	assert_equal "$(grep -c '^6\.12 apply ' <<< "$output")" 10
	refute_line --partial 'apply 0006-'
	# The patched kernel's cache key is made of what is applied: with patch 6
	# upstream it is the key of the other ten on the same tree.
	key_fixed=$(FSTRIM_EXT_KERNEL_SOURCE=$SOURCE FSTRIM_EXT_KERNEL_VERSIONS=6.12 \
		"$top_srcdir/kernel/check-kernel.sh" --srcdir "$top_srcdir" --print-key patched)
	mkdir -p "$BATS_TEST_TMPDIR/src/kernel"
	cp -a "$top_srcdir/kernel/linux-6.12" "$BATS_TEST_TMPDIR/src/kernel/"
	sed -i '/^0006-/d' "$BATS_TEST_TMPDIR/src/kernel/linux-6.12/series"
	key_ten=$(FSTRIM_EXT_KERNEL_SOURCE=$SOURCE FSTRIM_EXT_KERNEL_VERSIONS=6.12 \
		"$top_srcdir/kernel/check-kernel.sh" --srcdir "$BATS_TEST_TMPDIR/src" --print-key patched)
	assert_equal "$key_fixed" "$key_ten"
}

@test "kernel series: patches 6 and 10 in the tree are both left out" {
	source_with 0006-jbd2-fix-off-by-one-while-erasing-journal.patch \
		0010-ext4-zero-a-freed-inode-on-disk-but-for-i_dtime-and-.patch
	run plan
	assert_success
	assert_line '6.12 upstream 0006-jbd2-fix-off-by-one-while-erasing-journal.patch'
	assert_line '6.12 upstream 0010-ext4-zero-a-freed-inode-on-disk-but-for-i_dtime-and-.patch'
	assert_equal "$(grep -c '^6\.12 apply ' <<< "$output")" 9
}

@test "kernel series: a patch only partly in the tree is neither applied silently nor dropped" {
	# The tree has half of patch 6 (its first hunk only): the patch neither
	# reverses nor applies, so it stays listed to apply, and the run's
	# "applies" checks fail on it, for a person to look at.
	source_with
	awk '/^@@/ { hunks++ } hunks < 2 { print }' \
		"$SERIES/0006-jbd2-fix-off-by-one-while-erasing-journal.patch" |
		patch -d "$SOURCE/work/linux-source-6.12" -p1 --fuzz=0 -s
	tar cJf "$SOURCE/linux-source-6.12.tar.xz" -C "$SOURCE/work" linux-source-6.12
	run plan
	assert_success
	assert_line '6.12 apply 0006-jbd2-fix-off-by-one-while-erasing-journal.patch'
	run patch -d "$SOURCE/work/linux-source-6.12" -p1 --fuzz=0 --dry-run \
		< "$SERIES/0006-jbd2-fix-off-by-one-while-erasing-journal.patch"
	assert_failure
}
