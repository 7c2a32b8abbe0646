#!/usr/bin/env bats
# --metrics FILE: the Prometheus text file for node_exporter's textfile
# collector, checked with promtool and served by the real node_exporter
# (scraped on 127.0.0.1 only).
# shellcheck disable=SC2154 # $stderr comes from bats' run --separate-stderr

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-180}

setup() {
	load test_helper/common-setup
	_common_setup
	PROM_DIR="$BATS_TEST_TMPDIR/textfile"
	mkdir -p "$PROM_DIR"
	PROM="$PROM_DIR/fstrim-ext.prom"
	NODE_PID=
}

# called by _common_teardown: node_exporter never outlives its test
_tool_teardown() {
	if [[ -n $NODE_PID ]]; then
		kill "$NODE_PID" 2>/dev/null || :
		wait "$NODE_PID" 2>/dev/null || :
	fi
}

teardown() {
	_common_teardown
}

# metric NAME [TEXT]: the values of the series NAME in $PROM (those whose
# line holds TEXT), one a line.
metric() {
	grep -E "^$1(\{.*\})? " "$PROM" | grep -F -- "${2:-}" | sed 's/.* //'
}

# The file passes promtool, and each family has its HELP and TYPE once,
# before its samples, which come together.
assert_valid_file() {
	require_cmd promtool
	run -0 promtool check metrics <"$PROM"
	assert_output ''
	# shellcheck disable=SC2016 # an awk program
	run -0 awk '
		/^# HELP / { if (help[$3]++) print "second HELP of " $3; next }
		/^# TYPE / { if (type[$3]++) print "second TYPE of " $3
			if (!help[$3]) print "TYPE before HELP of " $3
			family = $3; next }
		{ name = $1; sub(/\{.*/, "", name)
		  if (name != family) print "sample of " name " outside its family" }' "$PROM"
	assert_output ''
}

# bats test_tags=root
@test "--metrics: a trim without --journal, as promtool and the -v line see it" {
	require_root
	make_loop_fs ext4 64 -b 4096
	local before after
	before=$(date +%s)
	run -0 "$FSTRIM_EXT" -v --metrics "$PROM" "$MNT"
	after=$(date +%s)
	[[ $output =~ \(([0-9]+)\ bytes\)\ trimmed ]] || fail "no bytes in: $output"
	local trimmed=${BASH_REMATCH[1]}
	assert_valid_file
	local labels="mountpoint=\"$MNT\",device=\"$LOOPDEV\",fstype=\"ext4\""
	assert_equal "$(metric fstrim_ext_trimmed_bytes "{$labels}")" "$trimmed"
	assert_equal "$(metric fstrim_ext_filesystem_ok "{$labels}")" 1
	assert_equal "$(metric fstrim_ext_filesystem_status 'status="ok"')" 1
	assert_equal "$(metric fstrim_ext_filesystem_status | sort | uniq -c | xargs)" '4 0 1 1'
	assert_equal "$(metric fstrim_ext_journal_erased)" 0
	assert_equal "$(metric fstrim_ext_journal_verified)" 0
	assert_equal "$(metric fstrim_ext_exit_status)" 0
	local run_at
	run_at=$(metric fstrim_ext_last_run_timestamp_seconds)
	((run_at >= before && run_at <= after)) || fail "last run $run_at not in [$before, $after]"
	assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds)" "$run_at"
	# the run's own: the version --version prints, how long it took
	local version duration
	version=$("$FSTRIM_EXT" --version | head -n1)
	assert_equal "$(metric fstrim_ext_build_info "{version=\"${version#fstrim-ext }\"}")" 1
	duration=$(metric fstrim_ext_run_duration_seconds)
	[[ $duration =~ ^[0-9]+\.[0-9]{3}$ ]] || fail "duration '$duration'"
	awk -v d="$duration" -v max=$((after - before + 1)) 'BEGIN { exit !(d > 0 && d <= max) }' ||
		fail "duration $duration not in (0, $((after - before + 1))]"
	# no audit without --audit, and node_exporter's user may read it
	run -1 grep -c audit "$PROM"
	assert_output 0
	assert_equal "$(stat -c %a "$PROM")" 644
}

# bats test_tags=root
@test "--metrics --journal --audit: the journal erased, read back, and the audit's findings" {
	require_root
	make_loop_fs ext4 64 -b 4096
	make_pii_files "$MNT/gone" GONE 20
	sync
	rm -rf "$MNT/gone"
	run -0 "$FSTRIM_EXT" --journal --audit --metrics "$PROM" "$MNT"
	assert_valid_file
	assert_equal "$(metric fstrim_ext_journal_erased)" 1
	assert_equal "$(metric fstrim_ext_journal_verified)" 1
	assert_equal "$(metric fstrim_ext_filesystem_ok)" 1
	# the status 0 of --audit: nothing found, all examined
	assert_equal "$(metric fstrim_ext_audit_found)" 0
	assert_equal "$(metric fstrim_ext_audit_complete)" 1
	assert_equal "$(metric fstrim_ext_audit_journal_old_blocks)" 0
	assert_equal "$(metric fstrim_ext_audit_deleted_names)" 0
}

# bats test_tags=root
@test "--metrics: a failing run writes the file, with the last success kept from the one before" {
	require_root
	make_loop_fs ext4 64 -b 4096
	run -0 "$FSTRIM_EXT" --journal --metrics "$PROM" "$MNT"
	# an earlier success than this run's, to tell it from this run's time
	sed -i 's/^\(fstrim_ext_last_success_timestamp_seconds{.*}\) [0-9]*$/\1 1000000000/' "$PROM"
	mount -o remount,ro "$MNT"
	run -1 "$FSTRIM_EXT" --journal --metrics "$PROM" "$MNT"
	assert_valid_file
	assert_equal "$(metric fstrim_ext_filesystem_ok)" 0
	assert_equal "$(metric fstrim_ext_filesystem_status 'status="refused"')" 1
	assert_equal "$(metric fstrim_ext_exit_status)" 1
	assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds)" 1000000000
	# refused before any step: not the root of a filesystem
	run -1 "$FSTRIM_EXT" --metrics "$PROM" "$MNT/lost+found"
	assert_equal "$(metric fstrim_ext_filesystem_status "mountpoint=\"$MNT/lost+found\"")" \
		$'0\n0\n0\n0\n1'
	assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds)" 0
	# a run that ends before any filesystem: the run's own series alone
	run -32 "$FSTRIM_EXT" -I "$BATS_TEST_TMPDIR/no-such-table" --metrics "$PROM"
	assert_valid_file
	run -0 grep -v '^#' "$PROM"
	assert_line --index 0 --regexp '^fstrim_ext_build_info\{version="[^"]+"\} 1$'
	assert_line --index 1 --regexp '^fstrim_ext_run_duration_seconds [0-9.]+$'
	assert_line --index 2 'fstrim_ext_exit_status 32'
	assert_equal "${#lines[@]}" 3
}

# An xfs (no journal step there) and an ext4 without a journal, listed in
# a table, run as fstrim-ext.service runs them: all that applies is done,
# and the fleet's alert on the last success must not fire for them.
# bats test_tags=root
@test "--metrics: the service's run on xfs and on an ext4 without a journal is a success; a failure keeps the last" {
	require_root
	require_cmd mkfs.xfs filefrag
	# shellcheck disable=SC2034 # set by delete_between, and not needed
	local b_first b_last c_first c_last d_first d_last
	local table="$BATS_TEST_TMPDIR/fstab" before after run_at xfs ext4
	make_loop_fs xfs 320
	xfs="mountpoint=\"$MNT\",device=\"$LOOPDEV\",fstype=\"xfs\""
	echo "$LOOPDEV $MNT xfs defaults 0 0" >>"$table"
	make_loop_fs ext4 64 -b 4096 -O ^has_journal
	ext4="mountpoint=\"$MNT\",device=\"$LOOPDEV\",fstype=\"ext4\""
	echo "$LOOPDEV $MNT ext4 defaults 0 0" >>"$table"
	before=$(date +%s)
	run -0 "$FSTRIM_EXT" --listed-in "$table" --verbose --quiet-unsupported --journal \
		--metrics "$PROM"
	after=$(date +%s)
	assert_valid_file
	for labels in "$xfs" "$ext4"; do
		assert_equal "$(metric fstrim_ext_filesystem_ok "{$labels}")" 1
		# the status says what --json says: a step asked is unsupported there
		assert_equal "$(metric fstrim_ext_filesystem_status "{$labels,status=\"unsupported\"}")" 1
		run_at=$(metric fstrim_ext_last_run_timestamp_seconds "{$labels}")
		((run_at >= before && run_at <= after)) || fail "last run $run_at not in [$before, $after]"
		assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds "{$labels}")" "$run_at"
	done
	# the ext4's free space was read back, the xfs's not (no backend)
	assert_equal "$(metric fstrim_ext_readback_bytes "{$ext4}")" \
		"$(metric fstrim_ext_trimmed_bytes "{$ext4}")"
	assert_equal "$(metric fstrim_ext_readback_bytes "{$xfs}")" ''

	# a deleted file in a free extent FITRIM skips (-m): the ext4 fails,
	# keeps its series and the last success; the xfs succeeds again
	delete_between 200K
	sed -i 's/^\(fstrim_ext_last_success_timestamp_seconds{.*}\) [0-9]*$/\1 1000000000/' "$PROM"
	run -64 "$FSTRIM_EXT" --listed-in "$table" --quiet-unsupported --journal -m 1M \
		--metrics "$PROM"
	assert_valid_file
	assert_equal "$(metric fstrim_ext_filesystem_ok "{$ext4}")" 0
	assert_equal "$(metric fstrim_ext_filesystem_status "{$ext4,status=\"failed\"}")" 1
	assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds "{$ext4}")" 1000000000
	assert_equal "$(metric fstrim_ext_filesystem_ok "{$xfs}")" 1
	run_at=$(metric fstrim_ext_last_run_timestamp_seconds "{$xfs}")
	assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds "{$xfs}")" "$run_at"
	assert_equal "$(metric fstrim_ext_exit_status)" 64
}

# bats test_tags=root
@test "--metrics with -I: a series for each chosen filesystem, none for an entry not chosen" {
	require_root
	require_cmd jq
	local table="$BATS_TEST_TMPDIR/fstab" i
	local -a mnt dev
	for i in 0 1 2; do
		make_loop_fs ext4 64 -b 4096
		mnt[i]=$MNT
		dev[i]=$LOOPDEV
		echo "$LOOPDEV $MNT ext4 defaults 0 0" >>"$table"
	done
	disable_discard "${dev[2]}"
	run -0 "$FSTRIM_EXT" -v -I "$table" --metrics "$PROM"
	assert_line "${mnt[2]}: skipped: the device cannot discard"
	assert_valid_file
	for i in 0 1; do
		assert_equal "$(metric fstrim_ext_filesystem_ok \
			"{mountpoint=\"${mnt[i]}\",device=\"${dev[i]}\",fstype=\"ext4\"}")" 1
	done
	assert_equal "$(metric fstrim_ext_last_run_timestamp_seconds | wc -l)" 2
	run -1 grep -c "mountpoint=\"${mnt[2]}\"" "$PROM"
	assert_output 0
	# with --json too, which lists the entry not chosen
	run -0 "$FSTRIM_EXT" -J -I "$table" --metrics "$PROM"
	assert_equal "$(jq -r '.filesystems[] | select(.status == "skipped") | .target' \
		<<<"$output")" "${mnt[2]}"
	assert_valid_file
	run -1 grep -c "mountpoint=\"${mnt[2]}\"" "$PROM"
	assert_output 0
	assert_equal "$(metric fstrim_ext_filesystem_ok | xargs)" '1 1'
}

# bats test_tags=root
@test "--metrics: a file that cannot be written is one message and fails a run that did not fail" {
	require_root
	make_loop_fs ext4 64 -b 4096
	# a directory that is there but cannot be written in (a missing one
	# is refused before any work: tests/cli.bats)
	local ro="$BATS_TEST_TMPDIR/ro"
	mkdir "$ro"
	track_mount -t tmpfs -o ro,size=1m tmpfs "$ro"
	run -1 --separate-stderr "$FSTRIM_EXT" -v --metrics "$ro/fstrim-ext.prom" "$MNT"
	assert_output --regexp "^$MNT: .* trimmed\$"
	assert_equal "$stderr" \
		"fstrim-ext: cannot write $ro/fstrim-ext.prom: Read-only file system"
	# a status that says failure already is kept
	run -32 --separate-stderr "$FSTRIM_EXT" -I "$BATS_TEST_TMPDIR/no-such-table" \
		--metrics "$ro/fstrim-ext.prom"
	assert_equal "${stderr##*$'\n'}" \
		"fstrim-ext: cannot write $ro/fstrim-ext.prom: Read-only file system"
}

# An ext4 mounted on a directory whose name holds a double quote, a
# backslash, a newline and a byte that is not UTF-8; LABEL its mountpoint
# label value as the file must write it.
_odd_fs() {
	make_loop_fs ext4 64 -b 4096
	umount "$MNT"
	MNT="$BATS_TEST_TMPDIR/"$'we"ird\\na\nme\xff'
	mkdir "$MNT"
	track_mount "$LOOPDEV" "$MNT"
	LABEL="mountpoint=\"$BATS_TEST_TMPDIR/"'we\"ird\\na\nme\\xff"'
}

# bats test_tags=root
@test "--metrics: a mountpoint with a quote, a backslash, a newline and a byte not UTF-8" {
	require_root
	_odd_fs
	run -0 "$FSTRIM_EXT" --metrics "$PROM" "$MNT"
	assert_valid_file
	assert_equal "$(metric fstrim_ext_filesystem_ok "{$LABEL,device=\"$LOOPDEV\"")" 1
	iconv -f UTF-8 -t UTF-8 "$PROM" >/dev/null || fail "the file is not UTF-8"
	# a second run finds its own line for the last success
	sed -i 's/^\(fstrim_ext_last_success_timestamp_seconds{.*}\) [0-9]*$/\1 1000000000/' "$PROM"
	mount -o remount,ro "$MNT"
	run -1 "$FSTRIM_EXT" --journal --metrics "$PROM" "$MNT"
	assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds "{$LABEL")" 1000000000
}

# mountinfo_target DEVICE: the mountpoint of DEVICE as /proc/self/mountinfo
# has it, its octal escapes (\040 for a space, \011 for a tab) decoded, as
# libmount and node_exporter's filesystem collector decode them.
mountinfo_target() {
	local field
	field=$(awk -v dev="$1" '{ for (i = 7; i < NF; i++) if ($i == "-") break
		if ($(i + 2) == dev) print $5 }' /proc/self/mountinfo)
	[[ -n $field && $field != *$'\n'* ]] || fail "$1 is not mounted once"
	printf '%b' "${field//\\/\\0}"
}

# An ext4 mounted on a directory whose name holds a space and a tab,
# which mountinfo writes as \040 and \011.
_spaced_fs() {
	make_loop_fs ext4 64 -b 4096
	umount "$MNT"
	MNT="$BATS_TEST_TMPDIR/"$'my data\tdir'
	mkdir "$MNT"
	track_mount "$LOOPDEV" "$MNT"
}

# bats test_tags=root
@test "--metrics: the mountpoint label is mountinfo's, however the filesystem was named" {
	require_root
	_spaced_fs
	ln -s "$MNT" "$BATS_TEST_TMPDIR/link"
	local target labels
	target=$(mountinfo_target "$LOOPDEV")
	assert_equal "$target" "$MNT"
	labels="{mountpoint=\"$target\",device=\"$LOOPDEV\",fstype=\"ext4\"}"
	# a single path through a link, with a slash at its end
	run -0 "$FSTRIM_EXT" --metrics "$PROM" "$BATS_TEST_TMPDIR/link/"
	assert_valid_file
	assert_equal "$(metric fstrim_ext_filesystem_ok "$labels")" 1
	# a table that names the link: the same series, whose last success a
	# failing run keeps
	echo "$LOOPDEV $BATS_TEST_TMPDIR/link ext4 defaults 0 0" >"$BATS_TEST_TMPDIR/fstab"
	run -0 "$FSTRIM_EXT" -v -I "$BATS_TEST_TMPDIR/fstab" --metrics "$PROM"
	assert_output --regexp "^$BATS_TEST_TMPDIR/link: .* trimmed on $LOOPDEV\$"
	assert_valid_file
	assert_equal "$(metric fstrim_ext_filesystem_ok "$labels")" 1
	assert_equal "$(metric fstrim_ext_last_run_timestamp_seconds | wc -l)" 1
	sed -i 's/^\(fstrim_ext_last_success_timestamp_seconds{.*}\) [0-9]*$/\1 1000000000/' "$PROM"
	mount -o remount,ro "$MNT"
	run -1 "$FSTRIM_EXT" --journal --metrics "$PROM" "$BATS_TEST_TMPDIR/link/"
	assert_equal "$(metric fstrim_ext_filesystem_status "${labels%\}},status=\"refused\"}")" 1
	assert_equal "$(metric fstrim_ext_last_success_timestamp_seconds "$labels")" 1000000000
}

# A free TCP port on 127.0.0.1, as the kernel picks one.
_free_port() {
	/usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Start node_exporter with only the textfile collector, reading PROM_DIR,
# and scrape it once it answers: SCRAPE holds what it served. Bounded: a
# port taken meanwhile is tried again with another (3 times), a wait ends
# after 30 s.
_scrape_node_exporter() {
	local deadline log="$BATS_TEST_TMPDIR/node-exporter.log"
	SCRAPE="$BATS_TEST_TMPDIR/scrape.txt"
	for _ in 1 2 3; do
		PORT=$(_free_port)
		prometheus-node-exporter --collector.disable-defaults --collector.textfile \
			--collector.textfile.directory="$PROM_DIR" \
			--web.listen-address="127.0.0.1:$PORT" >"$log" 2>&1 3>&- &
		NODE_PID=$!
		deadline=$((SECONDS + 30))
		while ((SECONDS < deadline)); do
			if curl -sf --max-time 5 -o "$SCRAPE" "http://127.0.0.1:$PORT/metrics"; then
				return 0
			fi
			kill -0 "$NODE_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$NODE_PID" 2>/dev/null || :
		wait "$NODE_PID" 2>/dev/null || :
		NODE_PID=
	done
	fail "node_exporter did not answer: $(cat "$log")"
}

# bats test_tags=root
@test "node_exporter's textfile collector serves the file without a scrape error" {
	require_root
	require_cmd prometheus-node-exporter curl
	_odd_fs
	run -0 "$FSTRIM_EXT" --journal --metrics "$PROM" "$MNT"
	_scrape_node_exporter
	run -0 cat "$SCRAPE"
	assert_line 'node_textfile_scrape_error 0'
	assert_line 'fstrim_ext_exit_status 0'
	# node_exporter orders the labels by name
	local labels="device=\"$LOOPDEV\",fstype=\"ext4\",$LABEL"
	assert_line "fstrim_ext_filesystem_ok{$labels} 1"
	assert_line "fstrim_ext_journal_erased{$labels} 1"
	assert_line "fstrim_ext_filesystem_status{$labels,status=\"failed\"} 0"
	assert_line --regexp "^fstrim_ext_trimmed_bytes\\{.*\\} [1-9][0-9.e+]*\$"
}
