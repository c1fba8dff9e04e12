"""Where sharness keeps things on the host: the runtime root, the journals, the audit logs, named netns."""

from __future__ import annotations

RUN_ROOT = "/run/sharness"  # root 0711: /run/sharness/<sid>/ (doors' sockets, private dirs)
SESSIONS_ROOT = f"{RUN_ROOT}/sessions"  # root 0700: /run/sharness/sessions/<sid>/journal
STATE_ROOT = "/var/lib/sharness"
AUDIT_ROOT = f"{STATE_ROOT}/sessions"  # /var/lib/sharness/sessions/<sid>/audit.jsonl (+ .sig, .pub)
HELLO_ROOT = f"{STATE_ROOT}/hello"  # `sharness-launch hello`'s scratch workspaces
DEMO_ROOT = f"{STATE_ROOT}/demo"  # `sharness-launch demo`'s copies of the sample project
SEALED_ROOT = f"{STATE_ROOT}/secrets"  # root 0700: `secret add`'s machine.key and <name>.sealed files
SEALED_PREFIX = "sealed:"  # a keys secret's `from: "sealed:NAME"` names SEALED_ROOT/NAME + SEALED_SUFFIX
SEALED_SUFFIX = ".sealed"
MACHINE_KEY_NAME = "machine.key"  # SEALED_ROOT/machine.key: what every sealed file there is sealed to
# The only trees journaled `dir` and `file` entries may name (the journal refuses anything else).
REMOVABLE_ROOTS: tuple[str, ...] = (RUN_ROOT, STATE_ROOT)
# sharness-launchd (launcher/daemon/): its socket (root's, 0666: the policy decides who may ask), its policy
# (root-owned, its own schema and hash), its own state (audit logs of its requests, who owns which session).
LAUNCHD_SOCKET = f"{RUN_ROOT}/launchd.sock"
LAUNCHD_POLICY = "/etc/sharness/launchd.json"
LAUNCHD_STATE_ROOT = f"{STATE_ROOT}/launchd"
NETNS_ROOT = "/run/netns"  # iproute2's named network namespaces: /run/netns/sh-<sid>-<role>
