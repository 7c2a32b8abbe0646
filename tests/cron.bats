#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# The weekly cron script: nothing where systemd is the init, otherwise the
# service's command line, its output to logger, its exit status.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	load test_helper/dist
	load test_helper/nspawn
	_common_setup
	CRON_IN="$top_srcdir/cron/fstrim-ext.cron.in"
	SBIN="$BATS_TEST_TMPDIR/sbin"
	STUBS="$BATS_TEST_TMPDIR/bin"
	LOG="$BATS_TEST_TMPDIR/logger.log"
	CALLS="$BATS_TEST_TMPDIR/fstrim-ext.calls"
	mkdir -p "$SBIN" "$STUBS"
	# the script as make generates it, pointing at a stub fstrim-ext
	sed "s|@sbindir@|$SBIN|g" "$CRON_IN" >"$BATS_TEST_TMPDIR/fstrim-ext.cron"
	chmod +x "$BATS_TEST_TMPDIR/fstrim-ext.cron"
	cat >"$SBIN/fstrim-ext" <<STUB
#!/bin/sh
printf '%s\n' "\$@" >"$CALLS"
echo "\$(nice) \$(ionice -p \$\$)" >"$CALLS.priority"
echo "/: 1 GiB (1073741824 bytes) trimmed on /dev/sda1"
echo "fstrim-ext: /boot: FITRIM ioctl failed: Input/output error" >&2
exit \${STUB_STATUS:-0}
STUB
	cat >"$STUBS/logger" <<STUB
#!/bin/sh
echo "logger \$*" >>"$LOG"
sed 's/^/| /' >>"$LOG"
STUB
	# This machine may itself be a container (a CI runner in Docker): the
	# tests of a run outside one say so with systemd-detect-virt's answer
	# there, "none" (STUB_VIRT names a container instead).
	cat >"$STUBS/systemd-detect-virt" <<'STUB'
#!/bin/sh
[ "$1 $2" = "--quiet --container" ] || { echo "unexpected: $*" >&2; exit 2; }
[ "${STUB_VIRT:-none}" != none ]
STUB
	chmod +x "$SBIN/fstrim-ext" "$STUBS/logger" "$STUBS/systemd-detect-virt"
	NO_SYSTEMD="$BATS_TEST_TMPDIR/no-such-dir"
}

teardown() {
	nspawn_teardown
	_common_teardown
}

run_cron() {
	run env PATH="$STUBS:$PATH" FSTRIM_EXT_SYSTEMD_DIR="$1" \
		"$BATS_TEST_TMPDIR/fstrim-ext.cron"
}

@test "cron script is shellcheck clean" {
	require_cmd shellcheck
	run shellcheck -s sh "$CRON_IN"
	assert_success
	assert_output ''
}

@test "cron script does nothing where systemd is the init" {
	mkdir "$BATS_TEST_TMPDIR/systemd-system"
	STUB_STATUS=64 run_cron "$BATS_TEST_TMPDIR/systemd-system"
	assert_success
	assert_output ''
	[[ ! -e $CALLS ]] || fail "fstrim-ext ran"
	[[ ! -e $LOG ]] || fail "logger ran"
}

@test "cron script checks /run/systemd/system by default" {
	# shellcheck disable=SC2016
	run grep -Fx 'systemd_dir=${FSTRIM_EXT_SYSTEMD_DIR:-/run/systemd/system}' "$CRON_IN"
	assert_success
}

@test "cron script runs the service's command line and logs its output" {
	run_cron "$NO_SYSTEMD"
	assert_success
	assert_output ''
	mapfile -t want < <(service_args)
	mapfile -t got <"$CALLS"
	assert_equal "${got[*]}" "${want[*]}"
	assert_equal "$(cat "$LOG")" "logger -t fstrim-ext
| /: 1 GiB (1073741824 bytes) trimmed on /dev/sda1
| fstrim-ext: /boot: FITRIM ioctl failed: Input/output error"
}

@test "cron script runs fstrim-ext at idle I/O priority and the lowest CPU priority" {
	run_cron "$NO_SYSTEMD"
	assert_success
	assert_equal "$(cat "$CALLS.priority")" "19 idle"
}

@test "cron script exits with fstrim-ext's status" {
	local want
	for want in 0 1 32 64; do
		rm -f "$LOG"
		STUB_STATUS=$want run_cron "$NO_SYSTEMD"
		assert_equal "$status" "$want"
		assert [ -s "$LOG" ]
	done
}

@test "cron script keeps the status when logger fails" {
	printf '#!/bin/sh\ncat >/dev/null\nexit 1\n' >"$STUBS/logger"
	STUB_STATUS=32 run_cron "$NO_SYSTEMD"
	assert_equal "$status" 32
}

@test "cron script exits quietly when fstrim-ext is not installed" {
	rm "$SBIN/fstrim-ext"
	run_cron "$NO_SYSTEMD"
	assert_success
	assert_output ''
	[[ ! -e $LOG ]] || fail "logger ran"
}

@test "cron script works under dash and bash" {
	local shell
	for shell in dash bash; do
		command -v "$shell" >/dev/null || continue
		rm -f "$LOG"
		STUB_STATUS=64 run env PATH="$STUBS:$PATH" FSTRIM_EXT_SYSTEMD_DIR="$NO_SYSTEMD" \
			"$shell" "$BATS_TEST_TMPDIR/fstrim-ext.cron"
		assert_equal "$status" 64
		assert [ -s "$LOG" ]
	done
}

@test "cron script runs fstrim-ext where systemd-detect-virt finds no container" {
	STUB_VIRT=none run_cron "$NO_SYSTEMD"
	assert_success
	mapfile -t want < <(service_args)
	mapfile -t got <"$CALLS"
	assert_equal "${got[*]}" "${want[*]}"
}

@test "cron script does nothing where systemd-detect-virt finds a container" {
	STUB_VIRT=docker STUB_STATUS=64 run_cron "$NO_SYSTEMD"
	assert_success
	assert_output ''
	[[ ! -e $CALLS ]] || fail "fstrim-ext ran"
	[[ ! -e $LOG ]] || fail "logger ran"
}

# in_container ARGS...: systemd-nspawn ARGS in a container made from a
# read-only bind of this machine's /, with no systemd in it.
in_container() {
	in_nspawn_ns systemd-nspawn --quiet -D "$NSPAWN_ROOT" --register=no \
		--keep-unit --private-network --console=pipe --link-journal=no "$@" \
		</dev/null 3>&-
}

# run_in_container PATH: after nspawn_setup, the cron script there with
# PATH, the test's directory bound in, writable.
run_in_container() {
	run in_container --bind="$BATS_TEST_TMPDIR" --setenv=PATH="$1" \
		--setenv=STUB_STATUS=64 --setenv=FSTRIM_EXT_SYSTEMD_DIR="$NO_SYSTEMD" \
		"$BATS_TEST_TMPDIR/fstrim-ext.cron"
}

# bats test_tags=root
@test "cron script does nothing in a systemd-nspawn container" {
	# what the container tells of itself
	nspawn_setup
	run -0 in_container systemd-detect-virt --container
	assert_output systemd-nspawn
	# the real systemd-detect-virt; the stub fstrim-ext would record
	# its call, print and fail
	rm "$STUBS/systemd-detect-virt"
	run_in_container "$STUBS:/usr/sbin:/usr/bin:/sbin:/bin"
	assert_success
	assert_output ''
	[[ ! -e $CALLS ]] || fail "fstrim-ext ran in the container: $(cat "$CALLS")"
	[[ ! -e $LOG ]] || fail "logger ran"
}

# bats test_tags=root
@test "cron script does nothing in a systemd-nspawn container without systemd-detect-virt" {
	local bin="$BATS_TEST_TMPDIR/minbin" p
	# what the script and the stubs run, without systemd-detect-virt
	mkdir "$bin"
	for p in sh tr grep cat sed; do
		ln -s "$(command -v "$p")" "$bin/$p"
	done
	ln -s "$STUBS/logger" "$bin/logger"
	nspawn_setup
	run_in_container "$bin"
	assert_success
	assert_output ''
	[[ ! -e $CALLS ]] || fail "fstrim-ext ran in the container: $(cat "$CALLS")"
}
