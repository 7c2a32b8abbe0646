# shellcheck shell=bash
# Helpers for the reliability suites (race, privilege, faults, safety):
# stopping fstrim-ext between choosing a filesystem and opening it, a
# table of chosen mountpoints for -I, and a writer workload whose files
# can be checked afterwards.
#
# Load after test_helper/common-setup.

# ---- pausing the command between selection and use ---------------------
#
# Two ways, the same interface:
#  - the test hook: with FSTRIM_EXT_TEST_PAUSE naming a FIFO, fstrim-ext
#    opens the FIFO for reading before it opens each chosen filesystem and
#    goes on when the writer closes it (fstrim-ext.c, test_pause());
#  - when the command run is not fstrim-ext itself (the capsh wrapper
#    of tests/privilege.bats) or PAUSE_MODE=strace, strace holds the Nth
#    openat2() (the open of the Nth chosen filesystem) at syscall entry
#    for PAUSE_DELAY_US, and /proc/PID/syscall shows when it is there.
# Both run the command under strace so that the ioctls and the paths of
# their descriptors (-y) are logged in STRACE_LOG.
#
#   tool_start_paused N ARGS...   run fstrim-ext ARGS in the background,
#                                 stop it before opening the Nth filesystem
#   tool_wait_paused              return once it is stopped there
#   tool_release                  let it go on (all later ones too)
#   tool_wait                     wait for the end; sets status, output
#                                 (stdout), stderr
# TOOL_PID is the pid of fstrim-ext itself.

: "${PAUSE_DELAY_US:=3000000}"

has_pause_hook() {
	grep -q FSTRIM_EXT_TEST_PAUSE "$FSTRIM_EXT" 2>/dev/null
}

tool_start_paused() {
	local nth=$1
	shift
	PAUSE_NTH=$nth
	# a background job starts with SIGINT ignored: give the command the default
	STRACE_LOG="$BATS_TEST_TMPDIR/strace.log"
	TOOL_OUT="$BATS_TEST_TMPDIR/tool.out"
	TOOL_ERR="$BATS_TEST_TMPDIR/tool.err"
	: >"$STRACE_LOG"
	if [[ ${PAUSE_MODE:-} == strace ]] || ! has_pause_hook; then
		PAUSE_MODE=strace
		env --default-signal=INT,QUIT \
			strace -f -qq -y -o "$STRACE_LOG" -e trace=ioctl,openat2,syncfs \
			-e inject=openat2:delay_enter="$PAUSE_DELAY_US":when="$nth" \
			"$FSTRIM_EXT" "$@" >"$TOOL_OUT" 2>"$TOOL_ERR" 3>&- &
	else
		PAUSE_MODE=hook
		PAUSE_FIFO="$BATS_TEST_TMPDIR/pause.fifo"
		rm -f "$PAUSE_FIFO"
		mkfifo "$PAUSE_FIFO"
		FSTRIM_EXT_TEST_PAUSE=$PAUSE_FIFO env --default-signal=INT,QUIT \
			strace -f -qq -y -o "$STRACE_LOG" -e trace=ioctl,openat2,syncfs \
			"$FSTRIM_EXT" "$@" >"$TOOL_OUT" 2>"$TOOL_ERR" 3>&- &
	fi
	STRACE_PID=$!
	TOOL_PID=
	local i
	for ((i = 0; i < 200; i++)); do
		TOOL_PID=$(pgrep -P "$STRACE_PID" | head -1)
		[[ -n $TOOL_PID ]] && break
		sleep 0.05
	done
	[[ -n $TOOL_PID ]] || fail "fstrim-ext did not start"
}

# The syscall number a task is blocked in, or "running".
_syscall_of() {
	cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null
}

# Release a paused tool in hook mode once (blocks until it waits there).
# shellcheck disable=SC2016 # $1 is for the inner shell
_hook_pass_once() {
	timeout 20 bash -c ': >"$1"' _ "$PAUSE_FIFO"
}

tool_wait_paused() {
	local i k
	if [[ $PAUSE_MODE == hook ]]; then
		# let the earlier filesystems through
		for ((k = 1; k < PAUSE_NTH; k++)); do
			_hook_pass_once || fail "fstrim-ext never reached filesystem $k"
			# Until the tool has left this pause it still holds the FIFO
			# open, and the next open for writing would return at once:
			# wait for the open of filesystem k, which follows the pause.
			for ((i = 0; i < 800; i++)); do
				(($(grep -c 'openat2(' "$STRACE_LOG") >= k)) && break
				sleep 0.025
			done
			((i < 800)) || fail "fstrim-ext never opened filesystem $k"
		done
		# opening the FIFO for writing returns once the tool waits on it
		exec {PAUSE_FD}>"$PAUSE_FIFO"
		return 0
	fi
	# In openat2 (437 on x86_64 and aarch64 alike), the Nth one: strace
	# logs a call when it enters it.
	for ((i = 0; i < 400; i++)); do
		if [[ $(_syscall_of "$TOOL_PID") == 437 ]] &&
			[[ $(grep -c 'openat2(' "$STRACE_LOG") -eq $PAUSE_NTH ]]; then
			return 0
		fi
		kill -0 "$TOOL_PID" 2>/dev/null || fail "fstrim-ext ended before the pause: $(cat "$TOOL_ERR")"
		sleep 0.025
	done
	fail "fstrim-ext did not reach the open of filesystem $PAUSE_NTH"
}

tool_release() {
	if [[ $PAUSE_MODE == hook ]]; then
		exec {PAUSE_FD}>&-
		# and any filesystem after it
		# shellcheck disable=SC2016 # $1 is for the inner shell
		(while kill -0 "$TOOL_PID" 2>/dev/null; do
			timeout 1 bash -c ': >"$1"' _ "$PAUSE_FIFO" 2>/dev/null
		done) 3>&- &
	fi
	# strace mode: the delay runs out by itself
}

# shellcheck disable=SC2034 # status, output and stderr are for the caller
tool_wait() {
	status=0
	wait "$STRACE_PID" || status=$?
	output=$(cat "$TOOL_OUT")
	stderr=$(cat "$TOOL_ERR")
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
		echo "$n" >"$manifest.count"
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

# verify_manifest MANIFEST: every listed file has its checksum
verify_manifest() {
	local bad
	bad=$(sha256sum --quiet -c "$1" 2>&1) || fail "files changed or lost: $bad"
}
