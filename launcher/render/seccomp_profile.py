"""A component's seccomp filter, exactly the launcher's (launcher/kernel/seccomp.py deny_rules), as another
loader takes it: an OCI profile (Kubernetes Localhost, docker --security-opt seccomp=) or the mode to compile
into BPF (bwrap --seccomp FD). Pure: no I/O; the BPF is compiled by the caller, with libseccomp."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from typing import Any

from launcher.kernel import seccomp
from launcher.kernel.seccomp import FS_DOOR_EXTRA, Rule, deny_rules, listen_denied
from launcher.manifest import Manifest
from launcher.policy.confine_plan import allowance_of
from launcher.policy.layout import PLAN_PATHS

# libseccomp's comparison operators (launcher/kernel/_sys/libseccomp.py) by the names OCI profiles use.
_OPS = {1: "SCMP_CMP_NE", 2: "SCMP_CMP_LT", 3: "SCMP_CMP_LE", 4: "SCMP_CMP_EQ", 5: "SCMP_CMP_GE",
        6: "SCMP_CMP_GT", 7: "SCMP_CMP_MASKED_EQ"}
TCP_LISTENERS = frozenset({"net", "model"})  # the proxy and the plain-HTTP model listener: TCP, for unmodified clients
_ARCHES = {"x86_64": ("SCMP_ARCH_X86_64",), "aarch64": ("SCMP_ARCH_AARCH64",)}


@dataclass(frozen=True)
class FilterMode:
    """The four choices that make a component's filter (launcher/kernel/confine.py builds the same)."""

    deny_inet: bool
    allow_udp: bool
    extra: tuple[str, ...]
    deny_listen: bool

    def rules(self) -> tuple[Rule, ...]:
        """Every rule of the filter, as the launcher loads it."""
        return deny_rules(self.deny_inet, self.allow_udp, self.extra, self.deny_listen)

    def prepared(self) -> seccomp.PreparedFilter:
        """The filter built with libseccomp (not loaded): its export_bpf() is bwrap's program."""
        return seccomp.PreparedFilter(self.deny_inet, self.allow_udp, self.extra, self.deny_listen)


def filter_mode(manifest: Manifest, role: str, python: tuple[str, ...], own_listener: bool = False) -> FilterMode:
    """The filter the launcher gives `role` (launcher/lifecycle/component_spec.py: the fs door, fenced as the
    workspace owner, also loses socket() and metadata calls).

    `own_listener`: in a container no launcher hands a door its listener, so a door makes its own: it keeps
    socket() (still only for the families allowed) and listen(), and the net and model doors, whose clients reach
    them over TCP, internet sockets. The app makes no listener: its filter is the launcher's as it is."""
    allowance = allowance_of(manifest, role, PLAN_PATHS, python)
    extra: tuple[str, ...] = FS_DOOR_EXTRA if role == "fs" else ()
    if not own_listener or role == "app":
        return FilterMode(allowance.deny_inet, allowance.allow_udp, extra,
                          listen_denied(allowance.deny_inet, allowance.tcp_bind))
    tcp_listener = role in TCP_LISTENERS and any(server == role for _, server in manifest.edges)
    return FilterMode(allowance.deny_inet and not tcp_listener, allowance.allow_udp,
                      tuple(name for name in extra if name != "socket"), deny_listen=False)


def _entry(rule: Rule) -> dict[str, Any]:
    entry: dict[str, Any] = {"names": [rule.syscall], "action": "SCMP_ACT_ERRNO", "errnoRet": rule.errno}
    if rule.cmps:
        entry["args"] = [{"index": arg, "value": datum_a, "valueTwo": datum_b, "op": _OPS[op]}
                         for arg, op, datum_a, datum_b in rule.cmps]
    return entry


def oci_profile(mode: FilterMode, machine: str | None = None) -> dict[str, Any]:
    """The OCI seccomp profile of `mode`: allow by default, every rule of the launcher's filter as ERRNO.
    Rules without arguments and with the same errno share one entry, in the filter's order."""
    entries: list[dict[str, Any]] = []
    plain: dict[int, dict[str, Any]] = {}
    for rule in mode.rules():
        if rule.cmps:
            entries.append(_entry(rule))
        elif rule.errno in plain:
            plain[rule.errno]["names"].append(rule.syscall)
        else:
            plain[rule.errno] = _entry(rule)
            entries.append(plain[rule.errno])
    arches = _ARCHES.get(machine or platform.machine(), ())
    # The native architecture only, which the launcher's filter is built for; what a call through another ABI
    # (i386, x32) meets is the runtime's own bad-architecture choice (launcher/render not_covered says so).
    return {"defaultAction": "SCMP_ACT_ALLOW", "architectures": list(arches), "syscalls": entries}


def profile_text(mode: FilterMode) -> str:
    """The profile as a file: one line per syscall entry, so a change to the filter reads as a change of lines."""
    profile = oci_profile(mode)
    entries = ",\n".join(f"    {json.dumps(entry)}" for entry in profile["syscalls"])
    return (f'{{\n  "defaultAction": {json.dumps(profile["defaultAction"])},\n'
            f'  "architectures": {json.dumps(profile["architectures"])},\n  "syscalls": [\n{entries}\n  ]\n}}\n')
