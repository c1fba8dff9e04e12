"""The edge policy: which role may call which door, from the manifest's `edges` row. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from pki.vocabulary import DEFAULT_EDGES, ROLES


@dataclass(frozen=True)
class EdgeDecision:
    """Whether a (client, server) pair may talk, and why, in words a person can act on."""

    allowed: bool
    reason: str


@dataclass(frozen=True)
class EdgePolicy:
    """An immutable set of (client role, server role) pairs; everything else is refused."""

    edges: frozenset[tuple[str, str]] = DEFAULT_EDGES

    def __post_init__(self) -> None:
        if not isinstance(self.edges, frozenset):
            object.__setattr__(self, "edges", frozenset(self.edges))
        for edge in self.edges:
            if not (isinstance(edge, tuple) and len(edge) == 2):
                raise ValueError(f"edge {edge!r} is not a (client role, server role) pair")
            client, server = edge
            for role in (client, server):
                if role not in ROLES:
                    known = ", ".join(ROLES)
                    raise ValueError(f"edge {client}->{server}: role {role!r} is not one of {known}")
            if client == server:
                raise ValueError(f"edge {client}->{server}: a role does not call itself")

    def decide(self, client_role: str, server_role: str) -> EdgeDecision:
        """Allow exactly the listed pairs; the reason names the pair and the manifest row to change."""
        pair = f"{client_role}->{server_role}"
        if (client_role, server_role) in self.edges:
            return EdgeDecision(True, f"edge {pair} is listed in the manifest row `edges`")
        return EdgeDecision(False, f"edge {pair} is not in the manifest row `edges`: add it there to allow this call")

    def clients_of(self, server_role: str) -> frozenset[str]:
        """Roles allowed to call `server_role`."""
        return frozenset(client for client, server in self.edges if server == server_role)

    def servers_of(self, client_role: str) -> frozenset[str]:
        """Roles `client_role` is allowed to call."""
        return frozenset(server for client, server in self.edges if client == client_role)
