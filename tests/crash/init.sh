#!/bin/bash
# PID 1 of the User-Mode Linux guests booted by tests/crash/crash-check.sh.
#
# The kernel hands CRASH_ENV=FILE from its command line to init's
# environment; FILE sets CRASH_MODE, CRASH_RUNDIR, CRASH_SRCDIR, FSTRIM_EXT,
# KCHECK_PROBE and CRASH_MOUNT_OPTS. /dev/ubda is the ext4 image of one
# trial, mounted at /mnt/crash.
#
#   CRASH_MODE=crash   the writer of tests/test_helper/workload.bash runs
#                      on the image, logging every durable file and every
#                      deletion to $CRASH_RUNDIR/written.log, while
#                      `fstrim-ext --journal` runs on it again and again,
#                      each run logged to $CRASH_RUNDIR/runs.log. The host
#                      kills this guest; it never powers off by itself.
#   CRASH_MODE=verify  mount the image with -o discard, and with
#                      journal_discard_replay where the kernel has it (the
#                      kernel replays the journal, and with the series
#                      discards it),
#                      check $CRASH_RUNDIR/expected (sha256sum -c format)
#                      and unmount; writes "intact", or what went wrong,
#                      to $CRASH_RUNDIR/verify.status.

# shellcheck source=tests/kernel/guest-setup.sh
. "${0%/*}/guest-setup.sh"
mkdir -p /run/crash

status=1
poweroff() {
	guest_poweroff "$KCHECK_PROBE" "$status"
}

if [[ ! -r ${CRASH_ENV:-} ]]; then
	echo "crash: CRASH_ENV not set or unreadable" >&2
	poweroff
fi
# shellcheck source=/dev/null
. "$CRASH_ENV"
# a guest-private /mnt (the root is the host's, through hostfs): the logs
# name files under /mnt/crash in both modes
if ! private_tmpfs /mnt || ! mkdir /mnt/crash; then
	poweroff
fi
mnt=/mnt/crash

case $CRASH_MODE in
crash)
	mount -o "$CRASH_MOUNT_OPTS" /dev/ubda "$mnt" || poweroff
	# shellcheck source=tests/test_helper/workload.bash
	. "$CRASH_SRCDIR/tests/test_helper/workload.bash"
	# every run must pass: see writer_no_group_prealloc
	writer_no_group_prealloc /dev/ubda || poweroff
	for i in 0 1 2 3; do
		mkdir -p "$mnt/d$i"
	done
	sync -f "$mnt"
	WRITER_LOG=$CRASH_RUNDIR/written.log
	export WRITER_LOG
	: > "$WRITER_LOG"
	_writer_loop "$mnt" 4 /run/crash/manifest /run/crash/stop &
	# the first batch durable, then fstrim-ext --journal over and over
	while ! grep -q '^+ ' "$WRITER_LOG"; do
		sleep 0.1
	done
	n=0
	while :; do
		echo "start $n" >> "$CRASH_RUNDIR/runs.log"
		"$FSTRIM_EXT" -v --journal "$mnt" 2> /run/crash/stderr >> "$CRASH_RUNDIR/tool.log"
		rc=$?
		cat /run/crash/stderr >> "$CRASH_RUNDIR/tool.log"
		echo "done $n $rc" >> "$CRASH_RUNDIR/runs.log"
		n=$((n + 1))
	done
	;;
verify)
	# -o journal_discard_replay where the kernel has it (it advertises
	# journal_recovery_discard): a patched kernel then discards the
	# journal it replayed
	opts=discard
	if [[ -e /sys/fs/ext4/features/journal_recovery_discard ]]; then
		opts+=,journal_discard_replay
	fi
	if ! mount -o "$opts" /dev/ubda "$mnt"; then
		result="the image does not mount"
	elif ! (cd / && sha256sum --quiet -c "$CRASH_RUNDIR/expected") \
		> "$CRASH_RUNDIR/verify.txt" 2>&1; then
		result="files changed or lost: $(head -3 "$CRASH_RUNDIR/verify.txt" | tr '\n' ' ')"
		umount "$mnt"
	elif ! umount "$mnt"; then
		result="the image does not unmount"
	else
		result=intact
		status=0
	fi
	# the host reads this, not the kernel's exit status: UML was seen to
	# abort after a clean power-off (exit status 134)
	echo "$result" > "$CRASH_RUNDIR/verify.status"
	dmesg > "$CRASH_RUNDIR/dmesg-verify.txt" 2>/dev/null
	;;
esac
poweroff
