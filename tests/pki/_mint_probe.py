"""Process P of test_ca.py: mints a session, then waits with its memory open to inspection.

A spy around `pki.issue.new_ca` runs only in the CA child: it writes the CA's private scalar and the
child's pid to argv[1], a file this process never reads (and one around `pki.egress.new_egress_ca` the egress
CA's to argv[1] + ".egress": P mints an egress CA for one bound host too). P keeps a canary it knows in
memory so that the test can show its memory search finds what is there. With argv[3] == "leak", P does what the launcher
must never do (loads the CA key and the fs leaf key) so the test can show the search would catch it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pki import ca, egress, issue
from pki.vocabulary import ROLES

EGRESS_HOSTS = ("git.sharness.test",)


def _spying(make: Any, path: str) -> Any:
    def spy(*args: Any, **kwargs: Any) -> Any:
        key, cert = make(*args, **kwargs)
        record = {"pid": os.getpid(), "scalar": f"{key.private_numbers().private_value:064x}"}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, json.dumps(record).encode())
        os.close(fd)
        return key, cert

    return spy


def main() -> None:
    issue.new_ca = _spying(issue.new_ca, sys.argv[1])
    egress.new_egress_ca = _spying(egress.new_egress_ca, sys.argv[1] + ".egress")
    canary = os.urandom(32)
    memfds = {role: ca.new_svid_memfd(role) for role in ROLES if role != "app"}
    deliveries: dict[str, ca.Delivery] = {role: ca.MemfdDelivery(fd) for role, fd in memfds.items()}
    app_file = os.path.join(sys.argv[2], "app.svid.pem")
    deliveries["app"] = ca.FileDelivery(app_file, os.getuid(), os.getgid())
    egress_memfd = ca.new_svid_memfd("egress")
    minted = ca.mint_session("test.sharness.test", "0123abcd", ROLES, 600, deliveries,
                             ca.EgressDelivery(EGRESS_HOSTS, egress_memfd))
    report = {"canary": canary.hex(), "memfds": memfds, "app_file": app_file, "leaves": sorted(minted.leaf_pems),
              "egress_memfd": egress_memfd}
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
