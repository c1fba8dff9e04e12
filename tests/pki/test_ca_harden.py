"""The CA child's hardening (pki.ca._harden, through ctypes): not dumpable (no same-uid ptrace or /proc/<pid>/mem),
and SIGKILL when the launcher dies."""

from __future__ import annotations

import ctypes
import os
import signal

from pki import ca

PR_GET_PDEATHSIG, PR_GET_DUMPABLE = 2, 3


def test_the_ca_child_is_not_dumpable_and_dies_with_its_parent() -> None:
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe and leaves by os._exit
        try:
            ca._harden(parent)
            libc = ctypes.CDLL(None, use_errno=True)
            deathsig = ctypes.c_int(-1)
            libc.prctl(PR_GET_PDEATHSIG, ctypes.byref(deathsig), 0, 0, 0)
            os.write(write_end, f"{libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)} {deathsig.value}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        reported = reader.read().decode()
    os.waitpid(pid, 0)
    assert reported == f"0 {int(signal.SIGKILL)}"
