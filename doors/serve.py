"""The one entry point of every door: `serve(contract)` when forked, `python -m doors` (main) when exec'd.

Each door role has its server (`server_for`); a role that is not a door's gets the generic door, which answers
hello and reports its rows unheld (no door uses it now: every role in DOOR_ORDER has its own). A role's server
is imported when it is first asked for, so an exec'd door loads only its own code; the launcher calls
`preload(its doors)` before it forks, so that each forked door starts from pre-imported code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from doors._contract import DoorContract
from doors._door import run_door
from pki.vocabulary import DOOR_ORDER

Server = Callable[[DoorContract], None]
ROLES_WITH_SERVERS = DOOR_ORDER


def server_for(role: str) -> Server:
    """The function that runs door `role` to its end: its own server, or the generic door."""
    if role == "fs":
        from doors.fs import server as fs_server

        return fs_server.serve
    if role == "net":
        from doors.net import server as net_server

        return net_server.serve
    if role == "keys":
        from doors.keys import server as keys_server

        return keys_server.serve
    if role == "model":
        from doors.model import server as model_server

        return model_server.serve
    if role == "shell":
        from doors.shell import server as shell_server

        return shell_server.serve
    return run_door


# What a door imports only once it needs it, after its fork and confinement (where it may no longer read the tree):
# the zygote imports it with the door's server.
LATE_IMPORTS = {"net": ("doors.keys.client",)}  # doors/net/server.py: the keys client, for bound credentials


def preload(roles: Iterable[str] = ROLES_WITH_SERVERS, mount: bool = True) -> None:
    """Import the servers of `roles` (default: every door's) now, and with `mount` the fs door's FUSE front: the
    launcher does, for its session's doors, before it forks them, so that each forked door starts from pre-imported
    code."""
    for role in roles:
        server_for(role)
        for module in LATE_IMPORTS.get(role, ()):
            importlib.import_module(module)
        if role == "fs" and mount:
            from doors.fs import server as fs_server

            fs_server.mount_front()


def serve(contract: DoorContract) -> None:
    """Run the door `contract.role` until SIGTERM."""
    server_for(contract.role)(contract)


def main() -> None:
    """Run the door described by SHARNESS_DOOR_CONTRACT (how a door is exec'd rather than forked)."""
    serve(DoorContract.from_environ())
