#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# tools/check-deps (make lint): every program that the tests, the benches,
# the kernel scripts and quickstart call comes from a package that
# quickstart installs or that a fresh machine has, whatever this machine
# has installed by hand.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	_common_setup
	TREE="$BATS_TEST_TMPDIR/tree"
	# the files the check reads, outside git (the check then lists them
	# with find, as in an unpacked tarball)
	mkdir -p "$TREE/kernel"
	cp -a "$top_srcdir/quickstart" "$top_srcdir/tests" "$top_srcdir/bench" \
		"$top_srcdir/tools" "$TREE/"
	cp -a "$top_srcdir"/kernel/*.sh "$TREE/kernel/"
}

teardown() {
	_common_teardown
}

# without PACKAGE in quickstart's DEPS
drop_dep() {
	sed -i "/^DEPS=(/,/^)/s/[[:blank:]]$1\\([[:blank:]]\\|\$\\)/\\1/" "$TREE/quickstart"
	! sed -n '/^DEPS=(/,/^)/p' "$TREE/quickstart" | grep -qw -- "$1" ||
		fail "$1 is still in DEPS"
}

@test "check-deps: the tree as it is passes" {
	run -0 bash "$top_srcdir/tools/check-deps" "$top_srcdir"
	assert_output --regexp '^check-deps: [0-9]+ programs in [0-9]+ files$'
}

@test "check-deps: a copy of the tree outside git passes" {
	run -0 bash "$TREE/tools/check-deps" "$TREE"
}

@test "check-deps: without secure-delete in DEPS it fails, naming srm and the package" {
	drop_dep secure-delete
	run -1 bash "$TREE/tools/check-deps" "$TREE"
	assert_output --partial "bench/remnants:"
	assert_output --partial ": srm comes from the package secure-delete, which is neither"
	assert_output --partial ": sfill comes from the package secure-delete"
}

@test "check-deps: a package of the fresh image need not be in DEPS, one outside it must" {
	# jq is on a fresh machine: its absence from DEPS is fine
	drop_dep jq
	run -0 bash "$TREE/tools/check-deps" "$TREE"
	# ... unless the image no longer has it
	sed -i '/^jq$/d' "$TREE/tools/deps/fresh-image.txt"
	run -1 bash "$TREE/tools/check-deps" "$TREE"
	assert_output --partial ": jq comes from the package jq, which is neither"
}

@test "check-deps: each form that names a program is read, a program missing from the map named" {
	cp "$top_srcdir/tests/fixtures/deps/forms.txt" "$TREE/tests/forms.bash"
	cp "$top_srcdir/tests/fixtures/deps/env.txt" "$TREE/tests/env.sh"
	run -1 bash "$TREE/tools/check-deps" "$TREE"
	local p
	for p in prog-literal prog-loop-a prog-loop-b prog-default prog-require \
		prog-require-path prog-case-a prog-case-b prog-path; do
		assert_line --regexp "^check-deps: tests/forms\.bash:[0-9]+: $p is not in tools/deps/programs\.txt: add a line '$p PACKAGE'"
	done
	assert_line --partial "tests/env.sh:1: prog-env is not in tools/deps/programs.txt"
}

@test "check-deps: a program it cannot name is an error" {
	cp "$top_srcdir/tests/fixtures/deps/vague.txt" "$TREE/tests/vague.bash"
	run -1 bash "$TREE/tools/check-deps" "$TREE"
	assert_line --regexp '^check-deps: tests/vague\.bash:1: .*: cannot tell which program this is'
	assert_line --regexp '^check-deps: tests/vague\.bash:2: .*unknown": cannot tell which program this is'
}

@test "check-deps: never reads what dpkg has installed" {
	require_cmd strace
	drop_dep secure-delete
	run -1 strace -f -qq -e trace=execve,open,openat,stat,newfstatat,access \
		-o "$BATS_TEST_TMPDIR/trace" bash "$TREE/tools/check-deps" "$TREE"
	assert_output --partial ": srm comes from the package secure-delete"
	run grep -E '/var/lib/dpkg|"[^"]*/(dpkg|dpkg-query|apt|apt-cache)"' "$BATS_TEST_TMPDIR/trace"
	assert_failure
}
