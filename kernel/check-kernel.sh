#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-kernel.sh - prove the kernel/linux-6.1 series under User-Mode Linux
#
# Builds two UML kernels from Debian's linux-source-6.1 tree, one with the
# series and one without (each cached), boots each with the host's root as
# hostfs and ubd images, runs tests/kernel/guest.bats inside with the
# project's fstrim-ext, then checks the images from the host, then kills
# each kernel during fstrim-ext --journal under a writer, again and again
# (tests/crash/crash-check.sh), and checks each image after replay. Writes TAP
# to BUILDDIR/check-kernel.tap and prints it; exits non-zero if any check
# fails. Run by `make check-kernel`; see kernel/README. With --crash-only
# (`make check-crash`) only the kernels and the crash trials, TAP in
# BUILDDIR/check-crash.tap.
#
# usage: check-kernel.sh --srcdir DIR --builddir DIR --fstrim-ext PATH [--crash-only]
#        check-kernel.sh --srcdir DIR --print-key patched|stock
#
# Environment:
#   FSTRIM_EXT_KERNEL_CACHE    kernel cache (default /var/cache/fstrim-ext/kernel)
#   FSTRIM_EXT_KERNEL_SOURCE   tree tarball (default /usr/src/linux-source-6.1.tar.xz)
#   FSTRIM_EXT_KERNEL_JOBS     make -j for the kernel build (default: nproc)
#   FSTRIM_EXT_KERNEL_TIMEOUT  seconds one guest may run (default 900)
#   FSTRIM_EXT_KERNEL_CC       compiler for the kernel (default gcc)
#   FSTRIM_EXT_KERNEL_FLAVORS  kernels to boot (default "patched stock")
#   FSTRIM_EXT_KERNEL_FILTER   run only the guest tests matching this regex
#                              (and skip the crash trials)
#   FSTRIM_EXT_CRASH_*         see tests/crash/crash-check.sh
#   CC                         compiler for the probe (default cc)

set -u -o pipefail

die() {
	echo "check-kernel: $*" >&2
	exit 99
}

srcdir='' builddir='' fstrim_ext='' print_key='' crash_only=0
while (($#)); do
	case $1 in
	--print-key) print_key=$2; shift 2 ;;
	--crash-only) crash_only=1; shift ;;
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
	builddir=$srcdir fstrim_ext=/bin/true
fi
builddir=$(cd "$builddir" && pwd) || die "no build directory"
case $fstrim_ext in
/*) ;;
*) fstrim_ext=$PWD/$fstrim_ext ;;
esac

tarball=${FSTRIM_EXT_KERNEL_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
cache=${FSTRIM_EXT_KERNEL_CACHE:-/var/cache/fstrim-ext/kernel}
jobs=${FSTRIM_EXT_KERNEL_JOBS:-$(nproc)}
guest_timeout=${FSTRIM_EXT_KERNEL_TIMEOUT:-900}
kcc=${FSTRIM_EXT_KERNEL_CC:-gcc}
cc=${CC:-cc}
seriesdir=$srcdir/kernel/linux-6.1
fragment=$seriesdir/uml.config
work=$builddir/kernel-check
tap=$builddir/check-kernel.tap
((crash_only)) && tap=$builddir/check-crash.tap

flavors=${FSTRIM_EXT_KERNEL_FLAVORS:-patched stock}
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
[[ $(id -u) -eq 0 ]] || die "must run as root (ubd images, mounts and capsh inside the guest)"
[[ -r $tarball ]] || die "$tarball is missing (apt-get install linux-source-6.1)"
[[ -x $fstrim_ext ]] || die "$fstrim_ext is not built (run make first)"
for cmd in bats strace capsh debugfs e2fsck mkfs.ext4 filefrag flex bison bc make patch xz; do
	command -v "$cmd" >/dev/null || die "$cmd is required"
done
[[ -r /usr/lib/bats/bats-assert/load.bash ]] || die "bats-assert is required"

[[ -n $print_key ]] || mkdir -p "$work" || die "cannot create $work"
if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w $cache ]]; then
	die "kernel cache $cache is not writable (set FSTRIM_EXT_KERNEL_CACHE)"
fi

# ---------------------------------------------------------------------------
# TAP bookkeeping

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
# must fail, or it proves nothing.
record_class() {
	if [[ $1 == stock && $3 == "[patch "* ]]; then
		if [[ $2 == not_ok ]]; then
			record ok "$1: $3: fails without the series, as it must"
		else
			record not_ok "$1: $3: passes without the series, so it proves nothing"
		fi
	else
		record "$2" "$1: $3"
	fi
}

# ---------------------------------------------------------------------------
# The kernels

mapfile -t patches < <(grep -v '^[[:space:]]*\(#\|$\)' "$seriesdir/series")
((${#patches[@]})) || die "$seriesdir/series lists no patch"

tree_id=$(sha256sum < "$tarball" | cut -d' ' -f1)
tree_top=$(tar tJf "$tarball" 2>/dev/null | head -1 | cut -d/ -f1)
tool_id=$($kcc --version | head -1)

kernel_key() { # kernel_key FLAVOR
	{
		echo "tree $tree_id"
		echo "cc $tool_id"
		echo "flavor $1"
		cat "$fragment"
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

# The series must apply to this tree with no fuzz on every run, and each
# patch on its own too; on a cached kernel only the files the series touches
# (and checkpatch) are unpacked to show it.
check_series_applies() {
	local tree=$work/apply-check files=() p

	rm -rf "$tree" "$tree.pristine" && mkdir -p "$tree"
	mapfile -t files < <(for p in "${patches[@]}"; do
		sed -n 's|^+++ b/||p' "$seriesdir/$p"
	done | sort -u)
	files+=(scripts/checkpatch.pl scripts/spelling.txt scripts/const_structs.checkpatch)
	: > "$work/apply-check.log"
	tar xJf "$tarball" -C "$tree" --strip-components=1 \
		"${files[@]/#/$tree_top/}" 2>> "$work/apply-check.log" || return 1
	cp -a "$tree" "$tree.pristine" || return 1
	apply_series "$tree" "$work/apply-check.log"
}

# patch_applies_alone PATCH: PATCH on the pristine files, without the others
patch_applies_alone() {
	local tree=$work/apply-alone

	rm -rf "$tree" && cp -a "$work/apply-check.pristine" "$tree" &&
		patch -d "$tree" -p1 --fuzz=0 --no-backup-if-mismatch \
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
	out=$(cd "$work/apply-check.pristine" &&
		perl scripts/checkpatch.pl "${opts[@]}" --show-types "$seriesdir/$1" 2>&1)
	echo "$out" > "$work/checkpatch-${1%.patch}.log"
	grep -q '^total: 0 errors, 0 warnings, \(0 checks, \)\?[0-9]* lines checked$' <<< "$out"
}

build_kernel() { # build_kernel FLAVOR -> sets kernel_bin
	local flavor=$1 key dir tree blog t0 opt

	key=$(kernel_key "$flavor")
	dir=$cache/$key
	kernel_bin=$dir/linux
	if [[ -x $kernel_bin ]]; then
		log "$flavor kernel: cached, $kernel_bin"
		return 0
	fi
	t0=$(date +%s)
	tree=$work/linux-6.1-$flavor
	blog=$work/build-$flavor.log
	log "$flavor kernel: not cached (key ${key:0:12}), building in $tree (log $blog)"
	rm -rf "$tree" && mkdir -p "$tree"
	: > "$blog"
	tar xJf "$tarball" -C "$tree" --strip-components=1 || return 1
	if [[ $flavor == patched ]]; then
		apply_series "$tree" "$blog" || {
			tail -20 "$blog"
			return 1
		}
	fi
	{
		make -C "$tree" ARCH=um CC="$kcc" defconfig &&
			"$tree"/scripts/kconfig/merge_config.sh -m -O "$tree" \
				"$tree/.config" "$fragment" &&
			make -C "$tree" ARCH=um CC="$kcc" olddefconfig
	} >> "$blog" 2>&1 || {
		tail -20 "$blog"
		return 1
	}
	# Every option of the fragment must have survived olddefconfig.
	while read -r opt; do
		case $opt in
		"# "*) ! grep -q "^${opt#\# }" "$tree/.config" ;;
		*) grep -qxF -- "$opt" "$tree/.config" ;;
		esac || {
			echo "check-kernel: $flavor: '$opt' did not survive olddefconfig" >&2
			return 1
		}
	done < <(grep -E '^(CONFIG_|# CONFIG_)' "$fragment" |
		sed 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/# \1=/')
	make -C "$tree" ARCH=um CC="$kcc" -j"$jobs" linux >> "$blog" 2>&1 || {
		tail -40 "$blog"
		return 1
	}
	mkdir -p "$dir.tmp.$$" &&
		cp "$tree/linux" "$tree/.config" "$dir.tmp.$$/" &&
		rm -rf "$dir" && mv "$dir.tmp.$$" "$dir" || return 1
	log "$flavor kernel: built in $(($(date +%s) - t0))s, cached as $dir"
	rm -rf "$tree"
}

if [[ -n $print_key ]]; then
	kernel_key "$print_key"
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

boot_and_check() { # boot_and_check FLAVOR KERNEL
	local flavor=$1 kernel=$2 run status line rest desc img
	local plan=0 seen=0 t0

	run=$work/run-$flavor
	rm -rf "$run" && mkdir -p "$run"
	truncate -s 128M "$run/main.img"
	truncate -s 64M "$run/nojournal.img"
	truncate -s 64M "$run/nodiscard.img"
	truncate -s 128M "$run/djournal.img"
	truncate -s 64M "$run/htree.img"
	install -m 0755 "$srcdir/tests/kernel/init.sh" "$run/init"
	install -m 0644 "$srcdir/tests/kernel/guest-setup.sh" "$run/guest-setup.sh"
	cat > "$run/guest.env" <<-EOF
		FSTRIM_EXT='$fstrim_ext'
		KCHECK_PROBE='$probe'
		KCHECK_RUNDIR='$run'
		KCHECK_FLAVOR=$flavor
		KCHECK_BATS='$srcdir/tests/kernel/guest.bats'
		BATS_LIB_PATH=/usr/lib/bats
		KCHECK_FILTER='${FSTRIM_EXT_KERNEL_FILTER:-}'
	EOF
	log "$flavor kernel: booting (console log $run/console.log)"
	t0=$(date +%s)
	timeout -k 10 "$guest_timeout" setsid "$kernel" mem=384M \
		ubd0="$run/main.img" ubd1="$run/nojournal.img" \
		ubd2t="$run/nodiscard.img" ubd3="$run/djournal.img" \
		ubd4="$run/htree.img" \
		root=/dev/root rootfstype=hostfs rootflags=/ rw \
		init="$run/init" KCHECK_ENV="$run/guest.env" \
		KCHECK_KEEP="$srcdir:$builddir:${fstrim_ext%/*}" \
		con0=fd:0,fd:1 con=null < /dev/null > "$run/console.log" 2>&1
	status=$?
	log "$flavor kernel: guest exited with status $status after $(($(date +%s) - t0))s"
	stty sane 2>/dev/null || true

	# The guest's own tests, classified by the prefix of their names.
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
					record not_ok "$flavor: $desc (unexpected skip)"
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
	if ((plan > 0 && seen == plan)); then
		record ok "$flavor: the guest ran all $plan tests of guest.bats and powered off"
	else
		record not_ok "$flavor: the guest ran $seen of ${plan:-?} tests (status $status; see $run/console.log)"
		tail -30 "$run/console.log"
	fi

	# Host-side checks of the images the guest left. Under a filter the
	# test that erases main.img's journal may not have run.
	if [[ -n ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
		echo "# $flavor: journal of main.img not checked under FSTRIM_EXT_KERNEL_FILTER"
	elif journal_is_erased "$run/main.img" > "$run/journal-erased.txt"; then
		record ok "$flavor: [both] the journal region of main.img reads back as zeroes, all holes"
	else
		record not_ok "$flavor: [both] the journal region of main.img reads back as zeroes, all holes ($(cat "$run/journal-erased.txt"))"
	fi
	for img in main nojournal nodiscard djournal htree; do
		if e2fsck -fn "$run/$img.img" > "$run/e2fsck-$img.log" 2>&1; then
			record ok "$flavor: [both] e2fsck -fn is clean on $img.img"
		else
			record not_ok "$flavor: [both] e2fsck -fn is clean on $img.img (see $run/e2fsck-$img.log)"
		fi
	done
	# Directory slack: every byte past a live entry's name, in every
	# directory block of every image, is zero. The htree test's splits
	# leave stale entries and the hash map there without the series.
	local slack_bad=()
	if [[ -n ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
		echo "# $flavor: directory slack not checked under FSTRIM_EXT_KERNEL_FILTER"
	fi
	: > "$run/dirent-slack.txt"
	for img in main nojournal nodiscard djournal htree; do
		"$slack" "$run/$img.img" >> "$run/dirent-slack.txt" 2>&1 || slack_bad+=("$img")
	done
	desc="[patch 3] no directory block of any image keeps a non-zero byte past a live entry's name"
	if [[ -n ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
		: # the test that splits htree leaves may not have run
	elif ((${#slack_bad[@]} == 0)); then
		record_class "$flavor" ok "$desc"
	else
		record_class "$flavor" not_ok "$desc (${slack_bad[*]}: $(grep -c 'past the name$' "$run/dirent-slack.txt") entries, see $run/dirent-slack.txt)"
	fi
	grep -v 'past the name$' "$run/dirent-slack.txt" | sed "s/^/# $flavor: /"
	for img in jbd2-erase htree-names recovery-journal inode-wipe journal-erased; do
		[[ -s $run/$img.txt ]] && echo "# $flavor: $(cat "$run/$img.txt")"
	done
	return 0
}

# ---------------------------------------------------------------------------

log "tree $tarball ($tree_top), series of ${#patches[@]} patches, cache $cache"
if ((crash_only)); then
	:
elif check_series_applies; then
	record ok "the series applies to $tree_top with patch -p1 --fuzz=0"
else
	record not_ok "the series applies to $tree_top with patch -p1 --fuzz=0 (see $work/apply-check.log)"
	cat "$work/apply-check.log"
fi
if ((!crash_only)) && [[ -d $work/apply-check.pristine ]]; then
	for p in "${patches[@]}"; do
		if patch_applies_alone "$p"; then
			record ok "$p applies on its own to $tree_top with patch -p1 --fuzz=0"
		else
			record not_ok "$p applies on its own to $tree_top with patch -p1 --fuzz=0 ($(tail -1 "$work/apply-alone.log"))"
		fi
		if checkpatch_clean "$p"; then
			record ok "$p: checkpatch.pl is clean ($(sed -n 's/^total: //p' "$work/checkpatch-${p%.patch}.log"))"
		else
			record not_ok "$p: checkpatch.pl is clean (see $work/checkpatch-${p%.patch}.log)"
			head -20 "$work/checkpatch-${p%.patch}.log"
		fi
	done
fi

# crash_trials FLAVOR KERNEL: tests/crash/crash-check.sh, one check a trial
crash_trials() {
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
	done < <("$srcdir/tests/crash/crash-check.sh" --kernel "$2" --flavor "$1" \
		--srcdir "$srcdir" --workdir "$work" --fstrim-ext "$fstrim_ext" \
		--probe "$probe" 2>&1)
}

for flavor in $flavors; do
	if build_kernel "$flavor"; then
		record ok "$flavor: UML kernel built ($kernel_bin)"
		((crash_only)) || boot_and_check "$flavor" "$kernel_bin"
		if [[ -z ${FSTRIM_EXT_KERNEL_FILTER:-} ]]; then
			log "$flavor kernel: crash trials (tests/crash/crash-check.sh)"
			crash_trials "$flavor" "$kernel_bin"
		fi
	else
		record not_ok "$flavor: UML kernel built (see $work/build-$flavor.log)"
	fi
done

{
	printf '%s\n' "${tap_lines[@]}"
	echo "1..${#tap_lines[@]}"
	((${#tap_comments[@]} == 0)) || printf '%s\n' "${tap_comments[@]}"
	echo "# check-kernel took $(elapsed), $failures of ${#tap_lines[@]} checks failed"
} > "$tap"
echo "1..${#tap_lines[@]}"
log "done in $(elapsed): $failures of ${#tap_lines[@]} checks failed; TAP in $tap"
((failures == 0))
