"""Who takes part in a session: the roles, the order doors start in, and the edges a manifest gets by default."""

from __future__ import annotations

# Doors start in this order and stop in its reverse (the app starts after every door is ready).
DOOR_ORDER: tuple[str, ...] = ("fs", "net", "keys", "shell", "model")
ROLES: tuple[str, ...] = ("app", *DOOR_ORDER)
# DESIGN.md's default edges (client, server); used, restricted to started roles, when "edges" is absent.
DEFAULT_EDGES: frozenset[tuple[str, str]] = frozenset(
    {("app", "fs"), ("app", "net"), ("app", "shell"), ("app", "model"),
     ("net", "keys"), ("model", "keys"), ("shell", "net")}
)
