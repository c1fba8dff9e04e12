"""doors/serve.py: the one entry point picks the door by role, and loads only that door's code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from doors import run_door
from doors.fs import server as fs_server
from doors.keys import server as keys_server
from doors.model import server as model_server
from doors.net import server as net_server
from doors.serve import server_for
from doors.shell import server as shell_server
from pki.vocabulary import ROLES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("role", ROLES)
def test_each_role_gets_its_own_server_or_the_generic_door(role: str) -> None:
    expected = {"fs": fs_server.serve, "net": net_server.serve, "keys": keys_server.serve,
                "model": model_server.serve, "shell": shell_server.serve}.get(role, run_door)
    assert server_for(role) is expected


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in sys.modules if m.endswith('.server')))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_an_execd_door_imports_only_its_own_server() -> None:
    assert _loaded_after("import doors.serve") == set()
    assert _loaded_after("import doors.serve; doors.serve.server_for('net')") == {"doors.net.server"}


def test_preload_imports_the_servers_it_is_given_and_the_launcher_none_before_its_session() -> None:
    every = {"doors.fs.server", "doors.net.server", "doors.keys.server", "doors.model.server", "doors.shell.server"}
    assert _loaded_after("import doors.serve; doors.serve.preload()") == every
    assert _loaded_after("import doors.serve; doors.serve.preload(('fs', 'keys'))") == {"doors.fs.server",
                                                                                          "doors.keys.server"}
    # A session preloads its own doors (launcher/lifecycle/session.py, run); the daemon preloads every door.
    assert _loaded_after("import launcher.lifecycle.session") == set()
    assert _loaded_after("import launcher.daemon.main; launcher.daemon.main.preload()") >= every


def _late_door_imports(package: str) -> set[str]:
    """The doors.* modules imported inside a function (not under TYPE_CHECKING) anywhere in `package`."""
    found: set[str] = set()
    for path in (ROOT / package.replace(".", "/")).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                found |= {node.module for node in ast.walk(function)
                          if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("doors.")}
    return found


@pytest.mark.parametrize("role", ["fs", "net", "keys", "model", "shell"])
def test_preload_of_a_door_imports_what_it_would_import_late(role: str) -> None:
    """A forked door may not read the tree once confined: what its code imports inside a function is preloaded."""
    late = sorted(_late_door_imports(f"doors.{role}"))
    probe = f"import sys, doors.serve; doors.serve.preload([{role!r}]); print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert [module for module in late if module not in done.stdout.split()] == []
