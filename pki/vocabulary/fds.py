"""The fd contract of a door (docs/contracts.md): which inherited fd holds what when its code starts."""

from __future__ import annotations

STATUS_FD = 3  # SOCK_SEQPACKET to the launcher: ready, audit and fatal messages (pki.vocabulary.status)
SVID_FD = 4  # sealed memfd: the door's PEM private key, then its leaf certificate
FIRST_LISTENER_FD = 5  # listeners from here on, each named in the contract's listen_fds
DOOR_LISTENER = "door"  # listen_fds name of the door's own mutual-TLS Unix listener (always FIRST_LISTENER_FD)
PROXY_LISTENER_PREFIX = "proxy."  # listen_fds "proxy.<role>": the net door's proxy inside <role>'s netns
MODEL_LISTENER_PREFIX = "model."  # listen_fds "model.<role>": the model door's plain HTTP inside <role>'s netns
# The fs door's rows naming its FUSE device fd (the workspace mount, after its listener) and the uid and gid the
# mount shows as every file's owner (the app's: it is the mount's only user).
MOUNT_FD_ROW = "mount_fd"
MOUNT_OWNER_ROW = "mount_owner"
# The shell door's contract row holding the egress CA's certificate (PEM), when a host has a bound credential.
EGRESS_CA_ROW = "egress_ca_pem"
