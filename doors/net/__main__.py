"""`python -m doors.net`: the net door described by SHARNESS_DOOR_CONTRACT."""

from doors._contract import DoorContract
from doors.net.server import serve

if __name__ == "__main__":
    serve(DoorContract.from_environ())
