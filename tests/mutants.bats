#!/usr/bin/env bats
# The mutation check's harness (tests/mutants/run) without the long run:
# the list of mutants still applies to the tree, and on a tiny fixture
# (tests/fixtures/mutants) the harness kills, lets survive and refuses as
# it says. make check-mutants runs the list itself (tests/mutants/README).
# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	_common_setup
	HARNESS="$top_srcdir/tests/mutants/run"
	FIXTURE="$BATS_TEST_TMPDIR/fixture"
	cp -R "$top_srcdir/tests/fixtures/mutants" "$FIXTURE"
}

teardown() {
	_common_teardown
}

# a list for the fixture, from the lines on stdin
fixture_list() {
	cat >"$BATS_TEST_TMPDIR/list"
}

@test "mutants: the list parses, every mutation applies once and every suite names a test" {
	run -0 bash "$HARNESS" --check "$top_srcdir"
	assert_output --regexp '^[0-9]+ mutants checked: [0-9]+ apply, 0 errors$'
	# at least 30, over run, trim, the journal, the audit and the reports
	local n
	n=$(grep -c '^mutant ' "$top_srcdir/tests/mutants/list")
	((n >= 30)) || fail "only $n mutants"
	for f in lib/run.c lib/trim.c lib/journal.c lib/readset.c lib/audit.c lib/stack.c \
		lib/report.c lib/report-json.c lib/report-metrics.c; do
		grep -qx "file $f" "$top_srcdir/tests/mutants/list" || fail "no mutant of $f"
	done
}

@test "mutants: a mutant that no suite catches survives, and the check fails" {
	run -1 bash "$HARNESS" --list "$FIXTURE/list" --only add-minus,add-comment "$FIXTURE"
	assert_line --regexp '^killed add-minus \([0-9]+ s\) by tests/add.bats: add: two and three are five$'
	assert_line --regexp '^survived add-comment \([0-9]+ s\)$'
	assert_line --regexp '^2 mutants: 1 killed, 1 survived, 0 errors '
	assert_line 'survivors: add-comment'
	# the fixture is as it was
	run -0 cmp "$FIXTURE/lib/add.sh" "$top_srcdir/tests/fixtures/mutants/lib/add.sh"
}

@test "mutants: one mutant by name, killed: the check passes" {
	run -0 bash "$HARNESS" --list "$FIXTURE/list" --only add-minus "$FIXTURE"
	assert_line --regexp '^1 mutants: 1 killed, 0 survived, 0 errors '
	run -2 bash "$HARNESS" --list "$FIXTURE/list" --only no-such-mutant "$FIXTURE"
	assert_output --partial "mutants: no mutant no-such-mutant in $FIXTURE/list"
}

@test "mutants: a mutation that no longer applies is an error, not a pass" {
	run -1 bash "$HARNESS" --list "$FIXTURE/list" --check "$FIXTURE"
	assert_line "error add-stale: '\$1 * \$2' occurs 0 times in lib/add.sh, not once"
	assert_line '3 mutants checked: 2 apply, 1 errors'
	run -1 bash "$HARNESS" --list "$FIXTURE/list" --only add-stale "$FIXTURE"
	assert_line "error add-stale: '\$1 * \$2' occurs 0 times in lib/add.sh, not once"
	# text found twice is as stale as text not found
	# shellcheck disable=SC2016 # the fixture's own shell text
	echo 'echo $(($1 + $2))' >>"$FIXTURE/lib/add.sh"
	run -1 bash "$HARNESS" --list "$FIXTURE/list" --only add-minus --check "$FIXTURE"
	assert_output --partial "occurs 2 times in lib/add.sh, not once"
}

@test "mutants: a filter that names no test, a missing suite and a malformed list are errors" {
	fixture_list <<'EOF'
mutant add-renamed
	file lib/add.sh
	find $1 + $2
	replace $1 - $2
	suite tests/add.bats a test renamed since
mutant add-gone
	file lib/add.sh
	find $1 + $2
	replace $1 - $2
	suite tests/gone.bats
EOF
	run -1 bash "$HARNESS" --list "$BATS_TEST_TMPDIR/list" --check "$FIXTURE"
	assert_line "error add-renamed: no test of tests/add.bats matches 'a test renamed since'"
	assert_line "error add-gone: no suite tests/gone.bats"
	fixture_list <<'EOF'
mutant add-nothing
	file lib/add.sh
	find $1 + $2
	replace $1 + $2
	suite tests/add.bats
mutant bad name
	frob x
EOF
	run -1 --separate-stderr bash "$HARNESS" --list "$BATS_TEST_TMPDIR/list" --check "$FIXTURE"
	assert_equal "$stderr" "$BATS_TEST_TMPDIR/list:6: not a mutant name: 'bad name'
$BATS_TEST_TMPDIR/list:7: unknown keyword 'frob'
$BATS_TEST_TMPDIR/list:1: add-nothing: replace is find
mutants: 3 errors in $BATS_TEST_TMPDIR/list"
}

@test "mutants: a find that spans lines is applied as written" {
	fixture_list <<'EOF'
mutant add-two-lines
	file lib/add.sh
	find # add A B: the sum of two integers (the fixture of tests/mutants.bats)
	find echo $(($1 + $2))
	replace echo $(($1 + $2 + 1))
	suite tests/add.bats two and three
EOF
	run -0 bash "$HARNESS" --list "$BATS_TEST_TMPDIR/list" "$FIXTURE"
	assert_line --regexp '^killed add-two-lines \([0-9]+ s\) by tests/add.bats: add: two and three are five$'
}
