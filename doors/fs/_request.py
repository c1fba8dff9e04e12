"""Parsing the pieces of an fs request: the path in the URL, byte ranges, flags. Pure: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from doors._refusal import Refusal
from doors.fs._paths import WorkspacePath, parse_path, path_refusal

_RANGE = re.compile(r"bytes=(\d{1,19})-(\d{0,19})")


def path_from_url(rest: str) -> WorkspacePath | Refusal:
    """Percent-decode the URL's path part exactly once (UTF-8, strict), then validate it."""
    try:
        text = unquote(rest, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        return path_refusal("path", "the path is not UTF-8 once percent-decoded", "percent-encode UTF-8 bytes")
    return parse_path(text)


@dataclass(frozen=True)
class ByteRange:
    """An inclusive start and an optional inclusive end, as in `Range: bytes=start-end`."""

    start: int
    end: int | None = None

    def bounds(self, size: int) -> tuple[int, int] | None:
        """(offset, length) inside a file of `size` bytes, or None when the range starts past its end."""
        if self.start >= size and size > 0:
            return None
        last = size - 1 if self.end is None else min(self.end, size - 1)
        return self.start, max(0, last - self.start + 1)


def parse_range(header: str | None, offset: str | None, length: str | None) -> ByteRange | str | None:
    """A byte range from `Range: bytes=a-b` or `?offset=&length=`; a str says why it is refused."""
    if header is not None:
        match = _RANGE.fullmatch(header.strip())
        if match is None:
            return "only one range of the form bytes=START-[END] is supported"
        start, end = int(match.group(1)), int(match.group(2)) if match.group(2) else None
        if end is not None and end < start:
            return "the range ends before it starts"
        return ByteRange(start, end)
    if offset is None and length is None:
        return None
    if not (offset or "0").isdigit() or (length is not None and not length.isdigit()):
        return "offset and length must be non-negative integers"
    start = int(offset or "0")
    if length is None:
        return ByteRange(start)
    if int(length) == 0:
        return "length must be at least 1"
    return ByteRange(start, start + int(length) - 1)


def parse_flag(value: str | None) -> bool | None:
    """Query flags: absent or "0"/"false" is False, "1"/"true"/"" is True, anything else None."""
    if value is None:
        return False
    lowered = value.lower()
    if lowered in ("", "1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    return None


def parse_length(value: str | None) -> int | None:
    """A Content-Length header as an int, or None when absent or malformed (h11 already checked it)."""
    return int(value) if value is not None and value.isdigit() else None
