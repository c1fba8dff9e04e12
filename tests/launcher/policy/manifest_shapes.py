"""The manifest shapes that change what a component may touch: each edge there or not, app.files.read/exec,
the workspace listed for the app or not, doors left out, a model port, a secret outside /etc."""

from __future__ import annotations

import copy
from typing import Any

from manifests.samples import DROP, FULL, load, sample

from launcher.manifest import Manifest
from pki.vocabulary import DEFAULT_EDGES

WORKSPACE = FULL["workspace"]
SECRET = FULL["doors"]["keys"]["secrets"]["anthropic"]["from"]
PYTHON = ("/opt/py", "/opt/py/bin", "/srv/src")  # a fixed interpreter: the tests must not depend on this one's


def _without(*dropped: tuple[str, str]) -> list[list[str]]:
    return [list(edge) for edge in sorted(DEFAULT_EDGES) if edge not in dropped]


_DOCUMENTS: dict[str, dict[str, Any]] = {
    "full": sample(),
    "no app→net": sample(edges=_without(("app", "net")), doors__net__allow={"shell": ["pypi.org:443"]}),
    "no shell→net": sample(edges=_without(("shell", "net")), doors__net__allow={"app": ["pypi.org:443"]}),
    "no edge to net": sample(edges=_without(("app", "net"), ("shell", "net")), doors__net__allow={}),
    "no edges": sample(edges=[], doors__net__allow={}, doors__keys=DROP, doors__model=DROP),
    "no app files": sample(app__files={}),
    "files.read only": sample(app__files={"read": ["/opt/agent"]}),
    "files.exec only": sample(app__files={"exec": ["/opt/agent/bin"]}),
    "workspace listed": sample(app__files={"read": [WORKSPACE]}, doors__fs__hidden=DROP),
    "workspace's parent listed": sample(app__files={"read": ["/srv/sh-test"]}, doors__fs__hidden=DROP),
    "shell reads the workspace": sample(doors__shell__workspace="read", doors__fs__hidden=DROP),
    "shell overlays the workspace": sample(doors__shell__workspace="overlay", doors__fs__hidden=DROP),
    "shell files": sample(doors__shell__files={"read": ["/opt/data"], "exec": ["/opt/tools/bin"]}),
    "app only": sample(doors=DROP),
    "app and fs": sample(doors={"fs": copy.deepcopy(FULL["doors"]["fs"])}),
    "app and net": sample(doors={"net": {"allow": {"app": ["pypi.org:443"]}}}),
    "model on a port": sample(doors__model__upstream="https://api.anthropic.com:8443"),
    "secret outside /etc": sample(doors__keys__secrets__anthropic__from="/srv/secrets/anthropic"),
    "many net ports": sample(doors__net__allow={"app": ["a.test:443", "b.test:8080"], "shell": ["c.test:22"]}),
}
SHAPES: dict[str, Manifest] = {name: load(document) for name, document in _DOCUMENTS.items()}
CASES = [(name, role) for name, manifest in SHAPES.items() for role in manifest.roles]
