"""The environment each component starts with: built from nothing, never inherited. Pure: no I/O.

Nothing of the launcher's own environment reaches a component, so no secret a person exported can leak.
"""

from __future__ import annotations

from launcher.manifest import Manifest
from launcher.policy.layout import (
    APP_BUNDLE,
    APP_EGRESS_BUNDLE,
    APP_SVID,
    MODEL_HOST,
    MODEL_PORT,
    PROXY_HOST,
    PROXY_PORT,
    SessionPaths,
)
from pki.vocabulary import MODEL_VARIABLES, NO_PROXY_VARIABLES, PROXY_VARIABLES, TRUST_VARIABLES

DOOR_ENV = (("PATH", "/usr/bin:/bin"), ("LANG", "C.UTF-8"))
# The XDG base directories, spelled out under the writable HOME (their spec's defaults, which some tools do not
# derive when HOME is unusual). XDG_RUNTIME_DIR stays unset, as under sudo or cron: no login made one.
# Not a credential: the model door ignores what a client sends as one. Set so that SDKs do not go looking for
# credentials on disk (profiles, federation files) when none is in the environment.
MODEL_KEY_PLACEHOLDER = "sharness-model-door-holds-the-key"
XDG_DIRS = (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".local/share"),
            ("XDG_STATE_HOME", ".local/state"))


# What the launcher sets in the app's environment itself: app.env may not name it (launcher/manifest refuses it).
LAUNCHER_SET_PREFIX = "SHARNESS_"
LAUNCHER_SET_NAMES = frozenset({"HOME", "TMPDIR", *(name for name, _ in XDG_DIRS), *PROXY_VARIABLES,
                                *NO_PROXY_VARIABLES, *MODEL_VARIABLES})


def launcher_sets(name: str) -> bool:
    """Whether the launcher sets variable `name` in the app's environment (so app.env may not)."""
    return name in LAUNCHER_SET_NAMES or name.startswith(LAUNCHER_SET_PREFIX)


def door_env() -> dict[str, str]:
    """A door's environment: a fixed PATH and locale (its contract arrives as an object, not a variable)."""
    return dict(DOOR_ENV)


def app_env(manifest: Manifest, layout: SessionPaths, python_prefix: str) -> dict[str, str]:
    """The app's environment: its HOME and TMPDIR (its scratch tmpfs), its identity files, its doors' sockets
    and, with the edge app→net, the proxy variables pointing at the net door (and, when hosts have a bound
    credential, the trust variables pointing at the system store plus the egress CA)."""
    private, home = layout.private_dir("app"), layout.home_dir("app")
    env = {
        "PATH": f"{python_prefix}/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": layout.tmp_dir("app"),
        **{name: f"{home}/{where}" for name, where in XDG_DIRS},
        "LANG": "C.UTF-8",
        "SHARNESS_SESSION": layout.sid,
        "SHARNESS_TRUST_DOMAIN": manifest.session.trust_domain,
        "SHARNESS_SVID": f"{private}/{APP_SVID}",
        "SHARNESS_BUNDLE": f"{private}/{APP_BUNDLE}",
    }
    for client, server in sorted(manifest.edges):
        if client == "app":
            env[f"SHARNESS_DOOR_{server.upper()}"] = layout.socket_path(server)
    if ("app", "net") in manifest.edges:
        proxy = f"http://{PROXY_HOST}:{PROXY_PORT}"
        env.update(dict.fromkeys(PROXY_VARIABLES, proxy))
        if manifest.bound_hosts:  # the net door answers for them with egress leaves: trust its CA too
            env.update(dict.fromkeys(TRUST_VARIABLES, f"{private}/{APP_EGRESS_BUNDLE}"))
    if ("app", "model") in manifest.edges:
        env.update(model_env())
    # The manifest's own variables (app.env) never replace one of the above: the manifest refuses such a name.
    env.update({name: value for name, value in manifest.app.env if not launcher_sets(name)})
    return env


def model_env() -> dict[str, str]:
    """What points an unmodified SDK or agent CLI at the model door's plain-HTTP listener in its netns."""
    env = dict(zip(MODEL_VARIABLES, (f"http://{MODEL_HOST}:{MODEL_PORT}", MODEL_KEY_PLACEHOLDER), strict=True))
    env.update(dict.fromkeys(NO_PROXY_VARIABLES, f"{MODEL_HOST},localhost"))
    return env
