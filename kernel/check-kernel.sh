#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-kernel.sh - prove the kernel/linux-* series under User-Mode Linux
#
# For each Linux version with a series here (6.1 and 6.12), builds two UML
# kernels from Debian's linux-source-VERSION tree, one without the series
# and one with it, from one unpacked tree: the kernel with the series is
# built incrementally over the one without (each cached), boots each with the host's root as
# hostfs and ubd images, runs tests/kernel/guest.bats inside with the
# project's fstrim-ext, then boots it again to run tests/kernel/stack.bats
# (ext4 on device-mapper: dm-crypt, linear, LVM, striped) on images of its
# own, then checks the images from the host, then kills
# each kernel during fstrim-ext --journal under a writer, again and again
# (tests/crash/crash-check.sh), and checks each image after replay. Writes TAP
# to BUILDDIR/check-kernel.tap and prints it; exits non-zero if any check
# fails. Run by `make check-kernel`; see kernel/README. With --crash-only
# (`make check-crash`) only the kernels and the crash trials, TAP in
# BUILDDIR/check-crash.tap.
#
# usage: check-kernel.sh --srcdir DIR --builddir DIR --fstrim-ext PATH [--crash-only]
#        check-kernel.sh --srcdir DIR --print-key patched|stock
#            (prints "VERSION KEY", the cache key, for each version)
#        check-kernel.sh --srcdir DIR --print-series
#            (prints "VERSION apply|upstream PATCH" for each patch: whether
#            the series applies it, or the tree already has it)
#        check-kernel.sh --srcdir DIR --builddir DIR --build-only
#            (builds, or takes from the cache, each kernel of
#            FSTRIM_EXT_KERNEL_FLAVORS of each version and prints
#            "kernel VERSION FLAVOR PATH" for it, and "upstream VERSION
#            PATCH" for a patch the tree already has; check-fstests.sh)
#
# Environment:
#   FSTRIM_EXT_KERNEL_VERSIONS versions to check (default "6.1 6.12": every
#                              kernel/linux-VERSION directory)
#   FSTRIM_EXT_KERNEL_CACHE    kernel cache (default /var/cache/fstrim-ext/kernel)
#   FSTRIM_EXT_KERNEL_SOURCE   directory of the tree tarballs,
#                              linux-source-VERSION.tar.xz (default /usr/src)
#   FSTRIM_EXT_KERNEL_JOBS     make -j for the kernel build (default: nproc)
#   FSTRIM_EXT_KERNEL_TIMEOUT  seconds one guest may run (default 2400: a
#                              guest took 1100 s at load 25)
#   FSTRIM_EXT_KERNEL_CC       compiler for the kernel (default gcc)
#   FSTRIM_EXT_KERNEL_FLAVORS  kernels to boot (default "patched stock")
#   FSTRIM_EXT_KERNEL_FILTER   run only the guest tests matching this regex
#                              (and skip the crash trials); stack.bats's
#                              guest is not booted if none of its tests does
#   FSTRIM_EXT_KERNEL_FC_ROUNDS  checkpoints of a batch of guest.bats's
#                              fast_commit test (default 300)
#   FSTRIM_EXT_KERNEL_FC_SECONDS  seconds that test goes on issuing batches
#                              (default 60; at least one batch)
#   FSTRIM_EXT_KERNEL_CRASH_FLAVORS  kernels that get the crash trials
#                              (default: every kernel booted)
#   FSTRIM_EXT_KERNEL_GUESTS   guests (or sets of crash trials) run at once
#                              (default 2)
#   FSTRIM_EXT_CRASH_*         see tests/crash/crash-check.sh
#   FSTRIM_EXT_KERNEL_VARIANT  a second build of each kernel with the config
#                              fragment kernel/VARIANT.config merged over
#                              uml.config ("debug": make check-kernel-debug,
#                              "fstests": kernel/check-fstests.sh)
#   CC                         compiler for the probe (default cc)

set -u -o pipefail

die() {
	echo "check-kernel: $*" >&2
	exit 99
}

srcdir='' builddir='' fstrim_ext='' print_key='' crash_only=0 build_only=0
while (($#)); do
	case $1 in
	--print-key) print_key=$2; shift 2 ;;
	--print-series) print_key=series; shift ;;
	--crash-only) crash_only=1; shift ;;
	--build-only) build_only=1 fstrim_ext=/bin/true; shift ;;
	--srcdir) srcdir=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--fstrim-ext) fstrim_ext=$2; shift 2 ;;
	*) die "unknown argument: $1" ;;
	esac
done
[[ -n $srcdir && ( -n $print_key || ( -n $builddir && -n $fstrim_ext ) ) ]] ||
	die "usage: check-kernel.sh --srcdir DIR --builddir DIR --fstrim-ext PATH"

srcdir=$(cd "$srcdir" && pwd) || die "no source directory"
if [[ -n $print_key ]]; then
	[[ $print_key =~ ^(patched|stock|series)$ ]] || die "--print-key takes patched or stock"
	builddir=$(mktemp -d) fstrim_ext=/bin/true || die "cannot make a temporary directory"
	trap 'rm -rf "$builddir"' EXIT
fi
builddir=$(cd "$builddir" && pwd) || die "no build directory"
case $fstrim_ext in
/*) ;;
*) fstrim_ext=$PWD/$fstrim_ext ;;
esac

sourcedir=${FSTRIM_EXT_KERNEL_SOURCE:-/usr/src}
cache=${FSTRIM_EXT_KERNEL_CACHE:-/var/cache/fstrim-ext/kernel}
jobs=${FSTRIM_EXT_KERNEL_JOBS:-$(nproc)}
guest_timeout=${FSTRIM_EXT_KERNEL_TIMEOUT:-2400}
kcc=${FSTRIM_EXT_KERNEL_CC:-gcc}
cc=${CC:-cc}
work=$builddir/kernel-check
tap=$builddir/check-kernel.tap
((crash_only)) && tap=$builddir/check-crash.tap

# A variant (make check-kernel-debug, make check-fstests) merges its fragment
# over uml.config, so its kernels get their own cache keys; it works in its
# own directory and writes its own TAP.
variant=${FSTRIM_EXT_KERNEL_VARIANT:-}
if [[ -n $variant ]]; then
	[[ $variant =~ ^[a-z0-9]+$ && -r $srcdir/kernel/$variant.config ]] ||
		die "FSTRIM_EXT_KERNEL_VARIANT=$variant: no $srcdir/kernel/$variant.config"
	work=$builddir/kernel-check-$variant
	tap=${tap%.tap}-$variant.tap
fi

flavors=${FSTRIM_EXT_KERNEL_FLAVORS:-patched stock}
crash_flavors=${FSTRIM_EXT_KERNEL_CRASH_FLAVORS:-$flavors}
guests=${FSTRIM_EXT_KERNEL_GUESTS:-2}
[[ $guests =~ ^[1-9][0-9]*$ ]] || die "FSTRIM_EXT_KERNEL_GUESTS takes a whole number, at least 1"
[[ ${FSTRIM_EXT_KERNEL_FC_ROUNDS:-300} =~ ^[1-9][0-9]*$ ]] ||
	die "FSTRIM_EXT_KERNEL_FC_ROUNDS takes a whole number, at least 1"
[[ ${FSTRIM_EXT_KERNEL_FC_SECONDS:-60} =~ ^[0-9]+$ ]] ||
	die "FSTRIM_EXT_KERNEL_FC_SECONDS takes a whole number"
versions=${FSTRIM_EXT_KERNEL_VERSIONS:-$(cd "$srcdir/kernel" &&
	for d in linux-*/series; do d=${d%/series}; echo "${d#linux-}"; done | sort -V)}
t_start=$(date +%s)
elapsed() {
	echo "$(($(date +%s) - t_start))s"
}
log() {
	echo "check-kernel: [$(elapsed)] $*"
}

# The guest gets these paths on the kernel command line, which splits at
# blanks (and KCHECK_KEEP at colons); its /proc, /sys and /dev are its own.
for p in "$srcdir" "$builddir" "$fstrim_ext"; do
	[[ $p != *[[:space:]:\'\"]* ]] ||
		die "'$p': the UML kernel command line cannot carry blanks, colons or quotes in a path"
	case $p/ in
	/proc/* | /sys/* | /dev/*) die "'$p': the guest has its own $(cut -d/ -f2 <<< "$p"), so it cannot see this" ;;
	esac
done
for v in $versions; do
	[[ -r $srcdir/kernel/linux-$v/series ]] || die "no series for Linux $v in $srcdir/kernel/linux-$v"
	[[ -r $sourcedir/linux-source-$v.tar.xz ]] ||
		die "$sourcedir/linux-source-$v.tar.xz is missing (apt-get install linux-source-$v)"
done
for cmd in patch xz; do
	command -v "$cmd" >/dev/null || die "$cmd is required"
done
mkdir -p "$work" || die "cannot create $work"
# --print-key and --print-series read the tarballs and the series only.
if [[ -z $print_key ]]; then
	[[ $(id -u) -eq 0 ]] || die "must run as root (ubd images, mounts and capsh inside the guest)"
	[[ -x $fstrim_ext ]] || die "$fstrim_ext is not built (run make first)"
	for cmd in bats strace capsh debugfs e2fsck mkfs.ext4 filefrag flex bison bc make; do
		command -v "$cmd" >/dev/null || die "$cmd is required"
	done
	# stack.bats's guest (ext4 on dm-crypt and LVM) runs the host's
	for cmd in cryptsetup dmsetup lvm wipefs; do
		command -v "$cmd" >/dev/null || die "$cmd is required"
	done
	[[ -r /usr/lib/bats/bats-assert/load.bash ]] || die "bats-assert is required"
	if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w $cache ]]; then
		die "kernel cache $cache is not writable (set FSTRIM_EXT_KERNEL_CACHE)"
	fi
fi

# ---------------------------------------------------------------------------
# TAP bookkeeping

declare -A kernel_bin kernel_ok tree_ids tree_tops upstream_of
tap_lines=()
tap_comments=()
failures=0
record() { # record ok|not_ok DESCRIPTION
	local n=$((${#tap_lines[@]} + 1))

	if [[ $1 == ok ]]; then
		tap_lines+=("ok $n - $2")
	else
		tap_lines+=("not ok $n - $2")
		failures=$((failures + 1))
	fi
	echo "${tap_lines[-1]}"
}

# record_class FLAVOR ok|not_ok DESCRIPTION: a check named by its class
# ("[patch N] ...", "[both] ..."): on the stock kernel a "[patch N]" check
# must fail, or it proves nothing; unless the tree already has patch N
# (upstream), when it must pass there too.
record_class() {
	local n=${3#"[patch "}

	n=${n%%]*}
	if [[ $1 == stock && $3 == "[patch "* && " $upstream " == *" $n "* ]]; then
		record "$2" "$ver $1: $3 (patch $n is already in $tree_top)"
	elif [[ $1 == stock && $3 == "[patch "* ]]; then
		if [[ $2 == not_ok ]]; then
			record ok "$ver $1: $3: fails without the series, as it must"
		else
			record not_ok "$ver $1: $3: passes without the series, so it proves nothing"
		fi
	else
		record "$2" "$ver $1: $3"
	fi
}

# ---------------------------------------------------------------------------
# The kernels

tool_id=$($kcc --version | head -1)

# use_version VERSION: the tree, series and fragment the functions below use
use_version() {
	local p

	ver=$1
	tarball=$sourcedir/linux-source-$ver.tar.xz
	seriesdir=$srcdir/kernel/linux-$ver
	fragments=("$seriesdir/uml.config")
	[[ -z $variant ]] || fragments+=("$srcdir/kernel/$variant.config")
	mapfile -t series < <(grep -v '^[[:space:]]*\(#\|$\)' "$seriesdir/series")
	((${#series[@]})) || die "$seriesdir/series lists no patch"
	tree=$work/linux-$ver
	if [[ -z ${tree_ids[$ver]:-} ]]; then
		tree_ids[$ver]=$(sha256sum < "$tarball" | cut -d' ' -f1)
		tree_tops[$ver]=$(tar tJf "$tarball" 2>/dev/null | head -1 | cut -d/ -f1)
		tree_top=${tree_tops[$ver]}
		unpack_pristine || die "cannot unpack the files the series changes from $tarball"
		upstream_of[$ver]=$(find_upstream)
	fi
	tree_id=${tree_ids[$ver]} tree_top=${tree_tops[$ver]}
	# patches: those the series applies; upstream: the numbers of the rest
	patches=() upstream=''
	for p in "${series[@]}"; do
		if [[ " ${upstream_of[$ver]} " == *" $p "* ]]; then
			upstream+=" $((10#${p%%-*}))"
		else
			patches+=("$p")
		fi
	done
}

# unpack_pristine: the files the series changes, and checkpatch, from the
# tarball into $work/pristine-VERSION, once a run.
unpack_pristine() {
	local at=$work/pristine-$ver files=() p

	rm -rf "$at" && mkdir -p "$at" || return 1
	mapfile -t files < <(for p in "${series[@]}"; do
		sed -n 's|^+++ b/||p' "$seriesdir/$p"
	done | sort -u)
	files+=(scripts/checkpatch.pl scripts/spelling.txt scripts/const_structs.checkpatch)
	tar xJf "$tarball" -C "$at" --strip-components=1 "${files[@]/#/$tree_top/}"
}

# find_upstream: the patches of the series that the tree already has, as a
# newer tree may have taken one from upstream (0005 is upstream's commit):
# each reverses cleanly on the pristine files. The series does not apply
# them, and their "[patch N]" checks must pass on the stock kernel too.
find_upstream() {
	local at=$work/upstream-check p found=()

	for p in "${series[@]}"; do
		rm -rf "$at" && cp -a "$work/pristine-$ver" "$at" || return 1
		if patch -d "$at" -p1 -R --fuzz=0 --no-backup-if-mismatch \
			< "$seriesdir/$p" > /dev/null 2>&1; then
			found+=("$p")
		fi
	done
	rm -rf "$at"
	echo "${found[*]}"
}

kernel_key() { # kernel_key FLAVOR
	{
		echo "tree $tree_id"
		echo "cc $tool_id"
		echo "flavor $1"
		cat "${fragments[@]}"
		# Only the diffs: a reworded commit message needs no rebuild.
		if [[ $1 == patched ]]; then
			for p in "${patches[@]}"; do
				echo "patch $p"
				sed -n '/^diff --git /,$p' "$seriesdir/$p"
			done
		fi
	} | sha256sum | cut -d' ' -f1
}

apply_series() { # apply_series TREE LOG
	local p

	for p in "${patches[@]}"; do
		echo "applying $p" >> "$2"
		patch -d "$1" -p1 --fuzz=0 --no-backup-if-mismatch \
			< "$seriesdir/$p" >> "$2" 2>&1 || return 1
	done
}

# define_only_headers: the headers to which the series only adds #define
# lines, comments and blank lines (include/uapi/linux/fs.h: the ioctl
# number and its flags). A name a header newly defines can only be used by
# a file the series changes, so no other object of a built tree changes
# with it; every other file the series touches is newer than its objects.
define_only_headers() {
	awk '/^diff --git / { file = substr($4, 3); next }
		file == "" || /^(\+\+\+|---) / { next }
		/^-/ { bad[file] = 1 }
		/^\+/ {
			seen[file] = 1
			if (substr($0, 2) !~ /^(#define[ \t].*|\/\*.*|[ \t]*\*.*|[ \t]*)$/)
				bad[file] = 1
		}
		END { for (f in seen) if (!bad[f] && f ~ /\.h$/) print f }' \
		"${patches[@]/#/$seriesdir/}" | sort
}

# apply_series_over_build TREE LOG: the series on a tree that was built
# without it, for an incremental build: make rebuilds what depends on a
# file the series changes (fs/ext4, fs/jbd2 and the link), except through
# the define-only headers, which keep their old time.
apply_series_over_build() {
	local h headers=() stamps=()

	mapfile -t headers < <(define_only_headers)
	for h in "${headers[@]}"; do
		stamps+=("$(stat -c %Y "$1/$h")") || return 1
	done
	apply_series "$1" "$2" || return 1
	for h in "${!headers[@]}"; do
		echo "keeping the time of ${headers[h]}: the series only adds definitions to it" >> "$2"
		touch -d "@${stamps[h]}" "$1/${headers[h]}" || return 1
	done
}

# The series must apply to this tree with no fuzz on every run, and each
# patch on its own too; on a cached kernel only the files the series touches
# (and checkpatch), unpacked by use_version, show it.
check_series_applies() {
	local at=$work/apply-check-$ver

	: > "$at.log"
	rm -rf "$at" && cp -a "$work/pristine-$ver" "$at" || return 1
	apply_series "$at" "$at.log"
}

# patch_applies_alone PATCH: PATCH on the pristine files, without the others
patch_applies_alone() {
	local at=$work/apply-alone

	rm -rf "$at" && cp -a "$work/pristine-$ver" "$at" &&
		patch -d "$at" -p1 --fuzz=0 --no-backup-if-mismatch \
			< "$seriesdir/$1" > "$work/apply-alone.log" 2>&1
}

# checkpatch_clean PATCH: the tree's scripts/checkpatch.pl --strict finds
# nothing. The tree has no git history, so the commit ids a message names
# cannot be looked up (UNKNOWN_COMMIT_ID). A stable backport ("[ Upstream
# commit SHA ]", the stable form, not checkpatch's) is upstream's code as
# merged: it is held to errors and warnings, not to --strict's checks.
checkpatch_clean() {
	local opts=(--no-tree --strict --ignore UNKNOWN_COMMIT_ID) out

	if grep -q '^\[ Upstream commit [0-9a-f]\{40\} \]$' "$seriesdir/$1"; then
		opts=(--no-tree --ignore "UNKNOWN_COMMIT_ID,GIT_COMMIT_ID")
	fi
	out=$(cd "$work/pristine-$ver" &&
		perl scripts/checkpatch.pl "${opts[@]}" --show-types "$seriesdir/$1" 2>&1)
	echo "$out" > "$work/checkpatch-$ver-${1%.patch}.log"
	grep -q '^total: 0 errors, 0 warnings, \(0 checks, \)\?[0-9]* lines checked$' <<< "$out"
}

# configure_tree LOG: ARCH=um defconfig with the fragments merged over it;
# every option of the fragments must survive olddefconfig.
configure_tree() {
	local opt

	{
		make -C "$tree" ARCH=um CC="$kcc" defconfig &&
			"$tree"/scripts/kconfig/merge_config.sh -m -O "$tree" \
				"$tree/.config" "${fragments[@]}" &&
			make -C "$tree" ARCH=um CC="$kcc" olddefconfig
	} >> "$1" 2>&1 || {
		tail -20 "$1"
		return 1
	}
	while read -r opt; do
		case $opt in
		"# "*) ! grep -q "^${opt#\# }" "$tree/.config" ;;
		*) grep -qxF -- "$opt" "$tree/.config" ;;
		esac || {
			echo "check-kernel: $ver: '$opt' did not survive olddefconfig" >&2
			return 1
		}
	done < <(cat "${fragments[@]}" | grep -E '^(CONFIG_|# CONFIG_)' |
		sed 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/# \1=/')
}

# build_kernels: the kernels of this version that $flavors asks for, each
# from the cache or built. One tree is unpacked: the kernel without the
# series is built first, then the series is applied over that build and
# make rebuilds only what it changes (fs/ext4, fs/jbd2, the link). Sets
# kernel_bin[FLAVOR] and kernel_ok[FLAVOR] (1 if it is there to boot).
build_kernels() {
	local f key dir blog t0 need=() built=0 failed=1

	kernel_bin=() kernel_ok=()
	for f in stock patched; do
		[[ " $flavors " == *" $f "* ]] || continue
		key=$(kernel_key "$f")
		kernel_bin[$f]=$cache/$key/linux
		if [[ -x ${kernel_bin[$f]} ]]; then
			log "$ver $f kernel: cached, ${kernel_bin[$f]}"
			kernel_ok[$f]=1
		else
			log "$ver $f kernel: not cached (key ${key:0:12})"
			need+=("$f")
		fi
	done
	((${#need[@]})) || return 0

	t0=$(date +%s)
	rm -rf "$tree" && mkdir -p "$tree" &&
		tar xJf "$tarball" -C "$tree" --strip-components=1 || return 0
	log "$ver: $tree_top unpacked in $tree in $(($(date +%s) - t0))s"
	for f in "${need[@]}"; do
		t0=$(date +%s)
		blog=$work/build-$ver-$f.log
		: > "$blog"
		if [[ $f == patched ]]; then
			if ((built)); then
				apply_series_over_build "$tree" "$blog"
			else
				apply_series "$tree" "$blog"
			fi || {
				tail -20 "$blog"
				break
			}
		fi
		((built)) || configure_tree "$blog" || break
		log "$ver $f kernel: building$( ((built)) && echo " over the last build") (log $blog)"
		make -C "$tree" ARCH=um CC="$kcc" -j"$jobs" linux >> "$blog" 2>&1 || {
			tail -40 "$blog"
			break
		}
		built=1
		dir=${kernel_bin[$f]%/linux}
		if ! mkdir -p "$dir.tmp.$$" ||
			! cp "$tree/linux" "$tree/.config" "$dir.tmp.$$/" ||
			! rm -rf "$dir" || ! mv "$dir.tmp.$$" "$dir"; then
			break
		fi
		kernel_ok[$f]=1
		log "$ver $f kernel: built in $(($(date +%s) - t0))s, cached as $dir"
		[[ $f != "${need[-1]}" ]] || failed=0
	done
	((failed)) || rm -rf "$tree"
}

if [[ $print_key == series ]]; then
	for v in $versions; do
		use_version "$v"
		for p in "${series[@]}"; do
			if [[ " $upstream " == *" $((10#${p%%-*})) "* ]]; then
				echo "$v upstream $p"
			else
				echo "$v apply $p"
			fi
		done
	done
	exit 0
elif [[ -n $print_key ]]; then
	for v in $versions; do
		use_version "$v"
		echo "$v $(kernel_key "$print_key")"
	done
	exit 0
fi
if ((build_only)); then
	for v in $versions; do
		use_version "$v"
		build_kernels
		for flavor in $flavors; do
			((${kernel_ok[$flavor]:-0})) ||
				die "$ver $flavor: UML kernel build failed (see $work/build-$ver-$flavor.log)"
			echo "kernel $ver $flavor ${kernel_bin[$flavor]}"
		done
		for p in ${upstream_of[$ver]}; do
			echo "upstream $ver $p"
		done
	done
	exit 0
fi

# ---------------------------------------------------------------------------
# Booting

probe=$work/chkpt-probe
$cc -O2 -Wall -I"$srcdir/include" -o "$probe" "$srcdir/tests/kernel/chkpt-probe.c" ||
	die "cannot build the probe"
slack=$work/dirent-slack
$cc -O2 -Wall -o "$slack" "$srcdir/tests/kernel/dirent-slack.c" -lext2fs -lcom_err ||
	die "cannot build dirent-slack (libext2fs-dev)"

# shellcheck source=tests/kernel/journal-extents.bash
. "$srcdir/tests/kernel/journal-extents.bash"

# journal_is_erased IMAGE: every journal block but the journal superblock
# reads as zeroes, and none of them is allocated in the image (holes).
journal_is_erased() {
	local img=$1 start count nonzero=0 mapped=0 first=1 ext_start ext_len

	journal_extents "$img" > "$work/extents.tmp"
	[[ -s $work/extents.tmp ]] || return 1
	while read -r start count; do
		if ((first)); then
			start=$((start + 1)) count=$((count - 1)) first=0
		fi
		((count > 0)) || continue
		nonzero=$((nonzero + $(dd if="$img" bs=4096 skip="$start" count="$count" \
			2>/dev/null | tr -d '\0' | wc -c)))
		# filefrag -e -b4096: extents of the image file in 4 KiB units.
		while read -r ext_start ext_len; do
			if ((ext_start < start + count && ext_start + ext_len > start)); then
				mapped=$((mapped + 1))
			fi
		done < <(filefrag -e -b4096 "$img" 2>/dev/null |
			sed -n 's/^ *[0-9]*: *\([0-9]*\)\.\. *[0-9]*: *[0-9]*\.\. *[0-9]*: *\([0-9]*\):.*/\1 \2/p')
	done < "$work/extents.tmp"
	echo "journal of $(basename "$img"): $nonzero non-zero bytes, $mapped allocated extents"
	((nonzero == 0 && mapped == 0))
}

# boot_guest RUN BATS FLAVOR KERNEL MEMORY UBD...: boots KERNEL with MEMORY
# and the ubd devices UBD (ubdN=IMAGE, made in RUN) to run the guest file
# BATS (tests/kernel/init.sh); its console log goes to RUN/console.log, its
# exit status to RUN/status.
boot_guest() {
	local run=$1 bats=$2 flavor=$3 kernel=$4 mem=$5 status t0

	shift 5
	install -m 0755 "$srcdir/tests/kernel/init.sh" "$run/init"
	install -m 0644 "$srcdir/tests/kernel/guest-setup.sh" "$run/guest-setup.sh"
	cat > "$run/guest.env" <<-EOF
		FSTRIM_EXT='$fstrim_ext'
		KCHECK_PROBE='$probe'
		KCHECK_SLACK='$slack'
		KCHECK_RUNDIR='$run'
		KCHECK_FLAVOR=$flavor
		KCHECK_BATS='$srcdir/tests/kernel/$bats'
		BATS_LIB_PATH=/usr/lib/bats
		KCHECK_FILTER='${FSTRIM_EXT_KERNEL_FILTER:-}'
		KCHECK_FC_ROUNDS='${FSTRIM_EXT_KERNEL_FC_ROUNDS:-300}'
		KCHECK_FC_SECONDS='${FSTRIM_EXT_KERNEL_FC_SECONDS:-60}'
	EOF
	log "$ver $flavor kernel: booting for $bats (console log $run/console.log)"
	t0=$(date +%s)
	timeout -k 10 "$guest_timeout" setsid "$kernel" mem="$mem" "$@" \
		root=/dev/root rootfstype=hostfs rootflags=/ rw \
		init="$run/init" KCHECK_ENV="$run/guest.env" \
		KCHECK_KEEP="$srcdir:$builddir:${fstrim_ext%/*}" \
		con0=fd:0,fd:1 con=null < /dev/null > "$run/console.log" 2>&1
	status=$?
	echo "$status" > "$run/status"
	log "$ver $flavor kernel: $bats guest exited with status $status after $(($(date +%s) - t0))s"
}

# run_guest FLAVOR KERNEL: boots KERNEL on fresh images to run guest.bats.
# Runs in the background, beside the guest of another kernel.
run_guest() {
	local flavor=$1 kernel=$2 run

	run=$work/run-$ver-$flavor
	rm -rf "$run" && mkdir -p "$run"
	truncate -s 128M "$run/main.img"
	truncate -s 64M "$run/nojournal.img"
	truncate -s 64M "$run/nodiscard.img"
	truncate -s 128M "$run/djournal.img"
	truncate -s 64M "$run/htree.img"
	boot_guest "$run" guest.bats "$flavor" "$kernel" 384M \
		ubd0="$run/main.img" ubd1="$run/nojournal.img" \
		ubd2t="$run/nodiscard.img" ubd3="$run/djournal.img" \
		ubd4="$run/htree.img"
}

# stack_tests_chosen: stack.bats has a test that FSTRIM_EXT_KERNEL_FILTER
# lets run (each test does, without a filter)
stack_tests_chosen() {
	[[ -z ${FSTRIM_EXT_KERNEL_FILTER:-} ]] ||
		(($(bats --count --filter "$FSTRIM_EXT_KERNEL_FILTER" \
			"$srcdir/tests/kernel/stack.bats") > 0))
}

# run_stack_guest FLAVOR KERNEL: boots KERNEL again, on four fresh 40 MiB
# images of its own, to run stack.bats (ext4 on device-mapper): a guest
# apart from guest.bats's, whose five ubd devices are as many as UML ran
# here (a sixth hung in I/O). Its run directory is inside guest.bats's, so
# run_guest, which empties that, goes first.
run_stack_guest() {
	local flavor=$1 kernel=$2 run img ubd=() n=0

	run=$work/run-$ver-$flavor/stack
	rm -rf "$run" && mkdir -p "$run"
	stack_tests_chosen || return 0
	for img in crypt plain linear lvm; do
		truncate -s 40M "$run/$img.img"
		ubd+=("ubd$n=$run/$img.img")
		n=$((n + 1))
	done
	boot_guest "$run" stack.bats "$flavor" "$kernel" 256M "${ubd[@]}"
}

# run_guests FLAVOR KERNEL: the guests of one kernel, one after the other
run_guests() {
	run_guest "$@"
	run_stack_guest "$@"
}

# record_guest_tests RUN FLAVOR BATS: the TAP that the guest of BATS left in
# RUN, classified by the prefix of each test's name, and whether the guest
# ran every test and powered off.
record_guest_tests() {
	local run=$1 flavor=$2 bats=$3 status line rest desc plan=0 seen=0

	status=$(cat "$run/status" 2>/dev/null) || status=none
	if [[ -s $run/guest.tap ]]; then
		while IFS= read -r line; do
			case $line in
			1..*) plan=${line#1..} ;;
			"ok "* | "not ok "*)
				seen=$((seen + 1))
				rest=${line#ok }
				rest=${rest#not ok }
				desc=${rest#* }
				if [[ $desc == *"# skip"* ]]; then
					[[ $desc == "[stock]"* && $flavor == patched ]] && continue
					if [[ $desc == "[patched]"* && $flavor == stock ]]; then
						echo "# $ver $flavor: not run here: $desc"
						continue
					fi
					record not_ok "$ver $flavor: $desc (unexpected skip)"
					continue
				fi
				if [[ $line == "ok "* ]]; then
					record_class "$flavor" ok "$desc"
				else
					record_class "$flavor" not_ok "$desc"
				fi
				;;
			esac
		done < "$run/guest.tap"
	fi
	if ((plan > 0 && seen == plan)) && [[ $status != 124 && $status != 137 ]]; then
		record ok "$ver $flavor: the guest ran all $plan tests of $bats and powered off"
	elif ((plan > 0 && seen == plan)); then
		# a test that found a hang fails, and then nothing can unmount
		record not_ok "$ver $flavor: the guest ran all $plan tests of $bats but was killed at the time limit (see $run/console.log)"
	else
		record not_ok "$ver $flavor: the guest ran $seen of ${plan:-?} tests of $bats (status $status; see $run/console.log)"
		tail -30 "$run/console.log"
	fi
}

# check_guest FLAVOR: the results of run_guests FLAVOR into TAP, and the
# host's checks of the images guest.bats's guest left.
check_guest() {
	local flavor=$1 run desc img

	run=$work/run-$ver-$flavor
	record_guest_tests "$run" "$flavor" guest.bats
	# how far the fast_commit test got, hung or not
	if [[ -s $run/fc-progress ]]; then
		echo "# $ver $flavor: fast_commit test, its last batch: $(cat "$run/fc-progress")"
	fi
	if stack_tests_chosen; then
		record_guest_tests "$run/stack" "$flavor" stack.bats
	else
		echo "# $ver $flavor: stack.bats not booted: none of its tests matches FSTRIM_EXT_KERNEL_FILTER"
	fi

	# Host-side checks of the images the guest left. Under a filter the
	# test that erases main.img's journal may not have run.
	if [[ -n ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
		echo "# $ver $flavor: journal of main.img not checked under FSTRIM_EXT_KERNEL_FILTER"
	elif journal_is_erased "$run/main.img" > "$run/journal-erased.txt"; then
		record ok "$ver $flavor: [both] the journal region of main.img reads back as zeroes, all holes"
	else
		record not_ok "$ver $flavor: [both] the journal region of main.img reads back as zeroes, all holes ($(cat "$run/journal-erased.txt"))"
	fi
	for img in main nojournal nodiscard djournal htree; do
		# The fast_commit test on the stock kernel hangs that filesystem
		# (as it must), so nothing could unmount it: not checked then.
		if [[ $img == nojournal && $flavor == stock && -e $run/fc-hung ]]; then
			echo "# $ver $flavor: $img.img not checked: the fast_commit test left it hung and mounted"
			continue
		fi
		if e2fsck -fn "$run/$img.img" > "$run/e2fsck-$img.log" 2>&1; then
			record ok "$ver $flavor: [both] e2fsck -fn is clean on $img.img"
		else
			record not_ok "$ver $flavor: [both] e2fsck -fn is clean on $img.img (see $run/e2fsck-$img.log)"
		fi
	done
	# Directory slack: every byte past a live entry's name, in every
	# directory block of every image, and every byte past an index
	# block's count, is zero. The htree test's splits leave stale entries
	# and the hash map there without the series.
	local slack_bad=()
	if [[ -n ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
		echo "# $ver $flavor: directory slack not checked under FSTRIM_EXT_KERNEL_FILTER"
	fi
	: > "$run/dirent-slack.txt"
	for img in main nojournal nodiscard djournal htree; do
		"$slack" "$run/$img.img" >> "$run/dirent-slack.txt" 2>&1 || slack_bad+=("$img")
	done
	desc="[patch 7] no directory block of any image keeps a non-zero byte past a live entry's name or an index block's count"
	if [[ -n ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
		: # the test that splits htree leaves may not have run
	elif ((${#slack_bad[@]} == 0)); then
		record_class "$flavor" ok "$desc"
	else
		record_class "$flavor" not_ok "$desc (${slack_bad[*]}: $(grep -c 'past the name$' "$run/dirent-slack.txt") entries, $(grep -c 'past the count$' "$run/dirent-slack.txt") index blocks, see $run/dirent-slack.txt)"
	fi
	grep -v -e 'past the name$' -e 'past the count$' "$run/dirent-slack.txt" |
		sed "s/^/# $ver $flavor: /"
	for img in jbd2-erase htree-names index-slack recovery-journal inode-wipe journal-erased; do
		[[ -s $run/$img.txt ]] && echo "# $ver $flavor: $(cat "$run/$img.txt")"
	done
	return 0
}

# ---------------------------------------------------------------------------

# check_series: the series applies to the tree with no fuzz, as a whole
# and patch by patch, and checkpatch.pl is clean on each patch.
check_series() {
	local p

	if check_series_applies; then
		record ok "$ver: the series applies to $tree_top with patch -p1 --fuzz=0"
	else
		record not_ok "$ver: the series applies to $tree_top with patch -p1 --fuzz=0 (see $work/apply-check-$ver.log)"
		cat "$work/apply-check-$ver.log"
	fi
	for p in "${series[@]}"; do
		if [[ " $upstream " == *" $((10#${p%%-*})) "* ]]; then
			record ok "$ver: $p is already in $tree_top (it reverses with patch -R --fuzz=0): not applied; its checks must pass on the stock kernel"
		elif patch_applies_alone "$p"; then
			record ok "$ver: $p applies on its own to $tree_top with patch -p1 --fuzz=0"
		else
			record not_ok "$ver: $p applies on its own to $tree_top with patch -p1 --fuzz=0 ($(tail -1 "$work/apply-alone.log"))"
		fi
		if checkpatch_clean "$p"; then
			record ok "$ver: $p: checkpatch.pl is clean ($(sed -n 's/^total: //p' "$work/checkpatch-$ver-${p%.patch}.log"))"
		else
			record not_ok "$ver: $p: checkpatch.pl is clean (see $work/checkpatch-$ver-${p%.patch}.log)"
			head -20 "$work/checkpatch-$ver-${p%.patch}.log"
		fi
	done
}

# run_crash_trials FLAVOR KERNEL: tests/crash/crash-check.sh, its TAP kept
run_crash_trials() {
	log "$ver $1 kernel: crash trials (tests/crash/crash-check.sh)"
	"$srcdir/tests/crash/crash-check.sh" --kernel "$2" --flavor "$ver-$1" \
		--srcdir "$srcdir" --workdir "$work" --fstrim-ext "$fstrim_ext" \
		--probe "$probe" > "$work/crash-$ver-$1.out" 2>&1
}

# record_crash_trials FLAVOR: one check a trial
record_crash_trials() {
	local line

	while IFS= read -r line; do
		case $line in
		"ok - "*) record ok "${line#ok - }" ;;
		"not ok - "*) record not_ok "${line#not ok - }" ;;
		*)
			echo "$line"
			tap_comments+=("$line")
			;;
		esac
	done < "$work/crash-$ver-$1.out"
}

# uml_rcu_quiet LOG: LOG without the RCU warnings UML's own code gives at
# every boot of a PROVE_RCU kernel, whatever runs ("WARNING: suspicious
# RCU usage" for rcu_dereference_check() at lib/maple_tree.c:816 and 860,
# from the arch's early memory map, nothing held): a warning of that kind
# is dropped only when its report names one of those two lines.
uml_rcu_quiet() {
	awk '
		function flush(   i) {
			for (i = 1; i <= n; i++)
				print held[i]
			n = 0
		}
		/WARNING: suspicious RCU usage/ { flush(); n = 1; held[1] = $0; next }
		n && n < 4 {
			held[++n] = $0
			if ($0 ~ /lib\/maple_tree\.c:(816|860) suspicious rcu_dereference_check\(\) usage!/)
				n = 0
			next
		}
		n { flush() }
		{ print }
		END { flush() }
	' "$1"
}

# kernel_reports FLAVOR: in a variant run, no guest of FLAVOR (guest tests,
# crash trials) logged a lockdep splat, a KASAN report, a WARNING or a BUG.
# The console logs carry the whole kernel log, killed guests' included.
kernel_reports() {
	local logs=() hits desc log

	mapfile -t logs < <(find "$work/run-$ver-$1" "$work/crash-$ver-$1" -type f \
		\( -name 'console*.log' -o -name 'dmesg*.txt' \) 2>/dev/null | sort)
	hits=$(for log in "${logs[@]}"; do
		uml_rcu_quiet "$log" | grep -E 'WARNING:|BUG:|KASAN:|DEBUG_LOCKS_WARN_ON|INFO: (possible|trying to register|task )|circular locking|turning off the locking correctness validator|Kernel panic|Oops' |
			sed "s|^|${log#"$work/"}:|"
	done)
	desc="$ver $1: [$variant] no lockdep, KASAN, WARNING or BUG report in the kernel log of any of ${#logs[@]} guest logs"
	if [[ -z $hits ]]; then
		record ok "$desc"
	else
		record not_ok "$desc ($(wc -l <<< "$hits") lines, first: $(head -1 <<< "$hits"))"
		head -20 <<< "$hits" | sed 's/^/# /'
	fi
}

# in_parallel FUNCTION ITEM...: FUNCTION FLAVOR KERNEL for each ITEM,
# "VERSION FLAVOR KERNEL", $guests at a time: a UML guest keeps about one
# CPU busy, so two guests fill a two-core machine.
in_parallel() {
	local fn=$1 item v f k n=0

	shift
	for item; do
		read -r v f k <<< "$item"
		(use_version "$v" && "$fn" "$f" "$k") &
		n=$((n + 1))
		((n % guests)) || wait
	done
	wait
	stty sane 2>/dev/null || true
}

# in_order FUNCTION ITEM...: FUNCTION FLAVOR for each ITEM, one after the other
in_order() {
	local fn=$1 item v f

	shift
	for item; do
		read -r v f _ <<< "$item"
		use_version "$v"
		"$fn" "$f"
	done
}

# The kernels of every version first, then their guests, then the crash
# trials, each two at a time.
booted=()
for v in $versions; do
	use_version "$v"
	log "$ver: tree $tarball ($tree_top), series of ${#series[@]} patches${upstream:+ (already in the tree:$upstream)}, cache $cache"
	((crash_only)) || check_series
	build_kernels
	for flavor in $flavors; do
		if ((${kernel_ok[$flavor]:-0})); then
			record ok "$ver $flavor: UML kernel built (${kernel_bin[$flavor]})"
			booted+=("$ver $flavor ${kernel_bin[$flavor]}")
		else
			record not_ok "$ver $flavor: UML kernel built (see $work/build-$ver-$flavor.log)"
		fi
	done
done
if ((!crash_only)); then
	in_parallel run_guests "${booted[@]}"
	in_order check_guest "${booted[@]}"
fi
crashed=()
if [[ -z ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
	for item in "${booted[@]}"; do
		read -r v flavor _ <<< "$item"
		[[ " $crash_flavors " != *" $flavor "* ]] || crashed+=("$item")
	done
fi
in_parallel run_crash_trials "${crashed[@]}"
in_order record_crash_trials "${crashed[@]}"
[[ -z $variant ]] || in_order kernel_reports "${booted[@]}"

{
	printf '%s\n' "${tap_lines[@]}"
	echo "1..${#tap_lines[@]}"
	((${#tap_comments[@]} == 0)) || printf '%s\n' "${tap_comments[@]}"
	echo "# check-kernel took $(elapsed), $failures of ${#tap_lines[@]} checks failed"
} > "$tap"
echo "1..${#tap_lines[@]}"
log "done in $(elapsed): $failures of ${#tap_lines[@]} checks failed; TAP in $tap"
((failures == 0))
