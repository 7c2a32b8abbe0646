# shellcheck shell=bash
# Shared set-up for the bats suites: bats-support, bats-assert, loop
# filesystems, and the rule that a root test never silently skips in CI.

bats_require_minimum_version 1.5.0

_common_setup() {
	bats_load_library bats-support
	bats_load_library bats-assert
	: "${FSTRIM_EXT:?FSTRIM_EXT must name the built fstrim-ext}"
	: "${top_srcdir:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
	LOOPDEVS=()
	MOUNTS=()
}

_common_teardown() {
	local i
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount -l "${MOUNTS[i]}" 2>/dev/null || true
	done
	for i in "${LOOPDEVS[@]}"; do
		losetup -d "$i" 2>/dev/null || true
	done
	MOUNTS=()
	LOOPDEVS=()
}

# A skipped prerequisite is a failure in CI: the test must really run there.
_skip_or_fail() {
	if [[ "${CI:-}" == true ]]; then
		fail "CI must run this test: $*"
	fi
	skip "$*"
}

require_root() {
	[[ $(id -u) -eq 0 ]] || _skip_or_fail "needs root"
}

require_cmd() {
	local cmd
	for cmd in "$@"; do
		command -v "$cmd" >/dev/null 2>&1 || _skip_or_fail "needs $cmd"
	done
}

# make_loop_fs TYPE SIZE_MB [mkfs args...]
# Creates a sparse image, attaches it to a loop device, makes a filesystem
# and mounts it. Sets IMG, LOOPDEV and MNT; torn down by _common_teardown.
make_loop_fs() {
	local type=$1 size=$2
	shift 2
	local n=${#LOOPDEVS[@]}

	IMG="$BATS_TEST_TMPDIR/fs$n.img"
	MNT="$BATS_TEST_TMPDIR/mnt$n"
	truncate -s "${size}M" "$IMG"
	LOOPDEV=$(losetup --find --show "$IMG") || fail "losetup failed"
	LOOPDEVS+=("$LOOPDEV")
	case $type in
	ext4 | ext3 | ext2) "mkfs.$type" -q -F "$@" "$LOOPDEV" >/dev/null ;;
	xfs) mkfs.xfs -q -f "$@" "$LOOPDEV" >/dev/null ;;
	btrfs) mkfs.btrfs -q -f "$@" "$LOOPDEV" >/dev/null ;;
	*) fail "make_loop_fs: unknown type $type" ;;
	esac
	mkdir -p "$MNT"
	mount -t "$type" ${MOUNT_OPTS:+-o "$MOUNT_OPTS"} "$LOOPDEV" "$MNT" || fail "mount failed"
	MOUNTS+=("$MNT")
}

# Mount something and have teardown undo it.
track_mount() {
	MOUNTS+=("${@: -1}")
	mount "$@"
}

# Run the command under strace and fail if it issued FITRIM or a journal ioctl.
# Usage: run_no_ioctl ARGS...   (status and output of fstrim-ext kept in $status/$output)
run_traced() {
	STRACE_LOG="$BATS_TEST_TMPDIR/strace.log"
	run strace -f -qq -e trace=ioctl -o "$STRACE_LOG" "$FSTRIM_EXT" "$@"
}

assert_no_trim_ioctl() {
	if grep -E 'FITRIM|0x66, 0x2b' "$STRACE_LOG"; then
		fail "an ioctl was issued"
	fi
}

# Strings of a device, read past the page cache.
device_strings() {
	dd if="$1" iflag=direct bs=1M status=none | strings -a
}
