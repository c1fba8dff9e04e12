"""`python -m doors`: run the door SHARNESS_DOOR_CONTRACT describes, whatever its role (doors.serve)."""

from doors.serve import main

if __name__ == "__main__":
    main()
