#!/usr/bin/python3
"""Differential selection: the filesystems fstrim 2.38.1 chooses and those
fstrim-ext chooses, over generated mount tables.

    difftables.py --fstrim-ext PATH [--seed N] [--count N] [--named-only]
                  [--keep-going] [--verbose] [--foreign]

Run as root. It re-executes itself in a private mount namespace, attaches
a few loop filesystems (ext4 twice, xfs, btrfs with a subvolume, ext4 on a
device without discard, ext4 on a read-only device), and for each case
builds a random mount layout under a tmpfs (mounts, bind mounts of roots
and of subdirectories, read-only views, overmounts, btrfs subvolumes,
tucked mounts, overlays, symbolic links) and a random fstab naming real
and unreal mountpoints and devices. Both tools then choose, with -n, from
that fstab (-I), from the live mountinfo (-I /proc/self/mountinfo), with
--foreign from a copy of it with the mount IDs another namespace would
give (-I FILE: IDs from elsewhere must not decide) and, now and then,
from it bound over /etc/fstab (-A, where UUID= and LABEL= are resolved
and / is added when missing). Cases 0 to 5 are the named
ones: an overlay root whose lower layer is on ext4, a composefs-style
/sysroot, a root missing from fstab, a system with no /etc/fstab, and
the service's list on both.

Every difference is checked against those doc/fstrim-differences.md lists,
from facts read here apart from both tools (mountinfo by mount ID):
  bind-subdir     fstrim chose a bind mount of a subdirectory
  device-mismatch fstrim chose an fstab entry whose device is not mounted
                  at its mountpoint
  ro-view         fstrim-ext chose a read-only view of a writable
                  filesystem (fstrim judges by access(W_OK))
  table-ro        fstrim-ext chose an entry whose table says "ro" while
                  the filesystem is writable
A difference none of these explains is a finding: the case is printed
with its tables and the status is 1. The summary counts each kind.
"""
import argparse
import collections
import ctypes
import errno
import fcntl
import os
import random
import shutil
import subprocess
import sys
import tempfile

BASES = ["e1", "e2", "x", "b", "n", "r"]
FSTYPES = {"e1": "ext4", "e2": "ext4", "x": "xfs", "b": "btrfs", "n": "ext4", "r": "ext4"}
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_SHARED = 0x1, 0x20, 0x1000, 1 << 20
libc = ctypes.CDLL(None, use_errno=True)
LOOP_CTL_REMOVE = 0x4C81
LOOP_CTL_ADD = 0x4C80
FOREIGN = False  # --foreign


def sh(*args, check=True, **kw):
    # surrogateescape: mountpoints with invalid UTF-8 come back byte for byte
    return subprocess.run(args, check=check, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          errors="surrogateescape", **kw)


def try_sh(*args):
    return sh(*args, check=False).returncode == 0


class Bases:
    """The loop filesystems every case mounts again, bound or not."""

    def __init__(self, work):
        self.work = work
        self.dev = {}
        self.uuid = {}
        self.label = {}
        self.nodiscard = []
        self.holder = None

    def attach(self, name, size_mb, mkfs, readonly=False):
        img = os.path.join(self.work, name + ".img")
        with open(img, "wb") as f:
            f.truncate(size_mb << 20)
        mkfs(img)
        args = ["losetup", "--find", "--show"] + (["-r"] if readonly else []) + [img]
        for _ in range(5):
            dev = sh(*args).stdout.strip()
            if discard_max_bytes(dev) != 0:
                break
            # left without discard by someone: take another, repair this one
            sh("losetup", "-d", dev)
            self.nodiscard.append(dev)
        else:
            sys.exit("no loop device with discard")
        self.dev[name] = dev
        # probed (-p), never from a cache: a cache entry for this loop
        # device may still hold the filesystem an earlier test made on it
        self.uuid[name] = sh("blkid", "-p", "-s", "UUID", "-o", "value", dev,
                             check=False).stdout.strip()
        self.label[name] = sh("blkid", "-p", "-s", "LABEL", "-o", "value", dev,
                              check=False).stdout.strip()
        if not readonly:
            # what the cases bind and overlay; each case mounts it anew
            mnt = os.path.join(self.work, "base", name)
            os.makedirs(mnt)
            sh("mount", dev, mnt)
            for d in ("sub", "sub/deeper", "lower", "ostree/deploy/os/deploy/abc"):
                os.makedirs(os.path.join(mnt, d), exist_ok=True)
            if name != "b":
                sh("umount", mnt)
        return dev

    def setup(self):
        def ext4(label):
            return lambda img: sh("mkfs.ext4", "-q", "-F", "-L", label, img)
        self.attach("e1", 64, ext4("dt-e1"))
        self.attach("e2", 64, ext4("dt-e2"))
        self.attach("x", 320, lambda img: sh("mkfs.xfs", "-q", "-f", "-L", "dt-x", img))
        self.attach("b", 256, lambda img: sh("mkfs.btrfs", "-q", "-f", "-L", "dt-b", img))
        sh("btrfs", "subvolume", "create", os.path.join(self.work, "base", "b", "sv"))
        for d in ("sub", "lower"):
            os.makedirs(os.path.join(self.work, "base", "b", "sv", d), exist_ok=True)
        sh("umount", os.path.join(self.work, "base", "b"))
        self.attach("n", 64, ext4("dt-n"))
        sysfs = "/sys/block/%s/queue/discard_max_bytes" % os.path.basename(self.dev["n"])
        with open(sysfs, "w") as f:
            f.write("0")
        self.nodiscard.append(self.dev["n"])

        def ro_ext4(img):
            sh("mkfs.ext4", "-q", "-F", "-L", "dt-r", img)
        self.attach("r", 64, ro_ext4, readonly=True)
        self.hold()

    def hold(self):
        """
        Keep every base filesystem mounted in a mount namespace of its own,
        which this one does not see: a case's mount of a device then
        shares the superblock (fast, where a first mount and the last
        unmount of xfs or btrfs take a good part of a second), and
        mountinfo here still lists only what the case mounted.
        """
        script = "set -e\n"
        for name, dev in self.dev.items():
            d = os.path.join(self.work, "hold", name)
            os.makedirs(d)
            script += "mount %s %s %s\n" % ("-o ro" if name == "r" else "", dev, d)
        script += "echo ready\nexec sleep 86400\n"
        self.holder = subprocess.Popen(["unshare", "-m", "--propagation", "private",
                                        "sh", "-c", script], stdout=subprocess.PIPE,
                                       text=True)
        if self.holder.stdout.readline().strip() != "ready":
            sys.exit("cannot hold the base filesystems mounted")

    def teardown(self):
        if self.holder:
            self.holder.kill()
            self.holder.wait()
        try_sh("umount", "-R", "-l", os.path.join(self.work, "base"))
        for dev in self.dev.values():
            try_sh("losetup", "-d", dev)
        # a lowered discard limit outlives the device: remove it and add it back
        for dev in self.nodiscard:
            num = int(dev[len("/dev/loop"):])
            fd = os.open("/dev/loop-control", os.O_RDWR)
            try:
                for _ in range(50):
                    try:
                        fcntl.ioctl(fd, LOOP_CTL_REMOVE, num)
                        break
                    except OSError as e:
                        if e.errno != errno.EBUSY:
                            break
                        os.sched_yield()
                try:
                    fcntl.ioctl(fd, LOOP_CTL_ADD, num)
                except OSError:
                    pass
            finally:
                os.close(fd)


def discard_max_bytes(dev):
    with open("/sys/block/%s/queue/discard_max_bytes" % os.path.basename(dev)) as f:
        return int(f.read())


def resolve_source(src):
    """A table's source as a device path: LABEL= and UUID= through blkid."""
    if src.startswith(("LABEL=", "UUID=")):
        return sh("blkid", "-l", "-o", "device", "-t", src, check=False).stdout.strip()
    return src


def mount_tmpfs(path):
    if libc.mount(b"tmpfs", path.encode(), b"tmpfs", 0, None) != 0:
        raise OSError(ctypes.get_errno(), "mount tmpfs " + path)


def detach(path):
    """umount -R -l: the mount at @path and everything below it."""
    return libc.umount2(path.encode(), 2) == 0  # MNT_DETACH


def mountinfo():
    """Mount ID -> (root, mountpoint, mount options, fstype, source, super options, devno)."""
    entries = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.rstrip("\n").split(" - ", 1)
            fields = left.split(" ")
            fstype, source, sopts = right.split(" ", 2)
            major, minor = fields[2].split(":")
            entries[int(fields[0])] = dict(
                root=unmangle(fields[3]), target=unmangle(fields[4]),
                opts=fields[5].split(","), fstype=fstype, source=unmangle(source),
                sopts=sopts.split(","), devno=os.makedev(int(major), int(minor)))
    return entries


def unmangle(s):
    out, i = "", 0
    while i < len(s):
        if s[i] == "\\" and s[i + 1:i + 4].isdigit():
            out += chr(int(s[i + 1:i + 4], 8))
            i += 4
        else:
            out += s[i]
            i += 1
    return out


def mount_id(path):
    fd = os.open(path, os.O_PATH)
    try:
        with open("/proc/self/fdinfo/%d" % fd) as f:
            for line in f:
                if line.startswith("mnt_id:"):
                    return int(line.split()[1])
    finally:
        os.close(fd)
    return None


class Case:
    """One generated layout and its fstab."""

    def __init__(self, rng, bases, top, index, named):
        self.rng = rng
        self.bases = bases
        self.top = top
        self.index = index
        self.named = named
        self.points = []  # mountpoints used by this case
        self.origins = {}  # base name -> where this case mounted it
        self.ops = []  # what was done, for the report
        self.fstab = []
        self.use_etc_fstab = False
        self.no_etc_fstab = False
        self.service_list = False

    def base(self, name):
        """The root of base filesystem @name, mounted by this case when first needed."""
        if name not in self.origins:
            d = self.point("o_" + name)
            opts = ["-o", "ro"] if name == "r" else []
            self.do("mount", *opts, self.bases.dev[name], d)
            self.origins[name] = d
        return self.origins[name]

    def do(self, *args):
        """A mount(8) or umount(8) command line, done by the system call
        (a mount command costs a process and a table read: most of a case)."""
        self.ops.append(" ".join(args))
        args = list(args)
        if args[0] == "umount":
            return libc.umount2(args[-1].encode(), 0) == 0
        target, flags, fstype, data, source = args.pop(), 0, None, None, None
        args.pop(0)
        while args:
            a = args.pop(0)
            if a == "--bind":
                flags |= MS_BIND
            elif a == "--make-shared":
                flags |= MS_SHARED
            elif a == "-t":
                fstype = args.pop(0)
            elif a == "-o":
                for o in args.pop(0).split(","):
                    if o == "ro":
                        flags |= MS_RDONLY
                    elif o == "remount":
                        flags |= MS_REMOUNT
                    elif o == "bind":
                        flags |= MS_BIND
                    else:
                        data = o if data is None else data + "," + o
            else:
                source = a
        if source in self.bases.dev.values() and fstype is None:
            fstype = FSTYPES[next(n for n, d in self.bases.dev.items() if d == source)]
        rc = libc.mount(source.encode() if source else None, target.encode(),
                        fstype.encode() if fstype else None, flags,
                        data.encode() if data else None)
        return rc == 0

    def point(self, name=None):
        p = os.path.join(self.top, name or "d%d" % len(self.points))
        os.makedirs(p, exist_ok=True)
        self.points.append(p)
        return p

    # ---- the named cases ------------------------------------------------

    def named_overlay_root(self):
        e1, root = self.point("e1"), self.point("root")
        self.do("mount", self.bases.dev["e1"], e1)
        up = os.path.join(self.top, "upper")
        os.makedirs(up + "/u")
        os.makedirs(up + "/w")
        self.do("mount", "-t", "overlay", "overlay", "-o",
                "lowerdir=%s/lower,upperdir=%s/u,workdir=%s/w" % (e1, up, up), root)
        self.fstab = ["%s %s ext4 defaults 0 1" % (self.bases.dev["e1"], e1),
                      "overlay %s overlay lowerdir=%s/lower 0 0" % (root, e1)]

    def named_composefs_sysroot(self):
        # as ostree boots: / is a deployment directory of the real root,
        # mounted before the real root appears at /sysroot
        first, sysroot, root = self.point("first"), self.point("sysroot"), self.point("root")
        self.do("mount", self.bases.dev["e1"], first)
        self.do("mount", "--bind", first + "/ostree/deploy/os/deploy/abc", root)
        self.do("mount", "-o", "remount,bind,ro", root)
        self.do("mount", self.bases.dev["e1"], sysroot)
        self.do("umount", first)
        self.fstab = ["LABEL=dt-e1 %s ext4 defaults 0 1" % sysroot,
                      "%s %s none bind,ro 0 0" % (sysroot + "/ostree/deploy/os/deploy/abc", root)]
        self.use_etc_fstab = True

    def named_root_missing(self):
        d = self.point()
        self.do("mount", self.bases.dev["e2"], d)
        self.fstab = ["UUID=%s %s ext4 defaults 0 2" % (self.bases.uuid["e2"], d)]
        self.use_etc_fstab = True

    def named_no_fstab(self):
        d = self.point()
        self.do("mount", self.bases.dev["e1"], d)
        self.no_etc_fstab = True

    def named_service_list(self):
        d = self.point()
        self.do("mount", self.bases.dev["x"], d)
        self.fstab = ["LABEL=dt-x %s xfs defaults 0 2" % d]
        self.use_etc_fstab = True
        self.service_list = True

    NAMED = ["named_overlay_root", "named_composefs_sysroot", "named_root_missing",
             "named_no_fstab", "named_service_list"]

    # ---- random cases ---------------------------------------------------

    def random_layout(self):
        rng = self.rng
        dev = self.bases.dev
        for _ in range(rng.randint(1, 7)):
            kind = rng.choice(["mount", "mount", "bind-root", "bind-sub", "ro-view",
                               "subvol", "overmount", "tmpfs", "tucked", "ro-dev",
                               "overlay", "nodiscard"])
            name = rng.choice(["e1", "e2", "x", "b"])
            if kind == "overmount" and self.points:
                d = rng.choice(self.points)
            else:
                d = self.point()
            if kind in ("mount", "overmount"):
                self.do("mount", dev[name], d)
            elif kind == "bind-root":
                self.do("mount", "--bind", self.base(name), d)
            elif kind == "bind-sub":
                sub = "sv/sub" if name == "b" and rng.random() < 0.5 else "sub"
                self.do("mount", "--bind", os.path.join(self.base(name), sub), d)
            elif kind == "ro-view":
                self.do("mount", "--bind", self.base(name), d)
                self.do("mount", "-o", "remount,bind,ro", d)
            elif kind == "subvol":
                self.do("mount", "-o", "subvol=sv", dev["b"], d)
            elif kind == "tmpfs":
                self.do("mount", "-t", "tmpfs", "tmpfs", d)
            elif kind == "tucked":
                self.do("mount", "-t", "tmpfs", "tmpfs", d)
                self.do("mount", "--make-shared", d)
                self.do("mount", "--bind", d, d)
                self.do("mount", dev[name], d)
            elif kind == "ro-dev":
                self.do("mount", "-o", "ro", dev["r"], d)
            elif kind == "nodiscard":
                self.do("mount", dev["n"], d)
            elif kind == "overlay":
                up = d + ".up"
                os.makedirs(up + "/u")
                os.makedirs(up + "/w")
                self.do("mount", "-t", "overlay", "overlay", "-o",
                        "lowerdir=%s/lower,upperdir=%s/u,workdir=%s/w"
                        % (self.base(name), up, up), d)
            if rng.random() < 0.2:
                link = os.path.join(self.top, "l%d" % len(self.points))
                if not os.path.lexists(link):
                    os.symlink(d, link)
        self.use_etc_fstab = rng.random() < 0.3
        self.fstab = [self.random_line() for _ in range(rng.randint(0, 8))]

    def random_target(self):
        rng = self.rng
        pick = rng.random()
        d = rng.choice(self.points) if self.points else self.top + "/none"
        if pick < 0.55:
            return d
        if pick < 0.65:
            return d + "/"
        if pick < 0.72:
            return d.replace(self.top + "/", self.top + "/./")
        if pick < 0.80:
            links = [p for p in os.listdir(self.top) if p.startswith("l")]
            return os.path.join(self.top, rng.choice(links)) if links else d
        if pick < 0.88:
            return d + "/sub"
        return os.path.join(self.top, "absent%d" % rng.randint(0, 3))

    def random_source(self, target):
        rng = self.rng
        names = BASES
        pick = rng.random()
        name = rng.choice(names)
        if pick < 0.5:
            # the device mounted there, when there is one
            try:
                mid = mount_id(os.path.realpath(target))
                src = mountinfo()[mid]["source"]
                if src.startswith("/dev/"):
                    return src
            except (OSError, KeyError, TypeError):
                pass
            return self.bases.dev[name]
        if pick < 0.65:
            return self.bases.dev[name]
        if pick < 0.72:
            return "UUID=" + self.bases.uuid[name]
        if pick < 0.78:
            return "LABEL=" + self.bases.label[name]
        if pick < 0.84:
            return "/dev/nonexistent%d" % rng.randint(0, 2)
        if pick < 0.90:
            return "tmpfs"
        return os.path.join(self.base(name), "sub")

    def random_line(self):
        rng = self.rng
        target = self.random_target()
        source = self.random_source(target)
        fstype = rng.choice(["ext4", "ext4", "xfs", "btrfs", "auto", "tmpfs", "none", "swap"])
        opts = rng.choice(["defaults", "defaults", "rw", "ro", "noauto",
                           "defaults,X-fstrim.notrim", "bind", "subvol=sv"])
        return "%s %s %s %s 0 %d" % (source, target, fstype, opts, rng.randint(0, 2))

    def build(self):
        if self.named is not None:
            getattr(self, Case.NAMED[self.named])()
        else:
            self.random_layout()


def chosen(out, top):
    """The (target, device) pairs a dry run printed under @top, and for /.

    The rest of the lines are the host's, the same for both tools."""
    pairs = set()
    for line in out.splitlines():
        if ": 0 B (dry run) trimmed on " not in line:
            continue
        target, dev = line.split(": 0 B (dry run) trimmed on ", 1)
        if target.startswith(top + "/") or target == "/":
            pairs.add((target, dev))
    return pairs


def facts(target, table_line):
    """What the live system says of a target, read apart from both tools."""
    f = {}
    try:
        mid = mount_id(os.path.realpath(target))
        e = mountinfo()[mid]
        st = os.stat(os.path.realpath(target))
    except (OSError, KeyError, TypeError):
        return f
    f["bind-subdir"] = e["root"] != "/" and not (e["fstype"] == "btrfs" and st.st_ino == 256)
    f["ro-view"] = "ro" in e["opts"] and "ro" not in e["sopts"]
    f["fs-ro"] = "ro" in e["sopts"]
    f["devno"] = e["devno"]
    if table_line:
        fields = table_line.split()
        f["table-ro"] = "ro" in fields[3].split(",") and "ro" not in e["sopts"]
        src = resolve_source(fields[0])
        try:
            rdev = os.stat(src).st_rdev
            f["device-mismatch"] = os.major(e["devno"]) != 0 and rdev != e["devno"]
        except OSError:
            f["device-mismatch"] = False
    return f


def table_line_for(table, target):
    line = None
    for text in table:
        fields = text.split()
        if len(fields) >= 4 and fields[1] == target:
            line = text  # the last one wins, as in both tools
    return line


def explain(theirs, ours, table):
    """Known kinds of each difference, or None for a finding."""
    kinds = []
    by_dev = collections.defaultdict(lambda: [set(), set()])
    for t, d in theirs:
        by_dev[d][0].add(t)
    for t, d in ours:
        by_dev[d][1].add(t)
    def why(t, known):
        fa = facts(t, table_line_for(table, t))
        return next((k for k in known if fa.get(k)), None)

    for dev, (f_t, e_t) in sorted(by_dev.items()):
        if f_t == e_t:
            continue
        # fstrim-ext left out what fstrim chose, or fstrim what fstrim-ext chose
        left_out = [why(t, ("bind-subdir", "device-mismatch")) for t in f_t - e_t]
        added = [why(t, ("ro-view", "table-ro")) for t in e_t - f_t]
        ok_left, ok_added = all(left_out), all(added)
        if left_out and added:
            # the device is trimmed through another of its mounts
            ok = ok_left or ok_added
        else:
            ok = ok_left and ok_added
        if not ok:
            return None
        kinds += [k for k in left_out + added if k]
    return kinds


def run_tools(args, fstrim_ext, top):
    theirs = sh("fstrim", "-n", *args, check=False)
    ours = sh(fstrim_ext, "-n", *args, check=False)
    return theirs, ours


def run_case(case, fstrim_ext, counts, verbose, show=False):
    top = case.top
    tab = os.path.join(os.path.dirname(top), "fstab")
    with open(tab, "w") as f:
        f.write("".join(line + "\n" for line in case.fstab))
    # the same table as another mount namespace numbers it (a copy taken
    # there, or /proc/PID/mountinfo of a process in it): its mount IDs are
    # not this namespace's, so nothing may be decided by them
    foreign = os.path.join(os.path.dirname(top), "foreign-mountinfo")
    modes = [("-I", tab), ("-I", "/proc/self/mountinfo")]
    if FOREIGN:
        with open("/proc/self/mountinfo") as src, open(foreign, "w") as dst:
            for line in src:
                f = line.split(" ", 2)
                dst.write("%d %d %s" % (int(f[0]) + 100000, int(f[1]) + 100000, f[2]))
        modes.append(("-I", foreign))
    if case.use_etc_fstab or case.no_etc_fstab:
        etc = os.path.join(os.path.dirname(top), "etc-fstab")
        shutil.copy(tab, etc)
        if case.no_etc_fstab:
            mount_tmpfs("/etc")
        elif libc.mount(etc.encode(), b"/etc/fstab", None, MS_BIND, None) != 0:
            raise OSError(ctypes.get_errno(), "bind mount over /etc/fstab")
        modes.append(("-A",))
        modes.append(("-I", "/etc/fstab:/proc/self/mountinfo"))
    findings = []
    try:
        for args in modes:
            theirs, ours = run_tools(args, fstrim_ext, top)
            if show:
                print("-- %s\n   fstrim:\n%s   fstrim-ext:\n%s" % (
                    " ".join(args), theirs.stdout + theirs.stderr, ours.stdout + ours.stderr))
            table = case.fstab if args[-1] not in ("/proc/self/mountinfo", foreign) else []
            # fstrim prints the lines of the host too; compare ours under the case
            t_set, o_set = chosen(theirs.stdout, top), chosen(ours.stdout, top)
            if args[0] == "-A" or "/etc/fstab" in args[-1]:
                t_set |= {p for p in chosen(theirs.stdout, "/") if p[0] == "/"}
                o_set |= {p for p in chosen(ours.stdout, "/") if p[0] == "/"}
            if t_set == o_set:
                counts["same"] += 1
                continue
            kinds = explain(t_set, o_set, table)
            if kinds is None:
                why = sh(fstrim_ext, "-n", "-v", *args, check=False).stdout
                findings.append((args, theirs, ours, t_set, o_set, why))
                counts["unexplained"] += 1
            else:
                for k in kinds:
                    counts[k] += 1
                counts["explained"] += 1
                if verbose:
                    print("case %d %s: %s" % (case.index, " ".join(args), ",".join(kinds)))
    finally:
        if case.use_etc_fstab or case.no_etc_fstab:
            detach("/etc/fstab" if not case.no_etc_fstab else "/etc")
    return findings


def report(case, findings):
    print("== case %d: a difference that no listed one explains" % case.index)
    print("-- layout:")
    for op in case.ops:
        print("   " + op)
    print("-- fstab:")
    for line in case.fstab:
        print("   " + line)
    for args, theirs, ours, t_set, o_set, why in findings:
        print("-- %s" % " ".join(args))
        print("   only fstrim:     %s" % sorted(t_set - o_set))
        print("   only fstrim-ext: %s" % sorted(o_set - t_set))
        print("   fstrim-ext -v:")
        for line in why.splitlines():
            if ": skipped: " in line and case.top in line:
                print("      " + line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fstrim-ext", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--named-only", action="store_true")
    ap.add_argument("--keep-going", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--foreign", action="store_true",
                    help="also choose from a copy of mountinfo numbered as another namespace "
                    "would (tests/differential.bats passes it)")
    ap.add_argument("--show", type=int, default=None,
                    help="run only case N and print its layout, tables and both outputs")
    ap.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()

    if not opts.in_namespace:
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable,
                              os.path.abspath(__file__), "--in-namespace"] + sys.argv[1:])

    fstrim_ext = os.path.abspath(opts.fstrim_ext)
    global FOREIGN
    FOREIGN = opts.foreign
    # No blkid cache, for both tools and for resolve_source(): libblkid
    # answers from a cache entry less than 2 s old without probing, and
    # the loop devices here get new filesystems faster than that (the
    # test before this one, or the run before), so UUID= and LABEL= would
    # resolve by what /run/blkid/blkid.tab still says of their last use.
    os.environ["BLKID_FILE"] = "/dev/null"
    work = tempfile.mkdtemp(prefix="difftables.")
    sh("mount", "-t", "tmpfs", "tmpfs", work)
    bases = Bases(work)
    counts = collections.Counter()
    total = len(Case.NAMED) if opts.named_only else opts.count
    failed = 0
    try:
        bases.setup()
        for i in range(total) if opts.show is None else [opts.show]:
            named = i if i < len(Case.NAMED) else None
            rng = random.Random("%d-%d" % (opts.seed, i))
            top = os.path.join(work, "case", "c")
            os.makedirs(top)
            mount_tmpfs(os.path.dirname(top))
            os.makedirs(top, exist_ok=True)
            case = Case(rng, bases, top, i, named)
            try:
                case.build()
                if opts.show is not None:
                    print("-- layout:\n   " + "\n   ".join(case.ops))
                    print("-- fstab:\n   " + "\n   ".join(case.fstab))
                findings = run_case(case, fstrim_ext, counts, opts.verbose,
                                    opts.show is not None)
                counts["cases"] += 1
                if findings:
                    failed += 1
                    report(case, findings)
                    if not opts.keep_going:
                        break
            finally:
                detach(os.path.dirname(top))
                shutil.rmtree(os.path.dirname(os.path.dirname(top)), ignore_errors=True)
    finally:
        bases.teardown()
        try_sh("umount", "-R", "-l", work)
        shutil.rmtree(work, ignore_errors=True)
    print("seed %d: %d cases, %d comparisons the same, %d explained (%s), %d unexplained"
          % (opts.seed, counts["cases"], counts["same"], counts["explained"],
             ", ".join("%s %d" % (k, counts[k]) for k in
                       ("bind-subdir", "device-mismatch", "ro-view", "table-ro")),
             counts["unexplained"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
