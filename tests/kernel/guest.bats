#!/usr/bin/env bats
# shellcheck shell=bats
#
# Run inside the User-Mode Linux guest of `make check-kernel`, for each
# version, once on the kernel with the series of kernel/linux-VERSION and
# once on the same kernel without it. Test names start with the class the host checks them by:
#   [patch N]  must pass with the series, and must fail without patch N;
#   [stock]    runs only without the series (skipped with it), must pass;
#   [both]     must pass on both kernels;
#   [patched]  runs only with the series (skipped without it), must pass
#              (no test has this class now; the host still knows it).
# A "[patch N]" test whose bug hangs the stock kernel bounds its own wait
# and fails (the fast_commit test at the end): a task stuck in the kernel
# cannot be killed, so it leaves /tmp/fc-hung and $KCHECK_RUNDIR/fc-hung,
# teardown_file leaves that filesystem mounted, and init powers off
# without waiting for a sync of it (guest_poweroff).
# The block devices are made by the host (kernel/check-kernel.sh):
#   /dev/ubda  main ext4 (discard)       /dev/ubdb  ext4 without journal
#   /dev/ubdc  ext4, discard disabled    /dev/ubdd  data=journal ext4
#   /dev/ubde  htree ext4
# /dev/ubdd is made again, a 1 KiB-block ext4, for the index split test
# once the data=journal test is done with it, and for each recovery test
# after that, /dev/ubdb as a fresh ext4 without a journal for each round
# of the trimmed-bit test and then as a fast_commit ext4 for the last
# tests (the host checks the htree image after the guest): under UML a
# sixth ubd device (ubdf) hung in I/O here.

bats_require_minimum_version 1.5.0
# per test: the htree test took 253 s under UML on a loaded two-core host
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-900}

setup_file() {
	: "${FSTRIM_EXT:?}" "${KCHECK_PROBE:?}" "${KCHECK_RUNDIR:?}" "${KCHECK_FLAVOR:?}"
	MNT=/tmp/kcheck
	export MNT
	local mkfs=(mkfs.ext4 -q -F -b 4096 -E 'lazy_itable_init=0,lazy_journal_init=0')

	mkdir -p "$MNT"/main "$MNT"/nojournal "$MNT"/nodiscard "$MNT"/djournal \
		"$MNT"/htree "$MNT"/recovery
	"${mkfs[@]}" /dev/ubda
	"${mkfs[@]}" -O ^has_journal /dev/ubdb
	"${mkfs[@]}" /dev/ubdc
	"${mkfs[@]}" -J size=16 /dev/ubdd
	"${mkfs[@]}" /dev/ubde
	mount /dev/ubda "$MNT"/main
	mount /dev/ubdb "$MNT"/nojournal
	mount /dev/ubdc "$MNT"/nodiscard
	mkdir "$MNT"/main/sub
}

teardown_file() {
	local m

	for m in main nojournal nodiscard djournal htree recovery; do
		# a hung filesystem would hang umount, and every later step
		[[ $m == nojournal && -e /tmp/fc-hung ]] && continue
		umount "$MNT/$m" 2>/dev/null || true
	done
}

setup() {
	bats_load_library bats-support
	bats_load_library bats-assert
}

# the fast_commit tests' writers stop, whatever the test did
teardown() {
	touch /tmp/fc-writer.stop /tmp/fc-race.stop
}

# shellcheck source=tests/kernel/journal-extents.bash
. "$BATS_TEST_DIRNAME/journal-extents.bash"

# count_in_journal DEVICE PATTERN [dd flags]: lines matching PATTERN in the
# journal region of DEVICE, as read through the block device.
count_in_journal() {
	local dev=$1 pattern=$2 start count total=0 n
	shift 2

	while read -r start count; do
		n=$(dd if="$dev" bs=4096 skip="$start" count="$count" "$@" 2>/dev/null |
			grep -a -c -- "$pattern")
		total=$((total + n))
	done < "$BATS_FILE_TMPDIR/journal-extents"
	echo "$total"
}

# journal_nonzero DEVICE: non-zero bytes in the journal region of DEVICE but
# its first block (the journal superblock), read with O_DIRECT
journal_nonzero() {
	local dev=$1 start count total=0 first=1

	while read -r start count; do
		if ((first)); then
			start=$((start + 1)) count=$((count - 1)) first=0
		fi
		((count > 0)) || continue
		total=$((total + $(dd if="$dev" bs=4096 skip="$start" count="$count" \
			iflag=direct 2>/dev/null | tr -d '\0' | wc -c)))
	done < "$BATS_FILE_TMPDIR/journal-extents"
	echo "$total"
}

# marked_journal DEVICE PREFIX MARKER: the journal extents of DEVICE noted,
# then four 256 KiB files PREFIX1 to PREFIX4 of MARKER-N lines written and
# synced, so that the journal holds their metadata
marked_journal() {
	local i

	journal_extents "$1" > "$BATS_FILE_TMPDIR/journal-extents"
	for i in 1 2 3 4; do
		yes "$3-$i" | head -c 262144 > "$2$i"
	done
	sync
}

# crash_fs DEVICE MOUNTPOINT OPTIONS: a fresh ext4 with an 8 MiB journal on
# DEVICE, mounted with OPTIONS, its journal extents noted
crash_fs() {
	mkfs.ext4 -q -F -b 4096 -E 'lazy_itable_init=0,lazy_journal_init=0' -J size=8 "$1"
	journal_extents "$1" > "$BATS_FILE_TMPDIR/journal-extents"
	mount -o "$3" "$1" "$2"
}

# crash MOUNTPOINT DEVICE: shut the filesystem down as a crash would leave it
# (the journal keeps its committed transactions), unmount it
crash() {
	run -0 "$KCHECK_PROBE" shutdown "$1"
	assert_output 0
	umount "$1"
	run -0 dumpe2fs -h "$2"
	assert_output --partial needs_recovery
}

# bats test_tags=root
@test "[patch 11] /sys/fs/ext4/features advertises the fixes of the series" {
	local f

	for f in chkpt_jrnl chkpt_jrnl_zeroout jbd2_erase_fix dirent_pack_wipe \
		journal_recovery_discard freed_inode_wipe jbd2_fc_checkpoint_fix \
		jbd2_fc_flush_fix; do
		run cat "/sys/fs/ext4/features/$f"
		assert_success
		assert_output supported
	done
}

# bats test_tags=root
@test "[patch 5] fstrim-ext --journal erases the journal via FS_IOC_CHKPT_JRNL" {
	local i

	for i in $(seq 1 20); do
		head -c 65536 /dev/urandom > "$MNT/main/file$i"
	done
	sync
	rm -f "$MNT"/main/file*
	run --separate-stderr strace -f -o "$KCHECK_RUNDIR/strace-journal.log" -e trace=ioctl \
		"$FSTRIM_EXT" -v --journal "$MNT/main"
	assert_success
	assert_output --regexp "^$MNT/main: .* trimmed, journal checkpointed and discarded via FS_IOC_CHKPT_JRNL\$"
	run grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x8\), 0x[0-9a-f]+\) = 0' \
		"$KCHECK_RUNDIR/strace-journal.log"
	assert_success
}

# Zeroout too goes through FS_IOC_CHKPT_JRNL (an 8-byte argument; mainline
# EXT4_IOC_CHECKPOINT, the same number, takes 4) where the kernel says its
# flags have EXT4_IOC_CHECKPOINT's values; the read back found no old data.
# bats test_tags=root
@test "[patch 5] fstrim-ext --journal-erase=zeroout zeroes the journal via FS_IOC_CHKPT_JRNL" {
	head -c 1M /dev/urandom > "$MNT/main/zero-me"
	sync
	rm -f "$MNT/main/zero-me"
	run --separate-stderr strace -f -o "$KCHECK_RUNDIR/strace-zeroout.log" -e trace=ioctl \
		"$FSTRIM_EXT" -v --journal-erase=zeroout "$MNT/main"
	assert_success
	assert_output --regexp "^$MNT/main: .* trimmed, journal checkpointed and zeroed via FS_IOC_CHKPT_JRNL\$"
	run grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x8\), 0x[0-9a-f]+\) = 0' \
		"$KCHECK_RUNDIR/strace-zeroout.log"
	assert_success
	run grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x4\)' "$KCHECK_RUNDIR/strace-zeroout.log"
	assert_failure
}

# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL refuses a caller without CAP_SYS_ADMIN (EPERM)" {
	run -1 capsh --drop=cap_sys_admin -- -c "'$KCHECK_PROBE' chkpt-jrnl '$MNT/main' 1"
	assert_output EPERM
	run capsh --drop=cap_sys_admin -- -c "'$FSTRIM_EXT' --journal '$MNT/main'"
	assert_failure 1
	assert_line "fstrim-ext: CAP_SYS_ADMIN is required to trim filesystems"
}

# FS_IOC_CHKPT_JRNL is EXT4_IOC_CHECKPOINT under another number: on a
# subdirectory both act on the filesystem (their dry runs answer 0 alike);
# fstrim-ext itself refuses a path that is not a filesystem root.
# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL answers as EXT4_IOC_CHECKPOINT on a subdirectory; fstrim-ext refuses it" {
	run -0 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main/sub" 5
	assert_output 0
	run -0 "$KCHECK_PROBE" checkpoint "$MNT/main/sub" 5
	assert_output 0
	run "$FSTRIM_EXT" --journal "$MNT/main/sub"
	assert_failure 1
	assert_line "fstrim-ext: $MNT/main/sub: not the root of a filesystem (mounted on $MNT/main)"
}

# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL refuses an unknown flag and DO_DISCARD with DO_ZEROOUT (EINVAL)" {
	run -1 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 8
	assert_output EINVAL
	run -1 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 3
	assert_output EINVAL
	run -1 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 0x8000000000000001
	assert_output EINVAL
}

# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL refuses ext4 without a journal (ENODEV)" {
	run -1 "$KCHECK_PROBE" chkpt-jrnl "$MNT/nojournal" 1
	assert_output ENODEV
	run "$FSTRIM_EXT" --journal-only "$MNT/nojournal"
	assert_failure 1
	assert_line "fstrim-ext: $MNT/nojournal: the journal step is not supported: the filesystem has no journal"
}

# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL refuses discard on a device without it (EOPNOTSUPP)" {
	run -1 "$KCHECK_PROBE" chkpt-jrnl "$MNT/nodiscard" 1
	assert_output EOPNOTSUPP
	run -0 "$KCHECK_PROBE" chkpt-jrnl "$MNT/nodiscard" 0
	assert_output 0
	run "$FSTRIM_EXT" --journal-only "$MNT/nodiscard"
	assert_failure 1
	assert_line "fstrim-ext: $MNT/nodiscard: journal step not done: the journal device does not support discard (try --journal-erase=zeroout)"
}

# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL refuses a read-only mount (EROFS), dry run too" {
	mount -o remount,ro "$MNT/main"
	run -1 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 1
	local discard=$output
	run -1 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 5
	local dry=$output
	mount -o remount,rw "$MNT/main"
	[ "$discard" = EROFS ]
	[ "$dry" = EROFS ]
}

# The ioctl must not act while the filesystem is frozen (a snapshot may be
# under way): it waits in the freeze, and completes after the thaw.
# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL waits while the filesystem is frozen" {
	local out=$BATS_TEST_TMPDIR/answer pid state='' i before frozen

	# transactions in the journal, which the ioctl would discard
	journal_extents /dev/ubda > "$BATS_FILE_TMPDIR/journal-extents"
	yes FREEZE-MARKER | head -c 1M > "$MNT/main/frozen"
	sync
	fsfreeze -f "$MNT/main"
	before=$(journal_nonzero /dev/ubda)
	"$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 1 > "$out" &
	pid=$!
	# until the probe has ended (Z, gone) or sleeps uninterruptibly (D:
	# the freeze)
	for ((i = 0; i < 600; i++)); do
		state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || state=gone
		[[ $state == [DZ] || $state == gone ]] && break
		sleep 0.05
	done
	# (no /proc/PID/wchan: arch/um's __get_wchan() reads the task's stack
	# with unchecked loads, and a KASAN kernel reports each such read as
	# stack-out-of-bounds, make check-kernel-debug's kernel-log check)
	local during
	# a D state of its own (a read) is no wait in the freeze: the journal
	# must not have changed
	frozen=$(journal_nonzero /dev/ubda)
	during=$(cat "$out")
	fsfreeze -u "$MNT/main"
	wait "$pid" || true
	rm -f "$MNT/main/frozen"
	echo "while frozen: state $state, answer '${during}'," \
		"journal $before then $frozen non-zero bytes; after the thaw: '$(cat "$out")'"
	[ "$state" = D ]
	[ -z "$during" ]
	[ "$before" -gt 0 ]
	[ "$frozen" -eq "$before" ]
	run -0 cat "$out"
	assert_output 0
}

# A dry run takes no write access: on a frozen filesystem it answers at
# once, where taking write access sleeps until the thaw. The wait for it
# is bounded, and the thaw comes whatever it found, so that a probe asleep
# in the freeze cannot hang the guest.
# bats test_tags=root
@test "[patch 5] a FS_IOC_CHKPT_JRNL dry run (0x4) answers at once on a frozen filesystem" {
	local out=$BATS_TEST_TMPDIR/answer pid rc=0

	fsfreeze -f "$MNT/main"
	"$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 5 > "$out" 2>&1 &
	pid=$!
	timeout 60 tail -s 0.1 --pid="$pid" -f /dev/null || rc=$?
	fsfreeze -u "$MNT/main"
	wait "$pid" || true
	echo "frozen: the wait for the dry run ended with $rc (124: still asleep after 60 s)," \
		"answer '$(cat "$out")'"
	[ "$rc" -eq 0 ]
	run -0 cat "$out"
	assert_output 0
}

# The old value 0x2 (the dry run of an earlier version of this series) now
# zeroes the journal, as EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT does.
# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL with 0x2 (DO_ZEROOUT) zeroes the journal, read back with O_DIRECT" {
	local before after answer

	marked_journal /dev/ubdc "$MNT/nodiscard/z" ZEROOUT-MARKER
	before=$(journal_nonzero /dev/ubdc)
	answer=$("$KCHECK_PROBE" chkpt-jrnl "$MNT/nodiscard" 2) || true
	after=$(journal_nonzero /dev/ubdc)
	rm -f "$MNT"/nodiscard/z*
	echo "DO_ZEROOUT: answer '$answer', journal $before then $after non-zero bytes"
	[ "$answer" = 0 ]
	[ "$before" -gt 0 ]
	[ "$after" -eq 0 ]
}

# Mainline's EXT4_IOC_CHECKPOINT took no write access: on a read-only
# mount it checkpointed and discarded the journal.
# bats test_tags=root
@test "[patch 3] EXT4_IOC_CHECKPOINT refuses a read-only mount (EROFS), dry run too; the journal stays" {
	local before after discard dry

	marked_journal /dev/ubda "$MNT/main/ro" RO-MARKER
	mount -o remount,ro "$MNT/main"
	before=$(journal_nonzero /dev/ubda)
	discard=$("$KCHECK_PROBE" checkpoint "$MNT/main" 1) || true
	dry=$("$KCHECK_PROBE" checkpoint "$MNT/main" 4) || true
	after=$(journal_nonzero /dev/ubda)
	mount -o remount,rw "$MNT/main"
	rm -f "$MNT"/main/ro*
	echo "read-only: DISCARD '$discard', DRY_RUN '$dry';" \
		"journal $before then $after non-zero bytes"
	[ "$discard" = EROFS ]
	[ "$dry" = EROFS ]
	[ "$before" -gt 0 ]
	[ "$after" -eq "$before" ]
}

# Userspace detects FS_IOC_CHKPT_JRNL by its dry run, which must leave the
# journal as it is.
# bats test_tags=root
@test "[patch 5] a FS_IOC_CHKPT_JRNL dry run changes nothing; fstrim-ext --dry-run finds the ioctl by it" {
	local before after

	marked_journal /dev/ubda "$MNT/main/dry" DRY-RUN-MARKER
	before=$(journal_nonzero /dev/ubda)
	run -0 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 5
	assert_output 0
	after=$(journal_nonzero /dev/ubda)
	[ "$before" -gt 0 ]
	[ "$after" -eq "$before" ]
	run --separate-stderr strace -f -o "$KCHECK_RUNDIR/strace-dry-run.log" -e trace=ioctl \
		"$FSTRIM_EXT" --dry-run --journal "$MNT/main"
	assert_success
	assert_output "$MNT/main: 0 B (dry run) trimmed, journal discard possible via FS_IOC_CHKPT_JRNL (dry run)"
	run grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x8\), 0x[0-9a-f]+\) = 0' \
		"$KCHECK_RUNDIR/strace-dry-run.log"
	assert_success
	rm -f "$MNT"/main/dry*
	sync
	# leave main's journal erased, as the host checks at the end
	run -0 "$KCHECK_PROBE" chkpt-jrnl "$MNT/main" 1
	assert_output 0
}

# bats test_tags=root
@test "[patch 6] after the erase a buffered read of the journal region finds no old journal data" {
	local i stale direct

	journal_extents /dev/ubdd > "$BATS_FILE_TMPDIR/journal-extents"
	run -0 cat "$BATS_FILE_TMPDIR/journal-extents"
	assert_output --regexp '^[0-9]+ [0-9]+'
	mount -o data=journal /dev/ubdd "$MNT/djournal"
	# 48 MiB of marker lines through a 16 MiB journal: wrapped three times.
	for i in 1 2 3 4 5 6; do
		yes "JBD2-STALE-MARKER-$i" | head -c 8M > "$MNT/djournal/m$i"
		sync
	done
	# A backup or a forensic read of the journal through the block device.
	run count_in_journal /dev/ubdd JBD2-STALE-MARKER
	assert_success
	refute_output 0
	run -0 "$KCHECK_PROBE" checkpoint "$MNT/djournal" 2
	assert_output 0
	stale=$(count_in_journal /dev/ubdd JBD2-STALE-MARKER)
	direct=$(count_in_journal /dev/ubdd JBD2-STALE-MARKER iflag=direct)
	echo "marker lines after ZEROOUT: buffered $stale, O_DIRECT $direct" |
		tee "$KCHECK_RUNDIR/jbd2-erase.txt"
	umount "$MNT/djournal"
	[ "$direct" -eq 0 ]
	[ "$stale" -eq 0 ]
}

# The lock order of syzbot's "possible deadlock in ext4_bmap" (6.1-era): chattr
# +j and FIBMAP of a file with journalled data take i_rwsem, then the
# journal's j_checkpoint_mutex; the erase holds j_checkpoint_mutex while it
# maps journal blocks, which took the journal inode's i_rwsem in ext4_bmap()
# before "ext4, jbd2: add an optimized bmap for the journal inode". Both
# orders in one boot: the lockdep kernel of make check-kernel-debug reports
# the cycle if the erase still takes i_rwsem.
# bats test_tags=root
@test "[both] chattr +j, FIBMAP, then a journal erase on the same filesystem: file intact" {
	local f="$MNT/nodiscard/jdata"

	yes JDATA-ONE | head -c 1M > "$f"
	run chattr +j "$f"
	assert_success
	yes JDATA-TWO | head -c 1M > "$f"
	run filefrag -B "$f"
	assert_success
	assert_output --regexp ': [0-9]+ extents? found$'
	run -0 "$KCHECK_PROBE" checkpoint "$MNT/nodiscard" 2
	assert_output 0
	run chattr -j "$f"
	assert_success
	cmp <(yes JDATA-TWO | head -c 1M) "$f"
	rm "$f"
}

# bats test_tags=root
@test "[patch 7] htree leaf splits leave no deleted names in the directory, kept files intact" {
	local d="$MNT/htree/d" i n left bad=0 line

	mount /dev/ubde "$MNT/htree"
	mkdir "$d"
	for ((i = 1; i <= 1500; i++)); do
		printf -v n '%05d' "$i"
		echo "kept-$n" > "$d/KEPT-ENTRY-NAME-$n"
		echo "gone-$n" > "$d/GONE-ENTRY-NAME-$n"
	done
	sync
	rm -f "$d"/GONE-ENTRY-NAME-*
	sync
	umount "$MNT/htree"
	debugfs -R 'dump /d /tmp/htree-dir' /dev/ubde 2>/dev/null
	left=$(grep -a -o 'GONE-ENTRY-NAME-[0-9]*' /tmp/htree-dir | sort -u | wc -l)
	echo "deleted names left in the directory blocks: $left" |
		tee "$KCHECK_RUNDIR/htree-names.txt"
	mount /dev/ubde "$MNT/htree"
	for ((i = 1; i <= 1500; i++)); do
		printf -v n '%05d' "$i"
		read -r line < "$d/KEPT-ENTRY-NAME-$n" || line=
		[ "$line" = "kept-$n" ] || bad=$((bad + 1))
	done
	run -0 find "$d" -type f
	assert_line --partial KEPT-ENTRY-NAME-01500
	refute_line --partial GONE-ENTRY-NAME
	umount "$MNT/htree"
	[ "$bad" -eq 0 ]
	[ "$left" -eq 0 ]
}

# What --audit reads from the device after --journal on the htree
# filesystem of the test above: nothing recoverable with the series
# (status 0), deleted names in live directory blocks without it.
# bats test_tags=root
@test "[patch 7] fstrim-ext --audit finds nothing recoverable after --journal" {
	mount /dev/ubde "$MNT/htree"
	run --separate-stderr "$FSTRIM_EXT" --journal --audit "$MNT/htree"
	umount "$MNT/htree"
	# shellcheck disable=SC2154 # $stderr comes from run --separate-stderr
	printf '%s\n%s\n' "$output" "$stderr" | tee "$KCHECK_RUNDIR/audit.txt"
	[ "$status" -eq 0 ]
}

# Index splits, which the 4 KiB test above does not reach: a 1 KiB-block
# ext4, 2,000 names of 250 characters in one directory (three to a leaf),
# so that its htree's root fills, gets a second level (the root's entries
# copied down to a new node), and the nodes below it fill and split. The
# hash seed is fixed, so each run builds the same tree. The stale
# {hash, block} entries of the splits stay past the count of the old node
# and of the root without the series. /dev/ubdd is made again by the tests
# after this one.
# bats test_tags=root
@test "[patch 7] htree index splits and a level add leave nothing past an index block's count" {
	local m="$MNT/index" pad i n

	mkfs.ext4 -q -F -b 1024 \
		-E 'lazy_itable_init=0,lazy_journal_init=0,hash_seed=6d1c2a3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d' \
		/dev/ubdd
	mkdir -p "$m"
	mount /dev/ubdd "$m"
	mkdir "$m/d"
	printf -v pad '%244s' ''
	pad=${pad// /x}
	for ((i = 1; i <= 2000; i++)); do
		printf -v n '%05d' "$i"
		: > "$m/d/$n-$pad"
	done
	umount "$m"
	run -0 e2fsck -fn /dev/ubdd
	"${KCHECK_SLACK:?}" /dev/ubdd > "$BATS_TEST_TMPDIR/slack" || true
	tail -1 "$BATS_TEST_TMPDIR/slack" | tee "$KCHECK_RUNDIR/index-slack.txt"
	# the index blocks' lines and the summaries, not the leaves' lines
	run -0 grep -v 'past the name$' "$BATS_TEST_TMPDIR/slack"
	# the root and at least two nodes below it: a level added, a node split
	assert_line --regexp '^/dev/ubdd: ([3-9]|[1-9][0-9]+) index blocks, at most 2 levels; '
	assert_line --regexp '^/dev/ubdd: .* index blocks, .*; 0 with non-zero bytes past the count '
	# and the leaves of its splits as the test above checks them
	assert_line --regexp '^/dev/ubdd: .* live entries; 0 with non-zero bytes past the name '
	mount -o ro /dev/ubdd "$m"
	n=$(find "$m/d" -type f -name "*-$pad" | wc -l)
	umount "$m"
	[ "$n" -eq 2000 ]
}

# shutdown_answers IOCTL FLAGS DRYFLAGS: on a fresh ext4 shut down with
# EXT4_GOING_FLAGS_DEFAULT (0: frozen, synced, the journal left live, so
# that only the shutdown can stop a checkpoint), the probe's answers to
# IOCTL with FLAGS and with DRYFLAGS, on one line; the filesystem is then
# mounted once more (a replay if it needs one) and unmounted clean
shutdown_answers() {
	local a b

	crash_fs /dev/ubdd "$MNT/recovery" data=ordered
	yes SHUTDOWN-MARKER | head -c 1M > "$MNT/recovery/s1"
	sync
	"$KCHECK_PROBE" shutdown "$MNT/recovery" 0 > /dev/null
	a=$("$KCHECK_PROBE" "$1" "$MNT/recovery" "$2") || true
	b=$("$KCHECK_PROBE" "$1" "$MNT/recovery" "$3") || true
	umount "$MNT/recovery"
	mount /dev/ubdd "$MNT/recovery"
	umount "$MNT/recovery"
	echo "$a $b"
}

# bats test_tags=root
@test "[patch 3] EXT4_IOC_CHECKPOINT after EXT4_IOC_SHUTDOWN fails with EIO, dry run too" {
	run -0 shutdown_answers checkpoint 1 4
	assert_output "EIO EIO"
}

# bats test_tags=root
@test "[patch 5] FS_IOC_CHKPT_JRNL after EXT4_IOC_SHUTDOWN fails with EIO, dry run too" {
	run -0 shutdown_answers chkpt-jrnl 1 5
	assert_output "EIO EIO"
}

# bats test_tags=root
@test "[patch 9] with journal_discard_replay, a mount that replays the journal discards it, files intact" {
	local i n

	crash_fs /dev/ubdd "$MNT/recovery" data=journal
	for i in 1 2 3 4; do
		yes "RECOVERY-MARKER-$i" | head -c 1M > "$MNT/recovery/r$i"
	done
	sync
	crash "$MNT/recovery" /dev/ubdd
	run -0 count_in_journal /dev/ubdd RECOVERY-MARKER iflag=direct
	refute_output 0
	mount -o data=journal,journal_discard_replay /dev/ubdd "$MNT/recovery"
	n=$(journal_nonzero /dev/ubdd)
	umount "$MNT/recovery"
	echo "non-zero bytes in the journal after recovery with journal_discard_replay: $n" |
		tee "$KCHECK_RUNDIR/recovery-journal.txt"
	# The recovered files, read from the device: on stock 6.1 under UML,
	# reading them back through the filesystem after this recovery was
	# seen to hang, with or without the series.
	for i in 1 2 3 4; do
		yes "RECOVERY-MARKER-$i" | head -c 1M > "$BATS_TEST_TMPDIR/r$i"
		debugfs -R "dump /r$i $BATS_TEST_TMPDIR/got$i" /dev/ubdd 2>/dev/null
		run cmp "$BATS_TEST_TMPDIR/r$i" "$BATS_TEST_TMPDIR/got$i"
		assert_success
	done
	[ "$n" -eq 0 ]
}

# Orphan cleanup runs after the replay and writes transactions of its own:
# the discard must come after them, or they stay in the journal.
# bats test_tags=root
@test "[patch 9] the discard after a replay comes after orphan cleanup: the journal is left empty" {
	local n

	crash_fs /dev/ubdd "$MNT/recovery" data=ordered
	# fd 8: bats keeps fd 3 for its own output
	exec 8> "$MNT/recovery/orphan"
	yes ORPHAN-MARKER | head -c 1M >&8
	rm "$MNT/recovery/orphan"
	sync
	# the file stays an orphan: closed only once the filesystem is down
	run -0 "$KCHECK_PROBE" shutdown "$MNT/recovery"
	assert_output 0
	exec 8>&-
	umount "$MNT/recovery"
	mount -o journal_discard_replay /dev/ubdd "$MNT/recovery"
	n=$(journal_nonzero /dev/ubdd)
	run -0 ls -A "$MNT/recovery"
	umount "$MNT/recovery"
	assert_output lost+found
	echo "non-zero bytes in the journal after recovery and orphan cleanup: $n"
	[ "$n" -eq 0 ]
}

# replay_pending MARKER: a fresh data=journal ext4 on /dev/ubdd with a 1 MiB
# file /m of MARKER lines, crashed so that its journal is left to replay
replay_pending() {
	crash_fs /dev/ubdd "$MNT/recovery" data=journal
	yes "$1" | head -c 1M > "$MNT/recovery/m"
	sync
	crash "$MNT/recovery" /dev/ubdd
}

# A replay at a read-only mount (a root file system at boot) is discarded
# when the file system becomes writable: not while it is read-only, at the
# remount read-write.
# bats test_tags=root
@test "[patch 9] with journal_discard_replay, a replay at a read-only mount is discarded at the remount read-write" {
	local ro rw

	replay_pending ROREPLAY-MARKER
	mount -o ro,data=journal,journal_discard_replay /dev/ubdd "$MNT/recovery"
	ro=$(count_in_journal /dev/ubdd ROREPLAY-MARKER iflag=direct)
	mount -o remount,rw /dev/ubdd "$MNT/recovery"
	rw=$(journal_nonzero /dev/ubdd)
	umount "$MNT/recovery"
	# read from the device, as in the test above
	yes "ROREPLAY-MARKER" | head -c 1M > "$BATS_TEST_TMPDIR/m1"
	debugfs -R "dump /m $BATS_TEST_TMPDIR/got" /dev/ubdd 2>/dev/null
	run -0 cmp "$BATS_TEST_TMPDIR/m1" "$BATS_TEST_TMPDIR/got"
	echo "marker lines in the journal while read-only: $ro; non-zero bytes after the remount read-write: $rw"
	[ "$ro" -gt 0 ]
	[ "$rw" -eq 0 ]
}

# The discard is its own opt-in: -o discard alone does not discard the
# journal after a replay, and the option only acts at the first read-write
# mount after the replay, not at a later remount that adds it.
# bats test_tags=root
@test "[patch 9] -o discard alone does not discard the replayed journal, nor does a later remount with journal_discard_replay" {
	local plain later rc=0 opts

	replay_pending OPTIN-MARKER
	mount -o data=journal,discard /dev/ubdd "$MNT/recovery"
	plain=$(count_in_journal /dev/ubdd OPTIN-MARKER iflag=direct)
	mount -o remount,journal_discard_replay /dev/ubdd "$MNT/recovery" || rc=$?
	opts=$(grep -w "$MNT/recovery" /proc/mounts)
	later=$(count_in_journal /dev/ubdd OPTIN-MARKER iflag=direct)
	# unmounted before any check, so that a failure leaves nothing mounted
	umount "$MNT/recovery"
	echo "marker lines in the journal with -o discard: $plain; after the remount: $later"
	[ "$rc" -eq 0 ]
	[[ $opts == *journal_discard_replay* ]]
	[ "$plain" -gt 0 ]
	[ "$later" -gt 0 ]
}

# Only a recovery that replayed transactions discards: a journal that was
# checkpointed before the crash has nothing to replay, so stays as it was.
# bats test_tags=root
@test "[patch 9] with journal_discard_replay, a recovery that replays nothing leaves the journal alone" {
	crash_fs /dev/ubdd "$MNT/recovery" data=journal,noatime
	yes "NOREPLAY-MARKER" | head -c 1M > "$MNT/recovery/n1"
	sync
	run -0 "$KCHECK_PROBE" checkpoint "$MNT/recovery" 0
	assert_output 0
	crash "$MNT/recovery" /dev/ubdd
	mount -o data=journal,journal_discard_replay,noatime /dev/ubdd "$MNT/recovery"
	umount "$MNT/recovery"
	run -0 count_in_journal /dev/ubdd NOREPLAY-MARKER iflag=direct
	refute_output 0
}

# inode_raw DEVICE INODE: the on-disk inode INODE of DEVICE (unmounted), as
# the inode table holds it (debugfs's imap finds where)
inode_raw() {
	local blk off isize

	read -r blk off < <(debugfs -R "imap <$2>" "$1" 2>/dev/null |
		sed -n 's/.*located at block \([0-9]*\), offset 0x\([0-9a-f]*\).*/\1 \2/p')
	isize=$(dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Inode size: *//p')
	dd if="$1" bs=4096 skip="$blk" count=1 iflag=direct 2>/dev/null |
		tail -c +$((0x$off + 1)) | head -c "$isize"
}

# inode_remnants DEVICE INODE PATTERN: lines matching PATTERN in the on-disk
# inode INODE of DEVICE (unmounted)
inode_remnants() {
	inode_raw "$1" "$2" | grep -a -c -- "$3" || true
}

# inode_leftovers DEVICE INODE: the fields of the on-disk inode INODE of
# DEVICE (unmounted) that are not zero, by their names in struct ext4_inode,
# but for the ones a freed inode keeps: i_dtime, i_extra_isize and the
# checksum (l_i_checksum_lo, i_checksum_hi). "no i_dtime" if i_dtime is 0.
inode_leftovers() {
	inode_raw "$1" "$2" | od -An -v -tu1 -w1 | awk '
		BEGIN {
			n = split("0 i_mode 2 i_uid 4 i_size_lo 8 i_atime 12 i_ctime " \
				"16 i_mtime 20 i_dtime 24 i_gid 26 i_links_count " \
				"28 i_blocks_lo 32 i_flags 36 l_i_version 40 i_block " \
				"100 i_generation 104 i_file_acl_lo 108 i_size_high " \
				"112 i_obso_faddr 116 l_i_blocks_high 118 l_i_file_acl_high " \
				"120 l_i_uid_high 122 l_i_gid_high 124 l_i_checksum_lo " \
				"126 l_i_reserved 128 i_extra_isize 130 i_checksum_hi " \
				"132 i_ctime_extra 136 i_mtime_extra 140 i_atime_extra " \
				"144 i_crtime 148 i_crtime_extra 152 i_version_hi " \
				"156 i_projid 160 in-inode_xattrs", f, " ")
			for (i = 1; i < n; i += 2)
				name[f[i]] = f[i + 1]
			o = 0
		}
		{
			if (o in name)
				field = name[o]
			if ($1 != 0 && field == "i_dtime")
				dtime = 1
			else if ($1 != 0 && field !~ /^(i_dtime|l_i_checksum_lo|i_extra_isize|i_checksum_hi)$/ &&
			    !(field in seen)) {
				seen[field] = 1
				out = out " " field
			}
			o++
		}
		END {
			if (!dtime)
				out = out " no i_dtime"
			print substr(out, 2)
		}'
}

# bats test_tags=root
@test "[patch 10] a freed inode keeps neither inline data nor in-inode xattrs" {
	local d="$MNT/recovery" ino_inline ino_xattr inline xattr

	mkfs.ext4 -q -F -b 4096 -I 256 -O inline_data,metadata_csum \
		-E 'lazy_itable_init=0,lazy_journal_init=0' -J size=8 /dev/ubdd
	mount /dev/ubdd "$d"
	echo "INLINE-REMNANT-CONTENT" > "$d/inline"
	: > "$d/xattr"
	setfattr -n user.secret -v "XATTR-REMNANT-VALUE" "$d/xattr"
	ino_inline=$(stat -c %i "$d/inline")
	ino_xattr=$(stat -c %i "$d/xattr")
	run -0 lsattr -l "$d/inline"
	assert_output --partial Inline_Data
	sync
	rm "$d/inline" "$d/xattr"
	sync
	umount "$d"
	inline=$(inode_remnants /dev/ubdd "$ino_inline" INLINE-REMNANT)
	xattr=$(inode_remnants /dev/ubdd "$ino_xattr" XATTR-REMNANT)
	echo "freed inodes: inline data in $inline, xattr value in $xattr" |
		tee "$KCHECK_RUNDIR/inode-wipe.txt"
	run e2fsck -fn /dev/ubdd
	assert_success
	[ "$inline" -eq 0 ]
	[ "$xattr" -eq 0 ]
}

# The whole freed inode, read back after the journal step: zero but for
# i_dtime, i_extra_isize and the checksum, whatever the file was. Without
# the series each keeps its mode, owner, times, flags and more (with
# inline_data its i_size, with a device node the device number in
# i_block). debugfs must find each checksum good.
# bats test_tags=root
@test "[patch 10] after rm and --journal each freed inode is zero but i_dtime and its checksum" {
	local d="$MNT/recovery" f left bad=0
	local -A ino
	local files=(data inline xattr symlink device dir dir/inline)

	mkfs.ext4 -q -F -b 4096 -I 256 -O inline_data,metadata_csum \
		-E 'lazy_itable_init=0,lazy_journal_init=0' -J size=8 /dev/ubdd
	mount /dev/ubdd "$d"
	yes DATA-REMNANT | head -c 65536 > "$d/data"
	echo INLINE-REMNANT > "$d/inline"
	: > "$d/xattr"
	setfattr -n user.secret -v XATTR-REMNANT "$d/xattr"
	ln -s SYMLINK-REMNANT "$d/symlink"
	mknod "$d/device" b 8 17
	mkdir "$d/dir"
	echo DIR-INLINE-REMNANT > "$d/dir/inline"
	chown -h 1234:5678 "${files[@]/#/$d/}"
	for f in "${files[@]}"; do
		ino[$f]=$(stat -c %i "$d/$f")
	done
	sync
	rm -r "$d/data" "$d/inline" "$d/xattr" "$d/symlink" "$d/device" "$d/dir"
	sync
	run -0 "$FSTRIM_EXT" --journal "$d"
	umount "$d"
	for f in "${files[@]}"; do
		left=$(inode_leftovers /dev/ubdd "${ino[$f]}")
		# debugfs checks a free inode's checksum, which e2fsck may skip
		if debugfs -R "stat <${ino[$f]}>" /dev/ubdd 2>&1 |
			grep -q 'checksum does not match'; then
			left+="${left:+ }(checksum does not match)"
		fi
		[ -z "$left" ] || bad=$((bad + 1))
		echo "$f (inode ${ino[$f]}): ${left:-zero but i_dtime and the checksum}"
	done > "$KCHECK_RUNDIR/inode-zero.txt"
	echo "freed inodes with more than i_dtime and the checksum: $bad of ${#files[@]}" |
		tee -a "$KCHECK_RUNDIR/inode-zero.txt"
	cat "$KCHECK_RUNDIR/inode-zero.txt"
	run e2fsck -fn /dev/ubdd
	assert_success
	[ "$bad" -eq 0 ]
}

# Patch 2: a journal flush (EXT4_IOC_CHECKPOINT here; a freeze flushes
# too) marks the journal empty on disk, and recovery reads nothing of a
# journal marked so, fast commits included, until the next full commit.
# An fsync made in between must still survive a crash. commit=600 keeps
# the commit timer out of the window, as a busy server's fsync right after
# fstrim-ext --journal would find it.
# bats test_tags=root
@test "[patch 2] on fast_commit, a file fsynced right after a checkpoint is there after a crash" {
	local fc0 fc1 got=0

	mkfs.ext4 -q -F -b 4096 -O fast_commit \
		-E 'lazy_itable_init=0,lazy_journal_init=0' -J size=8 /dev/ubdd
	mount -o commit=600 /dev/ubdd "$MNT/recovery"
	echo before > "$MNT/recovery/a"
	sync
	run -0 "$KCHECK_PROBE" checkpoint "$MNT/recovery" 0
	assert_output 0
	yes FSYNCED-AFTER-CHECKPOINT | head -c 65536 > "$BATS_TEST_TMPDIR/b"
	fc0=$(fc_commits /dev/ubdd)
	dd if="$BATS_TEST_TMPDIR/b" of="$MNT/recovery/b" bs=65536 conv=fsync status=none
	fc1=$(fc_commits /dev/ubdd)
	crash "$MNT/recovery" /dev/ubdd
	# the replay at this mount; the file read from the device after it
	mount /dev/ubdd "$MNT/recovery"
	umount "$MNT/recovery"
	debugfs -R "dump /b $BATS_TEST_TMPDIR/got" /dev/ubdd 2>/dev/null
	cmp -s "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/got" && got=1
	echo "# fast commits made by the fsync: $((fc1 - fc0)); the file after the crash:" \
		"$( ((got)) && echo intact || echo lost)" >&3
	run -0 e2fsck -fn /dev/ubdd
	((got)) || fail "the file fsynced after the checkpoint was lost in the crash"
}

# bats test_tags=root
@test "[stock] fstrim-ext --journal falls back to EXT4_IOC_CHECKPOINT and succeeds" {
	[ "$KCHECK_FLAVOR" = stock ] || skip "kernel has FS_IOC_CHKPT_JRNL"
	run --separate-stderr strace -f -o "$KCHECK_RUNDIR/strace-fallback.log" -e trace=ioctl \
		"$FSTRIM_EXT" -v --journal "$MNT/main"
	assert_success
	assert_output --regexp "^$MNT/main: .* trimmed, journal checkpointed and discarded via EXT4_IOC_CHECKPOINT\$"
	run grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x4\), 0x[0-9a-f]+\) = 0' \
		"$KCHECK_RUNDIR/strace-fallback.log"
	assert_success
}

# bats test_tags=root
@test "[both] the discard-less journal can still be erased by zeroout" {
	run -0 "$KCHECK_PROBE" checkpoint "$MNT/nodiscard" 2
	assert_output 0
}

# Patch 4: FITRIM drops the group lock for every discard; a block freed
# then, behind its walk, is not trimmed by it, and without the fix the
# group is marked trimmed when the walk ends, so the next FITRIM skips it.
# chkpt-probe trim-race writes a victim file low in the only group of an
# ext4 without a journal (frees take effect at once there), then a file
# with every other block punched out above it (3000 one-block free
# extents: one discard each, a long walk), starts a FITRIM, deletes the
# victim 20 ms later, and after a second FITRIM reads the victim's blocks
# back with O_DIRECT (ubd punches a hole for a discard: they read zero
# once trimmed). A round whose delete did not fall inside the first
# FITRIM proves nothing either way; one at least must.
# bats test_tags=root
@test "[patch 4] a block freed behind a running FITRIM is trimmed by the next FITRIM" {
	local d="$MNT/nojournal" r hit=0 left=0

	for r in 1 2 3; do
		umount "$d" 2>/dev/null || true
		mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0 -O ^has_journal /dev/ubdb
		mount /dev/ubdb "$d"
		run -0 "$KCHECK_PROBE" trim-race "$d" /dev/ubdb 3000
		echo "# round $r: $output" >&3
		[[ $output != *"inside the first FITRIM: yes"* ]] || hit=$((hit + 1))
		[[ $output =~ holding\ data:\ ([0-9]+)\ of ]] || fail "unexpected output: $output"
		left=$((left + BASH_REMATCH[1]))
		umount "$d"
		run -0 e2fsck -fn /dev/ubdb
	done
	((hit > 0)) || fail "no delete fell inside a FITRIM: the race was not run"
	((left == 0)) || fail "$left victim blocks still hold their data after the second FITRIM"
}

# fast_commit: a journal checkpoint can deadlock with an fsync's fast
# commit (reproduced on stock 6.1 and 6.12), and after a checkpoint the
# fast commits until the next full commit are not replayed after a crash
# (include/ext4-ioctl.h). Where the kernel does not advertise both fixes,
# fstrim-ext issues no checkpoint at all: the run says why, fails, and
# the writer is never held up. Where it does, the journal step runs beside
# the same writer and succeeds. /dev/ubdb is made again for it, once the
# test of ext4 without a journal is done with it.
# bats test_tags=root
@test "[both] fast_commit beside an fsync writer: no checkpoint without the fix, nothing hangs" {
	local d="$MNT/nojournal" stop=/tmp/fc-writer.stop pid before after i r n rc runs=1
	local -a st=() out=() err=()

	umount "$d" 2>/dev/null || true
	mkfs.ext4 -q -F -b 4096 -O fast_commit /dev/ubdb
	mount /dev/ubdb "$d"
	mkdir "$d/db"
	rm -f "$stop"
	(
		i=0
		while [[ ! -e $stop ]]; do
			echo "row $i" | dd of="$d/db/f$((i % 20))" conv=fsync status=none
			i=$((i + 1))
			# renamed into place: a reader never sees it empty
			echo "$i" >/tmp/fc-writer.count.new &&
				mv -f /tmp/fc-writer.count.new /tmp/fc-writer.count
		done
	) &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		[[ -s /tmp/fc-writer.count ]] && break
		sleep 0.1
	done
	[[ -s /tmp/fc-writer.count ]] || fail "the writer wrote nothing in 60 s"

	# with the fix, the weekly run's test of tests/busy.bats: run after run
	# (the fast commits the writer makes after each erase were taken for
	# old data in 6 of 14 runs on 6.1, before the read back judged the
	# fast-commit area by their transaction ids)
	local fixed=0 why
	[[ ! -e /sys/fs/ext4/features/jbd2_fc_checkpoint_fix ||
		! -e /sys/fs/ext4/features/jbd2_fc_flush_fix ]] || fixed=1 runs=6
	if [[ ! -e /sys/fs/ext4/features/jbd2_fc_checkpoint_fix ]]; then
		why="the filesystem has fast_commit, and on this kernel a journal checkpoint can deadlock with an fsync (no /sys/fs/ext4/features/jbd2_fc_checkpoint_fix)"
	else
		why="the filesystem has fast_commit, and on this kernel an fsync right after a journal checkpoint is not replayed after a crash (no /sys/fs/ext4/features/jbd2_fc_flush_fix)"
	fi
	for ((r = 0; r < runs; r++)); do
		run --separate-stderr timeout -k 5 120 strace -f -o "$KCHECK_RUNDIR/strace-fc-$r.log" \
			-e trace=ioctl "$FSTRIM_EXT" -v --journal "$d"
		rc=$status
		st+=("$rc") out+=("$output") err+=("$stderr")
	done
	before=$(cat /tmp/fc-writer.count)
	sleep 1
	after=$(cat /tmp/fc-writer.count)
	touch "$stop"
	wait "$pid"
	umount "$d"
	run -0 e2fsck -fn /dev/ubdb

	((after > before)) || fail "the writer stopped: $before then $after fsyncs"
	for ((r = 0; r < runs; r++)); do
		if ((fixed)); then
			[ "${st[r]}" -eq 0 ] || fail "run $r: status ${st[r]}: ${out[r]} / ${err[r]}"
			[[ ${out[r]} =~ ^"$d: ".*" trimmed, journal checkpointed and discarded via " ]] ||
				fail "run $r: output: ${out[r]}"
			# one checkpoint: the writer's new transactions and fast
			# commits are not old data, so no second erase; never a freeze
			n=$(grep -c -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, 0x[48]\), 0x[0-9a-f]+\) = 0' \
				"$KCHECK_RUNDIR/strace-fc-$r.log")
			((n == 1)) ||
				fail "run $r: $n checkpoints: $(grep 0x2b "$KCHECK_RUNDIR/strace-fc-$r.log")"
			! grep -E 'FIFREEZE|FITHAW' "$KCHECK_RUNDIR/strace-fc-$r.log" ||
				fail "run $r froze the filesystem"
		else
			[ "${st[r]}" -eq 1 ] || fail "status ${st[r]} (124: timed out): ${out[r]} / ${err[r]}"
			[[ ${err[r]} == *"fstrim-ext: $d: journal step not done: $why"* ]] ||
				fail "stderr: ${err[r]}"
			! grep -E '_IOC\(_IOC_WRITE, 0x66, 0x2b, ' "$KCHECK_RUNDIR/strace-fc-$r.log" ||
				fail "a journal ioctl was issued"
		fi
	done
}

# fc_commits DEVICE: the fast commits ext4 made on DEVICE since the mount
fc_commits() {
	sed -n 's/^\([0-9]*\) commits$/\1/p' "/proc/fs/ext4/${1#/dev/}/fc_info"
}

# Patch 1: checkpoints (EXT4_IOC_CHECKPOINT holds the journal's update
# barrier while it flushes) beside fsyncs that make fast commits. Without
# the fix the two can wait for each other for good: measured on the stock
# kernels with this test (kernel/README). The checkpoints must all return,
# none taking 60 s, every writer must go on fsyncing, and fast commits must
# have been made meanwhile (or the race was never run). Checkpoints in
# batches of KCHECK_FC_ROUNDS until KCHECK_FC_SECONDS (60) have passed,
# alternating the DISCARD flag and no flag, from one process (chkpt-probe
# checkpoints), beside four writers (chkpt-probe fsync-loop); the round
# reached is in $KCHECK_RUNDIR/fc-progress for the host. A task
# stuck in the kernel cannot be killed, and waiting for it, as timeout(1)
# would, would take for ever: the test polls instead, and a hang is a
# failure 60 s after the last checkpoint that returned. It runs on the
# stock kernel too, where it must fail: it is the last test, so a hang
# stops nothing after it; the background tasks hold no descriptor of bats
# (3>&-), so bats ends; the filesystem stays mounted (teardown_file).
# bats test_tags=root
@test "[patch 1] fast_commit: checkpoints beside four fsync writers all return, and the writers go on" {
	local d="$MNT/nojournal" stop=/tmp/fc-race.stop rounds=${KCHECK_FC_ROUNDS:-300}
	local seconds=${KCHECK_FC_SECONDS:-60} start batches=0
	local progress="$KCHECK_RUNDIR/fc-progress" pids=() before=() k t p cur last='' still=0
	local counts='' fc0 fc1 n

	[[ $KCHECK_FLAVOR == stock || -e /sys/fs/ext4/features/jbd2_fc_checkpoint_fix ]] ||
		fail "the patched kernel does not advertise jbd2_fc_checkpoint_fix"
	umount "$d" 2>/dev/null || true
	mkfs.ext4 -q -F -b 4096 -O fast_commit /dev/ubdb
	mount -o discard /dev/ubdb "$d"
	rm -f "$stop" /tmp/fc-race.w* "$progress"
	for k in 1 2 3 4; do
		mkdir "$d/w$k"
		"$KCHECK_PROBE" fsync-loop "$d/w$k" "/tmp/fc-race.w$k" "$stop" \
			>/dev/null 2>&1 3>&- &
		pids+=($!)
	done
	for k in 1 2 3 4; do
		for ((t = 0; t < 60; t++)); do
			[[ -s /tmp/fc-race.w$k ]] && break
			sleep 1
		done
		read -r n 2>/dev/null <"/tmp/fc-race.w$k" || fail "writer $k wrote nothing in 60 s"
		before+=("$n")
	done
	fc0=$(fc_commits /dev/ubdb)

	# batches of $rounds until $seconds have passed: the race is not met
	# at a fixed checkpoint (stock 6.1 once passed 300 without it)
	start=$SECONDS
	while ((batches == 0 || SECONDS - start < seconds)); do
		batches=$((batches + 1))
		"$KCHECK_PROBE" checkpoints "$d" "$rounds" "$progress" >/tmp/fc-race.out 2>&1 3>&- &
		p=$!
		while kill -0 "$p" 2>/dev/null; do
			{ read -r cur <"$progress"; } 2>/dev/null || cur=''
			cur="batch $batches: $cur"
			if [[ $cur == "$last" ]]; then
				still=$((still + 1))
				if ((still >= 60)); then
					touch /tmp/fc-hung "$KCHECK_RUNDIR/fc-hung"
					fail "no checkpoint returned in 60 s: $cur: hung"
				fi
			else
				still=0 last=$cur
			fi
			sleep 1
		done
		wait "$p" || fail "$(cat /tmp/fc-race.out)"
	done
	fc1=$(fc_commits /dev/ubdb)

	touch "$stop"
	for k in 1 2 3 4; do
		for ((t = 0; t < 60; t++)); do
			kill -0 "${pids[k - 1]}" 2>/dev/null || break
			sleep 1
		done
		if kill -0 "${pids[k - 1]}" 2>/dev/null; then
			touch /tmp/fc-hung "$KCHECK_RUNDIR/fc-hung"
			fail "writer $k did not stop in 60 s: hung"
		fi
		wait "${pids[k - 1]}" || fail "writer $k failed"
		read -r n <"/tmp/fc-race.w$k"
		((n > before[k - 1])) || fail "writer $k made no fsync during the checkpoints"
		counts+=" $((n - before[k - 1]))"
	done
	echo "# $((batches * rounds)) checkpoints in $((SECONDS - start)) s; fsyncs of each writer meanwhile:$counts;" \
		"fast commits $((fc1 - fc0))" >&3
	((fc1 > fc0)) || fail "no fast commit was made during the checkpoints"
	umount "$d"
	run -0 e2fsck -fn /dev/ubdb
}
