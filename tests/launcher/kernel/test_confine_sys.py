"""launcher.kernel._sys: the committed out-of-line cffi module matches the declarations it is generated from."""

from __future__ import annotations

import os
import tempfile

from launcher.kernel._sys import _cdefs, libc, libseccomp


def test_the_committed_ffi_module_is_generated_from_cdef() -> None:
    with tempfile.TemporaryDirectory(prefix="sharness-test-") as tmp:
        fresh = os.path.join(tmp, "_ffi.py")
        _cdefs.generate(fresh)
        with open(fresh) as f, open(_cdefs.GENERATED) as g:
            assert f.read() == g.read(), (
                "run `python -m launcher.kernel._sys._cdefs` and commit launcher/kernel/_sys/_ffi.py"
            )


def test_libc_and_libseccomp_share_one_ffi_and_resolve_names() -> None:
    assert libc.ffi is libseccomp.ffi
    assert libseccomp.lib().seccomp_syscall_resolve_name(b"ptrace") >= 0
    assert libseccomp.lib().seccomp_syscall_resolve_name(b"no_such_syscall") == libseccomp.NR_SCMP_ERROR
    assert libc.raw_syscall(39) == os.getpid() or os.uname().machine != "x86_64"  # getpid on x86_64
