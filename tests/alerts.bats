#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# prometheus/fstrim-ext.rules.yml, the alerting rules that the package
# installs, under `promtool test rules` over series made from what real
# runs of fstrim-ext wrote on loop filesystems (--metrics), set out on
# promtool's clock as weekly runs of fstrim-ext.timer would be.

# a few runs on loop filesystems, and promtool over four weeks of samples
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	_common_setup
	RULES="$top_srcdir/prometheus/fstrim-ext.rules.yml"
	RUNS=()
	LAST_END=0
	EXPECT="$BATS_TEST_TMPDIR/expect.jsonl"
	: >"$EXPECT"
}

teardown() {
	_common_teardown
}

HOUR=3600
DAY=$((24 * HOUR))
WEEK=$((7 * DAY))
# the latest fstrim-ext.timer starts a run after its weekly time:
# RandomizedDelaySec=100min, then AccuracySec=1h
LATEST=$((100 * 60 + HOUR))

# run_at SIM ARGS...: fstrim-ext ARGS with --metrics, standing for a run at
# SIM seconds on promtool's clock; its file is kept for the series. Runs
# begin in a later second than the last one ended, so that each
# timestamp belongs to one run. Sets $status and $output.
run_at() {
	local sim=$1 start end file
	shift
	while (($(date +%s) <= LAST_END)); do sleep 0.1; done
	file="$BATS_TEST_TMPDIR/run-${#RUNS[@]}.prom"
	[[ ${#RUNS[@]} -eq 0 ]] || cp "$BATS_TEST_TMPDIR/${RUNS[-1]##*:}" "$file"
	start=$(date +%s)
	run "$FSTRIM_EXT" "$@" --metrics "$file"
	end=$(date +%s)
	LAST_END=$end
	RUNS+=("$sim:$start:$end:${file##*/}")
}

# The service's command line (systemd/fstrim-ext.service.in) on a table.
SERVICE_ARGS=(--verbose --quiet-unsupported --journal)

# expect EVAL ALERT [ALERT_JSON...]: at EVAL seconds, ALERT fires with
# exactly the alerts given (none: it does not fire).
expect() {
	local eval_time=$1 alert=$2
	shift 2
	jq -cn --arg t "${eval_time}s" --arg a "$alert" '$ARGS.positional as $e |
		{eval_time: $t, alertname: $a, exp_alerts: ($e | map(fromjson))}' \
		--args "$@" >>"$EXPECT"
}

# The alerts as Prometheus labels and annotates them, for the filesystem
# MNT DEV TYPE (not_done, overdue) or the run (run_failed), on host1.
# shellcheck disable=SC2016 # jq's variables, in jq's program
_fs_labels='{severity: "warning", instance: "host1", job: "node",
	mountpoint: $m, device: $d, fstype: $t}'
not_done() {
	jq -cn --arg m "$1" --arg d "$2" --arg t "$3" "{exp_labels: $_fs_labels,
		exp_annotations: {
			summary: \"fstrim-ext did not do its work on \\(\$m) of host1\",
			description: \"See fstrim_ext_filesystem_status and \`journalctl -u fstrim-ext.service\` on host1.\"}}"
}
overdue() {
	jq -cn --arg m "$1" --arg d "$2" --arg t "$3" "{exp_labels: $_fs_labels,
		exp_annotations: {
			summary: \"fstrim-ext has not run on \\(\$m) of host1 for more than a week\",
			description: \"Is fstrim-ext.timer active on host1? \`systemctl list-timers fstrim-ext.timer\`\"}}"
}
run_failed() {
	jq -cn '{exp_labels: {severity: "warning", instance: "host1", job: "node"},
		exp_annotations: {summary: "fstrim-ext failed on host1",
			description: "See `journalctl -u fstrim-ext.service` on host1."}}'
}

# promtool_test WEEKS: the runs' series as node_exporter on host1 serves
# them, scraped every 5 minutes for WEEKS weeks (a query looks back 5
# minutes for a sample), against the expectations.
promtool_test() {
	local steps=$(($1 * WEEK / 300 + 1)) test="$BATS_TEST_TMPDIR/rules.test.yml"
	(cd "$BATS_TEST_TMPDIR" && /usr/bin/python3 "$top_srcdir/tests/test_helper/prom-series.py" \
		--labels 'instance="host1",job="node"' 300 "$steps" "${RUNS[@]}") \
		>"$BATS_TEST_TMPDIR/series.json" || fail "the series could not be made"
	jq -n --arg rules "$RULES" --slurpfile series "$BATS_TEST_TMPDIR/series.json" \
		--slurpfile expect "$EXPECT" '{rule_files: [$rules], evaluation_interval: "5m",
		tests: [{interval: "5m", input_series: $series[0], alert_rule_test: $expect}]}' >"$test"
	run promtool test rules "$test"
	assert_success
	assert_output --partial SUCCESS
}

# fs TYPE SIZE [mkfs args]: make_loop_fs, listed in $TABLE; its label
# values in FS_MNT, FS_DEV, FS_TYPE (arrays, in order).
fs() {
	local type=$1
	make_loop_fs "$@"
	TABLE=${TABLE:-$BATS_TEST_TMPDIR/fstab}
	echo "$LOOPDEV $MNT $type defaults 0 0" >>"$TABLE"
	FS_MNT+=("$MNT")
	FS_DEV+=("$LOOPDEV")
	FS_TYPE+=("$type")
}

@test "the rules pass promtool check rules" {
	require_cmd promtool
	run -0 promtool check rules "$RULES"
	assert_output --partial 'SUCCESS: 3 rules found'
}

# bats test_tags=root
@test "a host whose weekly runs succeed never alerts: ext4, xfs, ext4 without a journal" {
	require_root
	require_cmd promtool jq mkfs.xfs
	local -a FS_MNT=() FS_DEV=() FS_TYPE=()
	local t alert
	fs ext4 64 -b 4096
	fs xfs 320
	fs ext4 64 -b 4096 -O ^has_journal
	# the earliest and the latest a weekly run starts, by turns: the
	# longest gap between two is a week and the timer's delays
	for t in 0 $((WEEK + LATEST)) $((2 * WEEK)) $((3 * WEEK + LATEST)); do
		run_at "$t" -I "$TABLE" "${SERVICE_ARGS[@]}"
		assert_success
	done
	for ((t = 0; t <= 4 * WEEK; t += 6 * HOUR)); do
		for alert in FstrimExtFilesystemNotDone FstrimExtRunFailed FstrimExtOverdue; do
			expect "$t" "$alert"
		done
	done
	promtool_test 4
}

# bats test_tags=root
@test "a failing run alerts by the next day, for its filesystem, until a run succeeds" {
	require_root
	require_cmd promtool jq filefrag
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_first b_last c_first c_last d_first d_last
	local -a FS_MNT=() FS_DEV=() FS_TYPE=()
	fs ext4 64 -b 4096
	fs ext4 64 -b 4096 -O ^has_journal
	run_at 0 -I "$TABLE" "${SERVICE_ARGS[@]}"
	assert_success
	# a deleted file in a free extent FITRIM skips, read back: the second fails
	delete_between 200K
	run_at "$WEEK" -I "$TABLE" "${SERVICE_ARGS[@]}" -m 1M
	assert_failure 64
	run_at $((2 * WEEK)) -I "$TABLE" "${SERVICE_ARGS[@]}"
	assert_success
	expect $((WEEK - HOUR)) FstrimExtFilesystemNotDone
	expect $((WEEK + DAY)) FstrimExtFilesystemNotDone \
		"$(not_done "${FS_MNT[1]}" "${FS_DEV[1]}" ext4)"
	# the filesystem says it: no second alert for the run
	expect $((WEEK + DAY)) FstrimExtRunFailed
	expect $((WEEK + DAY)) FstrimExtOverdue
	expect $((2 * WEEK + HOUR)) FstrimExtFilesystemNotDone

	# a run that reaches no filesystem: the run's alert
	run_at $((3 * WEEK)) -I "$BATS_TEST_TMPDIR/no-such-table" "${SERVICE_ARGS[@]}"
	assert_failure 32
	expect $((3 * WEEK - HOUR)) FstrimExtRunFailed
	expect $((3 * WEEK + DAY)) FstrimExtRunFailed "$(run_failed)"
	promtool_test 4
}

# bats test_tags=root
@test "a host with no run for more than a week and the timer's delay alerts" {
	require_root
	require_cmd promtool jq mkfs.xfs
	local -a FS_MNT=() FS_DEV=() FS_TYPE=()
	local i
	local -a all=()
	fs ext4 64 -b 4096
	fs xfs 320
	run_at 0 -I "$TABLE" "${SERVICE_ARGS[@]}"
	assert_success
	# the last run stays served: the timer is stopped, the host is up
	expect $((WEEK + LATEST)) FstrimExtOverdue
	expect $((WEEK + LATEST + 5 * HOUR)) FstrimExtOverdue
	for i in 0 1; do
		all+=("$(overdue "${FS_MNT[i]}" "${FS_DEV[i]}" "${FS_TYPE[i]}")")
	done
	expect $((WEEK + LATEST + 7 * HOUR)) FstrimExtOverdue "${all[@]}"
	expect $((2 * WEEK)) FstrimExtOverdue "${all[@]}"
	expect $((2 * WEEK)) FstrimExtFilesystemNotDone
	promtool_test 2
}
