"""The one entry point of every door: `serve(contract)` when forked, `python -m doors` (main) when exec'd.

Each role with features of its own has its server here; any other role runs the generic door, which answers
hello and reports its rows unheld. The launcher imports this module before it forks, so that each door starts
from pre-imported code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from doors._contract import DoorContract
from doors._door import run_door
from doors.fs import server as fs_server
from doors.net import server as net_server

SERVERS: Mapping[str, Callable[[DoorContract], None]] = {"fs": fs_server.serve, "net": net_server.serve}


def serve(contract: DoorContract) -> None:
    """Run the door `contract.role` until SIGTERM: its own server, or the generic door."""
    SERVERS.get(contract.role, run_door)(contract)


def main() -> None:
    """Run the door described by SHARNESS_DOOR_CONTRACT (how a door is exec'd rather than forked)."""
    serve(DoorContract.from_environ())
