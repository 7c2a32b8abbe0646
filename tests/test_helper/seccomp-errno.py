"""Run a command with some system calls failing with a given errno.

    seccomp-errno.py SYSCALL[:ARG1]=ERRNO [...] -- COMMAND [ARGS...]

ERRNO is a name (ENOSYS, EPERM). With ARG1 (a number, 0x... allowed) only
the calls whose second argument is ARG1 fail: ioctl:0x4004662b=ENOTTY is
a kernel without EXT4_IOC_CHECKPOINT. Every other system call is allowed. For
the tests only: it shows how fstrim-ext behaves on a kernel without a
system call (ENOSYS: glibc then emulates statx without the mount ID, as
on Linux before 5.8) or under a seccomp policy that does not list it.
"""
import errno
import os
import sys

import seccomp

args = sys.argv[1:]
if "--" not in args:
    sys.exit("usage: seccomp-errno.py SYSCALL=ERRNO... -- COMMAND [ARGS...]")
sep = args.index("--")
rules, argv = args[:sep], args[sep + 1:]
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for rule in rules:
    call, err = rule.split("=")
    name, _, arg = call.partition(":")
    if arg:
        f.add_rule(seccomp.ERRNO(getattr(errno, err)), name,
                   seccomp.Arg(1, seccomp.EQ, int(arg, 0)))
    else:
        f.add_rule(seccomp.ERRNO(getattr(errno, err)), name)
f.load()
os.execvp(argv[0], argv)
