"""doors._ffi: the committed out-of-line cffi module matches the declarations it is generated from, and loading a
door parses no C (pycparser stays out of the process)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from doors import _ffi_cdefs


def test_the_committed_ffi_module_is_generated_from_cdef() -> None:
    with tempfile.TemporaryDirectory(prefix="sharness-test-") as tmp:
        fresh = os.path.join(tmp, "_ffi.py")
        _ffi_cdefs.generate(fresh)
        with open(fresh) as f, open(_ffi_cdefs.GENERATED) as g:
            assert f.read() == g.read(), "run `python -m doors._ffi_cdefs` and commit doors/_ffi.py"


def test_loading_every_door_parses_no_c() -> None:
    code = "import sys, doors.serve; doors.serve.preload(); print('pycparser' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
