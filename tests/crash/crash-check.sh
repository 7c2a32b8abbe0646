#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# crash-check.sh - kill a User-Mode Linux kernel while fstrim-ext --journal
# runs under a writer, then check what a reboot finds
#
# Each trial makes a fresh ext4 image and boots KERNEL on it with
# tests/crash/init.sh as init: the writer of tests/test_helper/workload.bash
# writes, fsyncs and deletes files while `fstrim-ext -v --journal` runs
# over and over. After a random delay the host kills the whole kernel
# (SIGKILL to its process group: no unmount, no flush, no power-off). It
# then boots the same kernel again on the image, which mounts it (the
# kernel replays the journal) and checks every file that was durable and
# not being deleted when the kernel died; then `e2fsck -fn` runs on the
# image from the host. Even trials mount with data=ordered, odd ones with
# data=journal.
#
# Prints one TAP line per trial ("ok - ..." or "not ok - ...", without
# numbers: kernel/check-kernel.sh numbers them) and "# " comment lines;
# exits 0 if every trial passed. Run by `make check-kernel` for each
# kernel it boots; can be run by hand with a kernel from its cache.
#
# usage: crash-check.sh --kernel PATH --flavor NAME --srcdir DIR
#                       --workdir DIR --fstrim-ext PATH --probe PATH
#
# Environment:
#   FSTRIM_EXT_CRASH_TRIALS   trials (default 20)
#   FSTRIM_EXT_CRASH_MAX_MS   longest delay before the kill, counted from
#                             the first fstrim-ext run (default 6000; the
#                             shortest is a tenth of it)
#   FSTRIM_EXT_CRASH_SEED     seed for the delays (default: the time)

set -u -o pipefail

die() {
	echo "crash-check: $*" >&2
	exit 99
}

kernel='' flavor='' srcdir='' workdir='' fstrim_ext='' probe=''
while (($#)); do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--flavor) flavor=$2; shift 2 ;;
	--srcdir) srcdir=$2; shift 2 ;;
	--workdir) workdir=$2; shift 2 ;;
	--fstrim-ext) fstrim_ext=$2; shift 2 ;;
	--probe) probe=$2; shift 2 ;;
	*) die "unknown argument: $1" ;;
	esac
done
[[ -x $kernel && -n $flavor && -d $srcdir && -n $workdir && -x $fstrim_ext && -x $probe ]] ||
	die "usage: crash-check.sh --kernel PATH --flavor NAME --srcdir DIR --workdir DIR --fstrim-ext PATH --probe PATH"
[[ $(id -u) -eq 0 ]] || die "must run as root"

trials=${FSTRIM_EXT_CRASH_TRIALS:-20}
max_ms=${FSTRIM_EXT_CRASH_MAX_MS:-6000}
seed=${FSTRIM_EXT_CRASH_SEED:-$(date +%s)}
if ! [[ $trials =~ ^[0-9]+$ && $max_ms =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ ]] ||
	((max_ms < 10)); then
	die "FSTRIM_EXT_CRASH_TRIALS, _MAX_MS (at least 10) and _SEED take whole numbers"
fi
RANDOM=$seed
boot_timeout=180

dir=$workdir/crash-$flavor
rm -rf "$dir"
mkdir -p "$dir" || die "cannot create $dir"
if ! install -m 0755 "$srcdir/tests/crash/init.sh" "$dir/init" ||
	! install -m 0644 "$srcdir/tests/kernel/guest-setup.sh" "$dir/guest-setup.sh"; then
	die "cannot install init"
fi

# boot MODE TRIALDIR: start the kernel in the background on TRIALDIR/ext4.img;
# sets guest_pid (also its process group: setsid)
boot() {
	local mode=$1 t=$2 opts=$3

	cat > "$t/$mode.env" <<-EOF
		CRASH_MODE=$mode
		CRASH_RUNDIR='$t'
		CRASH_SRCDIR='$srcdir'
		CRASH_MOUNT_OPTS='$opts'
		FSTRIM_EXT='$fstrim_ext'
		KCHECK_PROBE='$probe'
	EOF
	setsid "$kernel" mem=256M ubd0="$t/ext4.img" \
		root=/dev/root rootfstype=hostfs rootflags=/ rw \
		init="$dir/init" CRASH_ENV="$t/$mode.env" \
		KCHECK_KEEP="$srcdir:$workdir:${fstrim_ext%/*}:${probe%/*}" \
		con0=fd:0,fd:1 con=null < /dev/null > "$t/console-$mode.log" 2>&1 &
	guest_pid=$!
}

# kill_guest: SIGKILL to every host process of the guest
kill_guest() {
	kill -KILL -- "-$guest_pid" 2>/dev/null
	wait "$guest_pid" 2>/dev/null
	stty sane 2>/dev/null || true
}

# wait_for FILE PATTERN SECONDS: until a line of FILE matches
wait_for() {
	local i

	for ((i = 0; i < $3 * 20; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$guest_pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

echo "# $flavor: $trials crash trials, seed $seed, kill $((max_ms / 10)) to $max_ms ms after the first run"
failures=0 in_run=0 files_total=0 recovered=0 runs_total=0
for ((i = 1; i <= trials; i++)); do
	t=$dir/trial-$i
	mkdir -p "$t"
	if ((i % 2)); then
		opts=data=ordered
	else
		opts=data=journal
	fi
	what="$flavor: crash trial $i ($opts)"
	truncate -s 128M "$t/ext4.img"
	mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 \
		"$t/ext4.img" > "$t/mkfs.log" 2>&1 || {
		echo "not ok - $what: mkfs.ext4 failed"
		failures=$((failures + 1))
		continue
	}

	boot crash "$t" "$opts"
	if ! wait_for "$t/runs.log" '^start 0$' "$boot_timeout"; then
		kill_guest
		echo "not ok - $what: the guest never started fstrim-ext (see $t/console-crash.log)"
		tail -20 "$t/console-crash.log" | sed 's/^/# /'
		failures=$((failures + 1))
		continue
	fi
	delay=$((max_ms / 10 + RANDOM % (max_ms - max_ms / 10)))
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	if ! kill -0 "$guest_pid" 2>/dev/null; then
		echo "not ok - $what: the guest ended before the kill (see $t/console-crash.log)"
		failures=$((failures + 1))
		continue
	fi
	kill_guest

	# where the kill landed, from the guest's own log
	last=$(tail -1 "$t/runs.log")
	runs=$(grep -c '^done ' "$t/runs.log")
	bad_runs=$(grep -c '^done [0-9]* [1-9]' "$t/runs.log")
	runs_total=$((runs_total + runs))
	if [[ $last == start* ]]; then
		where="during fstrim-ext run $((runs + 1))"
		in_run=$((in_run + 1))
	else
		where="between fstrim-ext runs, after run $runs"
	fi
	dirty=clean
	if dumpe2fs -h "$t/ext4.img" 2>/dev/null | grep -q 'features:.*needs_recovery'; then
		dirty="journal to replay"
		recovered=$((recovered + 1))
	fi

	# durable files not being deleted at the kill
	awk '$1 == "+" { sum[$3] = $2 } $1 == "-" { delete sum[$2] }
		END { for (f in sum) printf "%s  %s\n", sum[f], f }' \
		"$t/written.log" > "$t/expected"
	files=$(wc -l < "$t/expected")
	files_total=$((files_total + files))

	boot verify "$t" "$opts"
	status=0
	if ! timeout -k 10 "$boot_timeout" tail --pid="$guest_pid" -f /dev/null; then
		kill_guest
		status=124
	fi
	wait "$guest_pid" 2>/dev/null || status=$?
	stty sane 2>/dev/null || true
	e2fsck -fn "$t/ext4.img" > "$t/e2fsck.log" 2>&1
	fsck_status=$?

	# the guest's verdict; the kernel's exit status only when there is none
	result=$(cat "$t/verify.status" 2>/dev/null)
	desc="$what, killed after $delay ms $where ($dirty): $files durable files"
	if [[ $result != intact ]]; then
		echo "not ok - $desc: ${result:-no verdict from the guest (exit status $status, see $t/console-verify.log)}"
		failures=$((failures + 1))
	elif ((fsck_status != 0)); then
		echo "not ok - $desc: e2fsck -fn after replay is not clean (see $t/e2fsck.log)"
		failures=$((failures + 1))
	elif ((bad_runs)); then
		echo "not ok - $desc: $bad_runs fstrim-ext runs failed before the kill (see $t/tool.log)"
		failures=$((failures + 1))
	else
		echo "ok - $desc: all intact after replay, e2fsck -fn clean"
		rm -f "$t/ext4.img"
	fi
	((status == 0)) ||
		echo "# $flavor: crash trial $i: the checking kernel exited with status $status"
done
echo "# $flavor: $runs_total fstrim-ext runs before the kills, every one to pass; $in_run of $trials kills landed during a run, $recovered left a journal to replay; $files_total durable files checked"
((failures == 0))
