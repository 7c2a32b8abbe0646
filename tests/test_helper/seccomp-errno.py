"""Run a command with some system calls failing with a given errno.

    seccomp-errno.py SYSCALL=ERRNO [SYSCALL=ERRNO...] -- COMMAND [ARGS...]

ERRNO is a name (ENOSYS, EPERM). Every other system call is allowed. For
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
    name, err = rule.split("=")
    f.add_rule(seccomp.ERRNO(getattr(errno, err)), name)
f.load()
os.execvp(argv[0], argv)
