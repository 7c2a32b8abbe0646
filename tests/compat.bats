#!/usr/bin/env bats
# Older libraries: what fstrim-ext does itself where libmount or
# libsmartcols lacks a feature (include/compat.h, lib/report-json.c,
# lib/report-json-text.c) must give what the library would. make
# check-legacy runs every suite against util-linux 2.32 and e2fsprogs 1.45.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}

setup() {
	load test_helper/common-setup
	_common_setup
	UNIT="${top_builddir:-$top_srcdir}/tests/unit"
}

teardown() {
	_common_teardown
}

# Run test_compat with /proc/cmdline replaced by the file $1, in a private
# mount namespace.
run_with_cmdline() {
	# shellcheck disable=SC2016 # expanded by the inner sh
	run -0 unshare -m sh -c 'mount --bind "$1" /proc/cmdline && "$2" /proc/cmdline' \
		- "$1" "$UNIT/test_compat"
}

@test "--version names the libraries loaded, and --help and --version the same notes" {
	run -0 "$FSTRIM_EXT" --version
	assert_line --index 0 --regexp '^fstrim-ext [0-9]+\.[0-9]+'
	assert_line --index 1 --regexp \
		'^libmount [0-9.]+, libblkid [0-9.]+, libsmartcols [0-9.]+, libext2fs [0-9.]+$'
	local notes
	notes=$(sed -n '/^Built against older libraries:$/,$p' <<<"$output")
	run -0 "$FSTRIM_EXT" --help
	assert_equal "$(sed -n '/^Built against older libraries:$/,/^$/p' <<<"$output" |
		sed '/^$/d')" "$notes"
}

@test "--json as written for libsmartcols before 2.38 and before 2.33: the same document" {
	require_cmd jq
	local prog doc variant
	for variant in nolists notypes; do
		prog="$UNIT/test_report_json_$variant"
		[[ -x $prog ]] || fail "$prog is not built (make check builds it)"
	done
	for doc in all empty audit; do
		run -0 "$UNIT/test_report_json" "$doc"
		local native
		native=$(jq -S . <<<"$output") || fail "not JSON: $output"
		for variant in nolists notypes; do
			run -0 "$UNIT/test_report_json_$variant" "$doc"
			assert_equal "$(jq -S . <<<"$output")" "$native"
		done
	done
	# lists and booleans that may be null are there, as lists and booleans
	run -0 "$UNIT/test_report_json_notypes" audit
	python3 -m json.tool <<<"$output" >/dev/null || fail "python's json rejects: $output"
	assert_equal "$(jq -c '.filesystems[0] | [.warnings, .audit_directories, .audit_found,
		.audit_journal_blocks, .dry_run] | map(type)' <<<"$output")" \
		'["array","array","boolean","number","boolean"]'
}

# bats test_tags=root
@test "-A without libmount 2.34: the root device from root= as libmount finds it" {
	require_root
	require_cmd blkid
	make_loop_fs ext4 16
	local prog="$UNIT/test_compat" uuid devno maj min hex spec cmdline
	[[ -x $prog ]] || fail "$prog is not built (make check builds it)"
	uuid=$(blkid -o value -s UUID "$LOOPDEV")
	devno=$(stat -L -c '%t %T' "$LOOPDEV")
	maj=$((16#${devno% *}))
	min=$((16#${devno#* }))
	# the kernel's encoding of a dev_t, as root= takes it in hexadecimal
	hex=$(printf '%x' $(((min & 0xff) | (maj << 8) | ((min & ~0xff) << 12))))
	cmdline="$BATS_TEST_TMPDIR/cmdline"
	for spec in "$LOOPDEV" "UUID=$uuid" "$maj:$min" "$hex"; do
		printf 'BOOT_IMAGE=/vmlinuz root=/dev/nonexistent ro root=%s quiet\n' "$spec" \
			>"$cmdline"
		run_with_cmdline "$cmdline"
		assert_line --index 0 "compat: 0 $LOOPDEV"
		# libmount's own answer, where it has mnt_guess_system_root()
		if ((${#lines[@]} > 1)); then
			assert_line --index 1 "libmount: 0 $LOOPDEV"
		fi
	done
	printf 'BOOT_IMAGE=/vmlinuz ro quiet\n' >"$cmdline"
	run_with_cmdline "$cmdline"
	assert_line --index 0 "compat: 1 -"
	if ((${#lines[@]} > 1)); then
		assert_line --index 1 "libmount: 1 -"
	fi
}
