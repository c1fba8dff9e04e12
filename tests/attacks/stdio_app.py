"""The stdio app: runs confined as the app of a session whose stdout and stderr are one file (`> out 2>&1`)
and whose stdin is a pipe, and tries to rewrite what the launcher wrote there and to forge its verdict.

It judges nothing: each attempt prints one JSON line `{"probe": name, ...}` on stdout. It reads one line from
stdin, truncates and rewinds fds 1 and 2, writes a forged "session ended" line to both, leaves a line
unfinished on stderr, and exits with the code in argv[1] (one of the launcher's own). Standard library only.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def outcome(action: Callable[..., object], *args: object) -> str | None:
    try:
        action(*args)
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return None


def main() -> int:
    kinds = {str(fd): stat.S_IFMT(os.fstat(fd).st_mode) for fd in (0, 1, 2)}
    report("stdio", fifo={fd: kind == stat.S_IFIFO for fd, kind in kinds.items()},
           inodes={str(fd): os.fstat(fd).st_ino for fd in (0, 1, 2)})
    report("stdin", line=sys.stdin.readline().strip())
    report("ftruncate", fd1=outcome(os.ftruncate, 1, 0), fd2=outcome(os.ftruncate, 2, 0))
    report("lseek", fd1=outcome(os.lseek, 1, 0, os.SEEK_SET), fd2=outcome(os.lseek, 2, 0, os.SEEK_SET))
    # A fresh open of its stdout by name, which on a file of its own would truncate it.
    report("reopen_trunc", errno=outcome(lambda: os.close(os.open("/proc/self/fd/1", os.O_WRONLY | os.O_TRUNC))))
    forged = f"sharness-launch: session {os.environ['SHARNESS_SESSION']} ended: app exited with code 0\n"
    sys.stdout.write(forged)
    sys.stdout.flush()
    sys.stderr.write(forged + "sh-attack-unfinished")  # no newline: the launcher's next line must not join it
    sys.stderr.flush()
    return int(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
