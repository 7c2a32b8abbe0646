# awk -f tools/unchecked-run.awk FILE...: every bats `run` whose exit status
# is never looked at, as FILE:LINE; exits 1 if it finds one.
# A run is checked when it is written `run -N` or `run !`, or when one of
# these follows it before the next run or the end of its test or function:
# assert_success, assert_failure, a test of $status ([ "$status" ...,
# [[ $status ..., (( status ...), an assert_equal of $status, or a copy of
# it for a later test (rc=$status).
# A helper function that ends with an unchecked run (such as run_traced)
# leaves the check to its callers: a call of it counts as a run; a call of
# any other function that runs `run` (such as sandbox_run) overwrites
# $status, so it ends the scope of the run before it. setup and
# teardown are no helpers: they are checked as tests are. Here-documents
# are text, not commands.

function is_check(s) {
	return s ~ /assert_success|assert_failure/ ||
		s ~ /(\[\[?|\(\() *"?\$?\{?status([^A-Za-z0-9_]|$)/ ||
		s ~ /assert_equal.*\$\{?status([^A-Za-z0-9_]|$)/ ||
		s ~ /[A-Za-z_][A-Za-z0-9_]*=\$\{?status([^A-Za-z0-9_]|$)/
}

# the arguments of the run or wrapper call that starts s, or "" if s
# starts none (variable assignments before the command are skipped)
function run_args(s,    w) {
	sub(/^[ \t]*([A-Za-z_][A-Za-z0-9_]*=[^ \t]* +)*/, "", s)
	w = s
	sub(/[ \t].*/, "", w)
	if (w != "run" && !(w in wrapper))
		return ""
	return w == "run" ? " " substr(s, 4) : " --"
}

# the word that ends a here-document started on line s, or ""
function heredoc_end(s) {
	if (!match(s, /<<-?[ \t]*['"]?[A-Za-z_][A-Za-z0-9_]*/) || substr(s, RSTART + 2, 1) == "<")
		return ""
	s = substr(s, RSTART + 2, RLENGTH - 2)
	gsub(/[-'" \t]/, "", s)
	return s
}

# whether s starts with a call of a function that runs `run` itself
function starts_runner(s,    w) {
	sub(/^[ \t]*([A-Za-z_][A-Za-z0-9_]*=[^ \t]* +)*/, "", s)
	w = s
	sub(/[ \t].*/, "", w)
	return (w in runner) && !(w in wrapper)
}

# run -N and run ! check the status themselves
function asserts_status(args,    n, w, i) {
	n = split(args, w, /[ \t]+/)
	for (i = 2; i <= n; i++) {
		if (w[i] ~ /^-[0-9]+$/ || w[i] == "!")
			return 1
		if (w[i] !~ /^-/ || w[i] == "--")
			return 0
	}
	return 0
}

# one pass over every line read; reports when report is set, and returns
# how many functions it newly found to be wrappers
function scan(report,    i, s, args, pending, fn, found, heredoc) {
	found = 0
	for (i = 1; i <= nlines; i++) {
		s = text[i]
		if (i == 1 || file[i] != file[i - 1])
			pending = fn = heredoc = ""
		if (heredoc != "") {
			sub(/^\t+/, "", s)
			if (s == heredoc)
				heredoc = ""
			continue
		}
		if (s ~ /^[ \t]*#/)
			continue
		heredoc = heredoc_end(s)
		if (s ~ /^[A-Za-z_][A-Za-z0-9_-]*\(\)/) {
			fn = s
			sub(/\(.*/, "", fn)
			if (fn ~ /^(setup|teardown)(_file)?$/)
				fn = ""
		} else if (s ~ /^@test /) {
			fn = ""
		}
		if (s ~ /^}/) {
			if (pending != "" && fn != "" && !(fn in wrapper)) {
				wrapper[fn] = 1
				found++
			} else if (pending != "" && fn == "" && report) {
				print pending ": run without a check of its status"
				bad++
			}
			pending = fn = ""
			continue
		}
		if (is_check(s))
			pending = ""
		if (pending != "" && starts_runner(s)) {
			if (report) {
				print pending ": run without a check of its status"
				bad++
			}
			pending = ""
		}
		args = run_args(s)
		if (args == "")
			continue
		if (fn != "" && !(fn in runner)) {
			runner[fn] = 1
			found++
		}
		if (pending != "" && report) {
			print pending ": run without a check of its status"
			bad++
		}
		pending = asserts_status(args) ? "" : file[i] ":" line[i]
	}
	return found
}

{
	text[++nlines] = $0
	file[nlines] = FILENAME
	line[nlines] = FNR
}

END {
	while (scan(0))
		;
	scan(1)
	exit bad > 0
}
