"""What every container render shares: a uid per component, a socket volume per door, the images. Pure."""

from __future__ import annotations

from launcher.manifest import Manifest
from launcher.policy.layout import SessionPaths
from pki.vocabulary import ROLES

UID_BASE = 62000  # each component runs as UID_BASE + its index in ROLES, its group the same number
DOORS_IMAGE = "sharness-launch/doors:0.1.0"  # this project, whose `python -m doors` serves every door
DOOR_COMMAND = ("python3", "-m", "doors")
IMAGE_PATH = "/usr/local/bin:/usr/bin:/bin"  # PATH in a container: the image's, not this host's Python


def uid_of(role: str) -> int:
    """The uid (and gid) the container of `role` runs as."""
    return UID_BASE + ROLES.index(role)


def app_image(manifest: Manifest) -> str:
    """The app's image: the person builds it, holding what app.files lists; named by the manifest's hash."""
    return f"sharness-launch/app-{manifest.session.name}:{manifest.sha256.partition(':')[2][:12]}"


def image_of(manifest: Manifest, role: str) -> str:
    """The image the container of `role` runs."""
    return app_image(manifest) if role == "app" else DOORS_IMAGE


def command_of(manifest: Manifest, role: str) -> list[str]:
    """The command the container of `role` runs: the manifest's argv for the app, the doors' entry otherwise."""
    return list(manifest.app.argv) if role == "app" else list(DOOR_COMMAND)


def socket_dir(layout: SessionPaths, door: str) -> str:
    """The directory of door `door`'s socket: a volume of its own."""
    return f"{layout.doors_dir}/{door}"


def socket_path(layout: SessionPaths, door: str) -> str:
    """Where door `door` listens, in its socket volume."""
    return f"{socket_dir(layout, door)}/{door}.sock"
