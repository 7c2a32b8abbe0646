# shellcheck shell=bash disable=SC2154
# (FSTRIM_EXT and top_srcdir come from the environment, see common-setup.bash)
# Real systemd as PID 1 for the tests of the units: systemd-nspawn --boot of
# this machine's own tree (REFERENCE.md section 7), driven with nsenter.
#
# Everything is mounted in a private mount namespace that a holder process
# keeps alive, so that nothing of it is seen outside the test and all of it
# goes when the holder is killed: the container's root (a read-only bind of
# /, or an overlay of / on a tmpfs), and a tmpfs on /run, where
# systemd-nspawn would otherwise leave /run/systemd/nspawn behind (its locks
# and propagation mounts).
#
#   nspawn_setup [--overlay]   the namespace and the root; with --overlay the
#                              container boots the whole tree, writable, its
#                              writes kept in $NSPAWN_DIR/upper/upper until
#                              teardown; without, /usr only (--volatile=yes)
#   nspawn_boot [ARGS...]      boot, wait until the boot is done; ARGS go to
#                              systemd-nspawn, NSPAWN_INIT_ARGS to systemd
#   container CMD...           run CMD inside (all namespaces of its PID 1)
#   nspawn_poweroff            shut down cleanly and wait for the end
#   nspawn_wait_for WHAT CMD   poll CMD until it succeeds, with a bound
#   nspawn_teardown            kill whatever is left; called by teardown()

NSPAWN_TIMEOUT=${NSPAWN_TIMEOUT:-60}

nspawn_setup() {
	local root_mount

	require_root
	require_cmd systemd-nspawn nsenter unshare systemd-id128 mount timeout
	NSPAWN_DIR="$BATS_TEST_TMPDIR/nspawn"
	NSPAWN_ROOT="$NSPAWN_DIR/root"
	NSPAWN_OVERLAY=no
	[[ ${1:-} == --overlay ]] && NSPAWN_OVERLAY=yes
	NSPAWN_PID=
	CONTAINER_PID=
	NSPAWN_INIT_ARGS=()
	mkdir -p "$NSPAWN_ROOT" "$NSPAWN_DIR/upper"
	# A fixed machine ID: without one, systemd takes the boot for a first
	# boot and enables every unit its presets name.
	systemd-id128 new >"$NSPAWN_DIR/machine-id"

	# fd 3 closed: bats waits for every holder of it
	unshare -m --propagation private sleep infinity </dev/null >/dev/null 2>&1 3>&- &
	NSPAWN_HOLDER=$!
	nspawn_wait_for "the private mount namespace" \
		_nspawn_is_exec "$NSPAWN_HOLDER" sleep
	if [[ $NSPAWN_OVERLAY == yes ]]; then
		# the upper layer on its own tmpfs: an upper directory on the
		# lower layer's filesystem is refused as overlapping
		root_mount="mount -t tmpfs tmpfs '$NSPAWN_DIR/upper' &&
			mkdir '$NSPAWN_DIR/upper/upper' '$NSPAWN_DIR/upper/work' &&
			mount -t overlay -o lowerdir=/,upperdir='$NSPAWN_DIR/upper/upper',workdir='$NSPAWN_DIR/upper/work' overlay '$NSPAWN_ROOT'"
	else
		root_mount="mount --bind / '$NSPAWN_ROOT' &&
			mount -o remount,bind,ro '$NSPAWN_ROOT'"
	fi
	in_nspawn_ns sh -ec "mount -t tmpfs -o mode=0755 tmpfs /run
		$root_mount" || fail "could not set up the container's root"
}

# in_nspawn_ns CMD...: CMD in the private mount namespace, on the host.
in_nspawn_ns() {
	nsenter -t "$NSPAWN_HOLDER" -m -- "$@"
}

# _nspawn_is_exec PID COMM: PID runs COMM (it has gone through exec).
_nspawn_is_exec() {
	[[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]]
}

# nspawn_wait_for WHAT CMD...: poll CMD until it succeeds, for at most
# NSPAWN_TIMEOUT seconds. A bound on a wait, not a delay that a result
# depends on.
nspawn_wait_for() {
	local what=$1 i
	shift
	for ((i = 0; i < NSPAWN_TIMEOUT * 10; i++)); do
		"$@" && return 0
		if [[ -n $NSPAWN_PID ]] && ! kill -0 "$NSPAWN_PID" 2>/dev/null; then
			fail "systemd-nspawn exited while waiting for $what: $(cat "$NSPAWN_DIR/console.log")"
		fi
		sleep 0.1
	done
	fail "timed out waiting for $what"
}

_nspawn_container_pid() {
	local pid
	pid=$(pgrep -P "$NSPAWN_PID" | head -n 1)
	[[ -n $pid ]] && _nspawn_is_exec "$pid" systemd && CONTAINER_PID=$pid
}

_nspawn_booted() {
	local state
	state=$(container systemctl is-system-running --wait 2>/dev/null)
	[[ $state == running || $state == degraded ]]
}

nspawn_boot() {
	local -a volatile=(--volatile=yes)
	[[ $NSPAWN_OVERLAY == yes ]] && volatile=()
	# Unified cgroup hierarchy and the bpf() system call: without them
	# the container's systemd cannot attach device programs, and
	# DevicePolicy= is silently not enforced on this host's cgroups.
	nsenter -t "$NSPAWN_HOLDER" -m -- env SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 \
		systemd-nspawn -D "$NSPAWN_ROOT" "${volatile[@]}" \
		--machine="fstrim-ext-test-$$-$BATS_TEST_NUMBER" \
		--register=no --keep-unit --console=pipe --private-network \
		--system-call-filter=bpf \
		--bind-ro="$NSPAWN_DIR/machine-id:/etc/machine-id" \
		"$@" --boot systemd.unit=basic.target "${NSPAWN_INIT_ARGS[@]}" \
		</dev/null >"$NSPAWN_DIR/console.log" 2>&1 3>&- &
	NSPAWN_PID=$!
	CONTAINER_PID=
	nspawn_wait_for "the container's systemd" _nspawn_container_pid
	nspawn_wait_for "the end of the boot" _nspawn_booted
}

container() {
	timeout "$NSPAWN_TIMEOUT" nsenter -t "$CONTAINER_PID" -a -- "$@"
}

_nspawn_gone() {
	! kill -0 "$NSPAWN_PID" 2>/dev/null
}

nspawn_poweroff() {
	# systemd-nspawn asks the container's systemd to halt on SIGTERM
	kill -TERM "$NSPAWN_PID"
	nspawn_wait_for "the container's shutdown" _nspawn_gone
	wait "$NSPAWN_PID" || :
	NSPAWN_PID=
	CONTAINER_PID=
}

nspawn_teardown() {
	# SIGKILL to a PID namespace's init kills everything in it
	[[ -n ${CONTAINER_PID:-} ]] && kill -KILL "$CONTAINER_PID" 2>/dev/null
	if [[ -n ${NSPAWN_PID:-} ]]; then
		kill -KILL "$NSPAWN_PID" 2>/dev/null
		wait "$NSPAWN_PID" 2>/dev/null
	fi
	if [[ -n ${NSPAWN_HOLDER:-} ]]; then
		kill -KILL "$NSPAWN_HOLDER" 2>/dev/null
		wait "$NSPAWN_HOLDER" 2>/dev/null
	fi
	NSPAWN_PID='' CONTAINER_PID='' NSPAWN_HOLDER=''
	return 0
}

# --- units ------------------------------------------------------------

# nspawn_units: $NSPAWN_DIR/system, to be bound over the container's
# /etc/systemd/system, with the units as make_units makes them (running the
# fstrim-ext under test, whose directory must be bound in too) and for each
# unit named, a test-only drop-in that clears ConditionVirtualization=, or
# the units would not start in a container. An empty Condition...= clears
# every condition set before it: the drop-in is named to come first, before
# fstrim.service.d/fstrim-ext.conf adds its own.
nspawn_units() {
	local unit
	NSPAWN_UNITS="$NSPAWN_DIR/system"
	mkdir -p "$NSPAWN_UNITS"
	make_units "$NSPAWN_UNITS"
	for unit in "$@"; do
		nspawn_dropin "$unit" 00-in-container.conf '[Unit]' 'ConditionVirtualization='
	done
}

# nspawn_dropin UNIT NAME LINE...: a drop-in for UNIT in the container.
nspawn_dropin() {
	local unit=$1 name=$2
	shift 2
	mkdir -p "$NSPAWN_UNITS/$unit.d"
	printf '%s\n' "$@" >"$NSPAWN_UNITS/$unit.d/$name"
}

# The arguments of nspawn_boot that bring the units and fstrim-ext in.
nspawn_unit_binds() {
	printf '%s\n' "--bind=$NSPAWN_UNITS:/etc/systemd/system" \
		"--bind-ro=$(cd "$(dirname "$FSTRIM_EXT")" && pwd)"
}
