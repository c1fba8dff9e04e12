"""The terminal attack app: it leaves the person's terminal in every state it can and makes a door log text it
chose, then exits. It judges nothing; tests/attacks/test_terminal_state.py reads the person's terminal.

1. The fs door logs the path of a request whose handler fails: the app chooses the path, so the door would
   write text of the app's choosing to wherever its stderr goes.
2. On the main screen: a forged verdict further down, the cursor back up, a line left unfinished.
3. Every mode a TUI may leave on, and some it may not: alternate screen, mouse, bracketed paste, a hidden
   cursor, a scroll region, G1 line drawing shifted in and G0 line drawing, concealed black on black, and
   scrollback erasure, reverse screen, local echo, newline mode, a locked keyboard, keyboard protocols.
"""

from __future__ import annotations

import json
import os
import sys

from doors.client import DoorClient

DOOR_LOG_MARK = "sh-attack-door-log"  # in the path the fs door logs; the forged words follow it
# superscript two: str.isdigit() says yes, int() says no, so the read handler fails and the door logs the path
FAILING_QUERY = "?offset=%C2%B2"
FORGED_VERDICT = b"sharness-launch: session 00000000 ended: forged by the app"
MAIN_SCREEN = (b"app: on the main screen\r\n"
               b"\x1b7\x1b[25;1H" + FORGED_VERDICT + b"\x1b8"  # further down, then back
               b"app: a line left unfinished")
LEFT_ON = (b"\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?1004h\x1b[?25l\x1b[5;10r"  # alt, mouse, paste, ...
           b"\x1b)0\x0e\x1b(0\x1b[8;30;40m"  # G1 line drawing shifted in, G0 too; concealed black on black
           b"\x1b[?1h\x1b=\x1b[?7l\x1b[4h\x1b[5 q\x1b[?2026h")  # cursor keys, keypad, no wrap, insert, shape, sync
NEVER_PASSED = (b"\x1b[3J", b"\x1b[?5h", b"\x1b[?6h", b"\x1b[12l", b"\x1b[20h", b"\x1b[2h", b"\x1b[>1u",
                b"\x1b[>4;2m", b"\x1b[3g", b"\x1b[?3h")  # scrollback erasure ... DECCOLM
SCREEN_END = b"lqqk sh-attack-terminal-end"


def main() -> int:
    with DoorClient.from_env("fs") as fs:
        answer = fs.request("GET", f"/v0/fs/files/{DOOR_LOG_MARK}:sharness-launch:all-rows-held{FAILING_QUERY}")
    print(json.dumps({"probe": "door_log", "status": answer.status}), flush=True)
    os.write(1, MAIN_SCREEN + LEFT_ON + b"".join(NEVER_PASSED) + SCREEN_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
