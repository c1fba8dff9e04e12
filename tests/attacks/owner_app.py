"""Run as the app: is it the owner of the paths the person gave? It reports its ids, then tries to chmod
`argv[1]` (a directory in its app.files.read, owned by an id with no account) to 0777. Standard library only."""

from __future__ import annotations

import json
import os
import sys

target = sys.argv[1]
try:
    os.chmod(target, 0o777)
    outcome = "changed"
except OSError as exc:
    outcome = os.strerror(exc.errno or 0)
print(json.dumps({"probe": "owner", "sid": os.environ["SHARNESS_SESSION"], "uid": os.getuid(), "gid": os.getgid(),
                  "groups": os.getgroups(), "chmod": outcome}), flush=True)
