"""fork_into_new_pid_namespace: the child is pid 1 of a namespace of its own, the caller's next child is not."""

from __future__ import annotations

import os

import pytest
from kernel_child import run_child

from launcher.kernel.pidns import fork_into_new_pid_namespace

pytestmark = pytest.mark.root


def _ns(pid: int | str) -> str:
    return os.readlink(f"/proc/{pid}/ns/pid")


def test_the_child_is_init_of_a_new_namespace_and_the_next_child_is_back_in_ours() -> None:
    read_end, write_end = os.pipe()
    child = fork_into_new_pid_namespace()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read_end)
        os.write(write_end, f"{os.getpid()} {os.getppid()}".encode())
        os._exit(0)
    os.close(write_end)
    try:
        pid, ppid = os.read(read_end, 64).split()
        in_new = _ns(child)
    finally:
        os.close(read_end)
        os.waitpid(child, 0)
    assert (pid, ppid) == (b"1", b"0")  # its parent is outside its namespace: getppid() is 0
    assert in_new != _ns("self")
    assert os.readlink("/proc/self/ns/pid_for_children") == _ns("self")
    later = run_child(lambda _fd: None, lambda: [os.getpid() != 1, _ns("self")])
    assert later.report["value"] == [True, _ns("self")]
