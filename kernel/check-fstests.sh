#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-fstests.sh - run a chosen set of fstests (xfstests) under User-Mode
# Linux on the patched kernel of each version of kernel/linux-*
#
# The kernels are those of kernel/check-kernel.sh built with
# kernel/fstests.config merged over uml.config (loop, device-mapper with
# dm-flakey, dm-log-writes, dm-thin and dm-delay, ext4 ACLs and quota),
# cached like the others (FSTRIM_EXT_KERNEL_VARIANT=fstests). The fstests
# tree is copied from FSTRIM_EXT_FSTESTS_SOURCE into BUILDDIR/fstests, this
# project's own tests (tests/fstests/<dir>/<number>, with their .out) are
# copied into its tests/, and it is built there. Then each kernel boots
# with the host's root as hostfs, a test device (ubda), a scratch device
# (ubdb) and a device for dm-log-writes (ubdc), and tests/fstests/init.sh
# runs ./check there: the list on the patched kernel, and on the stock one
# (without the series) the tests that must fail there, ext4/900; two guests
# at a time. Writes TAP to BUILDDIR/check-fstests.tap (a notrun test is
# "ok # skip"), with fstests' own summary, and prints it; exits non-zero if
# a test failed.
# Run by `make check-fstests` (root, not in CI); see kernel/README.
#
# usage: check-fstests.sh --srcdir DIR --builddir DIR
#
# Environment:
#   FSTRIM_EXT_FSTESTS_SOURCE  an fstests git repository (its HEAD; a bare
#                              one will do) or source tree (required)
#   FSTRIM_EXT_FSTESTS_TESTS   the tests ./check runs on a patched kernel
#                              (default: the set below)
#   FSTRIM_EXT_FSTESTS_STOCK_TESTS  the tests that must fail on a stock
#                              kernel (default ext4/900)
#   FSTRIM_EXT_FSTESTS_SOAK    SOAK_DURATION in seconds for the soak loops
#                              (generic/388; default 120)
#   FSTRIM_EXT_FSTESTS_TIMEOUT seconds a guest may run (default 5400)
#   FSTRIM_EXT_FSTESTS_MOUNT_OPTIONS  fstests' MOUNT_OPTIONS for the
#                              scratch filesystem ("-o journal_discard_replay"
#                              puts patch 9, the discard after a replay, in
#                              every remount of the crash-and-replay tests;
#                              default none)
#   FSTRIM_EXT_FSTESTS_MKFS_OPTIONS  fstests' MKFS_OPTIONS, also used for the
#                              test device ("-O fast_commit"; default none)
#   FSTRIM_EXT_FSTESTS_VARIANT the kernels' variant (default fstests; empty:
#                              make check-kernel's, without loop or dm, so
#                              the tests that need them are not run)
#   FSTRIM_EXT_KERNEL_*        as for kernel/check-kernel.sh (VERSIONS,
#                              FLAVORS "patched stock", GUESTS 2, JOBS, ...)

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

# The set, sized to run in about half an hour under UML: this project's
# test of FS_IOC_CHKPT_JRNL and the journal erase (ext4/900), ext4's own
# tests of the checkpoint ioctl and the dirent wipe (ext4/050, ext4/048),
# crash-and-replay tests of the "log" group that use dm-flakey (fsync, then
# drop every later write and remount), and the two that replay a
# dm-log-writes log on ext4 (generic/455: fsx; generic/482: fsstress over
# dm-thin). FSTRIM_EXT_FSTESTS_TESTS runs others: tests, or groups as
# DIR/GROUP (ext4/quick, generic/log), each made its list of tests from the
# built tree's DIR/group.list, so that every test has its TAP line.
default_tests="ext4/900 ext4/050 ext4/048
generic/034 generic/039 generic/056 generic/059 generic/065 generic/066
generic/321 generic/322 generic/335 generic/336 generic/341 generic/342
generic/343 generic/455 generic/482"
tests=${FSTRIM_EXT_FSTESTS_TESTS:-$default_tests}
tests=$(tr -s '[:space:]' ' ' <<< "$tests")
tests=${tests% }
stock_tests=${FSTRIM_EXT_FSTESTS_STOCK_TESTS:-ext4/900}
guests=${FSTRIM_EXT_KERNEL_GUESTS:-2}
[[ $guests =~ ^[1-9][0-9]*$ ]] || die "FSTRIM_EXT_KERNEL_GUESTS takes a whole number, at least 1"

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
# A version whose tree already has patch 6 (upstream's jbd2 fix) passes
# ext4/900's buffered read on its stock kernel too ("upstream VERSION PATCH").
mapfile -t built < <(FSTRIM_EXT_KERNEL_VARIANT=${FSTRIM_EXT_FSTESTS_VARIANT-fstests} \
	FSTRIM_EXT_KERNEL_FLAVORS=${FSTRIM_EXT_KERNEL_FLAVORS:-patched stock} \
	"$srcdir/kernel/check-kernel.sh" --srcdir "$srcdir" --builddir "$builddir" \
	--build-only | tee /dev/stderr)
mapfile -t kernels < <(printf '%s\n' "${built[@]}" | sed -n 's/^kernel //p')
((${#kernels[@]})) || die "no kernel to boot"
has_jbd2_erase_fix=$(printf '%s\n' "${built[@]}" | sed -n 's/^upstream \([^ ]*\) 0006-.*/\1/p' | tr '\n' ' ')

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

# expand_tests LIST: LIST with each DIR/GROUP replaced by its tests, in
# the order of DIR/group.list; a DIR/NUMBER stays as it is.
expand_tests() {
	local item grouped out=()
	for item in $1; do
		if [[ $item =~ ^[a-z0-9]+/[0-9]+$ ]]; then
			out+=("$item")
			continue
		fi
		[[ $item == */* && -s $tree/tests/${item%/*}/group.list ]] ||
			die "$item: neither a test nor a group of a built tests/DIR"
		grouped=$(sed 's/#.*//' "$tree/tests/${item%/*}/group.list" |
			awk -v d="${item%/*}" -v g="${item#*/}" '
				{ for (i = 2; i <= NF; i++) if ($i == g) { print d "/" $1; next } }')
		[[ -n $grouped ]] || die "$item: no test in that group"
		# shellcheck disable=SC2206 # one test a word
		out+=($grouped)
	done
	echo "${out[*]}"
}
tests=$(expand_tests "$tests")
stock_tests=$(expand_tests "$stock_tests")

# The probe (for the guest's power-off), once.
cc=${CC:-cc}
mkdir -p "$runs" || die "cannot create $runs"
$cc -O2 -Wall -I"$srcdir/include" -o "$runs/chkpt-probe" "$srcdir/tests/kernel/chkpt-probe.c" ||
	die "cannot build the probe"

# run_fstests VERSION FLAVOR KERNEL: ./check on the flavor's list in one
# guest of KERNEL; its results, one "ok|not_ok TEST DETAIL" line a test, in
# the run directory's results.txt, fstests' summary in summary.txt
run_fstests() {
	local ver=$1 flavor=$2 kernel=$3 run status t0 list ran notrun failed t

	run=$runs/$ver-$flavor
	list=$tests
	[[ $flavor != stock ]] || list=$stock_tests
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
		export MOUNT_OPTIONS='${FSTRIM_EXT_FSTESTS_MOUNT_OPTIONS:-}'
		export MKFS_OPTIONS='${FSTRIM_EXT_FSTESTS_MKFS_OPTIONS:-}'
	EOCONFIG
	cat > "$run/fstests.env" <<-EOENV
		FSTESTS_DIR='$tree'
		FSTESTS_RUNDIR='$run'
		FSTESTS_LIST='$list'
		FSTESTS_MKFS_OPTIONS='${FSTRIM_EXT_FSTESTS_MKFS_OPTIONS:-}'
		FSTESTS_PROBE='$runs/chkpt-probe'
		SOAK_DURATION=$soak
	EOENV
	log "$ver $flavor: booting $kernel for fstests ($list; console log $run/console.log)"
	t0=$(date +%s)
	timeout -k 10 "$guest_timeout" setsid "$kernel" mem=1024M \
		ubd0="$run/test.img" ubd1="$run/scratch.img" ubd2="$run/logwrites.img" \
		root=/dev/root rootfstype=hostfs rootflags=/ rw \
		init="$run/init" FSTESTS_ENV="$run/fstests.env" \
		KCHECK_KEEP="$srcdir:$builddir" \
		con0=fd:0,fd:1 con=null < /dev/null > "$run/console.log" 2>&1
	status=$?
	log "$ver $flavor: the guest exited with status $status after $(($(date +%s) - t0))s"

	# ./check's summary: its last "Ran:", "Not run:" and "Failures:" lines
	ran=" $(sed -n 's/^Ran: *//p' "$run/check.out" 2>/dev/null | tail -1) "
	notrun=" $(sed -n 's/^Not run: *//p' "$run/check.out" 2>/dev/null | tail -1) "
	failed=" $(sed -n 's/^Failures: *//p' "$run/check.out" 2>/dev/null | tail -1) "
	for t in $list; do
		if [[ $failed == *" $t "* ]]; then
			echo "not_ok $t (see $run/results/$t.out.bad, $run/results/$t.full)"
		elif [[ $notrun == *" $t "* ]]; then
			echo "ok $t # skip $(head -1 "$run/results/$t.notrun" 2>/dev/null)"
		elif [[ $ran == *" $t "* ]]; then
			echo "ok $t"
		else
			echo "none $t (no result: the guest stopped, status $status; see $run/console.log)"
		fi
	done > "$run/results.txt"
	{
		grep -E '^(Ran|Not run|Failures|Failed|Passed)' "$run/check.out" 2>/dev/null
		echo "guest $(($(date +%s) - t0))s"
	} > "$run/summary.txt"
}

# The guests, $guests at a time (a UML guest keeps about one CPU busy).
i=0
for k in "${kernels[@]}"; do
	# shellcheck disable=SC2086 # "VERSION FLAVOR PATH"
	run_fstests $k &
	i=$((i + 1))
	((i % guests)) || wait
done
wait
stty sane 2>/dev/null || true

# TAP, kernel by kernel. On a stock kernel a test must fail: those of
# FSTRIM_EXT_FSTESTS_STOCK_TESTS test what only the series provides.
n=0 failures=0
{
	for k in "${kernels[@]}"; do
		read -r ver flavor _ <<< "$k"
		run=$runs/$ver-$flavor
		while read -r result t detail; do
			n=$((n + 1))
			if [[ $flavor == stock && $t == ext4/900 && " $has_jbd2_erase_fix " == *" $ver "* ]]; then
				detail="(patch 6 is already in this tree)${detail:+ $detail}"
			elif [[ $flavor == stock && $result != none ]]; then
				if [[ $result == not_ok ]]; then
					echo "ok $n - $ver $flavor: $t fails without the series, as it must"
					continue
				fi
				result=not_ok
				detail="passes or is not run without the series, so it proves nothing $detail"
			fi
			if [[ $result == ok ]]; then
				echo "ok $n - $ver $flavor: $t${detail:+ $detail}"
			else
				echo "not ok $n - $ver $flavor: $t $detail"
				failures=$((failures + 1))
			fi
		done < "$run/results.txt"
		sed "s/^/# $ver $flavor: /" "$run/summary.txt"
	done
	echo "1..$n"
	echo "# check-fstests took $(($(date +%s) - t_start))s, $failures of $n tests failed"
} > "$tap"
cat "$tap"
((failures == 0))
