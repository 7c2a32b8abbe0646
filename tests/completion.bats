#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# The bash completion, driven through COMP_WORDS and COMP_CWORD as bash
# would drive it.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	load test_helper/dist
	_common_setup
	COMPLETION="$top_srcdir/bash-completion/fstrim-ext"
}

teardown() {
	_common_teardown
}

# comp WORD...: what the completion offers for the last word, one a line,
# sorted. The words are split as bash splits them (at "=" and ":" too).
comp() {
	(
		# shellcheck source=/dev/null
		source "$COMPLETION"
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_fstrim_ext fstrim-ext "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}"
	) | sort
}

# Filesystem types the kernel lists.
proc_types() {
	awk '{ print $NF }' /proc/filesystems | sort -u
}

@test "completion is registered for fstrim-ext and shellcheck clean" {
	run bash -c 'source "$1" && complete -p fstrim-ext' bash "$COMPLETION"
	assert_success
	assert_output 'complete -F _fstrim_ext fstrim-ext'
	require_cmd shellcheck
	run shellcheck -s bash "$COMPLETION"
	assert_success
}

@test "completion offers every long option of --help, and no other" {
	run comp fstrim-ext --
	assert_success
	assert_equal "$output" "$(help_long_options)"
}

@test "completion completes a long option" {
	run -0 comp fstrim-ext --jo
	assert_output "--journal
--journal-erase
--journal-only"
	run -0 comp fstrim-ext --qu
	assert_output --quiet-unsupported
}

@test "completion offers the --journal-erase methods, also after =" {
	run -0 comp fstrim-ext --journal-erase ''
	assert_output "discard
zeroout"
	run -0 comp fstrim-ext --journal-erase = ''
	assert_output "discard
zeroout"
	run -0 comp fstrim-ext -j --journal-erase = z
	assert_output zeroout
}

@test "completion offers the --read-back scopes, also after =" {
	run -0 comp fstrim-ext --read-back ''
	assert_output "all
changed"
	run -0 comp fstrim-ext -j --read-back = a
	assert_output all
}

@test "completion offers size suffixes after a number" {
	local opt
	for opt in -o --offset -l --length -m --minimum; do
		run -0 comp fstrim-ext "$opt" 4
		assert_line 4
		assert_line 4KiB
		assert_line 4K
		assert_line 4KB
		assert_line 4GiB
		assert_line 4EB
		refute_line --regexp '^[^4]'
	done
	run -0 comp fstrim-ext --minimum = 1.5
	assert_line 1.5MiB
	run -0 comp fstrim-ext -o ''
	assert_output ''
	run -0 comp fstrim-ext -o x
	assert_output ''
}

@test "completion offers the kernel's filesystem types for -t" {
	local type
	run -0 comp fstrim-ext -t ''
	for type in $(proc_types); do
		assert_line "$type"
		assert_line "no$type"
	done
	run -0 comp fstrim-ext --types ext
	refute_line --regexp '^[^e]'
	assert_line ext4
}

@test "completion completes the last type of a -t list" {
	run -0 comp fstrim-ext -t ext4,
	assert_line --regexp '^ext4,[a-z]'
	refute_line ext4,ext4	# already in the list
	run -0 comp fstrim-ext --types = ext4,noex
	assert_line --regexp '^ext4,noext'
	refute_line --regexp '^[^e]|^ext4,[^n]'
	run -0 comp fstrim-ext -t ext4,noe
	assert_line --regexp '^ext4,noext'
	refute_line --regexp '^ext4,[^n]'
}

@test "completion offers file names for -I, also in a colon-separated list" {
	local d="$BATS_TEST_TMPDIR/tables"
	mkdir -p "$d"
	touch "$d/fstab.a" "$d/fstab.b" "$d/other"
	run -0 comp fstrim-ext -I "$d/fst"
	assert_output "$d/fstab.a
$d/fstab.b"
	# bash splits "-I /x:/y" into -I /x : /y and replaces only "/y"
	run -0 comp fstrim-ext -I /etc/fstab : "$d/o"
	assert_output "$d/other"
	run -0 comp fstrim-ext --listed-in = /etc/fstab : "$d/fstab."
	assert_output "$d/fstab.a
$d/fstab.b"
	run -0 comp fstrim-ext --listed-in = "$d/fstab."
	assert_output "$d/fstab.a
$d/fstab.b"
}

@test "completion offers files after --metrics, a colon part of the name" {
	local d="$BATS_TEST_TMPDIR/prom"
	mkdir -p "$d"
	touch "$d/fstrim-ext.prom" "$d/a:b.prom"
	run -0 comp fstrim-ext --metrics "$d/fs"
	assert_output "$d/fstrim-ext.prom"
	run -0 comp fstrim-ext --metrics = "$d/a"
	assert_output "$d/a:b.prom"
}

# bats test_tags=root
@test "completion offers the mountpoints fstrim-ext accepts: btrfs subvolumes, no bind mount of a directory" {
	require_root
	require_cmd btrfs mkfs.btrfs
	local top subvol ext bind target
	local -a accepted=()
	make_loop_fs btrfs 256
	top=$MNT
	run -0 btrfs subvolume create "$top/sv"
	subvol="$BATS_TEST_TMPDIR/subvol"
	mkdir "$subvol"
	track_mount -o subvol=sv "$LOOPDEV" "$subvol"
	make_loop_fs ext4 64
	ext=$MNT
	mkdir "$ext/dir"
	bind="$BATS_TEST_TMPDIR/bind"
	mkdir "$bind"
	track_mount --bind "$ext/dir" "$bind"

	# what the command itself takes
	for target in "$top" "$subvol" "$ext" "$bind"; do
		if "$FSTRIM_EXT" -n "$target" >/dev/null 2>&1; then
			accepted+=("$target")
		fi
	done
	[[ " ${accepted[*]} " == *" $subvol "* ]] || fail "fstrim-ext -n refuses the subvolume mount"
	[[ " ${accepted[*]} " != *" $bind "* ]] || fail "fstrim-ext -n takes the bind mount"
	run -0 comp fstrim-ext "$BATS_TEST_TMPDIR/"
	assert_output "$(printf '%s\n' "${accepted[@]}" | sort)"
	run -0 comp fstrim-ext -v /pro
	assert_output /proc
}

# bats test_tags=root
@test "completion leaves out bind mounts of a directory" {
	require_root
	require_cmd unshare
	mkdir -p "$BATS_TEST_TMPDIR/src/sub" "$BATS_TEST_TMPDIR/bind" "$BATS_TEST_TMPDIR/tmpfs"
	# shellcheck disable=SC2016
	run unshare -m --propagation private bash -c '
		set -e
		mount -t tmpfs tmpfs "$2/tmpfs"
		mkdir "$2/tmpfs/sub"
		mount --bind "$2/tmpfs/sub" "$2/bind"
		source "$1"
		COMP_WORDS=(fstrim-ext "$2/")
		COMP_CWORD=1
		_fstrim_ext
		printf "%s\n" "${COMPREPLY[@]}"' bash "$COMPLETION" "$BATS_TEST_TMPDIR"
	assert_success
	assert_output "$BATS_TEST_TMPDIR/tmpfs"
}

@test "completion offers no mountpoint with -a, -A or -I, and nothing after -h" {
	run -0 comp fstrim-ext -a ''
	assert_output ''
	run -0 comp fstrim-ext --fstab -v ''
	assert_output ''
	run -0 comp fstrim-ext -I /etc/fstab ''
	assert_output ''
	run -0 comp fstrim-ext -h ''
	assert_output ''
}
