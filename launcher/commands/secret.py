"""`sharness-launch secret add|list|rm`: secrets sealed at rest to the machine key, for `from: "sealed:NAME"`.

`add` reads the value from the terminal without echo (or from stdin when it is not a terminal) and writes it
sealed with HPKE to the machine key (made on first use). `list` shows what each sealed file says of itself and
which manifest rows use it, never a value: the fingerprint is keyed by the machine key, so it cannot be used
to test a guess. The launcher never opens a seal: the keys door does (doors/keys/_at_rest.py).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import time
from typing import Any

from doors.keys import MAX_VALUE_BYTES, SUITE_NAME, seal_value, sealed_name, secret_value, valid_name
from launcher.commands import CommandError, fail, read_manifest
from launcher.commands._secret_store import (
    Entry,
    ensure_store,
    entries,
    machine_key,
    machine_key_id,
    remove_sealed,
    write_sealed,
)
from pki.vocabulary import EXIT_FAILED, EXIT_NO_INPUT, EXIT_NOT_ROOT, EXIT_OK, EXIT_USAGE, SEALED_ROOT


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `secret` subcommand and its `add`, `list` and `rm`."""
    parser = subparsers.add_parser("secret", help="keep secrets sealed at rest for `from: \"sealed:NAME\"`")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="read a secret (no echo; or stdin) and seal it to the machine key")
    add.add_argument("name", metavar="NAME", help="the secret's name, as `sealed:NAME` will name it")
    add.add_argument("--replace", action="store_true", help="replace a sealed secret of that name")
    listing = actions.add_parser("list", help="names, files, fingerprints and bindings; never a value")
    listing.add_argument("--manifest", action="append", default=[], metavar="FILE",
                         help="also show which rows of this manifest use each secret (repeatable)")
    remove = actions.add_parser("rm", help="remove a sealed secret")
    remove.add_argument("name", metavar="NAME")
    for action in (add, listing, remove):
        action.add_argument("--json", action="store_true", help="print the answer (or the refusal) as JSON")
        action.add_argument("--store-dir", default=SEALED_ROOT,
                            help="the sealed store (default: %(default)s, the only one sessions read)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the action; 77 when not root, 66 for an unknown name or an unusable store, 2 for a bad value."""
    try:
        if os.geteuid() != 0:
            raise CommandError(EXIT_NOT_ROOT, "secret needs root (the sealed store is root's, 0700)",
                               f"run `sudo sharness-launch secret {args.action} ...`", error="not_root")
        if args.action == "add":
            return _add(args)
        if args.action == "rm":
            return _remove(args)
        return _list(args)
    except CommandError as error:
        return fail(args, error)


def _name(args: argparse.Namespace) -> str:
    if not valid_name(args.name):
        raise CommandError(EXIT_USAGE, f"{args.name!r} is not a secret name",
                           "use 1-64 of a-z 0-9 _ . -, starting with a letter or digit (as the manifest's "
                           "secret names)", error="usage")
    return str(args.name)


def _read_value(name: str) -> bytes:
    """The value: from the terminal without echo (getpass opens /dev/tty), else all of stdin (bounded)."""
    if sys.stdin is not None and sys.stdin.isatty():
        raw = getpass.getpass(f"secret {name} (not echoed): ").encode()
    else:
        raw = sys.stdin.buffer.read(MAX_VALUE_BYTES + 3)
    try:
        return secret_value(raw)
    except ValueError as exc:
        raise CommandError(EXIT_USAGE, f"{exc}: nothing was written",
                           f"give 1 to {MAX_VALUE_BYTES} bytes (one trailing newline is dropped)",
                           error="bad_value") from None


def _add(args: argparse.Namespace) -> int:
    name = _name(args)
    value = _read_value(name)
    ensure_store(args.store_dir)
    key = machine_key(args.store_dir)
    created = int(time.time())
    try:
        path = write_sealed(args.store_dir, name, seal_value(key, name, value, created), replace=args.replace)
    except FileExistsError:
        raise CommandError(EXIT_FAILED, f"a secret named {name!r} is already sealed: nothing was written",
                           f"add --replace, or `sharness-launch secret rm {name}` first", error="exists") from None
    answer = {"ok": True, "name": name, "file": path, "created": created, "fingerprint": key.fingerprint(value),
              "key_id": key.key_id, "suite": SUITE_NAME, "from": f"sealed:{name}"}
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        print(f"secret {name} sealed in {path} (fingerprint {answer['fingerprint']}); "
              f"name it in a manifest as \"from\": \"sealed:{name}\"")
    return EXIT_OK


def _remove(args: argparse.Namespace) -> int:
    name = _name(args)
    try:
        path = remove_sealed(args.store_dir, name)
    except FileNotFoundError:
        raise CommandError(EXIT_NO_INPUT, f"no secret named {name!r} is sealed in {args.store_dir}",
                           "`sharness-launch secret list` shows the names", error="unknown_name") from None
    if args.json:
        print(json.dumps({"ok": True, "name": name, "file": path}, indent=2))
    else:
        print(f"secret {name} removed ({path})")
    return EXIT_OK


def _bindings(manifests: list[str]) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Per sealed name, the manifest rows that use it; and the rows whose source is a plain file."""
    sealed: dict[str, list[dict[str, Any]]] = {}
    plain: list[dict[str, Any]] = []
    for path in manifests:
        for name, row in read_manifest(path).door_rows("keys").get("secrets", {}).items():
            use = {"manifest": path, "row": f"doors.keys.secrets.{name}", "roles": list(row["roles"]),
                   "hosts": list(row["hosts"])}
            stored = sealed_name(row["from"])
            if stored is None:
                plain.append({**use, "file": row["from"]})
            else:
                sealed.setdefault(stored, []).append(use)
    return sealed, plain


def _shown(entry: Entry, bindings: list[dict[str, Any]]) -> dict[str, Any]:
    header = entry.header
    return {"name": entry.name, "source": f"sealed:{entry.name}", "file": entry.path,
            "created": header.created if header else None,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(header.created)) if header else None,
            "fingerprint": header.fingerprint if header else None, "key_id": header.key_id if header else None,
            "suite": header.suite if header else None, "ok": entry.problem is None, "problem": entry.problem,
            "bindings": bindings}


def _list(args: argparse.Namespace) -> int:
    sealed, plain = _bindings(args.manifest)
    found = entries(args.store_dir)
    shown = [_shown(entry, sealed.pop(entry.name, [])) for entry in found]
    missing = [{"name": name, "bindings": uses} for name, uses in sorted(sealed.items())]
    ok = all(entry.problem is None for entry in found) and not missing
    if args.json:
        print(json.dumps({"ok": ok, "store": args.store_dir, "machine_key": machine_key_id(args.store_dir),
                          "secrets": shown, "missing": missing, "plain_sources": plain}, indent=2))
    else:
        print(_render(shown, missing, plain))
    return EXIT_OK if ok else EXIT_FAILED


def _render(shown: list[dict[str, Any]], missing: list[dict[str, Any]], plain: list[dict[str, Any]]) -> str:
    lines = [f"{'NAME':<20} {'CREATED (UTC)':<21} {'FINGERPRINT':<17} FILE / USED BY"]
    for item in shown:
        state = "" if item["ok"] else f"  REFUSED: {item['problem']}"
        lines.append(f"{item['name']:<20} {item['created_utc'] or '-':<21} {item['fingerprint'] or '-':<17} "
                     f"{item['file']}{state}")
        lines += [f"{'':<60} {use['row']} in {use['manifest']} ({', '.join(use['roles'])} for "
                  f"{', '.join(use['hosts'])})" for use in item["bindings"]]
    lines += [f"{item['name']:<20} MISSING: named as sealed:{item['name']} by "
              f"{', '.join(use['manifest'] for use in item['bindings'])}" for item in missing]
    lines += [f"{use['row']:<40} plain file {use['file']} ({use['manifest']})" for use in plain]
    return "\n".join(lines) if len(lines) > 1 else "no sealed secrets"
