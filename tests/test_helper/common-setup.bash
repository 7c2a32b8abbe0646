# shellcheck shell=bash
# Shared set-up for the bats suites: bats-support, bats-assert, loop
# filesystems, and the rule that a root test never silently skips in CI.

bats_require_minimum_version 1.5.0

_common_setup() {
	bats_load_library bats-support
	bats_load_library bats-assert
	LOOPDEVS=()
	MOUNTS=()
	NODISCARD_LOOPS=()
	_start_watchdog
	: "${FSTRIM_EXT:?FSTRIM_EXT must name the built fstrim-ext}"
	# what --journal proved, kept per test (lib/readset.c), in the
	# variable systemd sets for a service's StateDirectory=
	export STATE_DIRECTORY="$BATS_TEST_TMPDIR/state"
	: "${top_srcdir:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
}

_common_teardown() {
	local i
	_stop_watchdog
	if declare -F _tool_teardown >/dev/null; then
		_tool_teardown
	fi
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || true
	done
	for i in "${LOOPDEVS[@]}"; do
		losetup -d "$i" 2>/dev/null || true
	done
	MOUNTS=()
	LOOPDEVS=()
	_remove_loop_devices
	# the FUSE disk of attach_discard_ignoring_disk, once its loop device
	# is gone: its server ends when the filesystem is released
	if mountpoint -q "$BATS_TEST_TMPDIR/fuse" 2>/dev/null; then
		umount -l "$BATS_TEST_TMPDIR/fuse" || true
	fi
}

# ---- the per-test timeout ---------------------------------------------------
#
# Every bats file sets BATS_TEST_TIMEOUT at its top (bats starts its
# countdown before setup runs), sized to its slowest test in the ASan and
# UBSan build on a loaded machine; BATS_TEST_TIMEOUT in the environment
# overrides them all. A file that sets none fails its tests here, and
# tools/lint checks that every file has the line.
#
# On timeout bats fails the test, but only once the test's shell gets
# control back, and it stops only the shell's direct children: a command
# that hangs inside `run`, or a grandchild that keeps the test's output
# open, would still hold the whole run (tried with bats 1.8.2). So a
# watchdog acts 3 s before bats would: it disarms bats' countdown, kills
# every process the test started, deepest first, while the tree is whole,
# and then sends the test bats' own timeout signal, so that the test fails
# "# timeout after Ns" and its teardown runs. Teardown stops the watchdog
# first: bats' countdown still guards a teardown that hangs.

# _proc_start PID: when PID started (field 22 of its stat), to tell it
# from a later process with the same pid
_proc_start() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	read -ra stat <<<"$stat"
	echo "${stat[19]}"
}

# _descendants PID EXCEPT...: the pids of every descendant of PID but the
# EXCEPT ones and their own descendants, deepest first
_descendants() {
	local root=$1
	shift
	ps -e -o pid=,ppid= | awk -v root="$root" -v except="$*" '
		BEGIN { n = split(except, e, " "); for (i = 1; i <= n; i++) skip[e[i]] = 1 }
		{ parent[$1] = $2; pids[NR] = $1 }
		END {
			for (i in pids) {
				p = pids[i]; depth = 0
				if (p in skip)
					continue
				for (q = parent[p]; q > 1 && !(q in skip); q = parent[q]) {
					depth++
					if (q == root) { print depth, p; break }
				}
			}
		}' | sort -rn | cut -d' ' -f2
}

_start_watchdog() {
	local test_pid=$BASHPID started fd wait_ms me victims
	# bats' countdown (bats_perform_test's local, seen here by dynamic scope)
	local bats_killer=${BATS_killer_pid:-}
	[[ -n ${BATS_TEST_TIMEOUT:-} ]] ||
		fail "${BATS_TEST_FILENAME##*/} sets no BATS_TEST_TIMEOUT at its top"
	started=$(_proc_start "$test_pid")
	wait_ms=$((${BATS_TEST_START_TIME:-$(date +%s%3N)} + BATS_TEST_TIMEOUT * 1000 - 3000 - \
		$(date +%s%3N)))
	((wait_ms > 0)) || wait_ms=1
	(
		set +eE
		trap - ERR
		# keep none of the test's pipes open
		for fd in /proc/"$BASHPID"/fd/*; do
			fd=${fd##*/}
			if ((fd > 2 && fd < 255)); then
				eval "exec $fd>&-"
			fi
		done
		exec </dev/null >/dev/null 2>&1
		# a sleep without a child process (that would outlive a kill)
		read -r -t "$((wait_ms / 1000)).$(printf %03d $((wait_ms % 1000)))" <> <(:)
		[[ $(_proc_start "$test_pid") == "$started" ]] || exit 0
		# from here teardown waits for the watchdog instead of killing it
		: >"$BATS_TEST_TMPDIR/.watchdog-fired"
		[[ -z $bats_killer ]] || kill -ABRT "$bats_killer"
		me=$BASHPID
		mapfile -t victims < <(_descendants "$test_pid" "$me" ${bats_killer:+"$bats_killer"})
		# The signal first: the test's shell takes it as soon as the
		# command it waits for is killed, before it runs anything else.
		kill -ABRT "$test_pid"
		((${#victims[@]} == 0)) || kill -KILL "${victims[@]}" 2>/dev/null
	) &
	WATCHDOG_PID=$!
}

_stop_watchdog() {
	if [[ -n ${WATCHDOG_PID:-} ]]; then
		[[ -e $BATS_TEST_TMPDIR/.watchdog-fired ]] || kill -KILL "$WATCHDOG_PID" 2>/dev/null || :
		wait "$WATCHDOG_PID" 2>/dev/null || :
		WATCHDOG_PID=
	fi
	return 0
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

# attach_loop IMG: sets LOOPDEV. A loop device keeps a discard limit that
# someone lowered on it (to 0, or to split discards), even after detach:
# such a device is reset (see _reset_loop_device) and another one taken,
# so that every test starts from a device with its full discard limit.
attach_loop() {
	local _ q
	for _ in 1 2 3 4 5; do
		LOOPDEV=$(losetup --find --show "$1") || fail "losetup failed"
		q=/sys/block/${LOOPDEV#/dev/}/queue
		if [[ $(cat "$q/discard_max_bytes") != 0 &&
			$(cat "$q/discard_max_bytes") == "$(cat "$q/discard_max_hw_bytes")" ]]; then
			LOOPDEVS+=("$LOOPDEV")
			return 0
		fi
		losetup -d "$LOOPDEV"
		_reset_loop_device "$LOOPDEV"
	done
	fail "no loop device with its full discard limit"
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

# attach_discard_ignoring_disk SIZE_MB [GRANULE [MODE]]: LOOPDEV on a FUSE
# file whose discard is acknowledged and ignored (tests/helpers/discard-ignored),
# as by firmware that ignores TRIM; MNT an empty directory to mount it on.
# The loop device's discard granularity is GRANULE bytes (512 by default).
# MODE "erase" makes the discard erase after all, for a test of what the
# filesystem never sends to the device; "units" erases only the whole
# granules a discard covers, as a device that erases whole units only.
# With DISK_PARTSCAN=1 the loop device takes partitions (losetup -P).
attach_discard_ignoring_disk() {
	local helper="${top_builddir:-$top_srcdir}/tests/helpers/discard-ignored"
	local disk="$BATS_TEST_TMPDIR/disk.img" fuse="$BATS_TEST_TMPDIR/fuse"
	[[ -x $helper ]] || _skip_or_fail "needs $helper (libfuse3-dev)"
	truncate -s "${1}M" "$disk"
	mkdir -p "$fuse" "$BATS_TEST_TMPDIR/mnt"
	# returns once the disk is mounted; serves until unmounted
	DISCARD_IGNORED_GRANULE=${2:-512} DISCARD_IGNORED_MODE=${3:-ignore} \
		"$helper" "$disk" "$fuse" 3>&- ||
		fail "the FUSE disk did not mount"
	[[ -e $fuse/disk ]] || fail "the FUSE disk did not appear"
	LOOPDEV=$(losetup --find --show ${DISK_PARTSCAN:+--partscan} "$fuse/disk") ||
		fail "losetup failed"
	LOOPDEVS+=("$LOOPDEV")
	[[ $(<"/sys/block/${LOOPDEV#/dev/}/queue/discard_granularity") == "${2:-512}" ]] ||
		fail "$LOOPDEV: discard granularity is not ${2:-512}"
	MNT="$BATS_TEST_TMPDIR/mnt"
}

# file_extent FILE NAME: FILE's one extent, where it lies in blocks of its
# filesystem (btrfs: of btrfs's address space), in NAME_first and NAME_last.
file_extent() {
	local first last
	[[ $(filefrag "$1") == *": 1 extent found" ]] || fail "$1 is not one extent"
	read -r first last < <(filefrag -e "$1" | awk '$1 == "0:" { print $4 + 0, $5 + 0 }')
	printf -v "${2}_first" %s "$first"
	printf -v "${2}_last" %s "$last"
}

# delete_between SIZE: on the filesystem at $MNT, files a, b, c, d of SIZE
# (head -c), each written out before the next, c of a name and an SSN, the
# others random; sets b_first, c_first, c_last, d_last... (file_extent) and
# fails unless b, c and d lie one after another; then deletes c, and
# commits. The caller declares the variables local.
delete_between() {
	local f
	for f in a b c d; do
		if [[ $f == c ]]; then
			yes "Name: Jane Q. Public SSN: 078-05-1120" | head -c "$1" >"$MNT/$f"
		else
			head -c "$1" /dev/urandom >"$MNT/$f"
		fi
		sync -f "$MNT"
	done
	for f in b c d; do
		file_extent "$MNT/$f" "$f"
	done
	# shellcheck disable=SC2154 # set just above, by file_extent
	((c_first == b_last + 1 && d_first == c_last + 1)) ||
		fail "b, c, d are not one after another: $b_first-$b_last $c_first-$c_last $d_first-$d_last"
	rm "$MNT/c"
	sync -f "$MNT"
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
# The limit outlives the attachment and cannot be raised again, so
# teardown detaches the device and resets it (_reset_loop_device).
disable_discard() {
	echo 0 >"/sys/block/${1#/dev/}/queue/discard_max_bytes"
	NODISCARD_LOOPS+=("$1")
}

_remove_loop_devices() {
	local dev
	for dev in "${NODISCARD_LOOPS[@]}"; do
		losetup -d "$dev" 2>/dev/null || :
		_reset_loop_device "$dev"
	done
	NODISCARD_LOOPS=()
}

# _reset_loop_device DEV: remove the detached loop device DEV and add it
# again through /dev/loop-control (LOOP_CTL_REMOVE 0x4C81, LOOP_CTL_ADD
# 0x4C80): the new device has the default limits, discard included, for
# the next `losetup --find`. The removal waits, up to 60 s, while the
# kernel still holds the device (a detach completes on its last close);
# a device that another user has bound again in between is theirs, and
# left alone with a note.
_reset_loop_device() {
	local rc=0
	perl -e '
		use Errno qw(EBUSY EEXIST ENODEV);
		sub failed { print STDERR "@_\n"; exit 1 }
		my $n = $ARGV[0] + 0;
		open(my $ctl, "<", "/dev/loop-control") or failed("/dev/loop-control: $!");
		my $tries = 600;
		until (ioctl($ctl, 0x4C81, $n)) {
			last if $! == ENODEV;
			failed("LOOP_CTL_REMOVE loop$n: $!") if $! != EBUSY;
			exit 3 if -e "/sys/block/loop$n/loop/backing_file";
			failed("loop$n still busy after 60 s") if --$tries == 0;
			select(undef, undef, undef, 0.1);
		}
		ioctl($ctl, 0x4C80, $n) or $! == EEXIST or failed("LOOP_CTL_ADD loop$n: $!");
	' "${1#/dev/loop}" || rc=$?
	case $rc in
	0) ;;
	3) echo "# $1: bound again by another user before it could be reset" >&3 ;;
	*) fail "$1: cannot reset the loop device" ;;
	esac
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
