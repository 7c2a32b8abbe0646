#!/usr/bin/env bats
# shellcheck shell=bats
# shellcheck disable=SC2154 # $stderr and $stderr_lines from run --separate-stderr
#
# ext4 on device-mapper (issue 42): what fstrim-ext --journal leaves where the
# bytes lie, read back as a user would, with O_DIRECT from the mapping (and,
# for a linear mapping, from the device below), and what it says about it.
# Run inside a User-Mode Linux guest of `make check-kernel`, on each kernel, a
# guest of its own booted after guest.bats's (whose five ubd devices are as
# many as UML ran here: a sixth hung in I/O). The storage stack is the tool's
# concern, not the series': every test is "[both]", on both kernels.
#
# The host makes four sparse 40 MiB images, ubd devices with discard (ubd
# punches a hole in the image for each discard):
#   /dev/ubda  LUKS2, opened with discards        (then one of two stripes)
#   /dev/ubdb  LUKS2, opened without discards     (then the other)
#   /dev/ubdc  a linear mapping 1 MiB into it, as LVM places a volume
#   /dev/ubdd  LVM over LUKS2, opened with discards
# Each test builds its stack on wiped devices; teardown takes down whatever
# is left. dm-crypt is made the way an installer makes it, with Debian's
# cryptsetup (LUKS2, aes-xts-plain64; PBKDF2 at 1,000 iterations to be quick,
# a key file), not with a bare dmsetup crypt table. There is no udev in the
# guest: libdevmapper makes the /dev/mapper nodes itself (DM_DISABLE_UDEV),
# and lvm is told not to wait for udev, nor to write its metadata backups
# into /etc/lvm, which is the host's.
#
# Every test fills a filesystem with files of known names and contents, 12
# deleted (PII-SSN-GONE-NNN, lines CONTENT-GONE-NNN) and 4 kept
# (PII-SSN-KEPT-NNN, CONTENT-KEPT-NNN), the deletion synced, and checks the
# device holds the deleted ones before the run (so that the read back can
# see them), then the exit status, the read back after the run, and
# e2fsck -fn on the unmounted filesystem.

bats_require_minimum_version 1.5.0
# per test: a few seconds each on an idle host
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

KEYFILE=/tmp/kstack.key
MNT=/tmp/kstack
LVM_CONFIG='devices { obtain_device_list_from_udev=0 use_devicesfile=0 }
activation { udev_sync=0 udev_rules=0 }
backup { backup=0 archive=0 }'

setup_file() {
	: "${FSTRIM_EXT:?}" "${KCHECK_RUNDIR:?}"
	export DM_DISABLE_UDEV=1
	mkdir -p "$MNT" /run/lvm /run/lock/lvm
	printf 'kcheck-stack-passphrase' > "$KEYFILE"
}

# bats-support and bats-assert, their files sourced here: their load.bash
# runs dirname once for each, some 15 processes, which take two seconds a
# test under UML
setup() {
	local lib f

	for lib in bats-support bats-assert; do
		if [[ -d /usr/lib/bats/$lib/src ]]; then
			for f in "/usr/lib/bats/$lib/src/"*.bash; do
				# shellcheck source=/dev/null
				source "$f"
			done
		else
			bats_load_library "$lib"
		fi
	done
}

teardown() {
	umount "$MNT" 2>/dev/null || true
	dmsetup remove_all 2>/dev/null || true
}

# shellcheck source=tests/kernel/journal-extents.bash
. "$BATS_TEST_DIRNAME/journal-extents.bash"

# luks DEVICE NAME [OPTION...]: DEVICE formatted as LUKS2 and opened as
# /dev/mapper/NAME with the cryptsetup OPTIONs (--allow-discards)
luks() {
	local dev=$1 name=$2

	shift 2
	wipefs -a -q "$dev" &&
		cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 \
			--pbkdf-force-iterations 1000 --key-file "$KEYFILE" --disable-locks "$dev" &&
		cryptsetup open --key-file "$KEYFILE" --disable-locks --disable-keyring "$@" \
			"$dev" "$name"
}

# lvm_cmd COMMAND ARG...: an lvm command without udev, without backups
lvm_cmd() {
	local cmd=$1

	shift
	"$cmd" --config "$LVM_CONFIG" "$@"
}

# make_fs DEVICE: a fresh ext4 with 4 KiB blocks on DEVICE, mounted on $MNT
make_fs() {
	mkfs.ext4 -q -F -b 4096 -E 'lazy_itable_init=0,lazy_journal_init=0' "$1" &&
		mount "$1" "$MNT"
}

# fill_and_delete: in $MNT, 12 files PII-SSN-GONE-NNN of 512
# CONTENT-GONE-NNN lines and 4 kept ones PII-SSN-KEPT-NNN of
# CONTENT-KEPT-NNN lines (8 KiB each), written and synced; then the 12
# deleted, and the deletion synced. Written by the shell itself: a process
# costs a tenth of a second under UML.
fill_and_delete() {
	local i n kind body

	for kind in GONE:12 KEPT:4; do
		for ((i = 1; i <= ${kind#*:}; i++)); do
			printf -v n %03d "$i"
			body="CONTENT-${kind%:*}-$n"$'\n'
			for _ in 1 2 3 4 5 6 7 8 9; do # 512 lines
				body+=$body
			done
			printf '%s' "$body" > "$MNT/PII-SSN-${kind%:*}-$n"
		done
	done
	sync -f "$MNT"
	rm -f "$MNT"/PII-SSN-GONE-*
	sync -f "$MNT"
}

# remnants DEVICE [SKIP COUNT]: what an O_DIRECT read of DEVICE (or of COUNT
# 4 KiB blocks from block SKIP) holds of the files, as "names N contents N
# kept N": the deleted files' names, their content lines, the kept files'
# content lines. grep reads NUL-ended lines (-z): a device of zeroes is one
# line otherwise, which grep holds whole, ten times as slow.
remnants() {
	local - range=(bs=1M)

	(($# == 3)) && range=(bs=4096 skip="$2" count="$3")
	set -o pipefail
	dd if="$1" "${range[@]}" iflag=direct status=none |
		{ LC_ALL=C grep -a -z -o -F -e PII-SSN-GONE -e CONTENT-GONE -e CONTENT-KEPT || true; } |
		tr '\0' '\n' |
		awk '{ n[$0]++ }
			END { printf "names %d contents %d kept %d\n",
				n["PII-SSN-GONE"], n["CONTENT-GONE"], n["CONTENT-KEPT"] }'
}

# journal_names DEVICE: the deleted files' names in the journal region of
# DEVICE (ext4, its journal extents read before the mount into
# $BATS_TEST_TMPDIR/journal-extents), read with O_DIRECT
journal_names() {
	local start count total=0 names

	while read -r start count; do
		names=$(remnants "$1" "$start" "$count") || return 1
		names=${names#names }
		total=$((total + ${names%% *}))
	done < "$BATS_TEST_TMPDIR/journal-extents"
	echo "$total"
}

# deleted_files_there DEVICE...: before the run, each DEVICE holds deleted
# names and contents (the read back can see what it looks for)
deleted_files_there() {
	local dev

	for dev; do
		run -0 remnants "$dev"
		assert_output --regexp '^names [1-9][0-9]* contents [1-9][0-9]* kept [1-9][0-9]*$'
	done
}

# nothing_deleted_left DEVICE...: after the run, an O_DIRECT read of each
# DEVICE finds no deleted name or content, and the kept files' contents
nothing_deleted_left() {
	local dev

	for dev; do
		run -0 remnants "$dev"
		assert_output --regexp '^names 0 contents 0 kept [1-9][0-9]*$'
	done
}

# e2fsck_clean DEVICE: unmounted, e2fsck -fn finds nothing
e2fsck_clean() {
	umount "$MNT"
	run -0 e2fsck -fn "$1"
}

# assert_stderr_line REGEX: a line of the last run's stderr matches REGEX
assert_stderr_line() {
	local line

	for line in "${stderr_lines[@]}"; do
		[[ $line =~ $1 ]] && return 0
	done
	printf 'no line of stderr matches: %s\nstderr:\n%s\n' "$1" "$stderr" >&2
	return 1
}

# refute_stderr_line REGEX: no line of the last run's stderr matches REGEX
refute_stderr_line() {
	local line

	for line in "${stderr_lines[@]}"; do
		if [[ $line =~ $1 ]]; then
			printf 'a line of stderr matches: %s\n%s\n' "$1" "$line" >&2
			return 1
		fi
	done
}

# a one-line fstab for --listed-in: DEVICE on $MNT
fstab_of() {
	printf '%s %s ext4 defaults 0 2\n' "$1" "$MNT" > "$BATS_TEST_TMPDIR/fstab"
}

# show_run: the last run's status, stdout and stderr, shown if the test fails
show_run() {
	printf 'status %s\nstdout: %s\nstderr: %s\n' "$status" "$output" "$stderr"
}

# (a) Before the fix the tool read the free space back through the mapping,
# where a discarded block reads as the decryption of zeroes, noise: "the
# device did not erase what FITRIM discarded: N free blocks still hold data
# after a second discard", status 1 (32 with the unit's options).
# bats test_tags=root
@test "[both] ext4 on LUKS2 with discards: -v --journal, then the unit's options, exit 0; the mapping holds nothing deleted" {
	luks /dev/ubda kst-crypt --allow-discards
	make_fs /dev/mapper/kst-crypt
	fill_and_delete
	deleted_files_there /dev/mapper/kst-crypt
	run --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	show_run
	assert_success
	nothing_deleted_left /dev/mapper/kst-crypt
	# below the mapping, ciphertext only: the kept files are not readable there
	run -0 remnants /dev/ubda
	assert_output 'names 0 contents 0 kept 0'

	fill_and_delete
	fstab_of /dev/mapper/kst-crypt
	run --separate-stderr "$FSTRIM_EXT" --listed-in "$BATS_TEST_TMPDIR/fstab" \
		--verbose --quiet-unsupported --journal
	show_run
	assert_success
	nothing_deleted_left /dev/mapper/kst-crypt
	e2fsck_clean /dev/mapper/kst-crypt
}

# (b) Debian's crypttab passes no discards unless told. The free space
# cannot be trimmed there; the journal is erased by zeroout through the
# mapping and read back there. Before the fix: "journal step not done: the
# journal device does not support discard (try --journal-erase=zeroout)",
# status 1 with --quiet-unsupported too.
# bats test_tags=root
@test "[both] ext4 on LUKS2 without discards: the unit's options exit 0, the journal holds no deleted name; one path says discard is not supported" {
	luks /dev/ubdb kst-plain
	run -0 lsblk -drnbo DISC-MAX /dev/mapper/kst-plain
	assert_output 0
	mkfs.ext4 -q -F -b 4096 -E 'lazy_itable_init=0,lazy_journal_init=0' /dev/mapper/kst-plain
	journal_extents /dev/mapper/kst-plain > "$BATS_TEST_TMPDIR/journal-extents"
	mount /dev/mapper/kst-plain "$MNT"
	fill_and_delete
	fstab_of /dev/mapper/kst-plain
	run -0 journal_names /dev/mapper/kst-plain
	assert_output --regexp '^[1-9][0-9]*$'
	run --separate-stderr "$FSTRIM_EXT" --listed-in "$BATS_TEST_TMPDIR/fstab" \
		--verbose --quiet-unsupported --journal
	show_run
	assert_success
	run -0 journal_names /dev/mapper/kst-plain
	assert_output 0
	run --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	show_run
	assert_failure 1
	assert_stderr_line "$MNT: the discard operation is not supported"
	e2fsck_clean /dev/mapper/kst-plain
}

# (c) LVM's default install puts ext4 on a linear mapping at an offset.
# bats test_tags=root
@test "[both] ext4 on a linear mapping 1 MiB in: exit 0, neither the mapping nor the device below holds anything deleted" {
	local sectors

	wipefs -a -q /dev/ubdc
	sectors=$(blockdev --getsz /dev/ubdc)
	dmsetup create kst-linear --table "0 $((sectors - 2048)) linear /dev/ubdc 2048"
	make_fs /dev/mapper/kst-linear
	fill_and_delete
	deleted_files_there /dev/mapper/kst-linear
	run --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	show_run
	assert_success
	nothing_deleted_left /dev/mapper/kst-linear /dev/ubdc
	e2fsck_clean /dev/mapper/kst-linear
}

# (d) LVM over LUKS2, as Debian's installer makes "encrypted LVM" (with
# discards here): the logical volume a linear mapping over the crypt one.
# bats test_tags=root
@test "[both] ext4 on LVM over LUKS2 with discards: exit 0, neither the LV nor the LUKS mapping holds anything deleted" {
	luks /dev/ubdd kst-pv --allow-discards
	lvm_cmd pvcreate -q /dev/mapper/kst-pv
	lvm_cmd vgcreate -q kst-vg /dev/mapper/kst-pv
	lvm_cmd lvcreate -q -y -n lv -l 100%FREE kst-vg
	make_fs /dev/mapper/kst--vg-lv
	fill_and_delete
	deleted_files_there /dev/mapper/kst--vg-lv
	run --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	show_run
	assert_success
	nothing_deleted_left /dev/mapper/kst--vg-lv /dev/mapper/kst-pv
	e2fsck_clean /dev/mapper/kst--vg-lv
}

# (e) A layer the tool cannot map to one device below: a "striped" target
# (built into dm-mod) over the first 16 MiB of two devices. The erase is
# done (discards pass through striped, and the mapping reads the zeroes),
# but not proven below it: status 1, a line that says so and names the
# target, none that claims data was left. Before the fix: status 0.
# bats test_tags=root
@test "[both] ext4 on a striped mapping: the erase is done, not claimed as proven below 'striped', exit 1" {
	wipefs -a -q /dev/ubda
	wipefs -a -q /dev/ubdb
	dmsetup create kst-striped --table "0 65536 striped 2 128 /dev/ubda 0 /dev/ubdb 0"
	make_fs /dev/mapper/kst-striped
	fill_and_delete
	deleted_files_there /dev/mapper/kst-striped
	run --separate-stderr "$FSTRIM_EXT" -v --journal "$MNT"
	show_run
	assert_failure 1
	assert_stderr_line 'not proven.*striped'
	refute_stderr_line 'still hold data'
	refute_output --partial 'still hold data'
	nothing_deleted_left /dev/mapper/kst-striped
	e2fsck_clean /dev/mapper/kst-striped
}
