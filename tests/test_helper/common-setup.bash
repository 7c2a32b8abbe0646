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
	NODISCARD_LOOPS=()
}

_common_teardown() {
	local i
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || true
	done
	for i in "${LOOPDEVS[@]}"; do
		losetup -d "$i" 2>/dev/null || true
	done
	MOUNTS=()
	LOOPDEVS=()
	_remove_loop_devices
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

# attach_loop IMG: sets LOOPDEV. A loop device keeps a discard limit of 0
# that someone set on it, even after detach: such a device is removed and
# another one taken, so that every test starts from a device with discard.
attach_loop() {
	local _
	for _ in 1 2 3 4 5; do
		LOOPDEV=$(losetup --find --show "$1") || fail "losetup failed"
		if [[ $(cat "/sys/block/${LOOPDEV#/dev/}/queue/discard_max_bytes") != 0 ]]; then
			LOOPDEVS+=("$LOOPDEV")
			return 0
		fi
		losetup -d "$LOOPDEV"
		NODISCARD_LOOPS+=("$LOOPDEV")
		_remove_loop_devices
	done
	fail "no loop device with discard"
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
	attach_loop "$IMG"
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
# Usage: run_traced ARGS...   (status and output of fstrim-ext kept in $status/$output)
run_traced() {
	run_traced_cmd "$FSTRIM_EXT" "$@"
}

# Any command under the same trace, e.g. fstrim-ext started by capsh.
run_traced_cmd() {
	STRACE_LOG="$BATS_TEST_TMPDIR/strace.log"
	run strace -f -qq -e trace=ioctl -o "$STRACE_LOG" "$@"
}

# The same with stderr kept apart in $stderr, for checks of stdout alone.
run_traced_stdout() {
	STRACE_LOG="$BATS_TEST_TMPDIR/strace.log"
	run --separate-stderr strace -f -qq -e trace=ioctl -o "$STRACE_LOG" "$FSTRIM_EXT" "$@"
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

# Turn discard off on a loop device, as a device without discard looks.
# The limit outlives the attachment, so teardown removes the device itself.
disable_discard() {
	echo 0 >"/sys/block/${1#/dev/}/queue/discard_max_bytes"
	NODISCARD_LOOPS+=("$1")
}

_remove_loop_devices() {
	local dev _
	for dev in "${NODISCARD_LOOPS[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			perl -e 'open(my $f, "<", "/dev/loop-control") or exit 1;
				 ioctl($f, 0x4C81, $ARGV[0] + 0) or exit 1' "${dev#/dev/loop}" && break
			sleep 0.2
		done
	done
	NODISCARD_LOOPS=()
}

# Files whose names and contents look like personal data.
# make_pii_files DIR PREFIX COUNT
make_pii_files() {
	local dir=$1 prefix=$2 count=$3 i
	mkdir -p "$dir"
	for ((i = 0; i < count; i++)); do
		printf 'Name: Jane Q. Public %s-%03d\nSSN: 078-05-%04d\nCONTENT-%s-%03d\n' \
			"$prefix" "$i" "$i" "$prefix" "$i" >"$dir/PII-SSN-$prefix-$(printf %03d "$i")-Jane-Public.txt"
	done
}

# count_on_image IMG PATTERN: how many strings of the image match.
count_on_image() {
	strings -a "$1" | grep -c -- "$2" || true
}
