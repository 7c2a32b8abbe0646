#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# fstrim-ext.service and fstrim-ext.timer: they verify, the service's
# sandbox rates 2.0 or lower, and fstrim-ext still does its work inside an
# emulation of that sandbox.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	load test_helper/dist
	_common_setup
	SERVICE_IN="$top_srcdir/systemd/fstrim-ext.service.in"
	TIMER="$top_srcdir/systemd/fstrim-ext.timer"
	DROPIN="$top_srcdir/systemd/fstrim.service.d/fstrim-ext.conf"
}

teardown() {
	_common_teardown
}

@test "service and timer pass systemd-analyze verify, man page included" {
	require_cmd systemd-analyze man
	make_units "$BATS_TEST_TMPDIR"
	make_man "$BATS_TEST_TMPDIR/man"
	cd "$BATS_TEST_TMPDIR"
	MANPATH="$BATS_TEST_TMPDIR/man" run systemd-analyze verify --man=yes \
		./fstrim-ext.service ./fstrim-ext.timer
	assert_success
	assert_output ''
}

@test "the service's exposure is 2.0 or lower" {
	require_cmd systemd-analyze
	make_units "$BATS_TEST_TMPDIR"
	run systemd-analyze security --offline=yes --no-pager \
		"$BATS_TEST_TMPDIR/fstrim-ext.service"
	assert_success
	score=$(sed -n 's/.*Overall exposure level for fstrim-ext\.service: \([0-9.]*\).*/\1/p' \
		<<<"$output")
	[[ -n $score ]] || fail "no exposure level in: $output"
	echo "# exposure level $score" >&3
	awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "exposure $score > 2.0"
}

@test "the service runs the fstab/mountinfo journal command line once" {
	assert_equal "$(unit_values "$SERVICE_IN" Type)" oneshot
	# shellcheck disable=SC2016 # systemd turns $$ into $, the shell expands
	assert_equal "$(unit_values "$SERVICE_IN" ExecStart)" \
		'/bin/sh -c '"'"'set -- --listed-in /etc/fstab:/proc/self/mountinfo --verbose --quiet-unsupported --journal; if [ -n "$${METRICS_DIR}" ] && [ -d "$${METRICS_DIR}" ]; then set -- "$$@" --metrics="$${METRICS_DIR}/fstrim-ext.prom"; fi; exec @sbindir@/fstrim-ext "$$@"'"'"
	# metrics in node_exporter's textfile directory (tests/nspawn.bats: only where it exists)
	assert_equal "$(unit_values "$SERVICE_IN" Environment)" 'METRICS_DIR=/var/lib/prometheus/node-exporter'
	assert_equal "$(unit_values "$SERVICE_IN" ReadWritePaths)" '-/var/lib/prometheus/node-exporter'
	run -0 service_args
	assert_output $'--listed-in\n/etc/fstab:/proc/self/mountinfo\n--verbose\n--quiet-unsupported\n--journal'
	assert_equal "$(unit_values "$SERVICE_IN" ConditionVirtualization)" '!container'
	assert_equal "$(unit_values "$SERVICE_IN" Documentation)" 'man:fstrim-ext(8)'
	# a run cut short by SIGTERM (143) is not a finished one
	assert_equal "$(unit_values "$SERVICE_IN" SuccessExitStatus)" ''
}

@test "the service sandboxes strictly without hiding any filesystem" {
	assert_equal "$(unit_values "$SERVICE_IN" ProtectSystem)" strict
	assert_equal "$(unit_values "$SERVICE_IN" CapabilityBoundingSet)" \
		'CAP_SYS_ADMIN CAP_DAC_READ_SEARCH'
	assert_equal "$(unit_values "$SERVICE_IN" NoNewPrivileges)" yes
	# these would cover /dev, /tmp, /var/tmp or /home (see the unit)
	refute [ "$(unit_values "$SERVICE_IN" PrivateDevices)" = yes ]
	refute [ "$(unit_values "$SERVICE_IN" PrivateTmp)" = yes ]
	run -0 unit_values "$SERVICE_IN" ProtectHome
	refute_output --regexp '^(yes|tmpfs)$'
	refute [ "$(unit_values "$SERVICE_IN" PrivateUsers)" = yes ]
	refute [ "$(unit_values "$SERVICE_IN" ProcSubset)" = pid ]
	# writable: node_exporter's textfile directory, and only if it exists;
	# and the state directory that systemd makes for the service
	assert_equal "$(unit_values "$SERVICE_IN" ReadWritePaths)" '-/var/lib/prometheus/node-exporter'
	assert_equal "$(unit_values "$SERVICE_IN" StateDirectory)" fstrim-ext
	assert_equal "$(unit_values "$SERVICE_IN" StateDirectoryMode)" 0700
	# read access to block devices, and the device-mapper tables (LUKS, LVM)
	assert_equal "$(unit_values "$SERVICE_IN" DevicePolicy)" closed
	assert_equal "$(unit_values "$SERVICE_IN" DeviceAllow)" $'block-* r\n/dev/mapper/control rw'
}

@test "the service runs at idle I/O priority and the lowest CPU priority" {
	assert_equal "$(unit_values "$SERVICE_IN" IOSchedulingClass)" idle
	assert_equal "$(unit_values "$SERVICE_IN" Nice)" 19
}

@test "the timer is weekly, persistent, spread, and not in containers or the initrd" {
	assert_equal "$(unit_values "$TIMER" OnCalendar)" weekly
	assert_equal "$(unit_values "$TIMER" Persistent)" true
	assert_equal "$(unit_values "$TIMER" RandomizedDelaySec)" 100min
	assert_equal "$(unit_values "$TIMER" AccuracySec)" 1h
	assert_equal "$(unit_values "$TIMER" ConditionVirtualization)" '!container'
	assert_equal "$(unit_values "$TIMER" ConditionPathExists)" '!/etc/initrd-release'
	assert_equal "$(unit_values "$TIMER" WantedBy)" timers.target
}

# util-linux's upgrades restart fstrim.timer and fstrim.service: a conflict
# would stop fstrim-ext.timer until the next boot (tests/nspawn.bats).
@test "the units conflict with nothing; fstrim.service is skipped while fstrim-ext.timer is enabled" {
	assert_equal "$(unit_values "$TIMER" Conflicts)" ''
	assert_equal "$(unit_values "$SERVICE_IN" Conflicts)" ''
	run -0 grep -c '^\[' "$DROPIN"
	assert_output 1
	assert_equal "$(sed -n '/^\[/p' "$DROPIN")" '[Unit]'
	# where systemctl enable records the timer (its WantedBy=)
	assert_equal "$(unit_values "$DROPIN" ConditionPathExists)" \
		"!/etc/systemd/system/$(unit_values "$TIMER" WantedBy).wants/fstrim-ext.timer"
	# and nothing else
	run -1 grep -v -e '^#' -e '^$' -e '^\[Unit\]$' -e '^ConditionPathExists=' "$DROPIN"
	assert_output ''
}

# --- the sandbox, emulated --------------------------------------------------

# A writable ext4 on loop, with a journal that has seen work, mounted where
# only its owner may enter (as in a home directory), listed by UUID= in an
# fstab that also names / (not to be touched by the test).
_sandbox_fs() {
	require_root
	require_cmd capsh unshare findmnt blkid mkfs.ext4 systemd-analyze /usr/bin/python3
	/usr/bin/python3 -c 'import seccomp' 2>/dev/null || _skip_or_fail "needs python3-seccomp"
	make_loop_fs ext4 64 -b 4096
	umount "$MNT"
	HOME_DIR="$BATS_TEST_TMPDIR/home-of-nobody"
	mkdir -m 0700 "$HOME_DIR"
	MNT="$HOME_DIR/data"
	mkdir "$MNT"
	track_mount "$LOOPDEV" "$MNT"
	for i in $(seq 1 40); do echo "secret $i" >"$MNT/file$i"; done
	sync
	rm -f "$MNT"/file*
	sync
	chmod 0700 "$MNT"
	chown nobody "$MNT" "$HOME_DIR"
	FSTAB="$BATS_TEST_TMPDIR/fstab"
	printf '%s\n' "none / auto defaults,X-fstrim.notrim 0 0" \
		"UUID=$(blkid -o value -s UUID "$LOOPDEV") $MNT ext4 defaults 0 2" >"$FSTAB"
	make_units "$BATS_TEST_TMPDIR"
	UNIT="$BATS_TEST_TMPDIR/fstrim-ext.service"
	mapfile -t ARGS < <(service_args)
}

# bats test_tags=root
@test "sandbox emulation: read-only view, the unit's capabilities, seccomp" {
	_sandbox_fs
	# shellcheck disable=SC2016
	sandbox_run "$UNIT" -- /bin/sh -c '
		exec 2>&1
		grep -E "^(CapBnd|CapEff|NoNewPrivs|Seccomp):" /proc/self/status
		touch "$1/probe" 2>&1
		head -c 1 "$2" >/dev/null && echo "block read ok"
		echo x 2>&1 >"$2"
		findmnt -n -o OPTIONS /proc' sh "$MNT" "$LOOPDEV"
	assert_success
	assert_line 'CapBnd:	0000000000200004'
	assert_line 'CapEff:	0000000000200004'
	assert_line 'NoNewPrivs:	1'
	assert_line 'Seccomp:	2'
	assert_line --partial 'Read-only file system'
	assert_line 'block read ok'
	assert_line --regexp 'hidepid=invisible'
	assert_line --index 0 --regexp '^Cap'	# nothing before the command ran
	have_device_cgroup ||
		_skip_or_fail "no cgroup v1 devices controller: DevicePolicy= (no writes to devices) not checked"
	assert_line --partial 'Operation not permitted'	# no writes to devices
}

# bats test_tags=root
@test "sandbox emulation: the unit's command trims and checkpoints a UUID= filesystem" {
	_sandbox_fs
	require_cmd dumpe2fs
	run -0 dumpe2fs -h "$LOOPDEV"
	refute_line --regexp '^Journal start: +0$'	# the journal has transactions
	sandbox_run "$UNIT" --fstab "$FSTAB" -- "$FSTRIM_EXT" "${ARGS[@]}"
	assert_success
	assert_output --regexp "^$MNT: [0-9.]+ [KMG]?i?B \([0-9]+ bytes\) trimmed on $LOOPDEV, journal checkpointed and discarded via (FS_IOC_CHKPT_JRNL|EXT4_IOC_CHECKPOINT)\$"
	run -0 dumpe2fs -h "$LOOPDEV"
	assert_line --regexp '^Journal start: +0$'	# checkpointed: empty
}

# A kernel without either journal ioctl (before 5.14, without the series):
# the weekly run must not pass as done while the journal keeps what was
# deleted, --quiet-unsupported in the unit notwithstanding.
# bats test_tags=root
@test "sandbox emulation: the unit's command fails, and says why, on a kernel without the journal ioctls" {
	_sandbox_fs
	sandbox_run "$UNIT" --fstab "$FSTAB" -- /usr/bin/python3 \
		"$top_srcdir/tests/test_helper/seccomp-errno.py" \
		ioctl:0x4004662b=ENOTTY ioctl:0x4008662b=ENOTTY -- "$FSTRIM_EXT" "${ARGS[@]}"
	assert_equal "$status" 32
	assert_output --regexp "^$MNT: [0-9.]+ [KMG]?i?B \([0-9]+ bytes\) trimmed on $LOOPDEV\$"
	assert_equal "$stderr" "fstrim-ext: $MNT: journal step not done: the kernel has neither FS_IOC_CHKPT_JRNL nor EXT4_IOC_CHECKPOINT (Linux 5.14)"
}

# bats test_tags=root
@test "sandbox emulation: --all selects the filesystem although its view is read-only" {
	_sandbox_fs
	sandbox_run "$UNIT" -- "$FSTRIM_EXT" --all --dry-run --journal
	assert_line --regexp "^$MNT: 0 B \(dry run\) trimmed on $LOOPDEV, journal discard possible via (FS_IOC_CHKPT_JRNL|EXT4_IOC_CHECKPOINT) \(dry run\)\$"
}

# bats test_tags=root
@test "sandbox emulation: without PrivateDevices=no the UUID= filesystem drops out" {
	_sandbox_fs
	sandbox_run "$UNIT" --fstab "$FSTAB" --private-dev -- "$FSTRIM_EXT" "${ARGS[@]}"
	assert_success
	refute_output --regexp "^$MNT: .* trimmed"
	assert_output --partial "$MNT: skipped: no device UUID="
}

# bats test_tags=root
@test "sandbox emulation: without DeviceAllow=block-* r the UUID= filesystem drops out" {
	_sandbox_fs
	have_device_cgroup || _skip_or_fail "needs the cgroup v1 devices controller"
	sed -i '/^DeviceAllow=block-\* r$/d' "$UNIT"
	sandbox_run "$UNIT" --fstab "$FSTAB" -- "$FSTRIM_EXT" "${ARGS[@]}"
	assert_success
	refute_output --regexp "^$MNT: .* trimmed"
	assert_output --partial "$MNT: skipped: no device UUID="
}

# bats test_tags=root
@test "sandbox emulation: without CAP_DAC_READ_SEARCH a 0700 mountpoint fails, named" {
	_sandbox_fs
	sed -i 's/^CapabilityBoundingSet=.*/CapabilityBoundingSet=CAP_SYS_ADMIN/' "$UNIT"
	sandbox_run "$UNIT" --fstab "$FSTAB" -- "$FSTRIM_EXT" "${ARGS[@]}"
	assert_failure 32
	refute_output --partial "$MNT"
	assert_equal "$stderr" "fstrim-ext: cannot open $MNT: Permission denied"
}
