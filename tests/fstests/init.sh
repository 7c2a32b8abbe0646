#!/bin/bash
# PID 1 of the User-Mode Linux guest booted by kernel/check-fstests.sh.
#
# The kernel hands FSTESTS_ENV=FILE from its command line to init's
# environment; FILE sets FSTESTS_DIR (the built fstests tree),
# FSTESTS_RUNDIR (local.config, results, logs), FSTESTS_LIST (the tests),
# FSTESTS_PROBE (for the power-off) and SOAK_DURATION. ./check's output goes
# to $FSTESTS_RUNDIR/check.out, the guest's exit status to the host through
# /proc/exitcode.

# shellcheck source=tests/kernel/guest-setup.sh
. "${0%/*}/guest-setup.sh"

status=1
if [[ -r "${FSTESTS_ENV:-}" ]]; then
	# shellcheck source=/dev/null
	. "$FSTESTS_ENV"
	export HOST_OPTIONS=$FSTESTS_RUNDIR/local.config SOAK_DURATION
	# No udev here: libdevmapper (dmsetup) makes the /dev/mapper nodes of
	# dm-flakey, dm-log-writes and dm-thin itself, or they never appear.
	export DM_DISABLE_UDEV=1
	mkdir -p /tmp/fstests/test /tmp/fstests/scratch
	echo "fstests: $(uname -r), mkfs.ext4 of the test device; scratch" \
		"discard_max_bytes $(cat /sys/block/ubdb/queue/discard_max_bytes)," \
		"MOUNT_OPTIONS $(sed -n 's/^export MOUNT_OPTIONS=//p' "$HOST_OPTIONS")"
	# shellcheck disable=SC2086 # options, word by word
	mkfs.ext4 -q -F ${FSTESTS_MKFS_OPTIONS:-} /dev/ubda > "$FSTESTS_RUNDIR/mkfs-test.log" 2>&1
	echo "fstests: MKFS_OPTIONS ${FSTESTS_MKFS_OPTIONS:-none}; the test device's features:" \
		"$(dumpe2fs -h /dev/ubda 2>/dev/null | sed -n 's/^Filesystem features: *//p')"
	cd "$FSTESTS_DIR" || exit 1
	echo "fstests: ./check $FSTESTS_LIST"
	# shellcheck disable=SC2086 # a list of test names
	./check $FSTESTS_LIST > "$FSTESTS_RUNDIR/check.out" 2>&1
	status=$?
	tail -5 "$FSTESTS_RUNDIR/check.out"
	dmesg > "$FSTESTS_RUNDIR/dmesg.txt" 2>/dev/null
else
	echo "fstests: FSTESTS_ENV not set or unreadable" >&2
fi
guest_poweroff "$FSTESTS_PROBE" "$status"
