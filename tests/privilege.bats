#!/usr/bin/env bats
# Least privilege: once its options are parsed, fstrim-ext holds only
# CAP_SYS_ADMIN (FITRIM, the journal ioctls) and CAP_DAC_READ_SEARCH (to
# reach any mountpoint), in the effective, permitted and bounding sets,
# and nothing inheritable or ambient. The tests read /proc/PID/status of
# the running command while it is held before opening a filesystem.

# shellcheck disable=SC2154 # stderr comes from tool_wait and run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	load test_helper/workload
	_common_setup
	require_root
	require_cmd strace capsh mkfifo
}

teardown() {
	_common_teardown
}

# CAP_DAC_READ_SEARCH (2) and CAP_SYS_ADMIN (21)
WANTED=$(((1 << 2) | (1 << 21)))

# cap_field NAME: the value of a Cap* line of STATUS as a number
cap_field() {
	local v
	v=$(sed -n "s/^$1:[[:space:]]*//p" <<<"$STATUS")
	echo $((16#$v))
}

# Stop fstrim-ext before its open of a fresh filesystem, run from
# "capsh ARGS --" so that the test can start it with more or fewer
# capabilities; fill CAP_EFF, CAP_PRM, CAP_BND, CAP_INH, CAP_AMB and
# NO_NEW_PRIVS from the running command, then let it finish.
caps_of_running_tool() {
	local -a capsh_args=("$@")
	make_loop_fs ext4 64 -b 4096
	# the command line that runs fstrim-ext under the pause
	tool_start_paused_under_capsh "${capsh_args[@]}"
	tool_wait_paused
	# one read of the whole file, from the command itself
	STATUS=$(cat "/proc/$TOOL_PID/status") ||
		fail "fstrim-ext $TOOL_PID is gone: $(cat "$TOOL_ERR"; pgrep -a -f 'strace|capsh|fstrim')"
	[[ $STATUS == "Name:	fstrim-ext"* ]] || fail "pid $TOOL_PID is not fstrim-ext: ${STATUS%%$'\n'*}"
	CAP_EFF=$(cap_field CapEff)
	CAP_PRM=$(cap_field CapPrm)
	CAP_BND=$(cap_field CapBnd)
	CAP_INH=$(cap_field CapInh)
	CAP_AMB=$(cap_field CapAmb)
	NO_NEW_PRIVS=$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' <<<"$STATUS")
	tool_release
	tool_wait
	[[ $status -eq 0 ]] || fail "status $status: $stderr"
}

# tool_start_paused, with the command started by capsh: strace (and so
# fstrim-ext) inherits what capsh leaves.
tool_start_paused_under_capsh() {
	local real=$FSTRIM_EXT wrapper="$BATS_TEST_TMPDIR/capsh-wrapper"
	# strace runs the wrapper, the wrapper execs fstrim-ext: the pid traced is the tool's
	# shellcheck disable=SC2016 # $0 and $@ are for the wrapper
	printf '#!/bin/sh\nexec capsh %s -- -c '\''exec "$0" "$@"'\'' "%s" "$@"\n' \
		"$*" "$real" >"$wrapper"
	chmod +x "$wrapper"
	FSTRIM_EXT=$wrapper PAUSE_BINARY=$real tool_start_paused 1 -v --journal "$MNT"
	FSTRIM_EXT=$real
}

hex() {
	printf '%016x' "$1"
}

assert_minimal_caps() {
	[[ $CAP_EFF -eq $WANTED ]] || fail "CapEff $(hex "$CAP_EFF"), want $(hex "$WANTED")"
	[[ $CAP_PRM -eq $WANTED ]] || fail "CapPrm $(hex "$CAP_PRM"), want $(hex "$WANTED")"
	[[ $CAP_INH -eq 0 ]] || fail "CapInh $(hex "$CAP_INH"), want 0"
	[[ $CAP_AMB -eq 0 ]] || fail "CapAmb $(hex "$CAP_AMB"), want 0"
}

# bats test_tags=root
@test "as root: only CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH, in every set" {
	caps_of_running_tool
	assert_minimal_caps
	[[ $CAP_BND -eq $WANTED ]] || fail "CapBnd $(hex "$CAP_BND"), want $(hex "$WANTED")"
}

# bats test_tags=root
@test "inheritable and ambient capabilities it was started with are dropped" {
	caps_of_running_tool --inh=cap_net_admin,cap_sys_admin --addamb=cap_net_admin,cap_sys_admin
	assert_minimal_caps
	[[ $CAP_BND -eq $WANTED ]] || fail "CapBnd $(hex "$CAP_BND"), want $(hex "$WANTED")"
}

# bats test_tags=root
@test "without CAP_SETPCAP the bounding set stays, the other sets are still minimal" {
	caps_of_running_tool --drop=cap_setpcap
	assert_minimal_caps
	# cannot shrink the bounding set, but must not have gained anything
	(((CAP_BND & (1 << 8)) == 0)) || fail "CAP_SETPCAP back in the bounding set"
}

# bats test_tags=root
@test "without CAP_DAC_READ_SEARCH it keeps CAP_SYS_ADMIN alone" {
	caps_of_running_tool --drop=cap_dac_read_search
	[[ $CAP_EFF -eq $((1 << 21)) ]] || fail "CapEff $(hex "$CAP_EFF")"
	[[ $CAP_PRM -eq $((1 << 21)) ]] || fail "CapPrm $(hex "$CAP_PRM")"
	[[ $CAP_INH -eq 0 && $CAP_AMB -eq 0 ]] || fail "CapInh $CAP_INH CapAmb $CAP_AMB"
}

# bats test_tags=root
@test "no new privileges can be gained through exec (no_new_privs)" {
	caps_of_running_tool
	[[ $NO_NEW_PRIVS -eq 1 ]] || fail "NoNewPrivs is $NO_NEW_PRIVS, want 1"
}

# bats test_tags=root
@test "capabilities are dropped before any mount table is read" {
	make_loop_fs ext4 64 -b 4096
	write_table "$BATS_TEST_TMPDIR/table" "$MNT"
	run strace -qq -e trace=capset,prctl,openat,openat2 -o "$BATS_TEST_TMPDIR/order.log" \
		"$FSTRIM_EXT" -v -I "$BATS_TEST_TMPDIR/table"
	assert_success
	local first_capset first_table
	first_capset=$(grep -n -m1 '^capset(' "$BATS_TEST_TMPDIR/order.log" | cut -d: -f1)
	first_table=$(grep -n -m1 -E "mountinfo|$BATS_TEST_TMPDIR/table" \
		"$BATS_TEST_TMPDIR/order.log" | cut -d: -f1)
	[[ -n $first_capset && -n $first_table ]] || fail "$(cat "$BATS_TEST_TMPDIR/order.log")"
	((first_capset < first_table)) || fail "a table was opened with full capabilities"
}

# bats test_tags=root
@test "without CAP_SYS_ADMIN it refuses before any ioctl" {
	make_loop_fs ext4 64 -b 4096
	run capsh --drop=cap_sys_admin -- -c \
		"exec strace -f -qq -e trace=ioctl -o '$BATS_TEST_TMPDIR/strace.log' '$FSTRIM_EXT' --journal '$MNT'"
	assert_failure 1
	assert_output "fstrim-ext: CAP_SYS_ADMIN is required to trim filesystems"
	# shellcheck disable=SC2034 # read by assert_no_trim_ioctl
	STRACE_LOG="$BATS_TEST_TMPDIR/strace.log"
	assert_no_trim_ioctl
}
