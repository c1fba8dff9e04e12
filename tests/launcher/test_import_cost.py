"""What the launcher imports before its first session (issue 18): none of the packages whose import alone cost
tens of milliseconds and that no session needs before its last fork (docs/decisions/bench.md, "launcher")."""

from __future__ import annotations

import subprocess
import sys

# What `sharness-launch run` has imported once its modules are loaded (bench/_session_doors.py: LAUNCHER_MODULES).
RUN_MODULES = ("launcher.cli", "launcher.commands.run", "launcher.policy.plan", "launcher.kernel.probe",
               "launcher.lifecycle.sweep", "launcher.lifecycle.session")
NOT_BEFORE_A_SESSION = {
    "pyroute2": "netns is made by mount(2) and an ioctl (launcher/kernel/netns.py)",
    "structlog": "imported when the audit log opens, after the last fork (launcher/lifecycle/audit.py)",
    "asyncio": "structlog's; nothing else in the launcher or a door needs it",
    "jsonschema": "jsonschema-rs decides a manifest; jsonschema only words a refusal (launcher/manifest/_schema.py)",
    "referencing": "jsonschema's",
    "cryptography.x509": "pki.ca's, imported as the session mints (launcher/lifecycle/create.py: make_pki)",
    "ssl": "the doors' transport's, imported with their code while the CA child mints",
    "launcher.lifecycle.app_stdio": "the app's pty or pipe relay, imported as the app is spawned (after the doors)",
    "launcher.lifecycle.audit": "the audit log opens after the last fork (launcher/lifecycle/session.py)",
    "pycparser": "every cdef is generated out of line (launcher/kernel/_sys/_ffi.py, doors/_ffi.py) or ctypes (pki)",
}


def test_the_launcher_loads_none_of_the_costly_packages_a_session_does_not_need() -> None:
    code = f"import sys, {', '.join(RUN_MODULES)}; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = {part for name in done.stdout.split() for part in (name.split(".")[0], name)}
    assert {name: why for name, why in NOT_BEFORE_A_SESSION.items() if name in loaded} == {}
