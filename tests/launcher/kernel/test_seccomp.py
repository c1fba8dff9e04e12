"""seccomp: the pure rule list, then real children whose syscalls the filter answers with EPERM."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from kernel_child import confined, make_spec, run_child, scratch_user

from launcher.kernel._sys import libc, libseccomp
from launcher.kernel._sys.libseccomp import CMP_MASKED_EQ
from launcher.kernel.seccomp import (
    AF_INET,
    AF_INET6,
    AF_MAX,
    DENIED_SYSCALLS,
    FS_DOOR_EXTRA,
    MSG_FASTOPEN,
    TCP_FASTOPEN_OPTIONS,
    Rule,
    apply_seccomp,
    denied_syscalls,
    deny_rules,
    listen_denied,
)

CLONE_NEWUSER = 0x10000000
AF_PACKET = 17


def nr(name: str) -> int:
    return int(libseccomp.lib().seccomp_syscall_resolve_name(name.encode()))


def sys_call(name: str, *args: int) -> int:
    """Raw syscall by name; OSError with the errno on failure."""
    result = libc.raw_syscall(nr(name), *args)
    if result < 0:
        raise OSError(libc.ffi.errno, os.strerror(libc.ffi.errno))
    return result


def seccomp_only(deny_inet: bool, allow_udp: bool = False, deny_listen: bool = False) -> Callable[[int], None]:
    """A setup that stays root and loads only the filter: proves the errno is seccomp's, not a lack of caps."""

    def setup(_wfd: int) -> None:
        libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1)
        apply_seccomp(deny_inet, allow_udp, deny_listen=deny_listen)

    return setup


def nothing(_wfd: int) -> None:
    return None


# --- pure ---------------------------------------------------------------------------------------


def test_the_deny_list_covers_the_required_syscalls() -> None:
    required = {
        "ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
        "io_uring_register", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
        "unshare", "setns", "mount", "umount2", "pivot_root", "kexec_load", "kexec_file_load",
        "open_by_handle_at",
    }
    assert required <= set(DENIED_SYSCALLS)
    assert all(r.errno == errno.EPERM for r in deny_rules(True) if r.syscall != "clone3")


def test_socket_rules_differ_only_in_what_inet_may_do() -> None:
    strict = [r for r in deny_rules(True) if r.syscall == "socket"]
    loose = [r for r in deny_rules(False) if r.syscall == "socket"]
    families = [r for r in strict if r.cmps[0][1] != CMP_MASKED_EQ or r.cmps[0][3] not in (AF_INET, AF_INET6)]
    assert len(strict) == len(families) + 2  # + AF_INET, AF_INET6 whatever the type
    assert len(loose) > len(strict)  # per type and protocol: only TCP streams pass
    assert set(loose) >= set(families)  # the family allow list is the same either way


@pytest.mark.root
def test_only_unix_netlink_and_inet_families_open() -> None:
    """AF_VSOCK (the hypervisor, past any netns), AF_ALG, AF_BLUETOOTH, ... refused by seccomp, not by luck."""
    for family in (40, 38, 31, 29, 5, 4, 3):  # VSOCK, ALG, BLUETOOTH, CAN, APPLETALK, IPX, AX25
        filtered = run_child(seccomp_only(False), partial(_sock, family, socket.SOCK_STREAM))
        assert filtered.errno == errno.EPERM, (family, filtered.report)
    assert run_child(seccomp_only(False), lambda: sys_call("socket", 46, 1, 0)).errno == errno.EPERM
    for family, kind in ((socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_NETLINK, socket.SOCK_RAW)):
        assert run_child(seccomp_only(True), partial(_sock, family, kind)).report == {"value": 0}
    for protocol in (15, 4, 9):  # NETLINK_KOBJECT_UEVENT, NETLINK_SOCK_DIAG, NETLINK_AUDIT
        control = run_child(nothing, partial(_sock, socket.AF_NETLINK, socket.SOCK_RAW, protocol))
        assert control.report == {"value": 0}, (protocol, control.report)
        filtered = run_child(seccomp_only(True), partial(_sock, socket.AF_NETLINK, socket.SOCK_RAW, protocol))
        assert filtered.errno == errno.EPERM, (protocol, filtered.report)


# --- kernel: root children, filter only, against an unfiltered control ---------------------------

CASES = [
    ("ptrace", lambda: sys_call("ptrace", 0, 0, 0, 0)),  # PTRACE_TRACEME
    ("io_uring_setup", lambda: sys_call("io_uring_setup", 1, 0)),
    ("bpf", lambda: sys_call("bpf", 0, 0, 0)),
    ("keyctl", lambda: sys_call("keyctl", 0, 2**64 - 2, 0)),  # KEYCTL_GET_KEYRING_ID, process keyring
    ("perf_event_open", lambda: sys_call("perf_event_open", 0, 0, -1, -1, 0)),
    ("userfaultfd", lambda: sys_call("userfaultfd", 0)),
    ("setns", lambda: sys_call("setns", -1, 0)),
    ("mount", lambda: sys_call("mount", 0, 0, 0, 0, 0)),
    ("process_vm_readv", lambda: sys_call("process_vm_readv", os.getpid(), 0, 0, 0, 0, 0)),
    ("open_by_handle_at", lambda: sys_call("open_by_handle_at", -1, 0, 0)),
]


@pytest.mark.root
@pytest.mark.parametrize(("name", "call"), CASES, ids=[c[0] for c in CASES])
def test_denied_syscall_gets_eperm_from_the_filter_even_as_root(name: str, call: Callable[[], int]) -> None:
    control = run_child(nothing, call)
    assert control.errno != errno.EPERM, f"{name} without the filter: {control.report}"
    assert run_child(seccomp_only(deny_inet=False), call).errno == errno.EPERM


@pytest.mark.root
def test_unshare_newuser_and_clone_newuser_get_eperm_in_a_confined_child() -> None:
    def clone_newuser() -> int:
        pid = sys_call("clone", CLONE_NEWUSER | signal.SIGCHLD, 0, 0, 0, 0)
        if pid == 0:  # pragma: no cover - the clone child
            os._exit(0)
        os.waitpid(pid, 0)
        return 0

    with scratch_user() as user:
        spec = make_spec(user)
        as_user = lambda _fd: os.setresuid(user.uid, user.uid, user.uid)  # noqa: E731
        # Control: this kernel lets an unprivileged user make a user namespace, both ways.
        assert run_child(as_user, lambda: sys_call("unshare", CLONE_NEWUSER)).report == {"value": 0}
        assert run_child(as_user, clone_newuser).report == {"value": 0}
        assert confined(spec, lambda: sys_call("unshare", CLONE_NEWUSER)).errno == errno.EPERM
        assert confined(spec, clone_newuser).errno == errno.EPERM
        # Plain fork (clone without namespace flags, after clone3 got ENOSYS) still works.
        assert confined(spec, lambda: _fork_and_reap()).report == {"value": 0}


def _fork_and_reap() -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - grandchild
        os._exit(7)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) - 7


@pytest.mark.root
@pytest.mark.parametrize("name", DENIED_SYSCALLS)
def test_every_denied_syscall_gets_eperm_in_a_confined_child(name: str) -> None:
    if nr(name) < 0:
        pytest.skip(f"{name} does not exist on this architecture")
    with scratch_user() as user:
        assert confined(make_spec(user), lambda: sys_call(name, 0, 0, 0, 0, 0, 0)).errno == errno.EPERM


def _sock(family: int, kind: int, proto: int = 0) -> int:
    socket.socket(family, kind, proto).close()
    return 0


@pytest.mark.root
def test_deny_inet_refuses_every_inet_and_packet_socket() -> None:
    pairs: list[tuple[int, int]] = [(socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_STREAM),
             (socket.AF_INET, socket.SOCK_DGRAM)]
    for family, kind in pairs:
        assert run_child(nothing, partial(_sock, family, kind)).report == {"value": 0}
        assert run_child(seccomp_only(True), partial(_sock, family, kind)).errno == errno.EPERM
    assert run_child(seccomp_only(True), lambda: _sock(AF_PACKET, socket.SOCK_RAW)).errno == errno.EPERM
    # High bits set in the int argument: the kernel reads AF_INET, so must the filter.
    assert run_child(seccomp_only(True), lambda: sys_call("socket", (1 << 32) | 2, 1, 0)).errno == errno.EPERM
    assert run_child(seccomp_only(True), lambda: _sock(socket.AF_UNIX, socket.SOCK_STREAM)).report == {"value": 0}


@pytest.mark.root
def test_without_deny_inet_only_tcp_streams_are_allowed() -> None:
    allowed: list[tuple[int, int, int]] = [
        (socket.AF_INET, socket.SOCK_STREAM, 0), (socket.AF_INET6, socket.SOCK_STREAM, 6),
        (socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK, 0),
    ]
    for family, kind, proto in allowed:
        assert run_child(seccomp_only(False), partial(_sock, family, kind, proto)).report == {"value": 0}
    refused: list[tuple[int, int, int]] = [
        (socket.AF_INET, socket.SOCK_DGRAM, 0), (socket.AF_INET6, socket.SOCK_DGRAM, 0),
        (socket.AF_INET, socket.SOCK_RAW, 1), (socket.AF_INET, socket.SOCK_STREAM, 132),
        (socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, 0), (AF_PACKET, socket.SOCK_DGRAM, 0),
    ]
    for family, kind, proto in refused:
        result = run_child(seccomp_only(False), partial(_sock, family, kind, proto))
        assert result.errno == errno.EPERM, (family, kind, proto, result.report)


@pytest.mark.root
def test_egress_doors_keep_plain_udp_for_their_resolver_and_nothing_more() -> None:
    allowed: list[tuple[int, int, int]] = [
        (socket.AF_INET, socket.SOCK_STREAM, 0), (socket.AF_INET, socket.SOCK_DGRAM, 0),
        (socket.AF_INET6, socket.SOCK_DGRAM, 17), (socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, 0),
    ]
    for family, kind, proto in allowed:
        result = run_child(seccomp_only(False, allow_udp=True), partial(_sock, family, kind, proto))
        assert result.report == {"value": 0}, (family, kind, proto, result.report)
    refused: list[tuple[int, int, int]] = [
        (socket.AF_INET, socket.SOCK_DGRAM, 1), (socket.AF_INET6, socket.SOCK_DGRAM, 58),
        (socket.AF_INET, socket.SOCK_RAW, 17), (AF_PACKET, socket.SOCK_DGRAM, 0),
        (socket.AF_INET, socket.SOCK_STREAM, 132),
    ]
    for family, kind, proto in refused:
        result = run_child(seccomp_only(False, allow_udp=True), partial(_sock, family, kind, proto))
        assert result.errno == errno.EPERM, (family, kind, proto, result.report)


@pytest.mark.root
def test_x32_and_foreign_arch_syscalls_kill_the_process() -> None:
    x32_getpid = 0x40000000 | 39
    control = run_child(nothing, lambda: libc.raw_syscall(x32_getpid))
    assert control.killed_by is None
    result = run_child(seccomp_only(False), lambda: libc.raw_syscall(x32_getpid))
    assert result.killed_by == signal.SIGSYS


def test_denied_syscalls_reports_what_this_architecture_resolves() -> None:
    conditional = ("clone", "clone3", "socket", "socketpair", "sendto", "sendmsg", "sendmmsg", "setsockopt")
    reported = denied_syscalls(True)
    assert {"clone", "clone3", "socket", "memfd_secret"} <= set(reported) and "listen" not in reported
    assert set(reported) == {name for name in (*DENIED_SYSCALLS, *conditional) if nr(name) >= 0}
    assert set(denied_syscalls(False, deny_listen=True)) == {*reported, "listen"}


# --- what Landlock ABI 7 leaves open: Fast Open, listen()'s implicit bind, socketpair, memfd_secret -----


def _matches(cmp: tuple[int, int, int, int], args: tuple[int, ...]) -> bool:
    """One libseccomp comparison on 64-bit arguments (the ops the filter uses)."""
    arg, op, a, b = cmp
    value = args[arg] & (2**64 - 1)
    return {CMP_MASKED_EQ: value & a == b, libseccomp.CMP_GT: value > a, libseccomp.CMP_GE: value >= a,
            libseccomp.CMP_EQ: value == a}[op]


def _refused(rules: tuple[Rule, ...], syscall: str, args: tuple[int, ...]) -> bool:
    return any(r.syscall == syscall and all(_matches(c, args) for c in r.cmps) for r in rules)


@pytest.mark.parametrize("extra", [(), ("socket",)])  # the fs door denies socket() outright
@pytest.mark.parametrize("deny_inet", [True, False])
def test_socketpair_pairs_only_unix_sockets(deny_inet: bool, extra: tuple[str, ...]) -> None:
    """socket()'s allow list narrowed to the one listed family the kernel pairs; high bits fail closed."""
    rules = deny_rules(deny_inet, extra=extra)
    for family in range(AF_MAX + 2):
        assert _refused(rules, "socketpair", (family, socket.SOCK_STREAM, 0)) is (family != socket.AF_UNIX)
    for family in ((1 << 32) | socket.AF_UNIX, -1, (1 << 32) | 40):
        assert _refused(rules, "socketpair", (family, socket.SOCK_STREAM, 0))
    assert not _refused(rules, "socketpair", (socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC, 0))


def test_fast_open_is_refused_by_its_flag_and_its_socket_options() -> None:
    rules = [r for r in deny_rules(False) if r.syscall in ("sendto", "sendmsg", "sendmmsg", "setsockopt")]
    flags = {r.syscall: r.cmps for r in rules if r.syscall != "setsockopt"}
    assert flags == {"sendto": ((3, CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN),),
                     "sendmsg": ((2, CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN),),
                     "sendmmsg": ((3, CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN),)}
    options = {r.cmps[1][3] for r in rules if r.syscall == "setsockopt"}
    assert options == set(TCP_FASTOPEN_OPTIONS) and all(r.cmps[0][3] == socket.IPPROTO_TCP for r in rules
                                                       if r.syscall == "setsockopt")


@pytest.mark.parametrize(("deny_inet", "tcp_bind", "denied"), [
    (False, (), True),  # TCP may be made, no port may be bound: the app or shell with the net edge, net, model
    (True, (), False),  # no inet socket at all: listen() can only be on a Unix socket
    (False, (8080,), False),  # a bind row: Landlock checks the explicit bind, listen() stays
])
def test_listen_is_denied_where_tcp_may_be_made_but_not_bound(deny_inet: bool, tcp_bind: tuple[int, ...],
                                                              denied: bool) -> None:
    assert listen_denied(deny_inet, tcp_bind) is denied
    assert any(r.syscall == "listen" for r in deny_rules(deny_inet, deny_listen=denied)) is denied


def _tcp_listener() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    return listener


def _fast_open_sendto(address: tuple[str, int]) -> int:
    with socket.socket() as sock:
        return sock.sendto(b"x", socket.MSG_FASTOPEN, address)


def _fast_open_sendmsg(address: tuple[str, int]) -> int:
    with socket.socket() as sock:
        return sock.sendmsg([b"x"], [], socket.MSG_FASTOPEN, address)


def _fast_open_connect_option() -> int:
    with socket.socket() as sock:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_OPTIONS[1], 1)
    return 0


@pytest.mark.root
def test_fast_open_is_refused_by_the_filter_and_plain_sends_still_work() -> None:
    """Without the filter each call connects (or sets its option); with it EPERM, even as root."""
    with _tcp_listener() as listener:
        address = listener.getsockname()
        for call in (partial(_fast_open_sendto, address), partial(_fast_open_sendmsg, address),
                     _fast_open_connect_option):
            assert "errno" not in run_child(nothing, call).report
            assert run_child(seccomp_only(False), call).errno == errno.EPERM
        # sendmmsg's flags are its fourth argument; an empty vector with the flag is refused before the kernel.
        assert run_child(seccomp_only(False), lambda: sys_call("sendmmsg", 0, 0, 0, MSG_FASTOPEN)).errno == errno.EPERM

        def plain() -> int:
            with socket.create_connection(address) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock.sendto(b"x", 0, address) + sock.sendmsg([b"y"])

        assert run_child(seccomp_only(False), plain).report == {"value": 2}


@pytest.mark.root
def test_socketpair_of_a_family_off_the_list_is_refused_by_the_filter() -> None:
    """The kernel alone refuses a pair of these too, but only after creating the family (and loading its module,
    AF_TIPC's or AF_VSOCK's, if it can: so the control runs only for built-in families); the filter says
    EPERM before. AF_UNIX pairs still work (trio's wake-up pair)."""
    def pair(family: int) -> int:
        socket.socketpair(family, socket.SOCK_STREAM)
        return 0

    for family in (AF_PACKET, socket.AF_INET):
        control = run_child(nothing, partial(pair, family))
        assert control.errno not in (None, errno.EPERM), (family, control.report)
    for family in (40, 30, AF_PACKET, 31, socket.AF_INET):  # VSOCK, TIPC, PACKET, BLUETOOTH, INET
        assert run_child(seccomp_only(False), partial(pair, family)).errno == errno.EPERM, family
    assert run_child(seccomp_only(True), partial(pair, socket.AF_UNIX)).report == {"value": 0}


@pytest.mark.root
def test_memfd_secret_is_refused_where_the_kernel_would_grant_it() -> None:
    control = run_child(nothing, lambda: sys_call("memfd_secret", 0))
    assert "value" in control.report or control.errno == errno.ENOSYS, control.report
    assert run_child(seccomp_only(True), lambda: sys_call("memfd_secret", 0)).errno == errno.EPERM


@pytest.mark.root
def test_listen_is_refused_only_when_asked() -> None:
    def listen(family: int) -> int:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            if family == socket.AF_UNIX:
                sock.bind("\0sh-test-listen-" + os.urandom(4).hex())
            sock.listen(1)
        return 0

    for family in (socket.AF_INET, socket.AF_UNIX):
        assert run_child(seccomp_only(False), partial(listen, family)).report == {"value": 0}
        assert run_child(seccomp_only(False, deny_listen=True), partial(listen, family)).errno == errno.EPERM


@pytest.mark.root
def test_the_fs_door_sets_times_through_an_fd_but_never_by_path(tmp_path: Path) -> None:
    """The workspace mount's touch: futimens(fd) (utimensat with a NULL path) passes the fs door's filter, while
    utimensat naming a path, relative, absolute or "" with AT_EMPTY_PATH, is EPERM even as root."""
    target = tmp_path / "f"
    target.write_text("x")

    def setup(_wfd: int) -> None:
        libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1)
        apply_seccomp(True, extra=FS_DOOR_EXTRA)

    def by_fd() -> int:
        fd = os.open(target, os.O_RDONLY)
        os.utime(fd, ns=(1, 2))
        return os.stat(target).st_mtime_ns

    assert run_child(setup, by_fd).report == {"value": 2}
    assert run_child(setup, lambda: os.utime(target, ns=(3, 4)) or 0).errno == errno.EPERM
    assert run_child(nothing, lambda: os.utime(target, ns=(3, 4)) or 0).report == {"value": 0}  # the control

    def empty_path() -> int:
        fd = os.open(target, os.O_RDONLY)
        empty = ctypes.create_string_buffer(b"")
        return sys_call("utimensat", fd, ctypes.addressof(empty), 0, libc.AT_EMPTY_PATH)

    assert run_child(setup, empty_path).errno == errno.EPERM
