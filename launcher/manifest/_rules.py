"""Value rules a JSON Schema cannot express well: paths, trust domains, host:port entries. Pure.

Each function returns None when the value is fine, or the reason in words when it is not.
"""

from __future__ import annotations

import ipaddress
import re

from launcher.policy.layout import RUN_ROOT

MAX_COMPONENT_BYTES = 255
MAX_TRUST_DOMAIN = 255
_TRUST_DOMAIN = re.compile(r"^[a-z0-9._-]+$")
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_PORT = re.compile(r"^[1-9][0-9]{0,4}$")


def _control_char(text: str) -> str | None:
    for char in text:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return f"holds the control character U+{ord(char):04X}"
    return None


def _segments_problem(segments: list[str]) -> str | None:
    for segment in segments:
        if segment == "":
            return "has an empty component ('//' or a leading or trailing '/')"
        if segment in (".", ".."):
            return f"has a {segment!r} component"
        if len(segment.encode("utf-8")) > MAX_COMPONENT_BYTES:
            return f"has a component longer than {MAX_COMPONENT_BYTES} bytes"
    return None


def absolute_path_problem(path: str) -> str | None:
    """Why `path` is not an absolute, normalised path ('/' itself is one), or None."""
    problem = _control_char(path)
    if problem:
        return problem
    if not path.startswith("/"):
        return "is relative: write an absolute path starting with '/'"
    if path == "/":
        return None
    return _segments_problem(path[1:].split("/"))


def relative_path_problem(path: str) -> str | None:
    """Why `path` is not a normalised path relative to the workspace, or None."""
    problem = _control_char(path)
    if problem:
        return problem
    if path.startswith("/"):
        return "is absolute: fs rows are relative to the workspace (e.g. '.git')"
    return _segments_problem(path.split("/"))


def covers(outer: str, inner: str) -> bool:
    """Whether absolute path `outer` is `inner` or one of its ancestors."""
    return outer == "/" or inner == outer or inner.startswith(outer + "/")


# Places that are the kernel's or the launcher's own, never a project's: no manifest path may be one, lie
# under one, or hold one ("/", "/run"). Refused by their spelling here; what a path resolves to is the
# preflight's (a symlink, a proc mounted elsewhere: launcher/policy/path_rules.py).
RESERVED_PATHS = (
    ("/proc", "the kernel's processes, whose magic links (/proc/self/root, fd/N) lead anywhere"),
    ("/sys", "the kernel's devices and settings"),
    ("/dev", "device nodes, and /dev/shm, which every user may write"),
    (RUN_ROOT, "the launcher's runtime directory: every session's sockets and writable directories"),
)


def reserved_path_problem(path: str) -> str | None:
    """Why absolute, normalised `path` names a place that is never given to a component, or None."""
    if path == "/":
        return "is the whole file system"
    for root, words in RESERVED_PATHS:
        if covers(root, path):
            return f"is {'' if path == root else 'under '}{root}: {words}"
        if covers(path, root):
            return f"holds {root}: {words}"
    return None


def trust_domain_problem(name: str) -> str | None:
    """Why `name` is not a SPIFFE trust domain name we accept, or None."""
    if len(name) > MAX_TRUST_DOMAIN:
        return f"is longer than {MAX_TRUST_DOMAIN} characters"
    if not _TRUST_DOMAIN.match(name):
        return "may hold only lowercase letters, digits, '.', '-' and '_' (no scheme, port or path)"
    if "" in name.split("."):
        return "has an empty label (a leading, trailing or doubled '.')"
    return None


def port_problem(port: str) -> str | None:
    """Why `port` (text) is not a TCP port 1..65535 in canonical decimal, or None."""
    if not _PORT.match(port) or int(port) > 65535:
        return f"port {port!r} is not a number from 1 to 65535 (no leading zeros)"
    return None


def hostname_problem(host: str) -> str | None:
    """Why `host` is not a lowercase DNS name (A-labels), or None; numeric look-alikes are refused."""
    if len(host) > 253 or not _HOSTNAME.match(host):
        return f"{host!r} is not a lowercase DNS name (letters, digits, '-', '.'; IDNs as xn-- A-labels)"
    if host.rsplit(".", 1)[-1].isdigit():
        return f"{host!r} looks numeric but is not a canonical IPv4 address"
    return None


def ip_literal(host: str) -> str | None:
    """The canonical text of an IP literal host ('1.2.3.4' or '[::1]'), or None when not one."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    canonical = str(address)
    return f"[{canonical}]" if address.version == 6 else canonical


RAW_TCP_PREFIX = "tcp://"


def allow_entry_problem(entry: str) -> tuple[str | None, bool]:
    """Check one net allow entry ('host:port', '*.suffix:port', '[v6]:port', each optionally 'tcp://'
    for a raw TCP tunnel): (problem, is_ip_literal)."""
    host, sep, port = entry.removeprefix(RAW_TCP_PREFIX).rpartition(":")
    if not sep or not host:
        return "is not host:port", False
    problem = port_problem(port)
    if problem:
        return problem, False
    literal = ip_literal(host)
    if literal is not None:
        if literal != host:
            return f"IP literal {host!r} is not in canonical form (write {literal!r})", True
        return None, True
    if host.startswith("*."):
        suffix = host[2:]
        if "." not in suffix:
            return f"wildcard {host!r} would match a whole top-level domain", False
        return hostname_problem(suffix), False
    return hostname_problem(host), False
