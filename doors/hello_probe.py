"""The probe app of `sharness-launch hello`: runs confined as the app and tries what it must not do.

Each probe prints one JSON line: {"probe", "attempt", "held", "who", "detail"}. A probe is held only when
the refusal came from where the claim says (the errno the mechanism gives); anything else is not held.
Controls check that the app can do what it is allowed to, so a broken setup cannot pass as "held".
Standard library only (plus doors.client for the door control): it runs inside the confinement.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

LIBC = ctypes.CDLL(None, use_errno=True)
SYS_IO_URING_SETUP = 425
PTRACE_ATTACH = 16
CLONE_NEWUSER = 0x10000000


def _report(probe: str, attempt: str, held: bool, who: str, detail: str) -> None:
    print(json.dumps({"probe": probe, "attempt": attempt, "held": held, "who": who, "detail": detail}), flush=True)


def _expect_errno(probe: str, attempt: str, action: Callable[[], object], want: int | dict[int, str],
                  who: str = "") -> None:
    """Held when the action fails with an errno the claim names (`want` maps each such errno to its holder)."""
    holders = want if isinstance(want, dict) else {want: who}
    try:
        action()
    except OSError as exc:
        holder = holders.get(exc.errno or 0)
        detail = f"{errno.errorcode.get(exc.errno or 0, exc.errno)} ({exc.strerror})"
        wanted = "/".join(errno.errorcode[e] for e in holders)
        _report(probe, attempt, holder is not None, holder or f"unexpected errno, wanted {wanted}", detail)
        return
    _report(probe, attempt, False, "nothing", "it succeeded")


def _libc_call(name: str, *args: object) -> Callable[[], int]:
    def call() -> int:
        result = getattr(LIBC, name)(*args)
        if result == -1:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return int(result)

    return call


def _open_write(path: str) -> Callable[[], None]:
    return lambda: os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))


def _open_read(path: str) -> Callable[[], None]:
    return lambda: os.close(os.open(path, os.O_RDONLY))


def _connect_unix(path: str) -> Callable[[], None]:
    def connect() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)

    return connect


def _egress(deny_inet: bool) -> None:
    attempt = "TCP connect to 192.0.2.1:443 (a public address; no packet can leave)"
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError as exc:
        held = exc.errno == errno.EPERM and deny_inet
        _report("egress.public", attempt, held, "kernel: seccomp (no AF_INET sockets without a net edge)",
                f"socket(): {errno.errorcode.get(exc.errno or 0)}")
        return
    with sock:
        sock.settimeout(2)
        try:
            sock.connect(("192.0.2.1", 443))
        except OSError as exc:
            who = {
                errno.EACCES: "kernel: Landlock (TCP connect allowed only to the proxy port)",
                errno.ENETUNREACH: "kernel: network namespace (no route: loopback only)",
            }.get(exc.errno or 0)
            _report("egress.public", attempt, who is not None, who or "unexpected errno",
                    f"connect(): {errno.errorcode.get(exc.errno or 0, exc.errno)}")
            return
    _report("egress.public", attempt, False, "nothing", "connected")


def _memory(limit_mb: int) -> None:
    attempt = f"allocate {2 * limit_mb} MiB past the {limit_mb} MiB memory limit"
    pid = os.fork()
    if pid == 0:
        chunks = []
        try:
            for _ in range(2 * limit_mb // 16):
                chunks.append(bytearray(16 * 1024 * 1024))  # zero-filled: every page is touched
        except MemoryError:
            os._exit(3)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    if os.WIFSIGNALED(status):
        detail = f"child killed by signal {os.WTERMSIG(status)}"
    else:
        detail = f"child exit {os.WEXITSTATUS(status)}"
    _report("memory.limit", attempt, killed, "kernel: memory cgroup (OOM kill)" if killed else "nothing", detail)


def _pids(limit: int) -> None:
    attempt = f"fork past the pids limit of {limit}"
    read_end, write_end = os.pipe()
    children: list[int] = []
    outcome: OSError | None = None
    try:
        for _ in range(limit + 8):
            pid = os.fork()
            if pid == 0:
                os.close(write_end)
                os.read(read_end, 1)
                os._exit(0)
            children.append(pid)
    except OSError as exc:
        outcome = exc
    finally:
        os.close(write_end)
        os.close(read_end)
        for pid in children:
            os.waitpid(pid, 0)
    held = outcome is not None and outcome.errno == errno.EAGAIN and len(children) < limit
    detail = (f"fork failed with {errno.errorcode.get(outcome.errno or 0)} after {len(children)} children"
              if outcome else f"{len(children)} children forked")
    _report("pids.limit", attempt, held, "kernel: pids cgroup" if held else "nothing", detail)


def _control_private_write() -> None:
    path = os.path.join(os.environ["TMPDIR"], "control.txt")
    try:
        with open(path, "w") as handle:
            handle.write("the app may write its own private directory\n")
        os.unlink(path)
    except OSError as exc:
        _report("control.private_write", f"write {path}", False, "broken setup", str(exc))
        return
    _report("control.private_write", f"write {path}", True, "allowed, as it should be", "written")


def _control_key_own() -> None:
    """The app's own SVID is its to read: the key probes' refusals are about whose key, not about keys."""
    path = os.environ["SHARNESS_SVID"]
    try:
        with open(path, "rb") as pem:
            holds = b"PRIVATE KEY-----" in pem.read()
    except OSError as exc:
        _report("control.key_own", f"read {path}", False, "broken setup", str(exc))
        return
    _report("control.key_own", f"read {path}", holds, "allowed, as it should be" if holds else "broken setup",
            "a PEM private key" if holds else "no private key in it")


def _control_door_hello(role: str) -> None:
    attempt = f"GET /v0/hello on the {role} door (an allowed edge)"
    try:
        from doors.client import DoorClient

        with DoorClient.from_env(role) as client:
            reply = client.hello()
    except Exception as exc:
        _report(f"control.{role}_hello", attempt, False, "broken setup", f"{type(exc).__name__}: {exc}")
        return
    _report(f"control.{role}_hello", attempt, True, "allowed, as it should be", f"answered as {reply!r}"[:200])


def _control_fs_write(workspace: str) -> None:
    attempt = "write probe-through-door.txt through the fs door"
    try:
        from doors.fs.client import FsClient

        with FsClient.from_env() as fs:
            fs.write("probe-through-door.txt", b"written by the fs door\n")
            landed = fs.read("probe-through-door.txt")
    except Exception as exc:
        _report("control.fs_write", attempt, False, "broken setup", f"{type(exc).__name__}: {exc}")
        return
    ok = landed == b"written by the fs door\n"
    _report("control.fs_write", attempt, ok, "allowed, as it should be" if ok else "broken setup",
            f"read back {len(landed)} bytes")


# Who holds each refusal, in the words `hello` prints.
_LANDLOCK = "kernel: Landlock"
_HIDDEN = "kernel: private mount namespace (not even visible to the app)"
_OTHER_PID_NS = "kernel: pid namespace (the door's pid does not exist in the app's)"
_INVISIBLE = f"{_OTHER_PID_NS}, and proc hidepid=invisible behind it"
_PTRACE_CHECK = "kernel: another uid (ptrace access check)"


def _controls(targets: dict[str, Any]) -> None:
    """What the app may do: write its private directory, and (when a door is on its edges) reach it."""
    _control_private_write()
    _control_key_own()
    if targets.get("hello_door"):
        _control_door_hello(targets["hello_door"])
        _control_fs_write(targets["workspace"])


def _files(targets: dict[str, Any], door: str, victim: int) -> None:
    """Files the app must not write or read: the workspace, /etc, a door's directory, key, journal, /proc."""
    _expect_errno("workspace.write", f"create a file in the workspace {targets['workspace']} (mode 0777)",
                  _open_write(f"{targets['workspace']}/probe.txt"),
                  {errno.EROFS: "kernel: read-only bind mount of a read path, Landlock behind it (DAC would allow "
                                "it: only the fs door writes the workspace)",
                   errno.EACCES: f"{_LANDLOCK} (DAC would allow it: only the fs door writes the workspace)"})
    _expect_errno("etc.write", "create /etc/sharness-probe", _open_write("/etc/sharness-probe"),
                  {errno.EACCES: "kernel: DAC and Landlock", errno.EROFS: "kernel: read-only root (bwrap's)"})
    _expect_errno("other_dir.write", f"create a file in the {door} door's directory",
                  _open_write(f"{targets['runtime_dir']}/{door}/probe"),
                  {errno.EACCES: "kernel: DAC and Landlock", errno.ENOENT: _HIDDEN})
    # A door closes its key memfd once it has loaded the key: its memory is the only place the key is now.
    _expect_errno("key.read", f"read the {door} door's private key from its memory (/proc/{victim}/mem)",
                  _open_read(f"/proc/{victim}/mem"), {errno.EACCES: _PTRACE_CHECK, errno.ENOENT: _INVISIBLE})
    _expect_errno("launcher_state.read", "read the launcher's journal", _open_read(targets["journal"]),
                  {errno.EACCES: "kernel: DAC and Landlock", errno.ENOENT: _HIDDEN})
    _expect_errno("environ.read", f"read /proc/{victim}/environ", _open_read(f"/proc/{victim}/environ"),
                  {errno.EACCES: _PTRACE_CHECK, errno.ENOENT: _INVISIBLE})


def _reach(targets: dict[str, Any], door: str, victim: int) -> None:
    """Other processes the app must not reach: the internet, a door off its edges, a door's signals and memory."""
    _egress(targets["deny_inet"])
    off_edge = targets["off_edge_door"]
    _expect_errno("door.off_edge", f"connect to {off_edge}.sock (not on the app's edges)",
                  _connect_unix(targets["sockets"][off_edge]),
                  {errno.EACCES: "kernel: socket file group admits only edge-listed clients",
                   errno.ENOENT: "kernel: private mount namespace binds in only edge-listed sockets"})
    _expect_errno("door.signal", f"SIGTERM the {door} door", lambda: os.kill(victim, signal.SIGTERM),
                  {errno.ESRCH: _OTHER_PID_NS, errno.EPERM: "kernel: another uid and Landlock signal scoping"})
    attach = _libc_call("ptrace", PTRACE_ATTACH, victim, 0, 0)
    _expect_errno("door.ptrace", f"PTRACE_ATTACH the {door} door", attach, errno.EPERM, "kernel: seccomp")


def _syscalls(deny_inet: bool) -> None:
    """Kernel interfaces the app must not open: internet and raw sockets, io_uring, user namespaces, root."""
    if deny_inet:
        tcp = lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()  # noqa: E731
        _expect_errno("socket.inet", "socket(AF_INET, SOCK_STREAM) without an edge to the net door", tcp,
                      errno.EPERM, "kernel: seccomp")
    udp = lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()  # noqa: E731
    _expect_errno("socket.udp", "socket(AF_INET, SOCK_DGRAM)", udp, errno.EPERM, "kernel: seccomp")
    _expect_errno("socket.packet", "socket(AF_PACKET, SOCK_RAW)", lambda: socket.socket(17, socket.SOCK_RAW).close(),
                  errno.EPERM, "kernel: seccomp")
    params = ctypes.create_string_buffer(120)
    _expect_errno("io_uring", "io_uring_setup()", _libc_call("syscall", SYS_IO_URING_SETUP, 1, params), errno.EPERM,
                  "kernel: seccomp")
    _expect_errno("userns", "unshare(CLONE_NEWUSER)", _libc_call("unshare", CLONE_NEWUSER), errno.EPERM,
                  "kernel: seccomp")
    _expect_errno("setuid.root", "setuid(0)", lambda: os.setuid(0),
                  {errno.EPERM: "kernel: no capability (another uid)",
                   errno.EINVAL: "kernel: uid 0 is not mapped in its user namespace (bwrap's)"})


def main() -> int:
    """Try, in the order `hello` reports them, what the app may do and everything it must not."""
    targets = json.loads(os.environ["SHARNESS_PROBE"])
    door = targets["victim_door"]
    victim = targets["pids"][door]
    _controls(targets)
    _files(targets, door, victim)
    _reach(targets, door, victim)
    _syscalls(bool(targets["deny_inet"]))
    _memory(int(targets["max_memory_mb"]))
    _pids(int(targets["max_pids"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
