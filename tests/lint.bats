#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# tools/unchecked-run.awk, the check of make lint that every bats `run`
# has its exit status looked at.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-60}

setup() {
	load test_helper/common-setup
	_common_setup
	CHECK="$(cd "$top_srcdir" && pwd)/tools/unchecked-run.awk"
}

teardown() {
	_common_teardown
}

# check_file NAME: tools/unchecked-run.awk over the test file on stdin,
# whose tests are written "%test" (bats would take "@test" for its own)
check_file() {
	sed 's/^%test /@test /' >"$BATS_TEST_TMPDIR/$1"
	run awk -f "$CHECK" "$BATS_TEST_TMPDIR/$1"
}

@test "lint: a run followed by output checks alone is refused, with its line" {
	check_file unchecked.bats <<'EOT'
%test "one" {
	run true
	assert_success
}

%test "two" {
	run false
	assert_output ""
	run -0 true
}

%test "three" {
	run false
}
EOT
	assert_failure 1
	assert_output "$BATS_TEST_TMPDIR/unchecked.bats:7: run without a check of its status
$BATS_TEST_TMPDIR/unchecked.bats:13: run without a check of its status"
}

@test "lint: every way of checking the status is accepted" {
	check_file checked.bats <<'EOT'
helper() {
	run --separate-stderr false
}

%test "checked" {
	run -1 false
	run ! false
	X=1 run -0 --separate-stderr true
	run true
	assert_success
	run false
	assert_failure
	run false
	[ "$status" -eq 1 ]
	run false
	[[ $status -ne 0 ]] || fail "status $status"
	run false
	((status == 1))
	run false
	assert_equal "$status" 1
	run false
	local rc=$status
	cat <<-'EOS'
	run false
	EOS
	helper
	assert_failure 1
}
EOT
	assert_success
	assert_output ""
}

@test "lint: a call of a helper that ends with an unchecked run is a run; one of another helper that runs ends it" {
	check_file helper.bats <<'EOT'
helper() {
	run false
}

checked_helper() {
	run -0 true
}

%test "helper" {
	helper
	assert_output ""
	run false
	checked_helper
	assert_success
}
EOT
	assert_failure 1
	assert_output "$BATS_TEST_TMPDIR/helper.bats:10: run without a check of its status
$BATS_TEST_TMPDIR/helper.bats:12: run without a check of its status"
}
