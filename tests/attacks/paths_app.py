"""The paths app: runs confined as the app of a real session and goes after what a path in its manifest
could bring into reach: a host socket behind a symlink, the host's tree and its proc behind a symlink to /,
its own writable $TMPDIR made executable through a magic link or an alias, a submount, a proc mounted in a
project, a secret through an alias, files of /etc; and the tools it must still be able to run.

It judges nothing: argv[1] is a JSON list of attempts `[probe, kind, argument]`; each prints one line
`{"probe": name, "errno": NAME or null, "result": ...}`, then it exits 0. Standard library only.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable

SCRIPT = "#!/bin/sh\necho ran-from-tmpdir\n"


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def _connect(path: str) -> str:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
    return "connected"


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read(200)


def _create(directory: str) -> str:
    with open(os.path.join(directory, f"sh-attack-{os.getpid()}"), "x") as file:
        file.write("x")
    return "created"


def _other_uids_processes(proc: str) -> list[int]:
    """Pids under `proc` that run as another uid than this app's: seen only without hidepid."""
    mine, seen = os.getuid(), []
    for entry in os.listdir(proc):
        if entry.isdigit() and os.stat(os.path.join(proc, entry)).st_uid != mine:
            seen.append(int(entry))
    return seen[:5]


def _exec_tmpdir_script_via(template: str) -> str:
    """Write a script into $TMPDIR (its own, 0755), then execve it through `template` ({sid} and {name})."""
    name = f"sh-attack-{os.getpid()}.sh"
    path = os.path.join(os.environ["TMPDIR"], name)
    with open(path, "w") as file:
        file.write(SCRIPT)
    os.chmod(path, 0o755)
    target = template.format(sid=os.environ["SHARNESS_SESSION"], name=name)
    done = subprocess.run([target], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() or f"exit {done.returncode}"


def _mount_options(path: str) -> str:
    """The per-mount options of the mount at `path` in this app's root (mountinfo field 6)."""
    with open("/proc/self/mountinfo") as table:
        for line in table:
            fields = line.split()
            if fields[4] == path:
                return fields[5].split(",")[0]
    return "not a mount point"


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=os.environ["TMPDIR"],
                          env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
    return f"exit {done.returncode}: {(done.stdout + done.stderr).strip()[:200]}"


def _git_commit(_: str) -> str:
    repo = os.path.join(os.environ["TMPDIR"], "repo")
    steps = [["git", "init", "-q", repo], ["git", "-C", repo, "-c", "user.name=a", "-c", "user.email=a@b",
                                           "commit", "-q", "--allow-empty", "-m", "x"],
             ["git", "-C", repo, "log", "--oneline"]]
    return "; ".join(_run(step) for step in steps)


def _python_tls(_: str) -> str:
    code = "import ssl; print(ssl.create_default_context().cert_store_stats()['x509_ca'])"
    return _run([sys.executable, "-I", "-c", code])


KINDS: dict[str, Callable[[str], object]] = {
    "connect": _connect, "read": _read, "create": _create, "list": lambda path: sorted(os.listdir(path))[:20],
    "other_uids": _other_uids_processes, "exec_via": _exec_tmpdir_script_via, "mount_options": _mount_options,
    "run": lambda argv: _run(json.loads(argv)), "git_commit": _git_commit, "python_tls": _python_tls,
}


def main() -> None:
    for probe, kind, argument in json.loads(sys.argv[1]):
        try:
            result = KINDS[kind](argument)
        except OSError as exc:
            report(probe, errno=errno.errorcode.get(exc.errno or 0, str(exc.errno)))
            continue
        report(probe, errno=None, result=result)


if __name__ == "__main__":
    main()
