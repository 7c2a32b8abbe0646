#!/usr/bin/env bats
# --json: one JSON document for the run, parsed with jq and checked
# against what the human output says about the same filesystems.
# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-180}

setup() {
	load test_helper/common-setup
	_common_setup
	require_cmd jq
}

teardown() {
	_common_teardown
}

# json_of FILE FILTER: one value of the document in FILE, raw.
json_of() {
	jq -r "$2" "$1"
}

# Run the command with stdout to $BATS_TEST_TMPDIR/out.json, stderr apart.
run_json() {
	JSON="$BATS_TEST_TMPDIR/out.json"
	run --separate-stderr "$FSTRIM_EXT" "$@"
	printf '%s\n' "$output" >"$JSON"
}

# Remount the test filesystem: ext4 forgets which groups it already
# trimmed, so a second FITRIM discards the same bytes as the first.
remount_test_fs() {
	umount "$MNT"
	mount "$LOOPDEV" "$MNT"
}

@test "--help lists --json, -J and --audit" {
	run -0 "$FSTRIM_EXT" --help
	assert_line --regexp '^ -J, --json '
	assert_line --regexp '^ +--audit '
}

@test "the library's document for made-up runs is valid JSON with the run's status" {
	local prog="${top_builddir:-$top_srcdir}/tests/unit/test_report_json"
	[[ -x $prog ]] || fail "$prog is not built (make check builds it)"

	run -0 "$prog" all
	jq -e . <<<"$output" >/dev/null || fail "not JSON: $output"
	assert_equal "$(jq -r .status <<<"$output")" 64
	assert_equal "$(jq -r '.filesystems | length' <<<"$output")" 4
	assert_equal "$(jq -r '.filesystems[1].target' <<<"$output")" '/srv "quoted"'
	assert_equal "$(jq -r '.filesystems[1].warnings[0]' <<<"$output")" \
		'/srv "quoted": the journal step is not supported: the filesystem has no journal'
	assert_equal "$(jq -r '.filesystems[2].status' <<<"$output")" failed
	assert_equal "$(jq -r '.filesystems[2].error' <<<"$output")" "FITRIM: Input/output error"
	assert_equal "$(jq -r '.filesystems[3].status' <<<"$output")" refused

	run -0 "$prog" empty
	assert_equal "$(jq -r .status <<<"$output")" 32
	assert_equal "$(jq -r '.filesystems | length' <<<"$output")" 0
	assert_equal "$(jq -r '.warnings[0]' <<<"$output")" "no filesystem is listed in '/etc/fstab'"

	run -0 "$prog" audit
	assert_equal "$(jq -r '.filesystems[0].audit_found' <<<"$output")" true
	assert_equal "$(jq -r '.filesystems[0].audit_directories[0]' <<<"$output")" /h
}

# bats test_tags=root
@test "one path: target, source, type and the bytes the human line shows" {
	require_root
	make_loop_fs ext4 64 -b 4096

	run -0 "$FSTRIM_EXT" -v "$MNT"
	[[ $output =~ ^"$MNT: ".*" ("([0-9]+)" bytes) trimmed"$ ]] || fail "line: $output"
	local bytes=${BASH_REMATCH[1]}

	remount_test_fs
	run_json --json -v "$MNT"
	assert_equal "$status" 0
	assert_equal "$stderr" ""
	assert_equal "$(json_of "$JSON" '.filesystems | length')" 1
	assert_equal "$(json_of "$JSON" '.filesystems[0].target')" "$MNT"
	assert_equal "$(json_of "$JSON" '.filesystems[0].source')" "$LOOPDEV"
	assert_equal "$(json_of "$JSON" '.filesystems[0].fstype')" ext4
	assert_equal "$(json_of "$JSON" '.filesystems[0].status')" ok
	assert_equal "$(json_of "$JSON" '.filesystems[0].trim')" "done"
	assert_equal "$(json_of "$JSON" '.filesystems[0].trimmed')" "$bytes"
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal')" null
	assert_equal "$(json_of "$JSON" '.filesystems[0].warnings | map(select(.)) | length')" 0
	assert_equal "$(json_of "$JSON" '.status')" 0
}

# bats test_tags=root
@test "-J is --json, and the human lines are not printed with it" {
	require_root
	make_loop_fs ext4 64 -b 4096
	run_json -J -v -n "$MNT"
	assert_equal "$status" 0
	jq -e . "$JSON" >/dev/null || fail "stdout is not one JSON document: $(cat "$JSON")"
	assert_equal "$(json_of "$JSON" '.filesystems[0].dry_run')" true
	assert_equal "$(json_of "$JSON" '.filesystems[0].trim')" dry-run
	assert_equal "$(json_of "$JSON" '.filesystems[0].trimmed')" 0
	run -1 grep -c '(dry run) trimmed' "$JSON"
	assert_output 0
}

# bats test_tags=root
@test "--journal: the action and interface the human line names" {
	require_root
	make_loop_fs ext4 64 -b 4096
	run -0 "$FSTRIM_EXT" -v --journal "$MNT"
	[[ $output =~ "journal checkpointed and discarded via "([A-Z_0-9]+)$ ]] || fail "line: $output"
	local iface=${BASH_REMATCH[1]}

	remount_test_fs
	run_json --json --journal "$MNT"
	assert_equal "$status" 0
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal')" "done"
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal_erase')" discard
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal_interface')" "$iface"

	run_json --json --journal-erase=zeroout "$MNT"
	assert_equal "$status" 0
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal_erase')" zeroout
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal_interface')" EXT4_IOC_CHECKPOINT
}

# bats test_tags=root
@test "unsupported journal step: the reason and the warning stderr shows, and status 1" {
	require_root
	make_loop_fs ext4 64 -b 4096 -O ^has_journal
	run -1 --separate-stderr "$FSTRIM_EXT" --journal "$MNT"
	local human_err=$stderr

	run_json --json --journal "$MNT"
	assert_equal "$status" 1
	assert_equal "$stderr" "$human_err"
	assert_equal "$(json_of "$JSON" '.filesystems[0].status')" unsupported
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal')" unsupported
	assert_equal "$(json_of "$JSON" '.filesystems[0].reason')" "the filesystem has no journal"
	assert_equal "fstrim-ext: $(json_of "$JSON" '.filesystems[0].warnings[0]')" "$human_err"
	assert_equal "$(json_of "$JSON" '.status')" 1
}

# bats test_tags=root
@test "xfs: trimmed, the journal step refused with the human reason" {
	require_root
	require_cmd mkfs.xfs
	make_loop_fs xfs 300
	run_json --json --journal "$MNT"
	assert_equal "$status" 1
	assert_equal "$(json_of "$JSON" '.filesystems[0].fstype')" xfs
	assert_equal "$(json_of "$JSON" '.filesystems[0].trim')" "done"
	assert_equal "$(json_of "$JSON" '.filesystems[0].reason')" \
		"xfs keeps the names of deleted files in its directory blocks (a freed entry keeps its name bytes) and in its log, until overwritten; no interface erases them"
	assert_equal "$(json_of "$JSON" '.status')" "$status"
}

# bats test_tags=root
@test "a path inside a filesystem is refused, with the reason of the error line" {
	require_root
	make_loop_fs ext4 64 -b 4096
	mkdir "$MNT/sub"
	run -1 --separate-stderr "$FSTRIM_EXT" "$MNT/sub"
	local human_err=$stderr

	run_json --json "$MNT/sub"
	assert_equal "$status" 1
	assert_equal "$stderr" "$human_err"
	assert_equal "$(json_of "$JSON" '.filesystems[0].status')" refused
	assert_equal "$(json_of "$JSON" '.filesystems[0].target')" "$MNT/sub"
	assert_equal "fstrim-ext: $MNT/sub: $(json_of "$JSON" '.filesystems[0].reason')" "$human_err"
	assert_equal "$(json_of "$JSON" '.status')" 1
}

# bats test_tags=root
@test "--listed-in: one member per line of the human output, same targets and devices" {
	require_root
	local tab="$BATS_TEST_TMPDIR/fstab" mnt1 dev1
	make_loop_fs ext4 64 -b 4096
	mnt1=$MNT dev1=$LOOPDEV
	make_loop_fs ext4 64 -b 4096
	printf '%s %s ext4 defaults 0 0\n%s %s ext4 defaults 0 0\n' \
		"$dev1" "$mnt1" "$LOOPDEV" "$MNT" >"$tab"

	run -0 "$FSTRIM_EXT" -n -I "$tab"
	local human=$output
	assert_equal "$(wc -l <<<"$human")" 2

	run_json --json -n -I "$tab"
	assert_equal "$status" 0
	assert_equal "$(json_of "$JSON" \
		'.filesystems[] | "\(.target): 0 B (dry run) trimmed on \(.source)"')" "$human"
	assert_equal "$(json_of "$JSON" '.status')" 0
}

# bats test_tags=root
@test "--listed-in naming no table: an empty list, the warning, and status 32" {
	require_root
	run_json --json -n -I "$BATS_TEST_TMPDIR/none"
	assert_equal "$status" 32
	assert_equal "$(json_of "$JSON" '.filesystems | length')" 0
	assert_equal "fstrim-ext: $(json_of "$JSON" '.warnings[0]')" "$stderr"
	assert_equal "$(json_of "$JSON" '.status')" 32
}

# Every document fstrim-ext printed in this test must parse with jq and
# with Python's strict parser, and hold no list with a null in it.
assert_strict_json() {
	python3 -m json.tool "$1" >/dev/null || fail "python3 -m json.tool rejects: $(cat -v "$1")"
	jq -e . "$1" >/dev/null || fail "jq rejects: $(cat -v "$1")"
	assert_equal "$(jq '[.. | arrays | select(any(. == null))] | length' "$1")" 0
}

# bats test_tags=root
@test "-J: a table's parse warnings are the run's; empty lists are []" {
	require_root
	require_cmd python3
	local tab="$BATS_TEST_TMPDIR/fstab"
	make_loop_fs ext4 64 -b 4096
	printf '%s\n' "this line is not a table line at all 0 0 0 0 x" \
		"$LOOPDEV $MNT ext4 defaults 0 0" >"$tab"

	run_json --json -n -I "$tab"
	assert_equal "$status" 0
	assert_strict_json "$JSON"
	assert_equal "fstrim-ext: $(json_of "$JSON" '.warnings[0]')" "$stderr"
	assert_equal "$(json_of "$JSON" '.warnings | length')" 1
	assert_equal "$(json_of "$JSON" '.filesystems[0].target')" "$MNT"
	assert_equal "$(json_of "$JSON" '.filesystems[0].warnings | tojson')" "[]"

	run_json --json -n "$MNT"
	assert_equal "$status" 0
	assert_strict_json "$JSON"
	assert_equal "$(json_of "$JSON" '.filesystems[0].warnings | tojson')" "[]"
	assert_equal "$(json_of "$JSON" '.warnings | tojson')" "[]"
}

# bats test_tags=root
@test "-J with -I: entries not chosen are listed, with status skipped and the reason" {
	require_root
	local tab="$BATS_TEST_TMPDIR/fstab"
	make_loop_fs ext4 64 -b 4096
	printf '%s\n' "$LOOPDEV $MNT ext4 defaults,X-fstrim.notrim 0 0" \
		"/dev/nonexistent $BATS_TEST_TMPDIR/absent ext4 defaults 0 0" \
		"tmpfs $BATS_TEST_TMPDIR/t tmpfs defaults 0 0" >"$tab"

	run_json --json -n -I "$tab"
	assert_equal "$status" 0
	assert_strict_json "$JSON"
	assert_equal "$(json_of "$JSON" '.filesystems | length')" 2
	assert_equal "$(json_of "$JSON" '.filesystems[0] | "\(.target) \(.status) \(.reason)"')" \
		"$MNT skipped X-fstrim.notrim is set"
	assert_equal "$(json_of "$JSON" '.filesystems[1] | "\(.target) \(.source) \(.status)"')" \
		"$BATS_TEST_TMPDIR/absent /dev/nonexistent skipped"
	# -v says the same, in lines
	run -0 "$FSTRIM_EXT" -v -n -I "$tab"
	assert_output - <<-EOT
	$MNT: skipped: X-fstrim.notrim is set
	$BATS_TEST_TMPDIR/absent: skipped: $(json_of "$JSON" '.filesystems[1].reason')
	EOT
}

# bats test_tags=root
@test "-J: a mountpoint whose name is not UTF-8 is escaped so that strict parsers accept it" {
	require_root
	require_cmd python3
	local dir
	dir="$BATS_TEST_TMPDIR/bad"$'\xff\xfe'"name"'\x41'
	make_loop_fs ext4 64 -b 4096
	mkdir "$dir"
	umount "$MNT"
	track_mount "$LOOPDEV" "$dir"

	run_json --json -v --journal "$dir"
	assert_equal "$status" 0
	assert_strict_json "$JSON"
	assert_equal "$(json_of "$JSON" '.filesystems[0].target')" "$BATS_TEST_TMPDIR/bad\\xff\\xfename\\x5cx41"
	assert_equal "$(json_of "$JSON" '.filesystems[0].journal')" "done"

	printf '%s\n' "$LOOPDEV $dir ext4 defaults 0 0" "$LOOPDEV $dir/none ext4 defaults 0 0" \
		>"$BATS_TEST_TMPDIR/fstab"
	run_json --json -n -I "$BATS_TEST_TMPDIR/fstab"
	assert_equal "$status" 0
	assert_strict_json "$JSON"
	assert_equal "$(json_of "$JSON" '[.filesystems[].target] | join(" ")')" \
		"$BATS_TEST_TMPDIR/bad\\xff\\xfename\\x5cx41/none $BATS_TEST_TMPDIR/bad\\xff\\xfename\\x5cx41"
}
