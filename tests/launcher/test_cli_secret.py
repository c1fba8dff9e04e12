"""`sharness-launch secret add|list|rm`, as root, against a store of the test's own (--store-dir): the value is
sealed (no byte of it in clear in the store, the output or an error), every file is root 0600 in a 0700
directory, the machine key is made once and kept, and each refusal has its exit code and a hint. From a
terminal the value is read without echo."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import stat
import subprocess
import termios
from pathlib import Path
from typing import Any

import as_user
import pytest

from doors.keys import machine_key_of, open_value
from tests.integration._session import LAUNCHER
from tests.launcher.test_manifest_checks import SECRET

pytestmark = pytest.mark.root
VALUE = b"sk-store-" + os.urandom(12).hex().encode()


def _secret(store: Path, *args: str, stdin: bytes = b"", json_out: bool = False) -> subprocess.CompletedProcess[
        bytes]:
    argv = [*LAUNCHER, "secret", *args, "--store-dir", str(store), *(["--json"] if json_out else [])]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=60, check=False)


def _store_bytes(store: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(store.iterdir()))


def test_add_list_rm_round_trip_without_the_value_in_clear(tmp_path: Path) -> None:
    store = tmp_path / "store"
    added = _secret(store, "add", "anthropic", stdin=VALUE + b"\n", json_out=True)
    assert added.returncode == 0, added.stderr
    answer = json.loads(added.stdout)
    assert answer["from"] == "sealed:anthropic" and answer["file"] == str(store / "anthropic.sealed")
    assert stat.S_IMODE(store.stat().st_mode) == 0o700 and store.stat().st_uid == 0
    assert sorted(p.name for p in store.iterdir()) == ["anthropic.sealed", "machine.key"]  # no temporary left
    for path in store.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_uid == 0 and path.stat().st_nlink == 1
    assert VALUE not in _store_bytes(store)
    key = machine_key_of((store / "machine.key").read_bytes())
    assert open_value(key, (store / "anthropic.sealed").read_bytes(), "anthropic") == VALUE  # newline dropped
    assert answer["fingerprint"] == key.fingerprint(VALUE)
    listed = _secret(store, "list", json_out=True)
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)["secrets"]
    assert (entry["name"], entry["ok"], entry["fingerprint"]) == ("anthropic", True, key.fingerprint(VALUE))
    text = _secret(store, "list")
    assert b"anthropic" in text.stdout and key.fingerprint(VALUE).encode() in text.stdout
    removed = _secret(store, "rm", "anthropic")
    assert removed.returncode == 0, removed.stderr
    assert sorted(p.name for p in store.iterdir()) == ["machine.key"]  # the key is kept for the next one
    for run in (added, listed, text, removed):
        assert VALUE not in run.stdout + run.stderr


def test_the_machine_key_is_made_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _secret(store, "add", "one", stdin=b"v1").returncode == 0
    key = (store / "machine.key").read_bytes()
    assert _secret(store, "add", "two", stdin=b"v2").returncode == 0
    assert (store / "machine.key").read_bytes() == key


REFUSED: list[tuple[str, list[str], bytes, int, str]] = [
    ("an empty value", ["add", "anthropic"], b"", 2, "empty"),
    ("a lone newline", ["add", "anthropic"], b"\n", 2, "empty"),
    ("a value too large", ["add", "anthropic"], b"x" * (64 * 1024 + 1), 2, "larger than"),
    ("a name that is a path", ["add", "../etc"], b"v", 2, "not a secret name"),
    ("an unknown name to rm", ["rm", "nobody"], b"", 66, "no secret named 'nobody'"),
]


@pytest.mark.parametrize(("what", "args", "stdin", "code", "said"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refusals_have_their_code_and_write_nothing(tmp_path: Path, what: str, args: list[str], stdin: bytes,
                                                    code: int, said: str) -> None:
    store = tmp_path / "store"
    run = _secret(store, *args, stdin=stdin, json_out=True)
    assert run.returncode == code, run.stderr
    refusal = json.loads(run.stdout)
    assert said in refusal["message"] and refusal["hint"]
    assert not store.exists() or not list(store.glob("*.sealed"))


def test_an_existing_name_is_kept_unless_replaced(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _secret(store, "add", "anthropic", stdin=b"first").returncode == 0
    before = (store / "anthropic.sealed").read_bytes()
    again = _secret(store, "add", "anthropic", stdin=b"second")
    assert again.returncode == 1 and b"already sealed" in again.stderr and b"--replace" in again.stderr
    assert (store / "anthropic.sealed").read_bytes() == before
    assert _secret(store, "add", "anthropic", "--replace", stdin=b"second").returncode == 0
    key = machine_key_of((store / "machine.key").read_bytes())
    assert open_value(key, (store / "anthropic.sealed").read_bytes(), "anthropic") == b"second"


def test_not_root_is_77(tmp_path: Path) -> None:
    run = subprocess.run([*as_user.argv(65534), *LAUNCHER, "secret", "list", "--store-dir", str(tmp_path)],
                         capture_output=True, timeout=60, check=False)
    assert run.returncode == 77, run.stderr
    assert b"needs root" in run.stderr


def test_a_changed_file_is_listed_refused_and_list_answers_no(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _secret(store, "add", "anthropic", stdin=VALUE).returncode == 0
    assert _secret(store, "add", "openai", stdin=VALUE).returncode == 0
    path = store / "anthropic.sealed"
    path.write_bytes(path.read_bytes()[:-3])
    listed = _secret(store, "list", json_out=True)
    assert listed.returncode == 1
    shown = {entry["name"]: entry for entry in json.loads(listed.stdout)["secrets"]}
    assert shown["openai"]["ok"] and not shown["anthropic"]["ok"]
    assert "truncated" in shown["anthropic"]["problem"]
    assert b"REFUSED" in _secret(store, "list").stdout


def test_list_shows_which_manifest_rows_use_each_secret(tmp_path: Path) -> None:
    from manifests.samples import sample

    store = tmp_path / "store"
    assert _secret(store, "add", "anthropic", stdin=VALUE).returncode == 0
    document: dict[str, Any] = sample(doors__keys__secrets={
        "anthropic": {**SECRET, "from": "sealed:anthropic"}, "spare": {**SECRET, "from": "/etc/sharness/spare"},
        "gone": {**SECRET, "from": "sealed:gone"}})
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(document))
    listed = _secret(store, "list", "--manifest", str(manifest), json_out=True)
    answer = json.loads(listed.stdout)
    (entry,) = answer["secrets"]
    assert entry["bindings"] == [{"manifest": str(manifest), "row": "doors.keys.secrets.anthropic",
                                  "roles": SECRET["roles"], "hosts": SECRET["hosts"]}]
    assert [item["name"] for item in answer["missing"]] == ["gone"]  # named sealed, not in the store
    assert [use["file"] for use in answer["plain_sources"]] == ["/etc/sharness/spare"]
    assert listed.returncode == 1  # a manifest names a sealed secret the store lacks


def _read_until(fd: int, wanted: bytes, limit: int = 1 << 16) -> bytes:
    seen = b""
    while wanted not in seen and len(seen) < limit:
        ready, _, _ = select.select([fd], [], [], 30)
        assert ready, f"no {wanted!r} from the terminal; saw {seen!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    return seen


def _on_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty becomes the child's /dev/tty


def test_from_a_terminal_the_value_is_read_without_echo(tmp_path: Path) -> None:
    store = tmp_path / "store"
    master, slave = pty.openpty()
    process = subprocess.Popen([*LAUNCHER, "secret", "add", "anthropic", "--store-dir", str(store)],
                               stdin=slave, stdout=slave, stderr=slave, preexec_fn=_on_terminal, close_fds=True)
    os.close(slave)
    try:
        prompt = _read_until(master, b"(not echoed): ")
        os.write(master, VALUE + b"\n")
        rest = _read_until(master, b"name it in a manifest")
        assert process.wait(timeout=60) == 0
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    assert b"secret anthropic" in prompt
    assert VALUE not in prompt + rest  # the terminal did not echo it, nor did the command print it
    key = machine_key_of((store / "machine.key").read_bytes())
    assert open_value(key, (store / "anthropic.sealed").read_bytes(), "anthropic") == VALUE


@pytest.mark.parametrize(("what", "spoil", "said"), [
    ("open to others", lambda store: store.chmod(0o755), "mode 0755"),
    ("not root's", lambda store: os.chown(store, 65534, 65534), "owned by uid 65534"),
    ("a symlink", lambda store: (store.rename(store.with_name("real")), store.symlink_to(store.with_name("real"))),
     "is a symlink"),
])
def test_a_store_directory_not_to_trust_is_refused_and_nothing_written(tmp_path: Path, what: str, spoil: Any,
                                                                        said: str) -> None:
    store = tmp_path / "store"
    assert _secret(store, "add", "first", stdin=b"v").returncode == 0
    spoil(store)
    run = _secret(store, "add", "anthropic", stdin=VALUE, json_out=True)
    assert run.returncode == 66, run.stderr
    refusal = json.loads(run.stdout)
    assert said in refusal["message"] and "chmod 0700" in refusal["hint"]
    assert not (store / "anthropic.sealed").exists()


def test_a_machine_key_others_may_read_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _secret(store, "add", "first", stdin=b"v").returncode == 0
    (store / "machine.key").chmod(0o644)
    run = _secret(store, "add", "anthropic", stdin=VALUE)
    assert run.returncode == 66 and b"mode 0644" in run.stderr, run.stderr
    assert not (store / "anthropic.sealed").exists()
