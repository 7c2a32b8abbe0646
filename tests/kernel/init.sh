#!/bin/bash
# PID 1 of the User-Mode Linux guest booted by kernel/check-kernel.sh.
#
# The kernel hands KCHECK_ENV=FILE from its command line to init's
# environment; FILE sets FSTRIM_EXT, KCHECK_PROBE, KCHECK_SLACK (the
# host's build of tests/kernel/dirent-slack.c), KCHECK_RUNDIR,
# KCHECK_FLAVOR, KCHECK_BATS and KCHECK_FILTER (a bats --filter, optional),
# KCHECK_FC_ROUNDS and KCHECK_FC_SECONDS (guest.bats's fast_commit test).
# The results go to $KCHECK_RUNDIR, the guest's exit status to the host
# through /proc/exitcode.

# shellcheck source=tests/kernel/guest-setup.sh
. "${0%/*}/guest-setup.sh"

status=1
if [[ -r "${KCHECK_ENV:-}" ]]; then
	# shellcheck source=/dev/null
	. "$KCHECK_ENV"
	export FSTRIM_EXT KCHECK_PROBE KCHECK_SLACK KCHECK_RUNDIR KCHECK_FLAVOR \
		BATS_LIB_PATH KCHECK_FC_ROUNDS KCHECK_FC_SECONDS
	echo "kcheck: $(uname -r) ($KCHECK_FLAVOR), running $KCHECK_BATS"
	bats --tap --timing ${KCHECK_FILTER:+--filter "$KCHECK_FILTER"} "$KCHECK_BATS" \
		> "$KCHECK_RUNDIR/guest.tap" 2> "$KCHECK_RUNDIR/guest.stderr"
	status=$?
	cat "$KCHECK_RUNDIR/guest.tap"
	dmesg > "$KCHECK_RUNDIR/dmesg.txt" 2>/dev/null
else
	echo "kcheck: KCHECK_ENV not set or unreadable" >&2
fi
guest_poweroff "$KCHECK_PROBE" "$status"
