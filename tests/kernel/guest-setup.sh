# shellcheck shell=bash
# The start of PID 1 in the User-Mode Linux guests of `make check-kernel`
# (tests/kernel/init.sh, tests/crash/init.sh), sourced from the directory
# the host installed init into.
#
# The guest's root is the host's root through hostfs, so the host's bash,
# bats, e2fsprogs, strace, capsh and the project's build run there
# unchanged; /tmp and /run are the guest's own, so that its temporary files
# stay off the host's /tmp.

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
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
