"""Where the kernel's own checks leave gaps, held anyway (issue 10, items 1 and 10), in a real session of
its own, run twice (stdio on pipes, then on a terminal): the app (kernel_gaps_app.py) has the net edge,
so it may open TCP sockets.

- IPC: every component has its own IPC namespace. The host's SysV segment, queue and semaphore set (mode
  0666: no permission keeps anyone out) and its POSIX queue are not listed and not reached by key, name
  or id; what the app leaves is in its namespace only, and gone with it.
- listen() on an unbound TCP socket binds a port without Landlock's bind check (ABI 7): seccomp refuses
  listen() for a component that may open TCP sockets and has no bind row.
- TCP Fast Open's connect (sendto/sendmsg with MSG_FASTOPEN) passes no Landlock connect check: seccomp
  refuses the flag and the Fast Open socket options; the launcher's netns has tcp_fastopen=0 behind it.
- socketpair() obeys socket()'s family allow list; memfd_secret is refused.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from launcher.kernel import netns
from tests.attacks import sysv_ipc
from tests.attacks._live import LiveSession
from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import basic_manifest, leftovers, write_manifest

pytestmark = pytest.mark.root
HERE = Path(__file__).parent
OWN_SEGMENT = 32 << 20


@dataclass
class GapsRun:
    """What the app reported, and what the test saw of its namespaces while it ran and after it ended."""

    stdio: str = "pipes"
    sid: str = ""
    app_uid: int = 0
    own_key: int = 0
    own_queue: str = ""
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    shm_in_app_ns: list[dict[str, str]] = field(default_factory=list)  # while it ran, from inside its ns
    shm_on_host_during: list[dict[str, str]] = field(default_factory=list)
    fastopen_unconfined: str = ""  # the test's own Fast Open connect inside the app's netns
    fastopen_sysctl: str = ""  # net.ipv4.tcp_fastopen of the app's netns, read by the test
    host_after: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    queue_after: str = ""


def _manifest(root: Path) -> Path:
    workspace = root / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, str(HERE / "kernel_gaps_app.py")])
    document["doors"] = {**document["doors"], "net": {"allow": {"app": ["pypi.org:443"]}}}  # type: ignore[dict-item]
    document["edges"] = [["app", "fs"], ["app", "net"]]
    return write_manifest(root, document)


def _app_pid(sid: str) -> int:
    return int(Path(f"/sys/fs/cgroup/pids/sharness/{sid}/app/cgroup.procs").read_text().split()[0])


def _uid_of(pid: int) -> int:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(status["Uid"].split()[0])


def _shm_inside(pid: int) -> list[dict[str, str]]:
    """/proc/sysvipc/shm as listed inside the IPC namespace of `pid` (nsenter joins only that one)."""
    done = subprocess.run(["nsenter", f"--ipc=/proc/{pid}/ns/ipc", "cat", "/proc/sysvipc/shm"],
                          capture_output=True, text=True, timeout=30, check=True)
    header, *rows = done.stdout.splitlines()
    return [dict(zip(header.split(), row.split(), strict=False)) for row in rows]


def _fast_open_in(netns_name: str, port: int) -> str:
    with netns.entered(netns_name), socket.socket() as sock:
        return sysv_ipc.errno_of(lambda: sock.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", port)))


def _host_rows(key: int, uid: int) -> dict[str, list[dict[str, str]]]:
    """Rows of the host's /proc/sysvipc with the app's key, or made or owned by the app's uid."""
    def mine(row: dict[str, str]) -> bool:
        return int(row["key"]) == key or int(row["uid"]) == uid or int(row["cuid"]) == uid

    return {kind: [row for row in sysv_ipc.listed(kind) if mine(row)] for kind in ("shm", "msg", "sem")}


def _drive(live: LiveSession, run: GapsRun, host: sysv_ipc.Objects) -> None:
    run.sid = live.wait_probe("ready")["sid"]
    pid = _app_pid(run.sid)
    run.app_uid = _uid_of(pid)
    app_netns = f"sh-{run.sid}-app"
    with netns.tcp_listener_in_netns(app_netns, "127.0.0.1", 0) as listener:
        port = listener.getsockname()[1]
        live.send(json.dumps({"host_ipc": asdict(host), "tcp_port": port, "own_key": run.own_key,
                              "own_queue": run.own_queue}))
        live.wait_probe("ipc.made")
        run.shm_in_app_ns = _shm_inside(pid)
        run.shm_on_host_during = sysv_ipc.listed("shm")
        run.fastopen_unconfined = _fast_open_in(app_netns, port)
        with netns.entered(app_netns), open("/proc/sys/net/ipv4/tcp_fastopen") as sysctl:
            run.fastopen_sysctl = sysctl.read().strip()
    live.send("end")
    run.summary = live.finish()
    run.probes = live.probes
    run.host_after = _host_rows(run.own_key, run.app_uid)
    run.queue_after = sysv_ipc.errno_of(lambda: sysv_ipc.mq_close(sysv_ipc.mq_open(run.own_queue)))


@pytest.fixture(scope="module", params=["pipes", "pty"])
def gaps(request: pytest.FixtureRequest) -> Iterator[GapsRun]:
    """The session, run to its end, with the host's world-open IPC objects present throughout; once with
    the launcher's stdio on pipes, once on a terminal (the app then gets the launcher's pty)."""
    if os.geteuid() != 0:
        pytest.skip("needs root on a real kernel: run `sudo make test` to watch the kernel refuse")
    root = Path(tempfile.mkdtemp(prefix="sh-test-gaps-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    run = GapsRun(stdio=request.param, own_key=sysv_ipc.scratch_key(), own_queue=f"/sh-attack-{os.urandom(4).hex()}")
    live: LiveSession | None = None
    try:
        with sysv_ipc.world_open_objects() as host:
            live = LiveSession(_manifest(root), root / "audit", root / "stderr", tty=request.param == "pty")
            _drive(live, run, host)
        yield run
    finally:
        if live is not None:
            live.stop()
        sysv_ipc.remove_by_key(run.own_key, run.own_queue)
        shutil.rmtree(root, ignore_errors=True)


def test_the_app_ran_with_the_stdio_asked_for(gaps: GapsRun) -> None:
    assert gaps.probes["ready"]["tty"] is (gaps.stdio == "pty")


# --- IPC: the namespace is the boundary ------------------------------------------------------------

HOST_IPC = {
    "ipc.host_shm_key": "ENOENT", "ipc.host_msg_key": "ENOENT", "ipc.host_sem_key": "ENOENT",
    "ipc.host_mq_name": "ENOENT",
    "ipc.host_shm_attach_id": "EINVAL", "ipc.host_shm_stat_id": "EINVAL", "ipc.host_msg_stat_id": "EINVAL",
    "ipc.host_sem_stat_id": "EINVAL",
}


@pytest.mark.parametrize("probe", sorted(HOST_IPC))
def test_the_hosts_ipc_objects_are_not_reached(gaps: GapsRun, probe: str) -> None:
    """By key or name: ENOENT; by the id the host gave them: EINVAL. Mode 0666, so without the IPC
    namespace the app would reach each (tests/launcher/kernel/test_confine_ipc.py, the control)."""
    assert gaps.probes[probe]["errno"] == HOST_IPC[probe]


def test_posix_queues_are_outside_every_landlock_path(gaps: GapsRun) -> None:
    """Creating one in its own namespace: EACCES, Landlock (a queue is opened on the namespace's internal
    mqueue mount, which no Landlock rule covers). So a host queue is ENOENT by the namespace first, and
    Landlock's EACCES behind it."""
    assert gaps.probes["ipc.own_mq_create"]["errno"] == "EACCES"


def test_the_app_lists_no_ipc_object_but_its_own(gaps: GapsRun) -> None:
    """By index, as ipcs does (its proc has subset=pid: /proc/sysvipc is ENOENT), in a namespace of its own."""
    listed = gaps.probes["ipc.listed"]
    assert listed["listed"] == {"shm": [], "msg": [], "sem": []}
    assert gaps.probes["ipc.proc_sysvipc"]["errno"] == "ENOENT"
    assert listed["ns"] != os.readlink("/proc/self/ns/ipc")
    assert gaps.probes["ipc.made"]["listed"] == [gaps.own_key]


def test_what_the_app_made_lived_in_its_namespace_only(gaps: GapsRun) -> None:
    """While it ran: the 32 MiB segment, resident, is listed inside the app's namespace, not on the host."""
    inside = [row for row in gaps.shm_in_app_ns if int(row["key"]) == gaps.own_key]
    assert len(inside) == 1 and int(inside[0]["size"]) == OWN_SEGMENT and int(inside[0]["rss"]) >= OWN_SEGMENT
    assert int(inside[0]["uid"]) == gaps.app_uid
    assert not [row for row in gaps.shm_on_host_during if int(row["key"]) == gaps.own_key]


def test_nothing_the_app_made_outlives_the_session(gaps: GapsRun) -> None:
    """After teardown the host holds no segment, queue or semaphore set with its key or its (deleted) uid,
    and no POSIX queue of its name; the session left nothing else either."""
    assert gaps.host_after == {"shm": [], "msg": [], "sem": []}
    assert gaps.queue_after == "ENOENT"
    assert gaps.summary["teardown_errors"] == []
    assert leftovers(gaps.sid) == {}


# --- listen(), Fast Open, socketpair, memfd_secret: seccomp, with the kernel behind it -------------


def test_listen_on_an_unbound_socket_is_refused_by_seccomp(gaps: GapsRun) -> None:
    """EPERM for TCP and TCP6 (Landlock alone lets the implicit bind through: test_confine.py shows it),
    while an explicit bind(port 0) is Landlock's EACCES. Unix listen() is EPERM too: seccomp cannot tell a
    TCP fd from a Unix one, the cost of this row for a component with the net edge."""
    for probe in ("net.listen_unbound_tcp", "net.listen_unbound_tcp6", "net.listen_unix"):
        assert gaps.probes[probe]["errno"] == "EPERM", gaps.probes[probe]
    assert gaps.probes["control.bind_port0"]["errno"] == "EACCES"


def test_fast_open_is_refused_by_seccomp_and_off_in_the_apps_netns(gaps: GapsRun) -> None:
    """The test listens inside the app's netns on a port Landlock does not grant (connect: EACCES), while
    the proxy port connects. sendto/sendmsg(MSG_FASTOPEN) and TCP_FASTOPEN_CONNECT: EPERM, seccomp. Behind
    it tcp_fastopen=0 (read by the test: the app's proc has no sys/), so the same sendto unconfined in that
    netns gets the kernel's EOPNOTSUPP."""
    assert gaps.probes["control.connect_test_port"]["errno"] == "EACCES"
    assert gaps.probes["control.connect_proxy"]["errno"] is None
    for probe in ("net.fastopen_sendto", "net.fastopen_sendmsg", "net.fastopen_connect_option"):
        assert gaps.probes[probe]["errno"] == "EPERM", gaps.probes[probe]
    assert gaps.fastopen_sysctl == "0" and gaps.probes["net.fastopen_sysctl"]["errno"] == "ENOENT"
    assert gaps.fastopen_unconfined == errno.errorcode[errno.EOPNOTSUPP]


@pytest.mark.parametrize("family", ["vsock", "can", "tipc", "bluetooth", "alg", "inet_dgram"])
def test_socketpair_obeys_the_family_allow_list(gaps: GapsRun, family: str) -> None:
    """EPERM from seccomp before the kernel creates the family (or loads its module); a Unix pair works."""
    assert gaps.probes[f"seccomp.socketpair_{family}"]["errno"] == "EPERM"
    assert gaps.probes["control.socketpair_unix"]["errno"] is None


def test_memfd_secret_is_refused_by_seccomp(gaps: GapsRun) -> None:
    """EPERM; this kernel alone grants it (secretmem is on: test_seccomp.py's control gets an fd)."""
    assert gaps.probes["seccomp.memfd_secret"]["errno"] == "EPERM"
