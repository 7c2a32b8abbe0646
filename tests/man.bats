#!/usr/bin/env bats
# shellcheck disable=SC2154  # top_srcdir comes from the environment
# The man page: it lints clean, has its sections and version, and it, the
# completion and --help name the same options.

# per-test timeout: see tests/test_helper/common-setup.bash
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

setup() {
	load test_helper/common-setup
	load test_helper/dist
	_common_setup
	make_man "$BATS_TEST_TMPDIR/man"
	PAGE="$BATS_TEST_TMPDIR/man/man8/fstrim-ext.8"
}

teardown() {
	_common_teardown
}

@test "man page: mandoc -T lint reports nothing" {
	require_cmd mandoc
	run mandoc -T lint -W all "$PAGE"
	assert_success
	assert_output ''
}

@test "man page: groff -man -ww -z reports nothing" {
	require_cmd groff
	run groff -man -ww -z "$PAGE"
	assert_success
	assert_output ''
}

@test "man page: has the sections a distribution expects" {
	require_cmd mandoc
	run bash -c 'mandoc -T ascii "$1" | col -b | grep -E "^[A-Z]"' bash "$PAGE"
	assert_success
	local section
	for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" FILES SECURITY \
		EXAMPLES "DIFFERENCES FROM FSTRIM" "SEE ALSO"; do
		assert_line "$section"
	done
}

@test "man page: carries the version of fstrim-ext --version" {
	local version
	version=$("$FSTRIM_EXT" --version | head -n1 | grep -oE '[0-9]+(\.[0-9]+)+[^ ]*' | tail -n1)
	run -0 grep -c '@PACKAGE_VERSION@' "$top_srcdir/man/fstrim-ext.8.in"
	assert_output 1
	# the page make built, when there is one
	built="${top_builddir:-$top_srcdir}/man/fstrim-ext.8"
	[[ -f $built ]] || built=$PAGE
	run -0 grep -E '^\.TH ' "$built"
	assert_output --partial "\"fstrim-ext $version\""
	refute_output --partial @
}

@test "man page: describes every option of --help, short and long" {
	local opt items
	items=$(man_option_items "$PAGE")
	for opt in $(help_long_options) $(help_short_options); do
		grep -qx -- "$opt" <<<"$items" || fail "$opt is in --help, not in OPTIONS of the man page"
	done
}

@test "man page: every option it names is in --help" {
	local opt help
	help=$(help_long_options; help_short_options)
	for opt in $(man_option_items "$PAGE"); do
		grep -qx -- "$opt" <<<"$help" || fail "OPTIONS describes $opt, which --help does not list"
	done
	# and every long option named anywhere (configure's own aside)
	for opt in $(man_text "$PAGE" | grep -oE -- '--[[:alnum:]][[:alnum:]-]*' | sort -u); do
		[[ $opt == --with-cron ]] && continue
		grep -qx -- "$opt" <<<"$help" || fail "the man page names $opt, which --help does not list"
	done
}

@test "completion: offers every long option of --help, and only those" {
	local opt comp help
	comp=$(completion_long_options)
	help=$(help_long_options)
	for opt in $help; do
		grep -qx -- "$opt" <<<"$comp" || fail "$opt is in --help, not in the completion"
	done
	for opt in $comp; do
		grep -qx -- "$opt" <<<"$help" || fail "the completion offers $opt, which --help does not list"
	done
}

@test "completion: knows which options take a value, as --help says" {
	local opt line
	# the options that --help shows with <arg> must complete a value or
	# nothing, never options; --help and --version end the command line;
	# every other option must let options follow
	while read -r line; do
		opt=$(grep -oE -- '--[[:alnum:]][[:alnum:]-]*' <<<"$line" | head -n1)
		# shellcheck disable=SC2016  # expanded by the inner bash
		run -0 bash -c 'source "$1"; COMP_WORDS=(fstrim-ext "$2" -); COMP_CWORD=2
			_fstrim_ext; printf "%s\n" "${COMPREPLY[@]}"' bash \
			"$top_srcdir/bash-completion/fstrim-ext" "$opt"
		if [[ $line == *"<"* ]]; then
			[[ $'\n'$output != *$'\n'--* ]] ||
				fail "$opt takes a value, the completion offers options"
		elif [[ $opt == --help || $opt == --version ]]; then
			[[ -z $output ]] || fail "the completion offers something after $opt: $output"
		else
			[[ $'\n'$output == *$'\n'--* ]] ||
				fail "$opt takes no value, the completion offers no option after it"
		fi
	done < <("$FSTRIM_EXT" --help | grep -E '^ +(-[[:alnum:]], )?--')
}
