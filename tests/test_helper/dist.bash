# shellcheck shell=bash disable=SC2154
# (top_srcdir and FSTRIM_EXT come from the environment, see common-setup.bash)
# Helpers for the tests of what a distribution installs: the systemd units,
# the cron script, the bash completion and the man page.

# --- reading units ------------------------------------------------------

# unit_values FILE KEY: every value given to KEY= in FILE, one a line.
unit_values() {
	sed -n "s/^$2=//p" "$1"
}

# The arguments the service gives fstrim-ext: the words its ExecStart=
# shell sets with `set -- WORDS;` (the metrics option, added where its
# directory exists, apart: tests/nspawn.bats runs that part).
service_args() {
	local unit="$top_srcdir/systemd/fstrim-ext.service.in" line words
	line=$(unit_values "$unit" ExecStart)
	[[ $line == "/bin/sh -c 'set -- "*";"* ]] || fail "unexpected ExecStart: $line"
	words=${line#"/bin/sh -c 'set -- "}
	read -ra words <<<"${words%%;*}"
	printf '%s\n' "${words[@]}"
}

# make_units DIR: the service as make would generate it, but running the
# fstrim-ext under test, the timer, and the drop-in for fstrim.service.
make_units() {
	local dir=$1 bindir

	bindir=$(cd "$(dirname "$FSTRIM_EXT")" && pwd)
	[[ $(basename "$FSTRIM_EXT") == fstrim-ext ]] || fail "FSTRIM_EXT must be named fstrim-ext"
	sed "s|@sbindir@|$bindir|g" "$top_srcdir/systemd/fstrim-ext.service.in" \
		>"$dir/fstrim-ext.service"
	cp "$top_srcdir/systemd/fstrim-ext.timer" "$dir/"
	mkdir -p "$dir/fstrim.service.d"
	cp "$top_srcdir/systemd/fstrim.service.d/fstrim-ext.conf" "$dir/fstrim.service.d/"
}

# make_man DIR: the man page as make generates it, in DIR/man8.
make_man() {
	local dir=$1 version

	version=$("$FSTRIM_EXT" --version | grep -oE '[0-9]+(\.[0-9]+)+[^ ]*' | tail -n1)
	mkdir -p "$dir/man8"
	sed -e "s|@PACKAGE_VERSION@|$version|g" \
		-e 's|@systemdsystemunitdir@|/lib/systemd/system|g' \
		-e 's|@cronweeklydir@|/etc/cron.weekly|g' \
		-e 's|@pkgdatadir@|/usr/share/fstrim-ext|g' \
		"$top_srcdir/man/fstrim-ext.8.in" >"$dir/man8/fstrim-ext.8"
}

# --- options --------------------------------------------------------------

# Long options that --help lists, one a line, sorted.
help_long_options() {
	"$FSTRIM_EXT" --help | grep -E '^ +(-[[:alnum:]], )?--' |
		grep -oE -- '--[[:alnum:]][[:alnum:]-]*' | sort -u
}

# Short options that --help lists.
help_short_options() {
	"$FSTRIM_EXT" --help | grep -oE '^ +-[[:alnum:]],' | tr -d ' ,' | sort -u
}

# The man page as plain text.
man_text() {
	mandoc -T ascii "$1" | col -b
}

# Options that the man page's OPTIONS section describes (the tagged lines).
man_option_items() {
	man_text "$1" | awk '/^[A-Z]/ { in_opts = ($0 == "OPTIONS") } in_opts' |
		grep -E '^ {7}-' | grep -oE -- '(^| )--?[[:alnum:]][[:alnum:]-]*' | tr -d ' ' |
		sort -u
}

# Long options that the completion offers for "--".
completion_long_options() {
	(
		# shellcheck source=/dev/null
		source "$top_srcdir/bash-completion/fstrim-ext"
		COMP_WORDS=(fstrim-ext --)
		COMP_CWORD=1
		_fstrim_ext fstrim-ext -- fstrim-ext
		printf '%s\n' "${COMPREPLY[@]}"
	) | sort -u
}

# --- the sandbox of fstrim-ext.service, emulated without systemd -----------

# The syscalls SystemCallFilter= of UNIT allows: the first, allow-list line
# minus the later "~" lines, as systemd combines them. The groups (@...) are
# expanded from one `systemd-analyze syscall-filter` listing.
unit_syscall_allowlist() {
	systemd-analyze syscall-filter --no-pager 2>/dev/null |
		awk -v filters="$(unit_values "$1" SystemCallFilter)" '
		/^@/ { group = $1; next }
		/^[[:space:]]*$/ { group = ""; next }
		group != "" {
			sub(/#.*/, ""); gsub(/[[:space:]]/, "")
			if ($0 != "") members[group] = members[group] " " $0
		}
		function add(item, value,   n, i, list) {
			if (item ~ /^@/) {
				n = split(members[item], list, " ")
				for (i = 1; i <= n; i++)
					add(list[i], value)
			} else if (value) {
				allow[item] = 1
			} else {
				delete allow[item]
			}
		}
		END {
			nlines = split(filters, lines, "\n")
			for (l = 1; l <= nlines; l++) {
				line = lines[l]
				value = 1
				if (line ~ /^~/) { value = 0; sub(/^~/, "", line) }
				n = split(line, items, " ")
				for (i = 1; i <= n; i++)
					add(items[i], value)
			}
			for (name in allow)
				print name
		}' | sort
}

# Capabilities to drop from the bounding set to keep only the unit's.
unit_caps_to_drop() {
	local unit=$1 keep cap
	local -a drop=()

	keep=$(unit_values "$unit" CapabilityBoundingSet | tr 'A-Z ' 'a-z\n')
	for cap in $(capsh --print | sed -n 's/^Bounding set =//p' | tr ',' ' '); do
		grep -qx "$cap" <<<"$keep" || drop+=("$cap")
	done
	(IFS=,; echo "${drop[*]}")
}

# The device policy of a unit can be emulated with the cgroup v1 devices
# controller (cgroup v2 needs BPF, which systemd brings).
have_device_cgroup() {
	[[ -w /sys/fs/cgroup/devices/devices.deny ]]
}

# device cgroup (v1) rules for the unit's DevicePolicy= and DeviceAllow=.
unit_device_rules() {
	local unit=$1 spec perm major

	[[ $(unit_values "$unit" DevicePolicy) == closed ]] || fail "emulation knows only DevicePolicy=closed"
	# what "closed" always allows
	printf '%s\n' 'c 1:3 rwm' 'c 1:5 rwm' 'c 1:7 rwm' 'c 1:8 rwm' 'c 1:9 rwm' \
		'c 5:0 rwm' 'c 5:2 rwm' 'c 136:* rw'
	{
		unit_values "$unit" DeviceAllow
		[[ $(unit_values "$unit" ProtectClock) == yes ]] && echo 'char-rtc r'
	} | while read -r spec perm; do
		case $spec in
		block-\*) echo "b *:* $perm" ;;
		block-* | char-*)
			awk -v want="${spec#*-}" -v sect="${spec%%-*}" '
				/^Character/ { s = "char" } /^Block/ { s = "block" }
				s == sect && $2 == want { print $1 }' /proc/devices |
				while read -r major; do echo "${spec:0:1} $major:* $perm"; done
			;;
		*) fail "emulation does not know DeviceAllow=$spec" ;;
		esac
	done
}

# Python program that loads a seccomp filter and runs a command:
# allow-list file, errno for everything else, socket() refused for
# RestrictAddressFamilies=none, W+X mappings refused for MemoryDenyWriteExecute=.
_seccomp_exec_py='
import errno, os, sys
import seccomp as sc
allow_file, restrict_af, mdwe, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
f = sc.SyscallFilter(defaction=sc.ERRNO(errno.EPERM))
special = {"socket", "mmap", "mprotect", "pkey_mprotect"} if mdwe == "yes" else {"socket"}
for name in open(allow_file).read().split():
    if name in special:
        continue
    try:
        f.add_rule(sc.ALLOW, name)
    except (RuntimeError, ValueError):
        pass    # not a syscall of this architecture
if restrict_af == "none":
    f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket")
else:
    f.add_rule(sc.ALLOW, "socket")
if mdwe == "yes":
    W, X = 0x2, 0x4
    for v in (0, W, X):
        f.add_rule(sc.ALLOW, "mmap", sc.Arg(2, sc.MASKED_EQ, W | X, v))
    f.add_rule(sc.ALLOW, "mprotect", sc.Arg(2, sc.MASKED_EQ, X, 0))
    f.add_rule(sc.ALLOW, "pkey_mprotect", sc.Arg(2, sc.MASKED_EQ, X, 0))
f.load()
os.execvp(argv[0], argv)
'

# sandbox_run UNIT [--fstab FILE] [--private-dev] -- CMD ARGS...
# Runs CMD in an emulation of UNIT's sandbox, as far as it goes without
# systemd as PID 1: a private mount, network and IPC namespace; every mount
# but /dev and /proc a read-only bind (ProtectSystem=strict,
# ProtectHome=read-only, ProtectKernelTunables=, ProtectControlGroups=);
# /proc/sys read-only and /proc with hidepid=invisible (ProtectProc=); the
# device cgroup of DevicePolicy=/DeviceAllow= (where cgroup v1 has the devices
# controller); only the capabilities of
# CapabilityBoundingSet=, with no_new_privs; the SystemCallFilter= allow list
# with SystemCallErrorNumber=EPERM, RestrictAddressFamilies=none and
# MemoryDenyWriteExecute= as a seccomp filter (python3-seccomp).
# FSTAB is bound over /etc/fstab; --private-dev gives a /dev like
# PrivateDevices=yes would. Sets $status, $output and $stderr like
# run --separate-stderr.
sandbox_run() {
	local unit=$1 fstab='' private_dev=no cg allow drop
	shift
	while (($#)); do
		case $1 in
		--fstab) fstab=$2; shift 2 ;;
		--private-dev) private_dev=yes; shift ;;
		--) shift; break ;;
		*) fail "sandbox_run: $1" ;;
		esac
	done
	[[ $(unit_values "$unit" PrivateDevices) != yes ]] || private_dev=yes

	allow="$BATS_TEST_TMPDIR/syscalls.allow"
	unit_syscall_allowlist "$unit" >"$allow"
	drop=$(unit_caps_to_drop "$unit")
	if have_device_cgroup; then
		cg=/sys/fs/cgroup/devices/fstrim-ext-test.$$.$BATS_TEST_NUMBER
		mkdir "$cg"
		echo a >"$cg/devices.deny"
		unit_device_rules "$unit" | while read -r rule; do echo "$rule" >"$cg/devices.allow"; done
	else
		cg=''
		echo "# no cgroup v1 devices controller: DevicePolicy= not emulated" >&3
	fi

	cat >"$BATS_TEST_TMPDIR/sandbox.sh" <<'EOS'
set -e
trap 'exit 99' ERR
cg=$1 fstab=$2 private_dev=$3 drop=$4 allow=$5 restrict_af=$6 mdwe=$7 py=$8
shift 8
if [ -n "$fstab" ]; then
	mount --bind "$fstab" /etc/fstab
fi
if [ "$private_dev" = yes ]; then
	# what PrivateDevices=yes leaves in /dev
	mount -t tmpfs -o mode=755,nosuid tmpfs /dev
	mknod -m 666 /dev/null c 1 3
	mknod -m 666 /dev/zero c 1 5
	mknod -m 666 /dev/full c 1 7
	mknod -m 666 /dev/random c 1 8
	mknod -m 666 /dev/urandom c 1 9
	mknod -m 666 /dev/tty c 5 0
fi
if [ -n "$cg" ]; then
	echo $$ >"$cg/cgroup.procs"
fi
mount -t proc -o hidepid=invisible proc /proc
mount --bind /proc/sys /proc/sys
findmnt -rn -o TARGET | while read -r t; do
	t=$(printf '%b' "$t")
	case $t in
	/dev | /dev/* | /proc) continue ;;
	esac
	mount -o remount,bind,ro "$t" 2>/dev/null || :
done
case $(findmnt -rn -o VFS-OPTIONS --mountpoint /) in
ro,* | ro) ;;
*) echo "/ is not read-only" >&2; exit 99 ;;
esac
exec capsh --drop="$drop" --no-new-privs -- -c 'exec "$@"' sandbox \
	/usr/bin/python3 -c "$py" "$allow" "$restrict_af" "$mdwe" "$@"
EOS
	run --separate-stderr unshare -m -n -i --propagation private bash "$BATS_TEST_TMPDIR/sandbox.sh" \
		"$cg" "$fstab" "$private_dev" "$drop" "$allow" \
		"$(unit_values "$unit" RestrictAddressFamilies)" \
		"$(unit_values "$unit" MemoryDenyWriteExecute)" "$_seccomp_exec_py" "$@"
	[[ -z $cg ]] || rmdir "$cg" 2>/dev/null || :
	if ((status == 99)); then
		fail "the sandbox could not be set up: $stderr"
	fi
}
