"""A probe app for the real-client check: pip through the net door, run confined as the app.

    pip_probe.py PACKAGE     `pip download PACKAGE` into $TMPDIR/dl, then a venv in $TMPDIR/venv and
                             `pip install PACKAGE` into it, then import it with the venv's python

Each step prints one JSON line ({"probe": step, "returncode": ..., "tail": last lines of its output}); the
test judges. pip gets no configuration file and the index by name, so the only way to the index is
HTTPS_PROXY (the net door), which the launcher set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

INDEX = "https://pypi.org/simple"
CA_FILE = "/etc/ssl/certs/ca-certificates.crt"  # the system store (the app's root holds /etc/ssl/certs)
TIMEOUT_S = 240


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def run(probe: str, argv: list[str]) -> bool:
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        report(probe, returncode=None, tail=[type(exc).__name__, str(exc)])
        return False
    report(probe, returncode=done.returncode, tail=(done.stdout + done.stderr).splitlines()[-12:])
    return done.returncode == 0


def main() -> None:
    package = sys.argv[1]
    tmp = os.environ["TMPDIR"]
    report("env", https_proxy=os.environ.get("HTTPS_PROXY"), tmpdir=tmp)
    pip = ["-m", "pip", "--no-cache-dir", "--cert", CA_FILE]
    run("pip.download", [sys.executable, *pip, "download", "--no-deps", "--index-url", INDEX, "-d", f"{tmp}/dl",
                         package])
    report("pip.downloaded", files=sorted(os.listdir(f"{tmp}/dl")) if os.path.isdir(f"{tmp}/dl") else [])
    if not run("venv", [sys.executable, "-m", "venv", f"{tmp}/venv"]):
        return
    venv_python = f"{tmp}/venv/bin/python"
    if run("pip.install", [venv_python, *pip, "install", "--no-deps", "--index-url", INDEX, package]):
        run("import", [venv_python, "-c", f"import {package}; print({package}.__file__)"])


if __name__ == "__main__":
    main()
