# shellcheck shell=bash
# journal_extents DEVICE|IMAGE: the physical extents of the journal inode
# of an unmounted ext4, as "START COUNT" lines in filesystem blocks, from
# debugfs. Sourced by kernel/check-kernel.sh on the host and by
# tests/kernel/guest.bats in the guest.
journal_extents() {
	debugfs -R 'stat <8>' "$1" 2>/dev/null |
		sed -n '/^EXTENTS:/,$p' | tr ',' '\n' |
		sed -n 's/.*([0-9-]*):\([0-9]*\)-\([0-9]*\).*/\1 \2/p;
			s/.*([0-9]*):\([0-9]*\)$/\1 \1/p' |
		while read -r first last; do
			echo "$first $((last - first + 1))"
		done
}
