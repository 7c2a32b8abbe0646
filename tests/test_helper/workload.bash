# shellcheck shell=bash
# Helpers for the reliability suites (race, privilege, faults, safety):
# holding fstrim-ext between choosing a filesystem and opening it, a
# table of chosen mountpoints for -I, and a writer workload whose files
# can be checked afterwards.
#
# Load after test_helper/common-setup.

# ---- pausing the command between selection and use ---------------------
#
# The shim tests/preload/pause.so (LD_PRELOADed into fstrim-ext only)
# holds the command in its open of the Nth chosen filesystem, after the
# choice and before the descriptor exists; see tests/preload/pause.c. The
# test keeps both FIFOs of the hold open for reading and writing: the
# shim says on one that it holds (and its pid), and goes on when a byte
# comes on the other, when the test's end closes, or when the command
# takes SIGINT or SIGTERM there. Nothing is timed: the test waits for the
# hold, acts, and releases or signals. The command runs under strace so
# that its ioctls and the paths of their descriptors (-y) are logged in
# STRACE_LOG.
#
#   tool_start_paused N ARGS...   run fstrim-ext ARGS in the background,
#                                 to be held in the open of the Nth
#                                 filesystem
#   tool_wait_paused              return once it is held there; sets
#                                 TOOL_PID (fstrim-ext's own pid) and
#                                 PAUSED_PATH (the path it is opening)
#   tool_release                  let it go on
#   tool_wait                     wait for the end; sets status, output
#                                 (stdout), stderr
# A test that fails on the way leaves the command to _tool_teardown
# (called by _common_teardown), which kills it.

# LD_PRELOAD for the command: the shim, after libasan in a sanitizer build
# (AddressSanitizer insists on coming first). PAUSE_BINARY names the
# fstrim-ext binary when FSTRIM_EXT is a wrapper that runs it.
_pause_preload() {
	local bin=${PAUSE_BINARY:-$FSTRIM_EXT}
	local shim=${PAUSE_SHIM:-${top_builddir:-$(dirname "$bin")/..}/tests/preload/pause.so}
	local asan

	[[ -f $shim ]] || fail "no $shim: make check builds it"
	asan=$(ldd "$bin" 2>/dev/null | awk '$1 ~ /^libasan\.so/ { print $3; exit }')
	echo "${asan:+$asan:}$shim"
}

tool_start_paused() {
	local nth=$1 preload
	shift
	preload=$(_pause_preload) || exit 1
	PAUSE_NTH=$nth
	STRACE_LOG="$BATS_TEST_TMPDIR/strace.log"
	TOOL_OUT="$BATS_TEST_TMPDIR/tool.out"
	TOOL_ERR="$BATS_TEST_TMPDIR/tool.err"
	PAUSE_DIR="$BATS_TEST_TMPDIR/pause"
	TOOL_PID=
	PAUSED_PATH=
	: >"$STRACE_LOG"
	rm -rf "$PAUSE_DIR"
	mkdir "$PAUSE_DIR"
	mkfifo "$PAUSE_DIR/reached" "$PAUSE_DIR/release"
	# read and write: neither open waits, and the shim always finds both
	# ends here while the test lives
	exec {PAUSE_REACHED_FD}<>"$PAUSE_DIR/reached" {PAUSE_RELEASE_FD}<>"$PAUSE_DIR/release"
	# A background job starts with SIGINT ignored: give the command the
	# default. The FIFOs and bats' fd 3 stay with the test.
	env --default-signal=INT,QUIT \
		strace -f -qq -y -o "$STRACE_LOG" -e trace=ioctl,openat2,syncfs \
		-E LD_PRELOAD="$preload" -E FSTRIM_EXT_PAUSE_AT="$nth" \
		-E FSTRIM_EXT_PAUSE_DIR="$PAUSE_DIR" \
		"$FSTRIM_EXT" "$@" >"$TOOL_OUT" 2>"$TOOL_ERR" 3>&- \
		{PAUSE_REACHED_FD}>&- {PAUSE_RELEASE_FD}>&- &
	STRACE_PID=$!
}

# shellcheck disable=SC2034 # TOOL_PID and PAUSED_PATH are for the caller
tool_wait_paused() {
	local nth
	# The shim writes its line in one write once it holds. Waiting is
	# bounded by the test's timeout, not here: under load the command may
	# take long to get there, and that is no failure.
	until read -r -t 1 -u "$PAUSE_REACHED_FD" TOOL_PID nth PAUSED_PATH; do
		kill -0 "$STRACE_PID" 2>/dev/null ||
			fail "fstrim-ext ended before the open of filesystem $PAUSE_NTH: $(cat "$TOOL_ERR")"
	done
	[[ $nth == "$PAUSE_NTH" ]] || fail "held at open $nth, not $PAUSE_NTH"
}

tool_release() {
	[[ -n ${PAUSE_RELEASE_FD:-} ]] || return 0
	printf x >&"$PAUSE_RELEASE_FD"
	exec {PAUSE_RELEASE_FD}>&- {PAUSE_REACHED_FD}>&-
	PAUSE_RELEASE_FD=
	PAUSE_REACHED_FD=
}

# shellcheck disable=SC2034 # status, output and stderr are for the caller
tool_wait() {
	status=0
	wait "$STRACE_PID" || status=$?
	STRACE_PID=
	output=$(cat "$TOOL_OUT")
	stderr=$(cat "$TOOL_ERR")
	tool_release
}

# A command still running when the test ends (it failed on the way) is
# killed before teardown unmounts what it works on.
_tool_teardown() {
	local pid
	if [[ -n ${STRACE_PID:-} ]]; then
		# the command first: strace killed alone would let it run on
		for pid in ${TOOL_PID:-} $(pgrep -P "$STRACE_PID"); do
			kill -KILL "$pid" 2>/dev/null || :
		done
		kill -KILL "$STRACE_PID" 2>/dev/null || :
		wait "$STRACE_PID" 2>/dev/null || :
		STRACE_PID=
	fi
	tool_release
}

# ioctls issued on a descriptor of PATH (a mountpoint), from STRACE_LOG
ioctls_on() {
	grep -E "ioctl\([0-9]+<$1>" "$STRACE_LOG" || true
}

assert_no_ioctl_on() {
	local hits
	hits=$(ioctls_on "$1")
	[[ -z $hits ]] || fail "an ioctl reached $1: $hits"
}

# ---- tables for -I --------------------------------------------------------

# write_table FILE MOUNTPOINT...: an fstab naming each mountpoint with the
# device mounted there now, so that -I FILE chooses exactly these and no
# filesystem of the host.
write_table() {
	local file=$1 mnt dev type
	shift
	: >"$file"
	for mnt in "$@"; do
		dev=$(findmnt -n -o SOURCE --mountpoint "$mnt")
		type=$(findmnt -n -o FSTYPE --mountpoint "$mnt")
		printf '%s %s %s defaults 0 0\n' "$dev" "$mnt" "$type" >>"$file"
	done
}

# ---- filesystems that stay still ----------------------------------------

# make_quiet_ext4 SIZE_MB: an ext4 (4 KiB blocks) with its inode tables and
# journal written at mkfs time, so that the kernel does not write to it in
# the background; sets IMG, LOOPDEV, MNT as make_loop_fs does.
make_quiet_ext4() {
	make_loop_fs ext4 "$1" -b 4096 -E lazy_itable_init=0,lazy_journal_init=0
	mount -o remount,noinit_itable "$MNT"
}

# plant_markers DIR TAG COUNT: files holding TAG, written, synced, deleted
# and synced again: their contents stay on the device in free blocks until
# something discards them.
plant_markers() {
	local dir=$1 tag=$2 count=$3 i
	for ((i = 0; i < count; i++)); do
		{
			printf 'MARKER-%s-%04d\n' "$tag" "$i"
			head -c 8192 /dev/zero | tr '\0' 'x'
		} >"$dir/marker-$i"
	done
	sync -f "$dir"
	rm -f "$dir"/marker-*
	sync -f "$dir"
}

# markers_on_device DEV TAG: how many marker lines the device holds
markers_on_device() {
	dd if="$1" iflag=direct bs=1M status=none | strings -a | grep -c "MARKER-$2-" || true
}

# ---- the writer workload ----------------------------------------------------
#
# writer_start ROOT NDIRS MANIFEST: in the background, write files of
# random sizes (512 B to 64 KiB, one in eight near 1 MiB) into
# ROOT/d0..d(NDIRS-1), in batches: each batch is made durable (the first
# file by fsync, rename and fsync of its directory, the rest by syncfs),
# then checksummed and recorded as "SHA256  PATH" in MANIFEST (outside
# the filesystem); about one file in four is deleted again (and dropped
# from the manifest) so that blocks are freed while FITRIM and the journal
# step run. At most WRITER_MAX_FILES stay. MANIFEST.count holds the number
# of files written so far. writer_stop ends it and waits; the manifest
# then lists every durable file that should exist.
#
# With WRITER_LOG set, the loop also keeps that list as it goes, for a run
# that will not end cleanly (tests/crash): "+ SHA256 PATH" once a file is
# durable, and "- PATH" before it is deleted, each line synced to WRITER_LOG
# before the writer goes on.

: "${WRITER_MAX_FILES:=400}"
: "${WRITER_BATCH:=8}"

_writer_loop() {
	local root=$1 ndirs=$2 manifest=$3 stop=$4
	local -A sums=()
	local -a names=() batch=()
	local n=0 d f size sum victim k line
	while [[ ! -e $stop ]]; do
		batch=()
		for ((k = 0; k < WRITER_BATCH; k++)); do
			d="$root/d$((RANDOM % ndirs))"
			f="$d/f$n-$RANDOM"
			n=$((n + 1))
			if ((RANDOM % 8 == 0)); then
				size=$((1048576 - RANDOM))
			else
				size=$((512 + RANDOM % 65536))
			fi
			if ((k == 0)); then
				# the usual durable write: fsync, rename, fsync the directory
				if ! { head -c "$size" /dev/urandom >"$f.tmp" && sync "$f.tmp" &&
					mv "$f.tmp" "$f" && sync "$d"; }; then
					continue
				fi
			else
				head -c "$size" /dev/urandom >"$f" || continue
			fi
			batch+=("$f")
		done
		((${#batch[@]})) || continue
		sync -f "$root" || continue
		while read -r sum f; do
			sums[$f]=$sum
			names+=("$f")
			[[ -z ${WRITER_LOG:-} ]] || echo "+ $sum $f" >>"$WRITER_LOG"
		done < <(sha256sum "${batch[@]}")
		[[ -z ${WRITER_LOG:-} ]] || sync "$WRITER_LOG"
		# renamed into place: a reader never sees a half-written count
		echo "$n" >"$manifest.count.new" && mv -f "$manifest.count.new" "$manifest.count"
		# delete about one in four, and the oldest beyond the limit
		for ((k = 0; k < ${#batch[@]} / 4 + (${#names[@]} > WRITER_MAX_FILES); k++)); do
			line=$((RANDOM % ${#names[@]}))
			victim=${names[line]}
			if [[ -n ${WRITER_LOG:-} ]]; then
				echo "- $victim" >>"$WRITER_LOG"
				sync "$WRITER_LOG"
			fi
			rm -f "$victim"
			unset "sums[$victim]"
			names=("${names[@]:0:line}" "${names[@]:line+1}")
		done
	done
	for f in "${!sums[@]}"; do
		printf '%s  %s\n' "${sums[$f]}" "$f"
	done >"$manifest"
	echo "$n" >"$manifest.count"
}

# writer_no_group_prealloc DEVICE: turn ext4's group preallocation off on
# the filesystem mounted from DEVICE before the writer runs there, so
# that fstrim-ext --journal beside it must pass every time: otherwise the
# writer's small files may come from a preallocation over blocks of files
# it deleted, out of FITRIM's reach, a truthful failure (journal.bats
# tests that case on its own). With mb_group_prealloc 0 a file written and
# closed before its blocks are allocated gets no preallocation at all.
# Fails, with why on stderr, when the knob cannot be set.
writer_no_group_prealloc() {
	local knob="/sys/fs/ext4/${1#/dev/}/mb_group_prealloc"
	if ! echo 0 >"$knob" || [[ $(<"$knob") != 0 ]]; then
		echo "cannot turn group preallocation off: $knob" >&2
		return 1
	fi
}

writer_start() {
	local root=$1 ndirs=$2 i
	WRITER_MANIFEST=$3
	WRITER_STOP="$BATS_TEST_TMPDIR/writer.stop"
	rm -f "$WRITER_STOP" "$WRITER_MANIFEST"
	for ((i = 0; i < ndirs; i++)); do
		mkdir -p "$root/d$i"
	done
	echo 0 >"$WRITER_MANIFEST.count"
	_writer_loop "$root" "$ndirs" "$WRITER_MANIFEST" "$WRITER_STOP" 3>&- &
	WRITER_PID=$!
}

writer_stop() {
	touch "$WRITER_STOP"
	wait "$WRITER_PID"
}

# files the writer has written so far
writer_count() {
	cat "$WRITER_MANIFEST.count"
}

# writer_wait_past N: wait until the writer has finished a batch that
# takes its count beyond N, and print the new count. Bounded by the
# test's timeout, not here: on a loaded machine a batch can take long.
writer_wait_past() {
	local count
	while count=$(writer_count) && ((count <= $1)); do
		kill -0 "$WRITER_PID" 2>/dev/null || fail "the writer ended early"
		sleep 0.05
	done
	echo "$count"
}

# verify_manifest MANIFEST: every listed file has its checksum
verify_manifest() {
	local bad
	bad=$(sha256sum --quiet -c "$1" 2>&1) || fail "files changed or lost: $bad"
}
