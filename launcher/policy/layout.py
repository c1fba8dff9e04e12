"""Every name and path of one session, derived from its id. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass

from pki.vocabulary import AUDIT_ROOT, DOOR_ORDER, RUN_ROOT, SESSIONS_ROOT, SID_LENGTH, valid_sid

PROXY_PORT = 3128
PROXY_HOST = "127.0.0.1"
# The model door's plain-HTTP listener inside the app's (and the shell's) network namespace: ANTHROPIC_BASE_URL.
MODEL_PORT = 3129
MODEL_HOST = "127.0.0.1"

# The app's identity files in its private directory (SPIFFE Filesystem Delivery names).
APP_SVID = "svid.pem"
APP_BUNDLE = "bundle.pem"
# What the app trusts for TLS when a host has a bound credential: the system store plus the egress CA (TRUST_VARIABLES).
APP_EGRESS_BUNDLE = "egress-bundle.pem"
# The session id a plan shows: a person approves the manifest before any id is drawn.
SID_PLACEHOLDER = "<sid>"
# Components whose network namespace holds only loopback (and the net door's proxy listener).
LOOPBACK_ONLY = frozenset({"app", "shell"})
# A devpts instance of the component's own (the shell door's ttys): mounted in its private root, never bound.
DEVPTS = "/dev/pts"
# Components that keep the host's network: they are the ways out.
HOST_NETWORK = frozenset({"net", "model"})

@dataclass(frozen=True)
class SessionPaths:
    """Every name and path of one session: a real session's, or the plan's with `<sid>` in place of the id."""

    sid: str
    run_root: str = RUN_ROOT
    sessions_root: str = SESSIONS_ROOT
    audit_root: str = AUDIT_ROOT

    def __post_init__(self) -> None:
        if self.sid != SID_PLACEHOLDER and not valid_sid(self.sid):
            raise ValueError(f"session id must be {SID_LENGTH} lowercase hex characters, got {self.sid!r}")

    @property
    def state_dir(self) -> str:
        return f"{self.sessions_root}/{self.sid}"

    @property
    def runtime_dir(self) -> str:
        return f"{self.run_root}/{self.sid}"

    @property
    def doors_dir(self) -> str:
        return f"{self.runtime_dir}/doors"

    @property
    def audit_dir(self) -> str:
        return f"{self.audit_root}/{self.sid}"

    def user(self, role: str) -> str:
        return f"sh-{self.sid}-{role}"

    def clients_group(self, door: str) -> str:
        return f"sh-{self.sid}-to-{door}"

    def private_dir(self, role: str) -> str:
        return f"{self.runtime_dir}/{role}"

    def home_dir(self, role: str) -> str:
        """HOME of a component with scratch space (launcher/policy/scratch.py): a mount point on the host."""
        return f"{self.private_dir(role)}/home"

    def tmp_dir(self, role: str) -> str:
        """TMPDIR of a component with scratch space, on the same tmpfs as its HOME."""
        return f"{self.private_dir(role)}/tmp"

    def overlay_upper_dir(self) -> str:
        """Where the shell door reads its overlay's upper layer (read-only): a mount point on the host."""
        return f"{self.private_dir('shell')}/upper"

    def socket_path(self, door: str) -> str:
        return f"{self.doors_dir}/{door}.sock"

    def netns(self, role: str) -> str | None:
        """The component's own network namespace, or None when it keeps the host's."""
        if role in HOST_NETWORK:
            return None
        return f"sh-{self.sid}-{role}"


@dataclass(frozen=True)
class SessionLayout(SessionPaths):
    """The layout of a session that exists or is being created: its id is always a real one."""

    def __post_init__(self) -> None:
        if not valid_sid(self.sid):
            raise ValueError(f"session id must be {SID_LENGTH} lowercase hex characters, got {self.sid!r}")


# What a plan shows for every session path: the same formulas, the id not yet drawn. Never created.
PLAN_PATHS = SessionPaths(SID_PLACEHOLDER)


def door_client_groups(edges: frozenset[tuple[str, str]], roles: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """For each started door, the roles whose users join the group that may connect to its socket."""
    started = set(roles)
    return {
        door: frozenset(client for client, server in edges if server == door and client in started)
        for door in roles
        if door != "app"
    }


def groups_of(role: str, client_groups: dict[str, frozenset[str]]) -> tuple[str, ...]:
    """The doors whose socket groups this role belongs to, in door order."""
    return tuple(door for door in DOOR_ORDER if role in client_groups.get(door, frozenset()))
