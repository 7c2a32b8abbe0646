#!/bin/bash
# PID 1 of the User-Mode Linux guest booted by kernel/check-kernel.sh.
#
# The guest's root is the host's root through hostfs, so the host's bash,
# bats, e2fsprogs, strace, capsh and the project's build run here unchanged.
# The kernel hands KCHECK_ENV=FILE from its command line to init's
# environment; FILE sets FSTRIM_EXT, KCHECK_PROBE, KCHECK_RUNDIR,
# KCHECK_FLAVOR, KCHECK_BATS and
# KCHECK_FILTER (a bats --filter, optional). The results go to $KCHECK_RUNDIR, the
# guest's exit status to the host through /proc/exitcode.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
# devtmpfs has no /dev/fd, which bash's process substitution needs.
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
[[ -e /dev/stdin ]] || ln -s /proc/self/fd/0 /dev/stdin
[[ -e /dev/stdout ]] || ln -s /proc/self/fd/1 /dev/stdout
[[ -e /dev/stderr ]] || ln -s /proc/self/fd/2 /dev/stderr
# Guest-private scratch space: keeps the guest's temporary files off the
# host's /tmp, which the hostfs root would otherwise share.
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

status=1
if [[ -r "${KCHECK_ENV:-}" ]]; then
	# shellcheck source=/dev/null
	. "$KCHECK_ENV"
	export FSTRIM_EXT KCHECK_PROBE KCHECK_RUNDIR KCHECK_FLAVOR BATS_LIB_PATH
	echo "kcheck: $(uname -r) ($KCHECK_FLAVOR), running $KCHECK_BATS"
	bats --tap --timing ${KCHECK_FILTER:+--filter "$KCHECK_FILTER"} "$KCHECK_BATS" \
		> "$KCHECK_RUNDIR/guest.tap" 2> "$KCHECK_RUNDIR/guest.stderr"
	status=$?
	cat "$KCHECK_RUNDIR/guest.tap"
	dmesg > "$KCHECK_RUNDIR/dmesg.txt" 2>/dev/null
else
	echo "kcheck: KCHECK_ENV not set or unreadable" >&2
fi
sync
"$KCHECK_PROBE" poweroff "$status"
# Not reached unless the power-off failed; PID 1 must not return.
echo o > /proc/sysrq-trigger
sleep infinity
