"""The attack app: runs confined as the app of a real session and tries what the design says it cannot.

It judges nothing. Each attempt prints one JSON line `{"probe": name, "errno": NAME or null, ...}` and the
tests in this folder decide whether the refusal came from where the design claims. It prints
`{"probe": "ready"}` first and waits for one JSON line on stdin naming its targets (door pids, the other
session, the abstract socket the test bound in this netns), because those exist only once it runs.
Standard library, ctypes and the project's own client: it runs inside the confinement.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attack_fs
import attack_identity
from attack_probes import (
    LIBC,
    NR,
    attempt,
    connect_unix,
    errno_name,
    in_child,
    open_read,
    open_write,
    report,
    run_status,
    syscall,
)

X32_BIT = 0x40000000
CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS = 0x10000000, 0x40000000, 0x00020000
TOUCH = "/usr/bin/touch"
TTY_MARK_ERASE = b"\x01"  # the erase character the app sets on its terminal (^A: nobody's default)
# A window title and an OSC 52 clipboard write ("sh-attack" base64), then plain text the test reads up to.
TTY_ESCAPES = b"\x1b]0;sh-attack-title\x07\x1b]52;c;c2gtYXR0YWNr\x07"
TTY_SCREEN_END = b"sh-attack-screen-end"  # no newline: a pty's ONLCR would rewrite it


def exec_attacks(tmp: Path, sid: str) -> None:
    """A writable path is never executable, nor mapped executable (the loader). What still runs (an interpreter
    reading a script, a memfd) is reported, and each of those tries a create only Landlock refuses."""
    # Its private dir (parent of $TMPDIR) is its own, 0700: DAC lets it create there, only Landlock refuses.
    landlocked = f"{tmp.parent}/sh-attack-{sid}"
    attempt("landlock.private_dir_create", open_write(f"{landlocked}-direct"))
    script = tmp / "dropped.sh"
    script.write_text(f"#!/bin/sh\necho ran-from-tmpdir\n: > {landlocked}-sh\n")
    script.chmod(0o755)
    report("exec.tmpdir_script", **run_status([str(script)]))
    binary = tmp / "touch-copy"
    shutil.copyfile(TOUCH, binary)
    binary.chmod(0o755)
    report("exec.tmpdir_binary", **run_status([str(binary), f"{landlocked}-binary"]))
    report("limit.sh_reads_script", **run_status(["/bin/sh", str(script)]))
    pyscript = tmp / "dropped.py"
    pyscript.write_text(f"print('ran-from-tmpdir')\nopen({landlocked + '-py'!r}, 'w')\n")
    report("limit.python_reads_script", **run_status([sys.executable, str(pyscript)]))
    loader = os.path.realpath("/lib64/ld-linux-x86-64.so.2")
    report("exec.loader_maps_binary", loader=loader, **run_status([loader, str(binary), f"{landlocked}-loader"]))
    report("limit.memfd_exec", **memfd_exec(f"{landlocked}-memfd"))


def memfd_exec(target: str) -> dict[str, object]:
    """Copy touch into a memfd (a file with no path at all) and execve it through /proc/self/fd."""
    writer = os.memfd_create("sh-attack", 0)
    os.write(writer, Path(TOUCH).read_bytes())
    reader = os.open(f"/proc/self/fd/{writer}", os.O_RDONLY)  # execve refuses a file open for writing
    os.close(writer)
    try:
        return run_status([f"/proc/self/fd/{reader}", target], pass_fds=(reader,))
    finally:
        os.close(reader)


def door_path_attacks(targets: dict[str, Any], sid: str) -> None:
    """Every path to a door socket the app has no edge to: each must end in the kernel's refusal."""
    doors_dir = f"/run/sharness/{sid}/doors"
    for role in ("keys", "fs"):
        pid = targets["pids"][role]
        attempt(f"door.proc_fd_listener.{role}", connect_unix(f"/proc/{pid}/fd/5"))
        attempt(f"door.proc_root.{role}", connect_unix(f"/proc/{pid}/root{doors_dir}/keys.sock"))
        attempt(f"door.proc_cwd.{role}", functools.partial(os.listdir, f"/proc/{pid}/cwd"))
        attempt(f"door.proc_svid_memfd.{role}", open_read(f"/proc/{pid}/fd/4"))
        attempt(f"door.pidfd_getfd.{role}", functools.partial(steal_fd, pid, 5))
    attempt("door.keys_absolute", connect_unix(f"{doors_dir}/keys.sock"))
    os.chdir(doors_dir)
    attempt("door.keys_relative_cwd", connect_unix("keys.sock"))
    attempt("control.fs_relative_cwd", connect_unix("fs.sock"))
    os.chdir(os.environ["TMPDIR"])
    tmp = os.environ["TMPDIR"]
    attempt("door.keys_hardlink", lambda: os.link(f"{doors_dir}/keys.sock", f"{tmp}/keys-link.sock"))
    os.symlink(f"{doors_dir}/keys.sock", f"{tmp}/keys-symlink.sock")
    attempt("door.keys_symlink", connect_unix(f"{tmp}/keys-symlink.sock"))
    other = targets["other_sid"]
    attempt("other_session.fs_socket", connect_unix(f"/run/sharness/{other}/doors/fs.sock"))


def steal_fd(pid: int, fd: int) -> int:
    pidfd = syscall("pidfd_open", pid, 0)()
    try:
        return syscall("pidfd_getfd", pidfd, fd, 0)()
    finally:
        os.close(pidfd)


def signal_attacks(targets: dict[str, Any]) -> None:
    launcher = targets["launcher"]  # by its host pid: the app's parent is its pid namespace's init
    attempt("signal.launcher_kill", lambda: os.kill(launcher, signal.SIGTERM), target=launcher)
    attempt("signal.fs_door_kill", lambda: os.kill(targets["pids"]["fs"], signal.SIGKILL))

    def pidfd_signal() -> int:
        pidfd = syscall("pidfd_open", launcher, 0)()
        try:
            return syscall("pidfd_send_signal", pidfd, signal.SIGTERM, None, 0)()
        finally:
            os.close(pidfd)

    attempt("signal.launcher_pidfd", pidfd_signal)


def abstract_attacks(targets: dict[str, Any], sid: str) -> None:
    """Landlock scopes abstract unix sockets: the app reaches its own, not one bound outside its domain."""
    own = f"\0sh-attack-own-{sid}".encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(own)
        listener.listen(1)
        report("control.abstract_own", **in_child(lambda: errno_of(lambda: len(connect_unix(own)()))))
    attempt("abstract.outside_listener", connect_unix("\0" + targets["abstract"]))
    attempt("control.abstract_missing", connect_unix(f"\0sh-attack-nobody-{sid}"))


def seccomp_attacks(targets: dict[str, Any]) -> None:
    """Denied syscalls, aimed at the app itself where the kernel alone would allow it (so EPERM is seccomp)."""
    me, keys = os.getpid(), targets["pids"]["keys"]
    local, remote = ctypes.create_string_buffer(16), ctypes.create_string_buffer(16)
    iov_local = (ctypes.c_void_p * 2)(ctypes.cast(local, ctypes.c_void_p), 16)
    iov_remote = (ctypes.c_void_p * 2)(ctypes.cast(remote, ctypes.c_void_p), 16)
    attempt("seccomp.process_vm_readv_self", syscall("process_vm_readv", me, iov_local, 1, iov_remote, 1, 0))
    attempt("seccomp.process_vm_readv_door", syscall("process_vm_readv", keys, iov_local, 1, iov_remote, 1, 0))
    attr = ctypes.create_string_buffer(128)  # PERF_TYPE_SOFTWARE/CPU_CLOCK, user only: paranoid 2 allows it
    ctypes.memmove(attr, (1).to_bytes(4, "little") + (128).to_bytes(4, "little"), 8)
    ctypes.memmove(ctypes.byref(attr, 40), bytes([0b1100000]), 1)  # exclude_kernel | exclude_hv
    attempt("seccomp.perf_event_open_self", syscall("perf_event_open", attr, 0, -1, -1, 0))
    attempt("seccomp.perf_event_open_door", syscall("perf_event_open", attr, keys, -1, -1, 0))
    bpf_attr = ctypes.create_string_buffer(bytes([2, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0]).ljust(128, b"\0"))
    attempt("seccomp.bpf_map_create", syscall("bpf", 0, bpf_attr, 128))
    attempt("seccomp.keyctl_own_keyring", syscall("keyctl", 0, -2, 1))  # KEYCTL_GET_KEYRING_ID, process keyring
    attempt("seccomp.add_key", syscall("add_key", ctypes.c_char_p(b"user"), ctypes.c_char_p(b"sh"),
                                       ctypes.c_char_p(b"x"), 1, -2))
    tmp = os.environ["TMPDIR"].encode()
    attempt("seccomp.mount_tmpfs", lambda: libc_call("mount", b"none", tmp, b"tmpfs", 0, None))
    attempt("seccomp.fsopen", syscall("fsopen", ctypes.c_char_p(b"tmpfs"), 0))
    attempt("seccomp.open_tree", syscall("open_tree", -100, ctypes.c_char_p(b"/usr"), 1))
    attempt("seccomp.chroot", lambda: os.chroot(os.environ["TMPDIR"]))
    handle = ctypes.create_string_buffer(8 + 128)
    ctypes.memmove(handle, (128).to_bytes(4, "little"), 4)
    mount_id = ctypes.c_int(0)
    attempt("seccomp.name_to_handle_at", syscall("name_to_handle_at", -100, ctypes.c_char_p(b"/usr"), handle,
                                                 ctypes.byref(mount_id), 0))
    attempt("seccomp.open_by_handle_at", syscall("open_by_handle_at", os.open("/usr", os.O_RDONLY), handle, 0))
    attempt("seccomp.userfaultfd_user_mode", syscall("userfaultfd", 1))  # UFFD_USER_MODE_ONLY
    attempt("seccomp.kcmp_self", syscall("kcmp", me, me, 0, 0, 0))  # KCMP_FILE fd 0 with itself
    report("seccomp.ptrace_traceme", **in_child(lambda: errno_of(syscall("ptrace", 0, 0, 0, 0))))
    report("seccomp.clone_newuser", **in_child(lambda: raw_clone(CLONE_NEWUSER | signal.SIGCHLD)))
    report("seccomp.x32_getpid", **in_child(lambda: syscall(str(X32_BIT | NR["getpid"]))()))
    ns_attacks(targets, keys)


def errno_of(action: Callable[[], int]) -> int:
    """0 when the call succeeded, else its errno: a forked child's exit code carries it to the parent."""
    try:
        action()
    except OSError as exc:
        return exc.errno or 255
    return 0


def raw_clone(flags: int) -> int:
    """clone() with namespace flags in a child: its errno as the exit code, 0 if a namespace was made."""
    try:
        pid = syscall("clone", flags, 0, 0, 0, 0)()
    except OSError as exc:
        return exc.errno or 255
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return 0


def ns_attacks(targets: dict[str, Any], keys: int) -> None:
    sid = os.environ["SHARNESS_SESSION"]
    attempt("netns.open_run_netns", open_read(f"/run/netns/sh-{sid}-keys"))
    attempt("netns.setns_run_netns_opath", lambda: setns_path(f"/run/netns/sh-{sid}-keys"))
    attempt("netns.open_door_ns", open_read(f"/proc/{keys}/ns/net"))
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    attempt("seccomp.setns_own_netns", syscall("setns", own, CLONE_NEWNET))
    os.close(own)
    attempt("seccomp.unshare_mount_ns", lambda: libc_call("unshare", CLONE_NEWNS))


def setns_path(path: str) -> int:
    """O_PATH opens are not fenced by Landlock's read right: setns itself must be refused."""
    fd = os.open(path, os.O_PATH)
    try:
        return syscall("setns", fd, CLONE_NEWNET)()
    finally:
        os.close(fd)


def libc_call(name: str, *args: object) -> int:
    result = getattr(LIBC, name)(*args)
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return int(result)


def file_attacks(targets: dict[str, Any], sid: str) -> None:
    attempt("file.etc_shadow", open_read("/etc/shadow"))
    attempt("control.etc_passwd", open_read("/etc/passwd"))
    attempt("control.own_svid", open_read(os.environ["SHARNESS_SVID"]))
    audit_root, audit_dir = targets["audit_root"], f"{targets['audit_root']}/{sid}"
    attempt("audit.list_root", lambda: os.listdir(audit_root))
    attempt("audit.read_log", open_read(f"{audit_dir}/audit.jsonl"))
    attempt("audit.append_log", lambda: os.close(os.open(f"{audit_dir}/audit.jsonl", os.O_WRONLY | os.O_APPEND)))
    attempt("audit.create_file", open_write(f"{audit_dir}/forged.jsonl"))
    other = targets["other_sid"]
    attempt("other_session.app_svid", open_read(f"/run/sharness/{other}/app/svid.pem"))
    attempt("other_session.list_runtime", lambda: os.listdir(f"/run/sharness/{other}"))
    attempt("own_session.keys_private_dir", lambda: os.listdir(f"/run/sharness/{sid}/keys"))
    attempt("own_session.fs_private_dir", lambda: os.listdir(f"/run/sharness/{sid}/fs"))
    for controller, name, value in (("memory", "memory.limit_in_bytes", "-1"), ("pids", "pids.max", "max")):
        path = f"/sys/fs/cgroup/{controller}/sharness/{sid}/app/{name}"
        attempt(f"cgroup.raise_{controller}", functools.partial(write_text, path, value))
    attempt("cgroup.join_fs_door", lambda: write_text(f"/sys/fs/cgroup/pids/sharness/{sid}/fs/cgroup.procs",
                                                      str(os.getpid())))
    attempt("proc.launcher_root", lambda: os.listdir(f"/proc/{targets['launcher']}/root"))
    attempt("proc.launcher_mem", open_read(f"/proc/{targets['launcher']}/mem"))
    attempt("proc.sysctl_write", lambda: write_text("/proc/sys/kernel/hostname", "sh-attack"))
    report("workspace.exec_door_written", **run_status([f"{targets['workspace']}/bin/tool.sh"]))


# (name, family, type, protocol) for socket families beyond AF_UNIX and AF_INET(6), the kernel's rarer code
FAMILIES = (
    ("netlink_route", 16, socket.SOCK_RAW, 0), ("alg", 38, socket.SOCK_SEQPACKET, 0),
    ("vsock", 40, socket.SOCK_STREAM, 0), ("tipc", 30, socket.SOCK_RDM, 0), ("rds", 21, socket.SOCK_SEQPACKET, 0),
    ("key", 15, socket.SOCK_RAW, 2), ("can", 29, socket.SOCK_RAW, 1), ("llc", 26, socket.SOCK_DGRAM, 0),
    ("x25", 9, socket.SOCK_SEQPACKET, 0), ("qipcrtr", 42, socket.SOCK_DGRAM, 0), ("smc", 43, socket.SOCK_STREAM, 0),
    ("xdp", 44, socket.SOCK_RAW, 0), ("bluetooth", 31, socket.SOCK_RAW, 0), ("pppox", 24, socket.SOCK_STREAM, 0),
)


def host_attacks(targets: dict[str, Any]) -> None:
    """What the app can reach of the host beyond its rules: world-writable pathname sockets outside every
    Landlock rule (as the D-Bus system bus or resolved's varlink socket are, under /run; or MariaDB's
    /var/lib/mysql/mysql.sock on RHEL), one inside a path it may read (a project's PostgreSQL socket,
    0777 by default), other users' command lines."""
    attempt("host.pathname_socket", connect_unix(targets["host_socket"]))
    attempt("host.var_lib_socket", connect_unix(targets["var_lib_socket"]))
    attempt("host.socket_in_read_path", connect_unix(targets["read_path_socket"]))
    found, uids = [], set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                uids.add(os.stat(f"/proc/{entry}").st_uid)
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            found += [arg.decode() for arg in cmdline.split(b"\0") if arg.startswith(b"sh-attack-secret-")]
    report("host.other_users_cmdline", found=found, visible_uids=sorted(uids))
    attempt("host.secret_process_cmdline", open_read(f"/proc/{targets['secret_pid']}/cmdline"))
    report("host.socket_families", results=socket_families())


def socket_families() -> dict[str, str | None]:
    """socket() in each family of FAMILIES: null where it opened, else the errno's name."""
    results: dict[str, str | None] = {}
    for name, family, kind, proto in FAMILIES:
        try:
            socket.socket(family, kind, proto).close()
            results[name] = None
        except OSError as exc:
            results[name] = errno_name(exc.errno or 0)
    return results


def mount_attacks() -> None:
    """Its private root: unmount its proc or the root itself, and what Landlock says inside it (the root's
    /run is a directory of the root's tmpfs, root's 0755, so DAC would list it)."""
    attempt("mounts.umount_proc", lambda: libc_call("umount2", b"/proc", 2))  # MNT_DETACH
    attempt("mounts.umount_root", lambda: libc_call("umount2", b"/", 2))
    attempt("landlock.list_root_run", lambda: os.listdir("/run"))


def write_text(path: str, text: str) -> str:
    with open(path, "w") as handle:
        handle.write(text)
    return "written"


def inherited() -> None:
    """What the app got from the launcher: its open fds (where each leads) and its environment's names."""
    fds = {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in map(int, os.listdir("/proc/self/fd"))
           if os.path.exists(f"/proc/self/fd/{fd}")}
    report("inherited", fds={str(fd): ("pipe" if where.startswith("pipe:") else where) for fd, where in fds.items()},
           env=sorted(os.environ), uid=os.getuid())


def tty_attacks(targets: dict[str, Any]) -> None:
    """The terminal on fd 0 (the person's, or a pty the launcher relays): inject input (TIOCSTI), take it as
    controlling terminal, reopen it or the person's by name, change its modes, write escape sequences to it.
    Then it waits for a line: meanwhile the test looks at the person's terminal."""
    name = os.readlink("/proc/self/fd/0")  # not os.ttyname: /dev/pts may not be in its view at all
    report("tty.isatty", value=os.isatty(0), name=name, rdev=os.fstat(0).st_rdev)
    attempt("tty.tiocsti", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"#"))
    attempt("tty.take_ctty", lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    attempt("tty.steal_ctty", lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 1))
    attempt("tty.open_dev_tty", open_read("/dev/tty"))
    attempt("tty.open_slave_path", lambda: os.close(os.open(name, os.O_RDWR)))
    attempt("tty.open_person_tty", lambda: os.close(os.open(targets["person_tty"], os.O_RDWR)))
    modes = termios.tcgetattr(0)
    modes[6][termios.VERASE] = TTY_MARK_ERASE
    attempt("tty.set_modes", lambda: termios.tcsetattr(0, termios.TCSANOW, modes))
    attempt("tty.escape_sequences", lambda: os.write(0, TTY_ESCAPES + TTY_SCREEN_END))
    report("tty.modes_set", erase=TTY_MARK_ERASE.decode(), escapes=TTY_ESCAPES.decode(), end=TTY_SCREEN_END.decode())
    sys.stdin.readline()


def linger() -> None:
    """Leave a daemon behind: double fork, own session, deaf to SIGTERM and SIGHUP; teardown must kill it."""
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            os.write(write_end, str(os.getpid()).encode())
            time.sleep(3600)
        os._exit(0)
    os.close(write_end)
    report("linger.daemon", pid=int(os.read(read_end, 32)), uid=os.getuid(), pid_ns=os.readlink("/proc/self/ns/pid"))


def main() -> int:
    sid = os.environ["SHARNESS_SESSION"]
    inherited()
    report("ready", sid=sid, pid=os.getpid())
    targets = json.loads(sys.stdin.readline())
    http = subprocess.Popen([sys.executable, str(Path(__file__).with_name("hostile_http.py"))])
    tmp = Path(os.environ["TMPDIR"])
    attack_identity.run(targets, report)
    attack_fs.run(report)
    exec_attacks(tmp, sid)
    door_path_attacks(targets, sid)
    signal_attacks(targets)
    abstract_attacks(targets, sid)
    seccomp_attacks(targets)
    file_attacks(targets, sid)
    tty_attacks(targets)
    host_attacks(targets)
    mount_attacks()
    report("http.exit", code=http.wait(timeout=60))
    linger()
    report("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
