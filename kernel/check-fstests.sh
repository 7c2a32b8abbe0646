#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-fstests.sh - run a chosen set of fstests (xfstests) under User-Mode
# Linux on the patched kernel of each version of kernel/linux-*
#
# The kernels are those of kernel/check-kernel.sh built with
# kernel/fstests.config merged over uml.config (loop, device-mapper with
# dm-flakey, dm-log-writes, dm-thin and dm-delay, ext4 ACLs and quota),
# cached like the others (FSTRIM_EXT_KERNEL_VARIANT=fstests). The fstests tree is copied from
# FSTRIM_EXT_FSTESTS_SOURCE into BUILDDIR/fstests, this project's own tests
# (tests/fstests/<dir>/<number>, with their .out) are copied into its
# tests/, and it is built there. Then the kernel boots with the host's root
# as hostfs, a test device (ubda), a scratch device (ubdb) and a device for
# dm-log-writes (ubdc), and tests/fstests/init.sh runs ./check on the list,
# one kernel after the other (FSTRIM_EXT_KERNEL_VERSIONS, and
# FSTRIM_EXT_KERNEL_FLAVORS, by default "patched"; "stock" boots the kernel
# without the series, to see a test fail there). Writes TAP to
# BUILDDIR/check-fstests.tap (a notrun test is "ok # skip"),
# with fstests' own summary, and prints it; exits non-zero if a test failed.
# Run by `make check-fstests` (root, not in CI); see kernel/README.
#
# usage: check-fstests.sh --srcdir DIR --builddir DIR
#
# Environment:
#   FSTRIM_EXT_FSTESTS_SOURCE  an fstests git repository (its HEAD; a bare
#                              one will do) or source tree (required)
#   FSTRIM_EXT_FSTESTS_TESTS   the tests ./check runs (default: the set below)
#   FSTRIM_EXT_FSTESTS_SOAK    SOAK_DURATION in seconds for the soak loops
#                              (generic/388; default 120)
#   FSTRIM_EXT_FSTESTS_TIMEOUT seconds a guest may run (default 5400)
#   FSTRIM_EXT_KERNEL_*        as for kernel/check-kernel.sh

set -u -o pipefail

die() {
	echo "check-fstests: $*" >&2
	exit 99
}

srcdir='' builddir=''
while (($#)); do
	case $1 in
	--srcdir) srcdir=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	*) die "unknown argument: $1" ;;
	esac
done
[[ -n $srcdir && -n $builddir ]] || die "usage: check-fstests.sh --srcdir DIR --builddir DIR"
srcdir=$(cd "$srcdir" && pwd) || die "no source directory"
builddir=$(cd "$builddir" && pwd) || die "no build directory"
[[ $(id -u) -eq 0 ]] || die "must run as root (ubd images, mounts, device-mapper in the guest)"

source=${FSTRIM_EXT_FSTESTS_SOURCE:-}
[[ -n $source && -e $source ]] ||
	die "set FSTRIM_EXT_FSTESTS_SOURCE to an fstests checkout (git clone https://github.com/kdave/xfstests)"
soak=${FSTRIM_EXT_FSTESTS_SOAK:-120}
guest_timeout=${FSTRIM_EXT_FSTESTS_TIMEOUT:-5400}
jobs=${FSTRIM_EXT_KERNEL_JOBS:-$(nproc)}
tree=$builddir/fstests
runs=$builddir/fstests-run
tap=$builddir/check-fstests.tap

# The set: this project's test of FS_IOC_CHKPT_JRNL and the journal erase,
# ext4's own tests of the checkpoint ioctl and the dirent wipe, the
# crash-and-replay tests of the "log" group that use dm-flakey (fsync, then
# drop every later write and remount), two that replay a dm-log-writes log,
# the shutdown tests (EXT4_IOC_SHUTDOWN, then recovery), and a few ACL and
# quota tests. Not yet timed as a whole (kernel/README): ext4/050 alone took
# 222 s under UML at load 27, so FSTRIM_EXT_FSTESTS_TESTS can narrow it.
default_tests="ext4/900 ext4/050 ext4/048 ext4/045
generic/034 generic/039 generic/056 generic/059 generic/065 generic/066
generic/073 generic/090 generic/104 generic/106 generic/107 generic/321
generic/322 generic/325 generic/335 generic/336 generic/341 generic/342
generic/343 generic/348 generic/376 generic/479 generic/480 generic/483
generic/489 generic/498 generic/502 generic/509 generic/510 generic/512
generic/520 generic/526 generic/527 generic/534 generic/535 generic/547
generic/552 generic/557
generic/455 generic/457
generic/388 generic/392 generic/417 generic/468
generic/099 generic/237 generic/082 generic/219 generic/230"
tests=${FSTRIM_EXT_FSTESTS_TESTS:-$default_tests}
tests=$(tr -s '[:space:]' ' ' <<< "$tests")
tests=${tests% }

for cmd in make gcc autoconf libtoolize dmsetup xfs_io fio mkfs.ext4 debugfs perl; do
	command -v "$cmd" >/dev/null || die "$cmd is required (see kernel/README)"
done
for p in "$srcdir" "$builddir"; do
	[[ $p != *[[:space:]:\'\"]* ]] ||
		die "'$p': the UML kernel command line cannot carry blanks, colons or quotes in a path"
done

t_start=$(date +%s)
log() {
	echo "check-fstests: [$(($(date +%s) - t_start))s] $*"
}

# The kernels, "VERSION FLAVOR PATH", from kernel/check-kernel.sh's cache or
# built by it.
mapfile -t kernels < <(FSTRIM_EXT_KERNEL_VARIANT=fstests \
	FSTRIM_EXT_KERNEL_FLAVORS=${FSTRIM_EXT_KERNEL_FLAVORS:-patched} \
	"$srcdir/kernel/check-kernel.sh" --srcdir "$srcdir" --builddir "$builddir" \
	--build-only | tee /dev/stderr | sed -n 's/^kernel //p')
((${#kernels[@]})) || die "no kernel to boot"

# The fstests tree: copied again when the source moves, built incrementally.
if [[ -d $source/.git || -f $source/HEAD ]]; then
	rev=$(git -C "$source" rev-parse HEAD) || die "$source: no HEAD"
else
	rev="tree $(cd "$source" && pwd)"
fi
if [[ ! -f $tree/.fstrim-ext-source || $(cat "$tree/.fstrim-ext-source") != "$rev" ]]; then
	log "fstests: copying $source ($rev) to $tree"
	rm -rf "$tree" || die "cannot remove $tree"
	mkdir -p "$tree" || die "cannot create $tree"
	if [[ $rev == tree* ]]; then
		cp -a "$source"/. "$tree"/ || die "cannot copy $source"
	else
		git -C "$source" archive HEAD | tar x -C "$tree" || die "cannot unpack $source"
	fi
	echo "$rev" > "$tree/.fstrim-ext-source"
fi
for t in "$srcdir"/tests/fstests/*/[0-9]*; do
	d=${t%/*}
	cp "$t" "$tree/tests/${d##*/}/" || die "cannot copy $t"
done
log "fstests: building in $tree (log $tree/build.log)"
make -C "$tree" -j"$jobs" > "$tree/build.log" 2>&1 || {
	tail -30 "$tree/build.log"
	die "the fstests build failed"
}

# The probe (for the guest's power-off), once.
cc=${CC:-cc}
mkdir -p "$runs" || die "cannot create $runs"
$cc -O2 -Wall -I"$srcdir/include" -o "$runs/chkpt-probe" "$srcdir/tests/kernel/chkpt-probe.c" ||
	die "cannot build the probe"

n=0 failures=0
: > "$tap"
# run_fstests VERSION FLAVOR KERNEL: ./check on the list in one guest of
# KERNEL, its results as TAP lines appended to $tap
run_fstests() {
	local ver=$1 flavor=$2 kernel=$3 run status t0 ran notrun failed t

	run=$runs/$ver-$flavor
	rm -rf "$run" || die "cannot remove $run"
	mkdir -p "$run/results" || die "cannot create $run"
	install -m 0755 "$srcdir/tests/fstests/init.sh" "$run/init"
	install -m 0644 "$srcdir/tests/kernel/guest-setup.sh" "$run/guest-setup.sh"
	truncate -s 4G "$run/test.img" "$run/scratch.img" "$run/logwrites.img"
	cat > "$run/local.config" <<-EOCONFIG
		export FSTYP=ext4
		export TEST_DEV=/dev/ubda
		export TEST_DIR=/tmp/fstests/test
		export SCRATCH_DEV=/dev/ubdb
		export SCRATCH_MNT=/tmp/fstests/scratch
		export LOGWRITES_DEV=/dev/ubdc
		export RESULT_BASE=$run/results
	EOCONFIG
	cat > "$run/fstests.env" <<-EOENV
		FSTESTS_DIR='$tree'
		FSTESTS_RUNDIR='$run'
		FSTESTS_LIST='$tests'
		FSTESTS_PROBE='$runs/chkpt-probe'
		SOAK_DURATION=$soak
	EOENV
	log "$ver $flavor: booting $kernel for fstests ($tests; console log $run/console.log)"
	t0=$(date +%s)
	timeout -k 10 "$guest_timeout" setsid "$kernel" mem=1024M \
		ubd0="$run/test.img" ubd1="$run/scratch.img" ubd2="$run/logwrites.img" \
		root=/dev/root rootfstype=hostfs rootflags=/ rw \
		init="$run/init" FSTESTS_ENV="$run/fstests.env" \
		KCHECK_KEEP="$srcdir:$builddir" \
		con0=fd:0,fd:1 con=null < /dev/null > "$run/console.log" 2>&1
	status=$?
	stty sane 2>/dev/null || true
	log "$ver $flavor: the guest exited with status $status after $(($(date +%s) - t0))s"

	# TAP from ./check's summary: its "Ran:", "Not run:" and "Failures:" lines.
	summary() { # summary LABEL: the tests on ./check's last LABEL line
		sed -n "s/^$1: *//p" "$run/check.out" 2>/dev/null | tail -1
	}
	ran=" $(summary Ran) " notrun=" $(summary 'Not run') " failed=" $(summary Failures) "
	{
		for t in $tests; do
			n=$((n + 1))
			if [[ $failed == *" $t "* ]]; then
				echo "not ok $n - $ver $flavor: $t (see $run/results/$t.out.bad, $run/results/$t.full)"
				failures=$((failures + 1))
			elif [[ $notrun == *" $t "* ]]; then
				echo "ok $n - $ver $flavor: $t # skip $(head -1 "$run/results/$t.notrun" 2>/dev/null)"
			elif [[ $ran == *" $t "* ]]; then
				echo "ok $n - $ver $flavor: $t"
			else
				echo "not ok $n - $ver $flavor: $t (no result: the guest stopped, status $status; see $run/console.log)"
				failures=$((failures + 1))
			fi
		done
		grep -E '^(Ran|Not run|Failures|Failed|Passed)' "$run/check.out" 2>/dev/null |
			sed "s/^/# $ver $flavor: /"
		echo "# $ver $flavor: guest $(($(date +%s) - t0))s"
	} >> "$tap"
}

for k in "${kernels[@]}"; do
	# shellcheck disable=SC2086 # "VERSION FLAVOR PATH"
	run_fstests $k
done
{
	echo "1..$n"
	echo "# check-fstests took $(($(date +%s) - t_start))s, $failures of $n tests failed"
} >> "$tap"
cat "$tap"
((failures == 0))
