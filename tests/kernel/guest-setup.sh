# shellcheck shell=bash
# The start and the end of PID 1 in the User-Mode Linux guests of
# `make check-kernel` and `make check-fstests` (tests/kernel/init.sh,
# tests/crash/init.sh, tests/fstests/init.sh), sourced from the directory
# the host installed init into.
#
# The guest's root is the host's root through hostfs, so the host's bash,
# bats, e2fsprogs, strace, capsh and the project's build run there
# unchanged; /tmp and /run are the guest's own, so that its temporary files
# stay off the host's /tmp. The host names on the kernel command line, in
# KCHECK_KEEP (colon-separated), the directories the guest must see as they
# are: the checkout, the build, the run directory. Those under /tmp or /run
# are bound back into the guest's own, so a checkout under /tmp works.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
# devtmpfs has no /dev/fd, which bash's process substitution needs.
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
[[ -e /dev/stdin ]] || ln -s /proc/self/fd/0 /dev/stdin
[[ -e /dev/stdout ]] || ln -s /proc/self/fd/1 /dev/stdout
[[ -e /dev/stderr ]] || ln -s /proc/self/fd/2 /dev/stderr

# private_tmpfs DIR: a tmpfs of the guest's own on DIR, with every KCHECK_KEEP
# directory under DIR bound back from the host's DIR, parents first.
private_tmpfs() {
	local dir=$1 host=/dev/.kcheck-host$1 keep p

	IFS=: read -r -a keep <<< "${KCHECK_KEEP:-}"
	for p in "${keep[@]}"; do
		[[ ${p%/} != "$dir" ]] || return 0 # all of DIR is needed: keep the host's
	done
	mkdir -p "$host" && mount --bind "$dir" "$host" || return 1
	mount -t tmpfs tmpfs "$dir" || return 1
	while IFS= read -r p; do
		[[ $p == "$dir"/* && ! -e $p ]] || continue
		mkdir -p "$p" && mount --bind "$host${p#"$dir"}" "$p" || return 1
	done < <(printf '%s\n' "${keep[@]}" | sort)
}

private_tmpfs /tmp || echo "kcheck: /tmp: cannot keep ${KCHECK_KEEP:-} visible" >&2
private_tmpfs /run || echo "kcheck: /run: cannot keep ${KCHECK_KEEP:-} visible" >&2

# guest_poweroff PROBE STATUS: the end of PID 1: sync, then power off with
# STATUS as the kernel's exit status (/proc/exitcode, through PROBE). The
# host's root (hostfs, where the results are) is synced first and alone;
# then every filesystem, but for at most 60 s: a test that found a kernel
# hang (guest.bats's fast_commit test on the stock kernel) leaves a
# filesystem whose sync never returns, and the guest must still power off.
guest_poweroff() {
	local sync_pid sleep_pid

	sync -f / 2>/dev/null
	sync &
	sync_pid=$!
	sleep 60 &
	sleep_pid=$!
	wait -n "$sync_pid" "$sleep_pid"
	kill "$sleep_pid" 2>/dev/null
	"$1" poweroff "$2"
	# Not reached unless the power-off failed; PID 1 must not return.
	echo o > /proc/sysrq-trigger
	sleep infinity
}
