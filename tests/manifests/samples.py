"""Sample manifests for tests: a full one (every door) and ways to change it."""

from __future__ import annotations

import copy
import json
from typing import Any

from launcher.manifest import Manifest, load_manifest

FULL: dict[str, Any] = {
    "sharness": "manifest/v0",
    "session": {"name": "t", "trust_domain": "t.sharness.test", "ttl_s": 3600},
    "workspace": "/srv/sh-test/ws",
    "app": {
        "argv": ["/opt/agent/bin/agent", "--flag"],
        "files": {"read": ["/opt/agent"], "exec": ["/opt/agent/bin"]},
        "process": {"max_memory_mb": 512, "max_pids": 32},
    },
    "doors": {
        "fs": {"read_only": [".git"], "append_only": ["log"], "hidden": [".env"], "exec": ["bin"],
               "refuse_secrets": True, "max_file_bytes": 1024, "max_total_bytes": 4096, "max_files": 10},
        "net": {"allow": {"app": ["pypi.org:443", "*.pythonhosted.org:443"], "shell": ["pypi.org:443"]}},
        "keys": {"secrets": {"anthropic": {"from": "/etc/sharness/secrets/anthropic", "roles": ["model"],
                                           "hosts": ["api.anthropic.com"]}}},
        "shell": {"workspace": "none", "process": {"max_memory_mb": 1024, "max_pids": 128}},
        "model": {"upstream": "https://api.anthropic.com", "secret": "anthropic", "budget_microusd": 1000},
    },
}


def sample(**changes: Any) -> dict[str, Any]:
    """A deep copy of FULL; `a__b=v` sets FULL["a"]["b"] = v, and a value of DROP removes the key."""
    document = copy.deepcopy(FULL)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = document
        for key in parents:
            target = target.setdefault(key, {})
        if value is DROP:
            target.pop(last, None)
        else:
            target[last] = value
    return document


DROP = object()


def encode(document: Any) -> bytes:
    """Plain JSON bytes of a document."""
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


def load(document: Any) -> Manifest:
    """Load a document through the real loader."""
    return load_manifest(encode(document))
