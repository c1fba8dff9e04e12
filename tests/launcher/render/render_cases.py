"""The manifests the render tests use: the bundled examples and one holding every row the plan knows."""

from __future__ import annotations

from pathlib import Path

from manifests.samples import DROP, load, sample

from launcher.manifest import Manifest, load_manifest
from launcher.render.rendering import RenderInput
from pki.vocabulary import DEFAULT_EDGES

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = {path.stem: path for path in sorted((ROOT / "manifests" / "examples").glob("*.json"))}
# A fixed host: the renders must not depend on this machine's Python or root links.
FIXED = RenderInput(sid="0123abcd", python=("/opt/py", "/opt/py/bin", "/srv/src"), python_prefix="/opt/py",
                    root_links=(("/bin", "usr/bin"), ("/lib", "usr/lib"), ("/lib64", "usr/lib64")))

EVERY_ROW: Manifest = load(sample(
    doors__fs__no_symlinks=True, doors__fs__max_concurrent_uploads=4,
    doors__net__allow_ip_literals=["shell"], doors__shell__max_live=4,
    doors__model__internal_ranges=["10.20.0.0/16"], doors__model__models=["claude-haiku-4-5"],
    edges=[list(edge) for edge in sorted(DEFAULT_EDGES | {("shell", "model")})],
))
# What EVERY_ROW cannot hold at once: the workspace read directly (fs.hidden refuses that), and the twin.
SHELL_READS: Manifest = load(sample(doors__shell__workspace="read", doors__fs__hidden=DROP,
                                    app__files={"read": ["/srv/sh-test/ws", "/opt/agent"], "exec": ["/opt/agent/bin"]}))
TWIN: Manifest = load(sample(doors__model={"upstream": "twin", "budget_microusd": 1000}))
APP_ONLY: Manifest = load(sample(doors=DROP))
INJECT: Manifest = load(sample(
    doors__net__allow={"app": ["api.github.com:443"]},
    doors__net__inject=[{"host": "api.github.com:443", "secret": "gh"}],
    doors__keys__secrets={"anthropic": {"from": "/etc/sharness/secrets/anthropic", "roles": ["model"],
                                        "hosts": ["api.anthropic.com"]},
                          "gh": {"from": "/etc/sharness/secrets/gh", "roles": ["net"], "hosts": ["api.github.com"]}},
))
COVERING = {"every-row": EVERY_ROW, "shell-reads": SHELL_READS, "twin": TWIN, "app-only": APP_ONLY, "inject": INJECT}


def example(name: str) -> Manifest:
    """A bundled example manifest, loaded."""
    return load_manifest(EXAMPLES[name].read_bytes())
