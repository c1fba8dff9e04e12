"""Process P of test_ca.py: mints a session, then waits with its memory open to inspection.

A spy around `pki.issue.new_ca` runs only in the CA child: it writes the CA's private scalar and the
child's pid to argv[1], a file this process never reads. P keeps a canary it knows in memory so that the
test can show its memory search finds what is there. With argv[3] == "leak", P does what the launcher
must never do (loads the CA key and the fs leaf key) so the test can show the search would catch it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pki import ca, issue
from pki.vocabulary import ROLES

_new_ca = issue.new_ca


def _spy(*args: Any, **kwargs: Any) -> Any:
    key, cert = _new_ca(*args, **kwargs)
    record = {"pid": os.getpid(), "scalar": f"{key.private_numbers().private_value:064x}"}
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, json.dumps(record).encode())
    os.close(fd)
    return key, cert


def main() -> None:
    issue.new_ca = _spy
    canary = os.urandom(32)
    memfds = {role: ca.new_svid_memfd(role) for role in ROLES if role != "app"}
    deliveries: dict[str, ca.Delivery] = {role: ca.MemfdDelivery(fd) for role, fd in memfds.items()}
    app_file = os.path.join(sys.argv[2], "app.svid.pem")
    deliveries["app"] = ca.FileDelivery(app_file, os.getuid(), os.getgid())
    minted = ca.mint_session("test.sharness.test", "0123abcd", ROLES, 600, deliveries)
    report = {"canary": canary.hex(), "memfds": memfds, "app_file": app_file, "leaves": sorted(minted.leaf_pems)}
    held = _leak(memfds["fs"]) if sys.argv[3:] == ["leak"] else []
    print(json.dumps(report), flush=True)
    sys.stdin.read()  # sleep until the test closes our stdin
    del canary, held


def _leak(fs_memfd: int) -> list[object]:
    with open(sys.argv[1]) as spy:
        scalar = int(json.load(spy)["scalar"], 16)
    ca_key = ec.derive_private_key(scalar, ec.SECP256R1())
    leaf_key = serialization.load_pem_private_key(os.pread(fs_memfd, 1 << 16, 0), None)
    return [ca_key, leaf_key]


if __name__ == "__main__":
    main()
