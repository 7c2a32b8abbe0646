#!/usr/bin/env bats
# Bad input: one clear line on stderr, the documented status, and no
# FITRIM or journal ioctl issued.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	_common_setup
}

teardown() {
	_common_teardown
}

# The options of getopt_long's table in fstrim-ext.c, one a line: the long
# name, then the short letter or "-".
source_options() {
	awk '/ longopts\[\] = \{/ { on = 1; next }
		on && /^[ \t]*\};/ { exit }
		on && match($0, /\{ "[^"]+"/) {
			name = substr($0, RSTART + 3, RLENGTH - 4)
			short = match($0, /\047.\047 \}/) ? substr($0, RSTART + 1, 1) : "-"
			print name, short
		}' "${top_srcdir:?}/fstrim-ext/fstrim-ext.c"
}

@test "--help goes to stdout, lists every option and exits 0" {
	local name short n=0
	run -0 "$FSTRIM_EXT" --help
	assert_line --partial "Usage:"
	while read -r name short; do
		if [[ $short == - ]]; then
			assert_line --regexp "^     --$name( |$)"
		else
			assert_line --regexp "^ -$short, --$name( |$)"
		fi
		n=$((n + 1))
	done < <(source_options)
	((n >= 18)) || fail "only $n options read from fstrim-ext.c's longopts"
}

@test "--version prints the package version" {
	run -0 "$FSTRIM_EXT" --version
	assert_output --regexp '^fstrim-ext [0-9]+\.[0-9]+'
}

@test "no mountpoint" {
	run_traced
	assert_failure 1
	assert_output "fstrim-ext: no mountpoint specified"
	assert_no_trim_ioctl
}

@test "two mountpoints" {
	run_traced / /tmp
	assert_failure 1
	assert_output - <<-'EOT'
	fstrim-ext: unexpected number of arguments
	Try 'fstrim-ext --help' for more information.
	EOT
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a missing path" {
	# without CAP_SYS_ADMIN the command stops before it looks at paths
	require_root
	run_traced /nonexistent/fstrim-ext
	assert_failure 1
	assert_output "fstrim-ext: stat of /nonexistent/fstrim-ext failed: No such file or directory"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a regular file" {
	# without CAP_SYS_ADMIN the command stops before it looks at paths
	require_root
	touch "$BATS_TEST_TMPDIR/file"
	run_traced "$BATS_TEST_TMPDIR/file"
	assert_failure 1
	assert_output "fstrim-ext: $BATS_TEST_TMPDIR/file: not a directory"
	assert_no_trim_ioctl
}

@test "--all with --fstab" {
	run_traced -a -A
	assert_failure 1
	assert_output "fstrim-ext: mutually exclusive arguments: --fstab --listed-in --all"
	assert_no_trim_ioctl
}

@test "--listed-in with --all" {
	run_traced -I /etc/fstab --all
	assert_failure 1
	assert_output "fstrim-ext: mutually exclusive arguments: --fstab --listed-in --all"
}

@test "bad sizes for --offset, --length and --minimum" {
	local opt what value
	for opt in -o -l -m; do
		case $opt in
		-o) what=offset ;;
		-l) what=length ;;
		-m) what="minimum extent length" ;;
		esac
		for value in 1X -1 ''; do
			run_traced "$opt" "$value" /
			assert_failure 1
			assert_output "fstrim-ext: failed to parse $what: '$value': Invalid argument"
			assert_no_trim_ioctl
		done
		run_traced "$opt" 99999999999999999999999 /
		assert_failure 1
		assert_output "fstrim-ext: failed to parse $what: '99999999999999999999999': Numerical result out of range"
		assert_no_trim_ioctl
	done
}

@test "--journal-erase=bogus" {
	run_traced --journal-erase=bogus /
	assert_failure 1
	assert_output - <<-'EOT'
	fstrim-ext: unknown --journal-erase method 'bogus' (use discard or zeroout)
	Try 'fstrim-ext --help' for more information.
	EOT
	assert_no_trim_ioctl
}

@test "an unknown option" {
	run_traced --bogus /
	assert_failure 1
	assert_output - <<-'EOT'
	fstrim-ext: unrecognized option '--bogus'
	Try 'fstrim-ext --help' for more information.
	EOT
	assert_no_trim_ioctl
}

@test "--types without --all, --fstab or --listed-in" {
	run_traced -t ext4 /
	assert_failure 1
	assert_line --index 0 "fstrim-ext: --types works only with --all, --fstab or --listed-in"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "--journal-only with --offset, --length, --minimum or --step is refused, nothing done" {
	# on a real ext4 as root, where a run that took them would erase the journal
	require_root
	make_loop_fs ext4 64
	local opt
	for opt in -o0 --length=1M -m4096 --step=0; do
		run_traced --journal-only "$opt" "$MNT"
		assert_failure 1
		assert_output - <<-'EOT'
		fstrim-ext: --journal-only issues no FITRIM: it takes no --offset, --length, --minimum or --step
		Try 'fstrim-ext --help' for more information.
		EOT
		assert_no_trim_ioctl
	done
	# given before it, with --journal-erase (which implies --journal) beside it
	run_traced --step 1G --journal-erase=zeroout --journal-only "$MNT"
	assert_failure 1
	assert_line --index 0 "fstrim-ext: --journal-only issues no FITRIM: it takes no --offset, --length, --minimum or --step"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "--metrics whose directory does not exist, or is not one, is refused before any work" {
	# on a real ext4 as root, where a run that went on would trim it and
	# erase its journal before it found that the file cannot be written
	require_root
	make_loop_fs ext4 64
	local table="$BATS_TEST_TMPDIR/fstab"
	echo "$LOOPDEV $MNT ext4 defaults 0 0" >"$table"
	run_traced --journal --metrics "$BATS_TEST_TMPDIR/none/fstrim-ext.prom" "$MNT"
	assert_failure 1
	assert_output - <<-EOT
	fstrim-ext: --metrics $BATS_TEST_TMPDIR/none/fstrim-ext.prom: directory $BATS_TEST_TMPDIR/none does not exist
	Try 'fstrim-ext --help' for more information.
	EOT
	assert_no_trim_ioctl
	touch "$BATS_TEST_TMPDIR/file"
	run_traced -v --journal -I "$table" --metrics "$BATS_TEST_TMPDIR/file/fstrim-ext.prom"
	assert_failure 1
	assert_output - <<-EOT
	fstrim-ext: --metrics $BATS_TEST_TMPDIR/file/fstrim-ext.prom: $BATS_TEST_TMPDIR/file is not a directory
	Try 'fstrim-ext --help' for more information.
	EOT
	assert_no_trim_ioctl
	# a name without a directory is the current directory's, and is written
	mkdir "$BATS_TEST_TMPDIR/cwd"
	# shellcheck disable=SC2016 # $1, $2 and $3 are the inner shell's
	run -0 bash -c 'cd "$1" && "$2" --metrics fstrim-ext.prom "$3" && cat fstrim-ext.prom' \
		bash "$BATS_TEST_TMPDIR/cwd" "$FSTRIM_EXT" "$MNT"
	assert_line "fstrim_ext_exit_status 0"
}

# bats test_tags=root
@test "--listed-in naming only missing files and a directory" {
	# without CAP_SYS_ADMIN the command stops before it looks at paths
	require_root
	run_traced -I "/nonexistent/a:$BATS_TEST_TMPDIR:/nonexistent/b"
	assert_failure 32
	assert_output "fstrim-ext: no readable mount table in '/nonexistent/a:$BATS_TEST_TMPDIR:/nonexistent/b'"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "--listed-in naming an empty file" {
	# without CAP_SYS_ADMIN the command stops before it looks at paths
	require_root
	: >"$BATS_TEST_TMPDIR/empty"
	run_traced -I "$BATS_TEST_TMPDIR/empty"
	assert_failure 32
	assert_output "fstrim-ext: no filesystem is listed in '$BATS_TEST_TMPDIR/empty'"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "--listed-in with a malformed fstab line says so and goes on" {
	# without CAP_SYS_ADMIN the command stops before it looks at paths
	require_root
	printf '%s\n' 'tmpfs /nonexistent/t tmpfs defaults 0 0' '/dev/loop-none' >"$BATS_TEST_TMPDIR/fstab"
	run_traced -I "$BATS_TEST_TMPDIR/fstab"
	assert_success
	assert_output "fstrim-ext: $BATS_TEST_TMPDIR/fstab: parse error at line 2 -- ignored"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "without CAP_SYS_ADMIN nothing is issued" {
	require_root
	require_cmd capsh strace
	run_traced_cmd capsh --drop=cap_sys_admin -- -c "exec '$FSTRIM_EXT' --journal /"
	assert_failure 1
	assert_output "fstrim-ext: CAP_SYS_ADMIN is required to trim filesystems"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a subdirectory of a mountpoint is refused" {
	require_root
	make_loop_fs ext4 64
	mkdir "$MNT/sub"
	run_traced --journal "$MNT/sub"
	assert_failure 1
	assert_output "fstrim-ext: $MNT/sub: not the root of a filesystem (mounted on $MNT)"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a bind mount of a subdirectory is refused" {
	require_root
	make_loop_fs ext4 64
	mkdir "$MNT/sub" "$BATS_TEST_TMPDIR/bind"
	track_mount --bind "$MNT/sub" "$BATS_TEST_TMPDIR/bind"
	run_traced --journal "$BATS_TEST_TMPDIR/bind"
	assert_failure 1
	assert_output "fstrim-ext: $BATS_TEST_TMPDIR/bind: not the root of a filesystem (bind mount of /sub from $LOOPDEV)"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a symlink to a mountpoint is resolved, then checked" {
	require_root
	make_loop_fs ext4 64
	mkdir "$MNT/sub"
	ln -s "$MNT" "$BATS_TEST_TMPDIR/link"
	ln -s "$MNT/sub" "$BATS_TEST_TMPDIR/sublink"

	run -0 "$FSTRIM_EXT" -v "$BATS_TEST_TMPDIR/link"
	assert_output --regexp "^$BATS_TEST_TMPDIR/link: .* \([0-9]+ bytes\) trimmed$"

	run_traced "$BATS_TEST_TMPDIR/sublink"
	assert_failure 1
	assert_output "fstrim-ext: $BATS_TEST_TMPDIR/sublink: not the root of a filesystem (mounted on $MNT)"
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a mountpoint whose path has a space and a newline" {
	require_root
	make_loop_fs ext4 64
	local odd="$BATS_TEST_TMPDIR/with space and"$'\n'"newline"
	mkdir "$odd"
	track_mount "$LOOPDEV" "$odd"
	run -0 --separate-stderr "$FSTRIM_EXT" -v --journal "$odd"
	assert_output --regexp "^$BATS_TEST_TMPDIR/with space and"$'\n'"newline: .* trimmed, journal checkpointed and discarded via [A-Z_0-9]+$"
	run_traced "$odd/lost+found"
	assert_failure 1
	assert_no_trim_ioctl
}

# bats test_tags=root
@test "a tmpfs: FITRIM unsupported, no journal ioctl" {
	require_root
	mkdir "$BATS_TEST_TMPDIR/t"
	track_mount -t tmpfs tmpfs "$BATS_TEST_TMPDIR/t"
	run_traced --journal "$BATS_TEST_TMPDIR/t"
	assert_failure 1
	assert_output - <<-EOT
	fstrim-ext: $BATS_TEST_TMPDIR/t: the discard operation is not supported
	fstrim-ext: $BATS_TEST_TMPDIR/t: the journal step is not supported: tmpfs has no journal erase interface
	EOT
	if grep -E '0x66, 0x2b' "$STRACE_LOG"; then
		fail "a journal ioctl was issued on tmpfs"
	fi
	run -0 "$FSTRIM_EXT" --journal --quiet-unsupported "$BATS_TEST_TMPDIR/t"
	assert_output ""
}

# bats test_tags=root
@test "output that cannot be written is an error" {
	require_root
	make_loop_fs ext4 64
	run bash -c "'$FSTRIM_EXT' -v '$MNT' >/dev/full"
	assert_failure 1
	assert_output "fstrim-ext: write error: No space left on device"
}

@test "the shipped command has no test hook: no FSTRIM_EXT_* variable in it or its man page" {
	# tests hold the command with tests/preload/pause.so instead
	run grep -aoE 'FSTRIM_EXT_[A-Z_]+|TEST_PAUSE' "$FSTRIM_EXT"
	assert_failure 1
	run grep -E 'FSTRIM_EXT_[A-Z_]+' "$BATS_TEST_DIRNAME/../man/fstrim-ext.8.in"
	assert_failure 1
}
