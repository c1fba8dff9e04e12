"""What a command run by the shell door attempts, and the kernel refuses (real session, root).

Each case is what an agent tricked into hostile commands would try; the refusal must come from the kernel
(a read-only bind and Landlock, the network namespace, the per-command Landlock layer), never from the
command's good will. The control for each is in the same session: the shell's own edge (net.sock) connects,
its scratch is writable.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator

import pytest

from tests.integration._shell import Session, final, output, py, shell_session

pytestmark = pytest.mark.root

CGROUP_ESCAPE = ("import os\nfor c in ('memory', 'pids'):\n    d = '/sys/fs/cgroup/' + c + '/sharness/{sid}/shell'\n"
                 "    try: os.mkdir(d + '/evil'); print(c, 'made')\n    except OSError as e: print(c, e.errno)\n"
                 "    try: open(d + '/cgroup.procs', 'w').write(str(os.getpid())); print(c, 'moved')\n"
                 "    except OSError as e: print(c, e.errno)\n"
                 # a waiting zygote's cgroup (a sibling): a process moved there would outlive its command
                 "    own = [l.split(':')[2].rsplit('/', 1)[1] for l in open('/proc/self/cgroup') if c in l][0]\n"
                 "    for s in sorted(os.listdir(d)):\n"
                 "        if s.startswith('cmd-') and s != own:\n"
                 "            try: open(d + '/' + s + '/cgroup.procs', 'w').write(str(os.getpid()))\n"
                 "            except OSError as e: print(c, 'sibling', e.errno)\n"
                 "            else: print(c, 'joined', s)")
EXEC_WRITTEN = ("import os, shutil\nd = os.environ['{where}']\nshutil.copy('/bin/true', d + '/t')\n"
                "os.chmod(d + '/t', 0o755)\ntry: os.execv(d + '/t', ['t'])\nexcept OSError as e: print(e.errno)")


def _connect(address: str) -> str:
    family = "socket.AF_UNIX" if address.startswith("/") else "socket.AF_INET"
    host, _, port = address.rpartition(":")
    target = repr(address) if address.startswith("/") else repr((host, int(port)))
    return (f"import socket\ns = socket.socket({family})\ns.settimeout(10)\n"
            f"try: s.connect({target}); print('connected')\nexcept OSError as e: print(e.errno)")


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    cases = [
        py("write.workspace", "try: open('hello.txt', 'w'); print('written')\nexcept OSError as e: print(e.errno)"),
        py("write.scratch", "import os; open(os.environ['TMPDIR'] + '/x', 'w').write('x'); print('written')"),
        py("exec.tmp", EXEC_WRITTEN.replace("{where}", "TMPDIR")),
        py("exec.home", EXEC_WRITTEN.replace("{where}", "HOME")),
        py("connect.proxy.port", _connect("192.0.2.1:3128")),
        py("connect.other.port", _connect("192.0.2.1:443")),
        py("door.net", _connect("/run/sharness/{sid}/doors/net.sock")),
        py("door.fs", _connect("/run/sharness/{sid}/doors/fs.sock")),
        py("signal.door", "import os\ntry: os.kill(os.getppid(), 0); print('signalled')\n"
           "except OSError as e: print(e.errno)"),
        py("read.door", "import os\ntry: open(f'/proc/{os.getppid()}/environ').read(); print('read')\n"
           "except OSError as e: print(e.errno)"),
        py("cgroup.escape", CGROUP_ESCAPE),
        py("host.ptys", "import os; print(' '.join(sorted(os.listdir('/dev/pts'))))"),
        py("host.ptys.tty", "import os; print(' '.join(sorted(os.listdir('/dev/pts'))))", tty=True),
    ]
    with shell_session(cases, net=True) as ran:
        yield ran


def _printed(session: Session, name: str) -> list[str]:
    probe = session[0][name]
    assert final(probe)["exit_code"] == 0, (probe, output(probe, "stderr"))
    return output(probe, "stdout").decode().split()


def test_writing_the_workspace_in_read_mode_fails_in_the_kernel(session: Session) -> None:
    # The bind is read-only (EROFS comes first); Landlock, which grants the workspace read only, is behind it.
    assert _printed(session, "write.workspace") == [str(errno.EROFS)]
    assert _printed(session, "write.scratch") == ["written"]  # control


@pytest.mark.parametrize("where", ["exec.tmp", "exec.home"])
def test_a_file_it_wrote_cannot_be_executed(session: Session, where: str) -> None:
    assert _printed(session, where) == [str(errno.EACCES)]  # noexec scratch, and no Landlock exec right there


def test_connecting_out_without_the_proxy_has_no_route(session: Session) -> None:
    assert _printed(session, "connect.proxy.port") == [str(errno.ENETUNREACH)]  # loopback-only namespace
    assert _printed(session, "connect.other.port") == [str(errno.EACCES)]  # Landlock: only the proxy's port


def test_a_door_not_on_the_shells_edges_is_not_even_there(session: Session) -> None:
    assert _printed(session, "door.net") == ["connected"]  # control: shell→net
    assert _printed(session, "door.fs") == [str(errno.ENOENT)]  # not in the shell's private root


def test_a_command_cannot_signal_or_read_the_door(session: Session) -> None:
    # Same uid, but the command's own Landlock domain scopes signals and ptrace to itself.
    assert _printed(session, "signal.door") == [str(errno.EPERM)]
    assert _printed(session, "read.door") == [str(errno.ENOENT)]  # hidepid: the door is not visible to it


def test_a_command_cannot_leave_its_cgroup(session: Session) -> None:
    # The door may write its delegated cgroup; its commands' Landlock layer writes only the scratch.
    # Nor join a sibling: the waiting zygotes' cgroups (two once a command has run), whose members the end of
    # its command would not kill.
    probe = session[0]["cgroup.escape"]
    assert final(probe)["exit_code"] == 0, (probe, output(probe, "stderr"))
    lines = output(probe, "stdout").decode().splitlines()
    eacces = errno.EACCES
    siblings = {c: sum(line == f"{c} sibling {eacces}" for line in lines) for c in ("memory", "pids")}
    assert all(siblings.values()), lines  # at least one waiting zygote's cgroup was there to try
    assert lines == [line for c in ("memory", "pids")
                     for line in [f"{c} {eacces}", f"{c} {eacces}", *[f"{c} sibling {eacces}"] * siblings[c]]]


def test_the_hosts_terminals_are_not_there(session: Session) -> None:
    # A devpts instance of the shell's own: no pty of the host's (the person's terminal) to open or write.
    assert _printed(session, "host.ptys") == ["ptmx"]
    assert output(session[0]["host.ptys.tty"], "stdout").split() == [b"0", b"ptmx"]  # its own pty only
