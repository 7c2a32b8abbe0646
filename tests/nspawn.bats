#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# fstrim-ext.service and fstrim-ext.timer under a real systemd: a container
# booted with systemd-nspawn from this machine's own tree, the units bound
# into its /etc/systemd/system, a loop device bound in.

# every test boots a container; none may hang the suite
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	load test_helper/dist
	load test_helper/nspawn
	load kernel/journal-extents
	_common_setup
}

teardown() {
	nspawn_teardown
	_common_teardown
}

# count_in_journal DEVICE PATTERN: lines matching PATTERN in the journal
# region of the unmounted ext4 on DEVICE, read past the page cache.
count_in_journal() {
	local start count total=0 n
	while read -r start count; do
		n=$(dd if="$1" bs=4096 skip="$start" count="$count" iflag=direct status=none |
			grep -a -c -- "$2")
		total=$((total + n))
	done < <(journal_extents "$1")
	echo "$total"
}

# An ext4 on loop whose journal holds the names and contents of files
# deleted before it was unmounted (data=journal keeps contents there too),
# and an fstab for the container that lists it by its device path (there is
# no udev in a container to make /dev/disk/by-uuid). systemd ignores fstab
# lines of devices in a container: the test mounts it there itself.
_journal_fs() {
	require_cmd debugfs dd
	MOUNT_OPTS=data=journal make_loop_fs ext4 64 -b 4096
	make_pii_files "$MNT/gone" GONE 40
	sync
	rm -rf "$MNT/gone"
	sync
	umount "$MNT"
	run -0 count_in_journal "$LOOPDEV" PII-SSN-GONE
	refute_output 0
	FSTAB="$BATS_TEST_TMPDIR/fstab"
	echo "$LOOPDEV /srv/data ext4 defaults 0 0" >"$FSTAB"
}

# _boot_with_journal_fs [--overlay]: the container booted with the units
# of fstrim-ext.service (bound, so NSPAWN_UNITS takes drop-ins), the
# filesystem of _journal_fs mounted on /srv/data inside.
_boot_with_journal_fs() {
	nspawn_setup "$@"
	_journal_fs
	nspawn_units fstrim-ext.service
	mapfile -t binds < <(nspawn_unit_binds)
	nspawn_boot "${binds[@]}" --bind="$LOOPDEV" --bind-ro="$FSTAB:/etc/fstab"
	container mkdir -p /srv/data
	container mount "$LOOPDEV" /srv/data
}

# bats test_tags=root
@test "real systemd: the service erases the journal of a filesystem from fstab" {
	local rundir_before
	rundir_before=$(ls -d /run/systemd/nspawn 2>/dev/null || :)
	_boot_with_journal_fs
	run container systemctl start fstrim-ext.service
	assert_success
	run -0 container journalctl -b -o cat -u fstrim-ext.service
	assert_line --regexp "^/srv/data: [0-9.]+ [KMG]?i?B \([0-9]+ bytes\) trimmed on $LOOPDEV, journal checkpointed and discarded via (FS_IOC_CHKPT_JRNL|EXT4_IOC_CHECKPOINT)\$"
	nspawn_poweroff
	run -0 count_in_journal "$LOOPDEV" PII-SSN-GONE
	assert_output 0
	run -0 count_in_journal "$LOOPDEV" 'SSN: 078-05-'
	assert_output 0
	# systemd-nspawn left nothing on the host
	assert_equal "$(ls -d /run/systemd/nspawn 2>/dev/null || :)" "$rundir_before"
}

# bats test_tags=root
@test "real systemd: the service writes node_exporter's textfile where its directory exists" {
	local dir=/var/lib/prometheus/node-exporter
	_boot_with_journal_fs --overlay
	# without the directory (the overlay hides it; rmdir never empties one):
	# the sandbox still sets up (ReadWritePaths=-), no file, no failure
	container mkdir -p "$dir"
	container rmdir "$dir"
	run container systemctl start fstrim-ext.service
	assert_success
	run -0 container journalctl -b -o cat -u fstrim-ext.service
	refute_output --partial metrics
	run -1 container test -e "$dir"
	# where it exists, with nothing set by the administrator
	container mkdir -p "$dir"
	run container systemctl start fstrim-ext.service
	assert_success
	run -0 container cat "$dir/fstrim-ext.prom"
	assert_line "fstrim_ext_filesystem_ok{mountpoint=\"/srv/data\",device=\"$LOOPDEV\",fstype=\"ext4\"} 1"
	assert_line "fstrim_ext_journal_erased{mountpoint=\"/srv/data\",device=\"$LOOPDEV\",fstype=\"ext4\"} 1"
	assert_line 'fstrim_ext_exit_status 0'
	# readable by node_exporter's user despite the unit's UMask=0077
	run -0 container stat -c %a "$dir/fstrim-ext.prom"
	assert_output 644
	# a drop-in moves it elsewhere, as the unit says
	container mkdir -p /srv/metrics
	nspawn_dropin fstrim-ext.service metrics.conf '[Service]' \
		'Environment=METRICS_DIR=/srv/metrics' 'ReadWritePaths=-/srv/metrics'
	container systemctl daemon-reload
	run container systemctl start fstrim-ext.service
	assert_success
	run -0 container grep -c '^fstrim_ext_exit_status 0$' /srv/metrics/fstrim-ext.prom
	assert_output 1
	# and turns it off
	container rm -f "$dir/fstrim-ext.prom"
	nspawn_dropin fstrim-ext.service metrics.conf '[Service]' 'Environment=METRICS_DIR='
	container systemctl daemon-reload
	run container systemctl start fstrim-ext.service
	assert_success
	run -1 container test -e "$dir/fstrim-ext.prom"
}

# bats test_tags=root
@test "real systemd: in the service's sandbox a write to a block device is refused" {
	nspawn_setup
	# a scratch device: the probe must not land on a filesystem
	truncate -s 1M "$BATS_TEST_TMPDIR/scratch.img"
	attach_loop "$BATS_TEST_TMPDIR/scratch.img"
	nspawn_units fstrim-ext.service
	# run before the command, in the same unit and so the same sandbox
	nspawn_dropin fstrim-ext.service probe.conf '[Service]' \
		"ExecStartPre=/bin/sh -c 'if printf DEVICE-PROBE >>$LOOPDEV; then echo probe write: done; else echo probe write: refused; fi; if head -c 1 $LOOPDEV >/dev/null; then echo probe read: done; fi'"
	mapfile -t binds < <(nspawn_unit_binds)
	nspawn_boot "${binds[@]}" --bind="$LOOPDEV" "$(_fstab_choosing_nothing)"
	# outside the service, the container's root may write to it
	run -0 container sh -c "exec 3>>$LOOPDEV && echo opened"
	assert_output opened
	run container systemctl start fstrim-ext.service
	assert_success
	run -0 container journalctl -b -o cat -u fstrim-ext.service
	assert_line 'probe write: refused'
	assert_line 'probe read: done'	# libblkid still reads superblocks
	nspawn_poweroff
	run -0 count_on_image "$BATS_TEST_TMPDIR/scratch.img" DEVICE-PROBE
	assert_output 0
}

# bats test_tags=root
@test "real systemd: the enabled timer is scheduled for Monday, within 100 minutes of midnight" {
	nspawn_setup
	nspawn_units fstrim-ext.timer
	mapfile -t binds < <(nspawn_unit_binds)
	nspawn_boot "${binds[@]}"
	run container systemctl enable --now fstrim-ext.timer
	assert_success
	run -0 container systemctl list-timers --all --no-pager
	assert_line --regexp '^Mon [0-9-]+ 0[01]:[0-9:]+ [A-Z]+ .* fstrim-ext\.timer +fstrim-ext\.service$'
	run -0 container systemctl show -P NextElapseUSecRealtime fstrim-ext.timer
	assert_output --regexp '^Mon [0-9-]+ (00:[0-5][0-9]|01:[0-3][0-9]|01:40):[0-9]{2} '
	# enabled, it is started again at the next boot
	nspawn_poweroff
	nspawn_boot "${binds[@]}"
	run -0 container systemctl is-active fstrim-ext.timer
	assert_output active
}

# --- fstrim.timer beside fstrim-ext.timer ----------------------------------

# the units of both fstrim and fstrim-ext, startable in the container, and
# the drop-in that skips fstrim.service while fstrim-ext.timer is enabled
_both_units() {
	nspawn_setup
	nspawn_units fstrim-ext.service fstrim-ext.timer fstrim.service fstrim.timer
	mapfile -t binds < <(nspawn_unit_binds)
}

SKIPPED='was skipped because of an unmet condition check (ConditionPathExists=!/etc/systemd/system/timers.target.wants/fstrim-ext.timer)'

# Debian's util-linux postinst runs `deb-systemd-invoke restart
# fstrim.timer` and `restart fstrim.service` on every upgrade; with a
# Conflicts= that stopped fstrim-ext.timer until the next boot.
# bats test_tags=root
@test "real systemd: util-linux's upgrade restarts fstrim.timer and fstrim.service; fstrim-ext.timer stays scheduled" {
	_both_units
	nspawn_boot "${binds[@]}" "$(_fstab_choosing_nothing)"
	# as Debian leaves them: both timers enabled and started
	run container systemctl enable --now fstrim.timer fstrim-ext.timer
	assert_success
	# where systemctl records the enabled timer, which the drop-in tests
	run -0 container test -L /etc/systemd/system/timers.target.wants/fstrim-ext.timer
	run container systemctl restart fstrim.timer
	assert_success
	run container systemctl restart fstrim.service
	assert_success
	run -0 container systemctl is-active fstrim-ext.timer fstrim.timer
	assert_output $'active\nactive'
	# the next weekly run is still to come, Monday within 100 minutes of midnight
	run -0 container systemctl show -P NextElapseUSecRealtime fstrim-ext.timer
	assert_output --regexp '^Mon [0-9-]+ (00:[0-5][0-9]|01:[0-3][0-9]|01:40):[0-9]{2} '
	run -0 container systemctl list-timers --no-pager
	assert_line --regexp '^Mon [0-9-]+ 0[01]:[0-9:]+ [A-Z]+ .* fstrim-ext\.timer +fstrim-ext\.service$'
	# fstrim.service, started, did not trim: fstrim-ext does it
	run -0 container journalctl -b -o cat -u fstrim.service
	assert_line --partial "$SKIPPED"
	refute_line --partial 'Finished fstrim.service'
	# and both timers start at the next boot
	nspawn_poweroff
	nspawn_boot "${binds[@]}" "$(_fstab_choosing_nothing)"
	run -0 container systemctl is-active fstrim-ext.timer fstrim.timer
	assert_output $'active\nactive'
}

# bats test_tags=root
@test "real systemd: with fstrim-ext.timer disabled, fstrim.service runs again" {
	_both_units
	nspawn_boot "${binds[@]}" "$(_fstab_choosing_nothing)"
	container systemctl enable fstrim-ext.timer
	run container systemctl start fstrim.service
	assert_success
	run -0 container journalctl -b -o cat -u fstrim.service
	assert_line --partial "$SKIPPED"
	container systemctl disable fstrim-ext.timer
	run container systemctl start fstrim.service
	assert_success
	run -0 container journalctl -b -o cat -u fstrim.service
	assert_line --partial 'Finished fstrim.service'
	run -0 grep -c -F "$SKIPPED" <<<"$output"
	assert_output 1
}

# _fstab_choosing_nothing: an fstab whose one entry is not to be trimmed,
# for the tests that only need fstrim-ext.service to run to its end. The
# container's mountinfo would show the host's disk only through binds of
# its directories (/usr, under --volatile=yes), which --journal counts as
# not done.
_fstab_choosing_nothing() {
	printf '%s\n' "none / auto defaults,X-fstrim.notrim 0 0" >"$BATS_TEST_TMPDIR/fstab.none"
	echo "--bind-ro=$BATS_TEST_TMPDIR/fstab.none:/etc/fstab"
}
