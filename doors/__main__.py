"""`python -m doors`: run the generic door described by SHARNESS_DOOR_CONTRACT (how the launcher execs one)."""

from doors._contract import DoorContract
from doors._door import run_door

if __name__ == "__main__":
    run_door(DoorContract.from_environ())
