"""The checks a schema cannot express, run on a document that already passed the schema. Pure.

Each raises ManifestError naming the JSON pointer of the value to change.
"""

from __future__ import annotations

from typing import Any

from launcher.manifest import _rules
from launcher.manifest._checks_inject import check_inject
from launcher.manifest._errors import ManifestError, child
from launcher.manifest._model import (
    SHELL_APPLY_EDGE,
    SHELL_DEFAULT_LIMITS,
    effective_edges,
    overlay_limits_of,
    scratch_limits_of,
    started_roles,
)
from launcher.policy.layout import MODEL_PORT, PROXY_PORT
from pki.vocabulary import SEALED_PREFIX, internal_range_problem, valid_secret_name

_FS_PATH_ROWS = ("read_only", "append_only", "hidden", "exec")
_ABS_HINT = "write an absolute, normalised path: no '.', '..', '//', trailing '/' or control characters"
_REL_HINT = "write a path inside the workspace, relative to it, with no '.', '..' or '//'"
_RESERVED_HINT = "name a project's directory or file: /, /proc, /sys, /dev and /run/sharness are never given"


def check_document(doc: dict[str, Any]) -> None:
    """Run every cross-field check, in document order, on a schema-valid document."""
    _check_trust_domain(doc["session"]["trust_domain"])
    _check_workspace(doc["workspace"])
    _check_app(doc["app"])
    doors = doc.get("doors", {})
    if doc["app"].get("workspace") == "mount" and "fs" not in doors:
        raise ManifestError("/app/workspace", "the workspace mount is served by the fs door, which this manifest "
                            "does not start", 'add "doors": {"fs": {...}}, or remove app.workspace')
    if "fs" in doors:
        _check_fs(doc, doors["fs"])
    if "net" in doors:
        _check_net(doc, doors["net"])
        check_inject(doc, doors["net"])
    if "keys" in doors:
        _check_keys(doc, doors["keys"])
    if "model" in doors:
        _check_model(doc, doors["model"])
    if "process" in doors.get("shell", {}):
        _check_scratch("/doors/shell/process", doors["shell"]["process"])
    if "shell" in doors:
        _check_overlay(doc, doors["shell"])
    for key, paths in doors.get("shell", {}).get("files", {}).items():
        for index, path in enumerate(paths):
            _refuse_reserved(f"/doors/shell/files/{key}/{index}", path)
    if "edges" in doc:
        _check_edges(doc)
    if doc["app"].get("cwd") == "workspace":
        _check_cwd_visible(doc)
    for index, port in enumerate(doc["app"].get("bind_tcp", [])):
        if port in (PROXY_PORT, MODEL_PORT):
            raise ManifestError(f"/app/bind_tcp/{index}", f"port {port} is a door's listener in the app's network "
                                "namespace", "choose another port")


def _check_cwd_visible(doc: dict[str, Any]) -> None:
    app, workspace = doc["app"], doc["workspace"].rstrip("/")
    reads = [path.rstrip("/") or "/" for path in app.get("files", {}).get("read", [])]
    if app.get("workspace") == "mount" or any(workspace == path or workspace.startswith(path.rstrip("/") + "/")
                                              for path in reads):
        return
    raise ManifestError("/app/cwd", "the app would start in the workspace, which it cannot see",
                        'add "workspace": "mount" to app (or the workspace to app.files.read), or remove app.cwd')


def _refuse_abs(ptr: str, path: str) -> None:
    problem = _rules.absolute_path_problem(path)
    if problem:
        raise ManifestError(ptr, f"path {path!r} {problem}", _ABS_HINT)


def _refuse_reserved(ptr: str, path: str) -> None:
    """A path that is bound, granted or read from: never the kernel's places nor the launcher's own."""
    _refuse_abs(ptr, path)
    problem = _rules.reserved_path_problem(path)
    if problem:
        raise ManifestError(ptr, f"path {path!r} {problem}", _RESERVED_HINT)


def _check_overlay(doc: dict[str, Any], shell: dict[str, Any]) -> None:
    """An overlay's size only with an overlay; its changes need the fs door and the edge shell→fs; its upper
    layer and the scratch share the shell's memory limit, so together they stay below it."""
    if shell["workspace"] != "overlay":
        if "overlay_mb" in shell:
            raise ManifestError("/doors/shell/overlay_mb", "overlay_mb sizes the overlay's upper layer, and "
                                f"doors.shell.workspace is {shell['workspace']!r}",
                                "set doors.shell.workspace to \"overlay\" or drop overlay_mb")
        return
    if "fs" not in started_roles(doc):
        raise ManifestError("/doors/shell/workspace", "an overlay's changes reach the workspace only through the "
                            "fs door, and the manifest has no doors.fs", "add doors.fs, or use \"read\"")
    if SHELL_APPLY_EDGE not in effective_edges(doc):
        raise ManifestError("/edges", "there is no edge ['shell', 'fs']: the overlay's changes could never be "
                            "applied", "add [\"shell\", \"fs\"] to edges")
    process = shell.get("process", {})
    memory_mb = process.get("max_memory_mb", SHELL_DEFAULT_LIMITS[0])
    scratch_mb, _ = scratch_limits_of(process, memory_mb)
    overlay_mb, _ = overlay_limits_of(shell, memory_mb)
    if scratch_mb + overlay_mb >= memory_mb:
        raise ManifestError("/doors/shell/overlay_mb", f"overlay_mb {overlay_mb} and scratch_mb {scratch_mb} are "
                            f"not below max_memory_mb {memory_mb} together: both tmpfs's pages count against "
                            "the shell's memory limit", "lower overlay_mb or scratch_mb, or raise max_memory_mb")


def _check_trust_domain(name: str) -> None:
    problem = _rules.trust_domain_problem(name)
    if problem:
        raise ManifestError("/session/trust_domain", f"trust domain {name!r} {problem}",
                            "use a SPIFFE trust domain name such as 'demo.sharness.test'")


def _check_workspace(path: str) -> None:
    _refuse_abs("/workspace", path)
    if path == "/":
        raise ManifestError("/workspace", "the workspace is the whole file system",
                            "name the project directory the session works in")
    _refuse_reserved("/workspace", path)


def _check_app(app: dict[str, Any]) -> None:
    argv0 = app["argv"][0]
    for index, arg in enumerate(app["argv"]):
        if "\x00" in arg:
            raise ManifestError(f"/app/argv/{index}", "an argument holds a NUL character",
                                "exec cannot pass NUL; remove it")
    if argv0 == "":
        raise ManifestError("/app/argv/0", "the program name is empty", "name the program to run")
    files = app.get("files", {})
    for key in ("read", "exec"):
        for index, path in enumerate(files.get(key, [])):
            _refuse_reserved(f"/app/files/{key}/{index}", path)
    if "/" in argv0:  # a bare name is looked up by the launcher on its fixed PATH
        _refuse_abs("/app/argv/0", argv0)
    _check_scratch("/app/process", app["process"])
    _check_env(app.get("env", {}))
    if "home_seed" in app:
        _refuse_reserved("/app/home_seed", app["home_seed"])


def _check_env(env: dict[str, str]) -> None:
    """app.env holds settings, never a secret, and never a variable the launcher sets itself."""
    from launcher.policy.audit_guard import secret_key_rule
    from launcher.policy.environment import launcher_sets  # here: it imports this package's model
    from pki.secret_shapes import secret_shape

    for name, value in env.items():
        ptr = child("/app/env", name)
        if launcher_sets(name):
            raise ManifestError(ptr, f"the launcher sets {name} itself (the app's HOME, scratch, identity, doors "
                                "and their proxy and model variables)", f"remove {name} from app.env")
        if secret_key_rule(name) is not None:
            raise ManifestError(ptr, f"{name} is named like a secret, and app.env is not for secrets: the app "
                                "could send it anywhere it reaches", "remove it from app.env; a provider key goes "
                                "in doors.keys.secrets, used by the model or net door, never given to the app")
        rule = secret_shape(value)
        if rule is not None:
            raise ManifestError(ptr, f"the value of {name} looks like a secret ({rule}), and app.env is not for "
                                "secrets", "remove it from app.env; a provider key goes in doors.keys.secrets, "
                                "used by the model or net door, never given to the app")


def _check_scratch(ptr: str, process: dict[str, Any]) -> None:
    memory_mb = process["max_memory_mb"]
    if process.get("scratch_mb", 0) >= memory_mb:
        raise ManifestError(
            child(ptr, "scratch_mb"),
            f"scratch_mb {process['scratch_mb']} is not below max_memory_mb {memory_mb}: the scratch tmpfs's "
            "pages count against the memory limit, so the process would be killed before the tmpfs said ENOSPC",
            f"lower scratch_mb below {memory_mb} (left out, it is {scratch_limits_of({}, memory_mb)[0]}) "
            "or raise max_memory_mb",
        )


def _check_fs(doc: dict[str, Any], fs: dict[str, Any]) -> None:
    seen: dict[str, str] = {}
    for row in _FS_PATH_ROWS:
        for index, path in enumerate(fs.get(row, [])):
            ptr = f"/doors/fs/{row}/{index}"
            problem = _rules.relative_path_problem(path)
            if problem:
                raise ManifestError(ptr, f"path {path!r} {problem}", _REL_HINT)
            if row != "exec" and path in seen:
                raise ManifestError(ptr, f"{path!r} is also in fs.{seen[path]}",
                                    "list each path under one of read_only, append_only, hidden")
            if row != "exec":
                seen[path] = row
    for index, path in enumerate(fs.get("hidden", [])):
        _check_hidden(doc, f"/doors/fs/hidden/{index}", f"{doc['workspace']}/{path}")


def _check_hidden(doc: dict[str, Any], ptr: str, target: str) -> None:
    files = doc["app"].get("files", {})
    for key in ("read", "exec"):
        for root in files.get(key, []):
            if _rules.covers(root, target):
                raise ManifestError(
                    ptr, f"the app reads {root!r} directly (app.files.{key}), so fs cannot hide this",
                    f"drop {root!r} from app.files.{key} or this row",
                )
    shell = doc.get("doors", {}).get("shell")
    for key, roots in (shell or {}).get("files", {}).items():
        for root in roots:
            if _rules.covers(root, target):
                raise ManifestError(ptr, f"the shell reads {root!r} directly (doors.shell.files.{key}), so fs "
                                    "cannot hide this", f"drop {root!r} from doors.shell.files.{key} or this row")
    if shell is not None and shell["workspace"] in ("read", "overlay"):
        raise ManifestError(ptr, "the shell reads the workspace directly (an overlay's lower layer is the "
                            "workspace itself), so the fs door cannot hide it",
                            "set doors.shell.workspace to \"none\" or drop this row")


def _check_net(doc: dict[str, Any], net: dict[str, Any]) -> None:
    started = started_roles(doc)
    edges = effective_edges(doc)
    literal_roles = set(net.get("allow_ip_literals", []))
    for role, entries in net.get("allow", {}).items():
        ptr = child("/doors/net/allow", role)
        _require_started(started, role, ptr)
        if (role, "net") not in edges:
            raise ManifestError(ptr, f"there is no edge [{role!r}, 'net'], so {role} cannot use these rows",
                                f"add [\"{role}\", \"net\"] to edges or drop this row")
        for index, entry in enumerate(entries):
            problem, is_literal = _rules.allow_entry_problem(entry)
            if problem:
                raise ManifestError(child(ptr, index), f"{entry!r}: {problem}",
                                    "write host:port or *.suffix:port, lowercase, e.g. 'pypi.org:443'")
            if is_literal and role not in literal_roles:
                raise ManifestError(child(ptr, index), f"{entry!r} is an IP literal",
                                    f"add {role!r} to doors.net.allow_ip_literals or name the host")
    for index, role in enumerate(net.get("allow_ip_literals", [])):
        _require_started(started, role, f"/doors/net/allow_ip_literals/{index}")
    for role, entries in net.get("internal", {}).items():
        _check_internal(child("/doors/net/internal", role), net.get("allow", {}).get(role, []), role, entries)
    if "upstream_proxy" in net:
        _check_upstream_proxy(doc, net["upstream_proxy"])


def _check_internal(ptr: str, allowed: list[str], role: str, entries: dict[str, list[str]]) -> None:
    """Each internal row names one host of the role's allow list, and ranges that never reach this host."""
    for entry, ranges in entries.items():
        where = child(ptr, entry)
        if entry not in allowed:
            raise ManifestError(where, f"{entry!r} is not in doors.net.allow.{role}",
                                f"add {entry!r} to doors.net.allow.{role}, or drop this row")
        host = entry.removeprefix(_rules.RAW_TCP_PREFIX).rpartition(":")[0]
        if host.startswith("*.") or _rules.ip_literal(host) is not None:
            raise ManifestError(where, f"{entry!r} is a wildcard or an IP literal: an internal row names one host",
                                "name the host, e.g. \"pypi.corp.example:443\": [\"10.20.0.0/16\"]")
        for index, text in enumerate(ranges):
            problem = internal_range_problem(text)
            if problem:
                raise ManifestError(child(where, index), problem,
                                    "name the private range the host lives in, e.g. 10.20.0.0/16")


def _check_upstream_proxy(doc: dict[str, Any], proxy: dict[str, Any]) -> None:
    ptr = "/doors/net/upstream_proxy"
    problem, _ = _rules.allow_entry_problem(proxy["address"])
    if problem is None and proxy["address"].startswith(("*.", _rules.RAW_TCP_PREFIX)):
        problem = "is a pattern, not one host:port"
    if problem:
        raise ManifestError(f"{ptr}/address", f"{proxy['address']!r}: {problem}",
                            "write the proxy's host:port, e.g. 'proxy.corp.example:3128'")
    host = proxy["address"].rpartition(":")[0]
    literal = _rules.ip_literal(host)
    if literal is not None and internal_range_problem(literal.strip("[]")) is not None:
        raise ManifestError(f"{ptr}/address", f"the proxy's address {literal} is "
                            f"{internal_range_problem(literal.strip('[]'))}", "name the proxy's own address")
    if "secret" in proxy:
        _check_proxy_secret(doc, f"{ptr}/secret", proxy["secret"], host.strip("[]"))


def _check_proxy_secret(doc: dict[str, Any], ptr: str, name: str, host: str) -> None:
    secret = doc.get("doors", {}).get("keys", {}).get("secrets", {}).get(name)
    if secret is None:
        raise ManifestError(ptr, f"no secret {name!r} in doors.keys.secrets",
                            "add it under doors.keys.secrets (the net door fetches the proxy's credential from keys)")
    if "net" not in secret["roles"]:
        raise ManifestError(ptr, f"secret {name!r} is not given to role 'net'",
                            f"add \"net\" to doors.keys.secrets.{name}.roles")
    if host not in secret["hosts"]:
        raise ManifestError(ptr, f"secret {name!r} is not bound to the proxy's host {host!r}",
                            f"add {host!r} to doors.keys.secrets.{name}.hosts")


def _require_started(started: tuple[str, ...], role: str, ptr: str) -> None:
    if role not in started:
        what = "the app" if role == "app" else f"doors.{role}"
        raise ManifestError(ptr, f"role {role!r} is not started (the manifest has no {what})",
                            f"add doors.{role} or remove this row")


def _check_keys(doc: dict[str, Any], keys: dict[str, Any]) -> None:
    started = started_roles(doc)
    edges = effective_edges(doc)
    shell_files = doc.get("doors", {}).get("shell", {}).get("files", {})
    readers = [*doc["app"].get("files", {}).get("read", []), *doc["app"].get("files", {}).get("exec", []),
               *([doc["app"]["home_seed"]] if "home_seed" in doc["app"] else []),
               *shell_files.get("read", []), *shell_files.get("exec", [])]
    for name, secret in keys.get("secrets", {}).items():
        ptr = child("/doors/keys/secrets", name)
        if secret["from"].startswith(SEALED_PREFIX):
            if not valid_secret_name(secret["from"].removeprefix(SEALED_PREFIX)):
                raise ManifestError(child(ptr, "from"), f"{secret['from']!r} names no secret of the sealed store",
                                    "write sealed:NAME, NAME as `sharness-launch secret add NAME` was given it")
            _check_roles_of_secret(started, edges, ptr, secret)
            continue  # the sealed store is the launcher's; the path preflight checks it is no component's
        _refuse_reserved(child(ptr, "from"), secret["from"])
        if _rules.covers(doc["workspace"], secret["from"]):
            raise ManifestError(child(ptr, "from"), "the secret's file lies inside the workspace",
                                "keep secrets outside the workspace, e.g. under /etc/sharness/secrets")
        for root in readers:
            if _rules.covers(root, secret["from"]):
                raise ManifestError(child(ptr, "from"), f"the app or the shell may read this file directly (via "
                                    f"{root!r})", "move the secret or narrow app.files or doors.shell.files")
        _check_roles_of_secret(started, edges, ptr, secret)


def _check_roles_of_secret(started: tuple[str, ...], edges: Any, ptr: str, secret: dict[str, Any]) -> None:
    for index, role in enumerate(secret["roles"]):
        _require_started(started, role, f"{ptr}/roles/{index}")
        if (role, "keys") not in edges:
            raise ManifestError(f"{ptr}/roles/{index}", f"there is no edge [{role!r}, 'keys']",
                                f"add [\"{role}\", \"keys\"] to edges or drop the role")


def _check_model(doc: dict[str, Any], model: dict[str, Any]) -> None:
    if "ca_bundle" in model:
        _refuse_abs("/doors/model/ca_bundle", model["ca_bundle"])
    for index, entry in enumerate(model.get("internal_ranges", [])):
        problem = internal_range_problem(entry)
        if problem:
            raise ManifestError(f"/doors/model/internal_ranges/{index}", problem,
                                "name a private range such as 10.20.0.0/16 (never loopback or link-local)")
    if "twin_script" in model:
        _check_twin_script(model)
    if model["upstream"] == "twin":
        return  # the built-in twin needs no key and reaches nothing
    host, _, port = model["upstream"][len("https://"):].partition(":")
    problem = _rules.hostname_problem(host) or (_rules.port_problem(port) if port else None)
    if problem:
        raise ManifestError("/doors/model/upstream", f"upstream {problem}", "write https://host[:port]")
    if "secret" not in model:
        raise ManifestError("/doors/model/secret", "an https upstream needs the provider key",
                            "name the doors.keys.secrets entry holding it, or use \"upstream\": \"twin\"")
    secrets = doc.get("doors", {}).get("keys", {}).get("secrets")
    if secrets is None or model["secret"] not in secrets:
        raise ManifestError("/doors/model/secret", f"no secret {model['secret']!r} in doors.keys.secrets",
                            "add it under doors.keys.secrets (the model door fetches its key from keys)")
    secret = secrets[model["secret"]]
    if "model" not in secret["roles"]:
        raise ManifestError("/doors/model/secret", f"secret {model['secret']!r} is not given to role 'model'",
                            f"add \"model\" to doors.keys.secrets.{model['secret']}.roles")
    if host not in secret["hosts"]:
        raise ManifestError("/doors/model/secret", f"secret {model['secret']!r} is not bound to {host!r}",
                            f"add {host!r} to doors.keys.secrets.{model['secret']}.hosts")


def _check_twin_script(model: dict[str, Any]) -> None:
    from doors.model.twin import TwinScript, TwinScriptError  # the twin's own check: one reader of its format

    ptr = "/doors/model/twin_script"
    if model["upstream"] != "twin":
        raise ManifestError(ptr, "a twin script with an upstream that is not the twin",
                            "set doors.model.upstream to \"twin\" or drop twin_script")
    try:
        TwinScript.parse(model["twin_script"])
    except TwinScriptError as exc:
        where, _, why = str(exc).partition(": ")
        raise ManifestError(ptr + where, why or str(exc), "see doors/model/twin/README.md (The script)") from exc


def _check_edges(doc: dict[str, Any]) -> None:
    started = started_roles(doc)
    seen: set[tuple[str, str]] = set()
    for index, (client, server) in enumerate(doc["edges"]):
        ptr = f"/edges/{index}"
        for position, role in enumerate((client, server)):
            _require_started(started, role, f"{ptr}/{position}")
        if client == server:
            raise ManifestError(ptr, f"self-edge [{client!r}, {server!r}]", "remove it: no role calls itself")
        if server == "app":
            raise ManifestError(f"{ptr}/1", "the app serves nothing: no edge can lead into it",
                                "remove this edge")
        if (client, server) in seen:
            raise ManifestError(ptr, f"edge [{client!r}, {server!r}] is listed twice", "list each edge once")
        seen.add((client, server))
