#!/usr/bin/env bats
# shellcheck disable=SC2154  # FSTRIM_EXT_DEB_SRC comes from make check-deb
# The Debian package (make check-deb, root): built from the distributed
# tree with dpkg-buildpackage, checked by lintian, then installed, upgraded
# by a reboot, removed and purged in a container booted from an overlay of
# this machine, so that nothing of it reaches the machine itself.

# the build alone takes minutes on a loaded machine
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-1200}

setup_file() {
	DEB_DIR="$BATS_FILE_TMPDIR/deb"
	export DEB_DIR
}

setup() {
	load test_helper/common-setup
	load test_helper/nspawn
	_common_setup
	DEB="$DEB_DIR/fstrim-ext_$(dpkg-parsechangelog -l "$FSTRIM_EXT_DEB_SRC/debian/changelog" -S Version)_$(dpkg --print-architecture).deb"
}

teardown() {
	nspawn_teardown
	_common_teardown
}

_need_deb() {
	[[ -f $DEB ]] || fail "the package was not built"
}

# bats test_tags=root
@test "dpkg-buildpackage -us -uc -b builds the package" {
	require_root
	require_cmd dpkg-buildpackage dh dh_autoreconf dh_installsystemd
	[[ -d ${FSTRIM_EXT_DEB_SRC:-} ]] || fail "FSTRIM_EXT_DEB_SRC must name the tree to build"
	mkdir -p "$DEB_DIR"
	cp -a "$FSTRIM_EXT_DEB_SRC" "$DEB_DIR/src"
	cd "$DEB_DIR/src"
	# the suite itself ran in make check
	DEB_BUILD_OPTIONS=nocheck run dpkg-buildpackage -us -uc -b
	assert_success
	[[ -f $DEB ]] || fail "no $DEB: $output"
}

# bats test_tags=root
@test "lintian reports no error and no warning" {
	require_cmd lintian
	_need_deb
	run lintian --fail-on error,warning --no-tag-display-limit "${DEB%.deb}.changes"
	assert_success
	refute_output --regexp '^[EW]: '
}

# bats test_tags=root
@test "the package holds the command, the units, completion, man page, cron job and alert rules" {
	_need_deb
	run -0 dpkg-deb -c "$DEB"
	assert_line --regexp '^-rwxr-xr-x root/root .* \./usr/sbin/fstrim-ext$'
	assert_line --regexp '^-rw-r--r-- root/root .* \./lib/systemd/system/fstrim-ext\.service$'
	assert_line --regexp '^-rw-r--r-- root/root .* \./lib/systemd/system/fstrim-ext\.timer$'
	assert_line --regexp '^-rw-r--r-- root/root .* \./usr/share/bash-completion/completions/fstrim-ext$'
	assert_line --regexp '^-rw-r--r-- root/root .* \./usr/share/man/man8/fstrim-ext\.8\.gz$'
	assert_line --regexp '^-rwxr-xr-x root/root .* \./etc/cron\.weekly/fstrim-ext$'
	assert_line --regexp '^-rw-r--r-- root/root .* \./usr/share/fstrim-ext/fstrim-ext\.rules\.yml$'
	dpkg-deb -x "$DEB" "$BATS_TEST_TMPDIR/x"
	run -0 grep -h '^ExecStart=\|^fstrim_ext=' "$BATS_TEST_TMPDIR/x/lib/systemd/system/fstrim-ext.service" \
		"$BATS_TEST_TMPDIR/x/etc/cron.weekly/fstrim-ext"
	# the unit's shell execs the installed command (systemd/fstrim-ext.service.in)
	assert_line --regexp '^ExecStart=/bin/sh -c .*; exec /usr/sbin/fstrim-ext "\$\$@"'"'"'$'
	assert_line 'fstrim_ext=/usr/sbin/fstrim-ext'
	run -0 dpkg-deb --info "$DEB" conffiles
	assert_output /etc/cron.weekly/fstrim-ext
}

# the paths under /etc, /usr and /var of the container that name fstrim-ext
_named_paths() {
	container find /etc /usr /var -xdev -path /var/tmp -prune -o \
		-name '*fstrim-ext*' -print | sort
}

# bats test_tags=root
@test "under systemd: install enables the timer beside fstrim.timer, which util-linux's upgrade leaves, remove and purge leave nothing" {
	local before
	_need_deb
	nspawn_setup --overlay
	# apt's timers would take the dpkg lock
	# shellcheck disable=SC2034  # read by nspawn_boot
	NSPAWN_INIT_ARGS=(systemd.mask=apt-daily.timer systemd.mask=apt-daily-upgrade.timer)
	nspawn_boot --bind-ro="$DEB_DIR:/srv/deb"
	# a Debian system as installed: no policy-rc.d (a container image's
	# may forbid starting units), fstrim.timer enabled and running; the
	# units start in a container only without their condition (a drop-in
	# named to come before the package's, as an empty condition clears all)
	# shellcheck disable=SC2016  # expanded inside
	container sh -ec 'rm -f /usr/sbin/policy-rc.d
		for u in fstrim.timer fstrim.service fstrim-ext.timer; do
			mkdir -p /etc/systemd/system/$u.d
			printf "[Unit]\nConditionVirtualization=\n" \
				>/etc/systemd/system/$u.d/00-in-container.conf
		done
		systemctl daemon-reload
		systemctl enable --now fstrim.timer'
	run -0 container systemctl is-active fstrim.timer
	assert_output active
	before=$(_named_paths)

	run container dpkg -i "/srv/deb/${DEB##*/}"
	assert_success
	# as Debian sets up fstrim.timer: enabled and started, beside it
	run -0 container systemctl is-enabled fstrim-ext.timer fstrim.timer
	assert_output $'enabled\nenabled'
	run -0 container systemctl is-active fstrim-ext.timer fstrim.timer fstrim-ext.service
	assert_output $'active\nactive\ninactive'	# and nothing trimmed
	# what util-linux's postinst does on every upgrade leaves it running
	container deb-systemd-invoke restart fstrim.timer
	container deb-systemd-invoke restart fstrim.service
	run -0 container systemctl is-active fstrim-ext.timer fstrim.timer
	assert_output $'active\nactive'
	# and fstrim.service, when its timer starts it, is skipped
	run container systemctl start fstrim.service
	assert_success
	run -0 container journalctl -b -o cat -u fstrim.service
	assert_line --partial 'was skipped because of an unmet condition check (ConditionPathExists=!/etc/systemd/system/timers.target.wants/fstrim-ext.timer)'
	run -0 container fstrim-ext --version
	assert_output --regexp '^fstrim-ext [0-9]'
	run -0 container man -w fstrim-ext
	assert_output /usr/share/man/man8/fstrim-ext.8.gz
	# the cron job does nothing where systemd is the init
	run container /etc/cron.weekly/fstrim-ext
	assert_success
	assert_output ''
	run -0 container journalctl -q -b -o cat -t fstrim-ext
	assert_output ''

	nspawn_poweroff
	nspawn_boot --bind-ro="$DEB_DIR:/srv/deb"
	run -0 container systemctl is-active fstrim-ext.timer fstrim.timer
	assert_output $'active\nactive'

	run container dpkg -r fstrim-ext
	assert_success
	run -0 container systemctl is-active fstrim-ext.timer fstrim.timer
	assert_output $'inactive\nactive'
	# fstrim.service's drop-in went with the package: it runs again
	run -0 container systemctl cat fstrim.service
	refute_output --partial fstrim-ext
	run -0 _named_paths
	refute_line /usr/sbin/fstrim-ext
	refute_line --regexp '^/(usr/)?lib/systemd/system/fstrim-ext\.'
	assert_line /etc/cron.weekly/fstrim-ext	# a conffile stays until purge
	run container dpkg -P fstrim-ext
	assert_success
	run -0 _named_paths
	assert_output "$before"
	run container dpkg-query -W fstrim-ext
	assert_failure
}

# The tests of debian/tests/control, as autopkgtest would run them against
# the installed package. autopkgtest itself cannot run them here: they ask
# for isolation-machine (loop devices, mounts), a virtual machine, and
# this machine has no KVM. So each script runs as root in a container
# booted from an overlay of this machine, with the package installed by
# dpkg, on a loop device made here and bound in (FSTRIM_EXT_TEST_DEVICE;
# a container cannot make one).
# bats test_tags=root
@test "debian/tests: the autopkgtest passes against the installed package" {
	local tests="$FSTRIM_EXT_DEB_SRC/debian/tests"
	_need_deb
	run -0 sed -n 's/^Tests: //p; s/^Restrictions: //p' "$tests/control"
	assert_output $'loop-fs\nneeds-root, isolation-machine'
	truncate -s 64M "$BATS_TEST_TMPDIR/autopkgtest.img"
	attach_loop "$BATS_TEST_TMPDIR/autopkgtest.img"
	nspawn_setup --overlay
	# shellcheck disable=SC2034  # read by nspawn_boot
	NSPAWN_INIT_ARGS=(systemd.mask=apt-daily.timer systemd.mask=apt-daily-upgrade.timer)
	nspawn_boot --bind-ro="$DEB_DIR:/srv/deb" --bind-ro="$tests:/srv/tests" --bind="$LOOPDEV"
	run container dpkg -i "/srv/deb/${DEB##*/}"
	assert_success
	# shellcheck disable=SC2016  # expanded inside
	run container env FSTRIM_EXT_TEST_DEVICE="$LOOPDEV" sh -c \
		'export AUTOPKGTEST_TMP=$(mktemp -d) && exec /srv/tests/loop-fs'
	assert_success
	assert_line --regexp '^/tmp/.*/mnt: .* trimmed, journal checkpointed and discarded via '
	assert_line 'loop-fs: trimmed, journal erased and verified, nothing of the deleted files left'
}
