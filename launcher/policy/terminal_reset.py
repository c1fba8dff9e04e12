"""What the launcher writes to the person's terminal of its own: the reset at the relay's close, and the frame
of each line it prints while the app's output may have left the terminal in any state. Pure.

The screen filter (launcher/policy/termfilter.py) lets through only pieces after which the terminal is back
in its ground state, so these bytes are read as written. The reset puts back every mode the filter lets the
app change (launcher/policy/csi_policy.py) and a few it never lets through, in case the terminal had them
from before; then it starts a fresh line with nothing of the app's below it, so the launcher's verdict is
the last thing on the screen and no text the app left further down can pass for it.
"""

from __future__ import annotations

END_SYNCHRONIZED_UPDATE = b"\x1b[?2026l"  # what follows is drawn now, not held for the app's frame
# Back to the main screen, restoring the cursor the app's smcup saved, as its own rmcup would. Sent only when
# the app is on the alternate screen: on the main screen it would move the cursor to wherever the app last
# saved it (DECSC), and the fresh line would then erase what the app printed below that.
LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049l"
_RESET_STEPS = (
    "\x1b[?9;1000;1002;1003;1004;1005;1006;1015;1016l",  # no mouse or focus reports
    "\x1b[?2004l",  # no bracketed paste
    "\x1b[?1l\x1b>",  # normal cursor keys, numeric keypad
    "\x1b[?7h",  # autowrap
    "\x1b[4l\x1b[20l\x1b[12h",  # replace mode, LF without CR, no local echo (IRM, LNM, SRM)
    "\x1b7\x1b[r\x1b8",  # the whole screen scrolls (DECSTBM homes the cursor: saved and restored around it)
    "\x1b[?12l\x1b[?25h",  # a visible cursor, not blinking (cnorm)
    "\x1b[0 q",  # the cursor's shape: the terminal's default
    "\x1b(B\x1b)B\x0f",  # G0 and G1 are ASCII, G0 in use
    "\x1b[m",  # default colours and attributes: nothing concealed, no foreground equal to the background
)
TERMINAL_RESET = "".join(_RESET_STEPS).encode()
FRESH_LINE_BELOW = b"\x1b[J"  # erase from the cursor to the end of the screen
LINE_END = b"\x1b[K\r\n"  # erase the rest of the line (nothing of the app's after the text), then a new line
CLEAN_START = b"\x1b(B\x1b[m"  # ASCII in G0, default attributes


def _fresh_line(at_line_start: bool) -> bytes:
    return b"\r" if at_line_start else b"\r\n"


def reset_bytes(at_line_start: bool, on_alternate_screen: bool) -> bytes:
    """The reset, then the start of a fresh line with nothing below it (a new line unless already at one)."""
    leave = LEAVE_ALTERNATE_SCREEN if on_alternate_screen else b""
    # Back from the alternate screen the cursor is where the app entered it, at a line's start or not.
    fresh = _fresh_line(at_line_start and not on_alternate_screen)
    return END_SYNCHRONIZED_UPDATE + leave + TERMINAL_RESET + fresh + FRESH_LINE_BELOW


def launcher_line(text: str, at_line_start: bool) -> bytes:
    """One line of the launcher's among the app's output: on a line of its own, from a clean SGR state.

    `text` must be inert already (launcher/policy/door_diagnostics.py renders what a door said so).
    """
    return _fresh_line(at_line_start) + CLEAN_START + text.encode() + LINE_END
