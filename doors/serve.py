"""One entry for every door: pick the role's own routes, then run the generic door process.

The launcher imports this module before it forks, so that each door starts from pre-imported code.
"""

from __future__ import annotations

from doors._contract import DoorContract
from doors._door import run_door
from doors.fs import server as fs_server
from doors.net import server as net_server


def serve(contract: DoorContract) -> None:
    """Run the door `contract.role` until SIGTERM; doors without features of their own answer hello."""
    if contract.role == "fs":
        fs_server.serve(contract)
        return
    if contract.role == "net":
        net_server.serve(contract)
        return
    run_door(contract)
