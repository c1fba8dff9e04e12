"""The shell door's overlay mode in a real session, as root: builds write an overlay, apply goes through fs.

The app is tests/integration/shell_probe.py: it runs a build in the overlay (1 000 files, a deletion, a rename,
a `.git` write, a private key, a name with a newline), an executable it wrote, lists the workspace through the
fs door before and after, and applies twice. The assertions about what held are here.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    pids_with_uids,
    probes_and_summary,
    session_uids,
    wait_for_session_dir,
    write_manifest,
)
from tests.integration._shell import PROBE, PY, audit, case, final, output, py, run_session

pytestmark = pytest.mark.root

OWNER = 65534  # basic_manifest's workspace owner: the fs door runs as it
FILES = 1000
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAA\\n-----END OPENSSH PRIVATE KEY-----\\n"
BUILD = (f"mkdir build && i=0 && while [ $i -lt {FILES} ]; do echo $i > build/f$i; i=$((i+1)); done && "
         "rm src/gone.py && mv src/a.py src/b.py && echo more >> .git/config && "
         f"printf -- '{KEY}' > id_ed25519 && touch \"$(printf 'new\\nline')\"")
EXEC = ("import os, shutil\nshutil.copy('/bin/true', 't'); os.chmod('t', 0o755)\n"
        "try: os.execv('t', ['t'])\nexcept OSError as e: print(e.errno)")
Probes = tuple[dict[str, dict[str, Any]], dict[str, Any], Path]


def _workspace(base: Path) -> Path:
    ws = base / "workspace"
    (ws / "src").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / "src" / "a.py").write_text("a = 1\n")
    (ws / "src" / "gone.py").write_text("gone = 1\n")
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "hello.txt").write_text("hi\n")
    for path in (ws, *ws.rglob("*")):
        os.chown(path, OWNER, OWNER)
    return ws


@pytest.fixture(scope="module")
def session() -> Iterator[Probes]:
    cases = [
        case("build", script=BUILD),
        py("exec", EXEC),
        {"name": "before", "fs_list": ""},
        {"name": "apply", "apply": True},
        {"name": "apply.again", "apply": True},
        {"name": "after", "fs_list": ""},
        case("after.run", script="echo late > late.txt", apply=True),
        {"name": "app.edit", "fs_write": {"path": "src/b.py", "text": "the app's edit\n"}},
        case("shell.edit", script="echo more >> src/b.py", apply=True),
    ]
    base = Path(tempfile.mkdtemp(prefix="sh-test-", dir="/tmp"))
    base.chmod(0o755)
    try:
        ws = _workspace(base)
        document = basic_manifest(ws, [PY, PROBE, json.dumps(cases)])
        document["doors"]["fs"]["max_files"] = 5000  # type: ignore[index]
        document["doors"]["shell"] = {"workspace": "overlay"}  # type: ignore[index]
        document["edges"] = [["app", "fs"], ["app", "shell"], ["shell", "fs"]]
        manifest = write_manifest(base, document)
        done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--json",
                               "--best-effort", "--audit-dir", str(base / "audit")],
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
        probes, summary = probes_and_summary(done.stdout)
        assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}
        yield probes, summary, ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _by_path(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {outcome["path"]: outcome for outcome in answer["paths"]}


def test_a_build_writes_freely_in_the_overlay_and_the_workspace_is_unchanged_until_apply(session: Probes) -> None:
    probes, _, _ = session
    assert final(probes["build"])["exit_code"] == 0, output(probes["build"], "stderr")
    before = probes["before"]["tree"]
    assert sorted(before) == [".git", "hello.txt", "src"]  # the fs door's view: hidden rows aside, all of it
    assert before["src"] == {"a.py": "a = 1\n", "gone.py": "gone = 1\n"} and before[".git"] == {"config": "[core]\n"}


def test_a_file_written_in_the_overlay_cannot_be_executed(session: Probes) -> None:
    assert output(session[0]["exec"], "stdout") == f"{errno.EACCES}\n".encode()  # noexec and Landlock: no exec right


def test_apply_lands_the_build_through_the_fs_door_and_refuses_what_its_rows_refuse(session: Probes) -> None:
    answer = session[0]["apply"]
    outcomes = _by_path(answer)
    refused = {path: (o["who"], o["row"]) for path, o in outcomes.items() if o["status"] == "refused"}
    assert refused == {".git/config": ("fs", "read_only"), "id_ed25519": ("fs", "refuse_secrets"),
                       "new\nline": ("fs", "path"), "t": ("fs", "exec")}
    assert outcomes["src/gone.py"]["op"] == "delete" and outcomes["src/gone.py"]["status"] == "applied"
    # The rename, as the layer shows it: a whiteout at the old name, a full copy at the new one.
    assert (outcomes["src/a.py"]["op"], outcomes["src/b.py"]["op"]) == ("delete", "write")
    assert all(outcomes[f"build/f{i}"]["status"] == "applied" for i in range(FILES))
    assert answer["applied"] == FILES + 4 and answer["refused"] == 4  # build/, its files, b.py, two deletions


def test_what_was_applied_is_in_the_workspace_owned_by_its_owner_and_the_rest_is_not(session: Probes) -> None:
    probes, _, ws = session
    after = probes["after"]["tree"]
    assert sorted(after) == [".git", "build", "hello.txt", "src"]
    assert after["src"] == {"b.py": "a = 1\n"} and after[".git"] == {"config": "[core]\n"}
    assert after["build"] == {f"f{i}": f"{i}\n" for i in range(FILES)}
    assert {os.stat(path).st_uid for path in (ws / "build", ws / "build" / "f7", ws / "src" / "b.py")} == {OWNER}
    assert not (ws / "id_ed25519").exists() and not (ws / "t").exists()


def test_a_second_apply_sends_only_what_was_refused_which_stays_in_the_overlay(session: Probes) -> None:
    again = session[0]["apply.again"]
    assert sorted(_by_path(again)) == [".git/config", "id_ed25519", "new\nline", "t"]
    assert (again["applied"], again["unchanged"], again["refused"]) == (0, 0, 4)


def test_apply_true_on_run_applies_after_the_command_before_its_final_record(session: Probes) -> None:
    probes, _, ws = session
    frames = probes["after.run"]["frames"]
    applied = next(frame["apply"] for frame in frames if "apply" in frame)
    assert "final" in frames[-1] and _by_path(applied)["late.txt"]["status"] == "applied"
    assert (ws / "late.txt").read_text() == "late\n"


def test_a_file_the_app_changed_after_an_apply_is_not_overwritten_by_the_next(session: Probes) -> None:
    probes, _, ws = session
    applied = next(frame["apply"] for frame in probes["shell.edit"]["frames"] if "apply" in frame)
    assert (_by_path(applied)["src/b.py"]["row"], _by_path(applied)["src/b.py"]["who"]) == ("version", "fs")
    assert (ws / "src" / "b.py").read_text() == "the app's edit\n"


def test_one_audit_event_per_apply_and_the_fs_door_audits_each_write(session: Probes) -> None:
    events = audit(session[1])
    applies = [e for e in events if e.get("kind") == "shell.apply"]
    assert [e["changes"] for e in applies] == [FILES + 10, 4, 5, 5]
    writes = [e for e in events if e.get("door") == "fs" and e.get("op") == "write" and e.get("client_role") == "shell"]
    assert len([e for e in writes if e.get("decision") == "allow"]) >= FILES


SH_APPLY = """
sharness-launch sh --apply -- sh -c 'echo a > a.txt; ln -s a.txt link' 2> "$TMPDIR/err"; echo "rc:$?"
tr '\\n' '|' < "$TMPDIR/err"; echo
sharness-launch sh --apply -- sh -c 'echo b > b.txt; exit 3' 2> "$TMPDIR/err"; echo "rc:$?"
tr '\\n' '|' < "$TMPDIR/err"; echo
"""


def test_sharness_launch_sh_apply_prints_what_was_refused_and_exits_with_the_commands_status(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    document = basic_manifest(workspace, ["/bin/sh", "-c", SH_APPLY])
    document["doors"]["shell"] = {"workspace": "overlay"}  # type: ignore[index]
    document["edges"] = [["app", "shell"], ["shell", "fs"]]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                           "--best-effort", "--audit-dir", str(tmp_path / "audit")],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    rc_ok, err_ok, rc_failed, err_failed = done.stdout.splitlines()[-4:]
    assert rc_ok == "rc:0" and "applied 1, unchanged 0, refused 1" in err_ok
    assert "refused 'link' by shell (row `shell.apply`): a symlink" in err_ok
    assert rc_failed == "rc:3" and "not applied: the command's exit code is 3" in err_failed
    assert (workspace / "a.txt").read_text() == "a\n" and not (workspace / "b.txt").exists()


def test_apply_without_an_overlay_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    probes, _ = run_session(tmp_path, [case("run.apply", argv=["touch", "x"], apply=True),
                                       {"name": "apply", "apply": True}])
    for name in ("run.apply", "apply"):
        refused = probes[name]["refused"]
        assert (refused["status"], refused["error"], refused["who"]) == (409, "shell.workspace", "shell"), refused
    assert probes["run.apply"]["frames"] == []


HOLDER = """
import time
from doors.shell.client import ShellClient
with ShellClient.from_env() as shell:
    shell.start(["sh", "-c", "head -c 1000000 /dev/zero > big && exec sleep 600"])
    while not any(c["running"] for c in shell.list()["commands"]):
        time.sleep(0.05)
    print("started", flush=True)
    time.sleep(600)
"""


def test_a_launcher_killed_while_a_command_holds_the_overlay_leaves_nothing_after_gc(tmp_path: Path) -> None:
    """The overlay and its tmpfs live only in the shell's mount namespace; the host holds one journaled mount
    point. SIGKILL the launcher while a command sits in the overlay: gc leaves no process, mount or directory."""
    tmp_path.chmod(0o755)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    document = basic_manifest(workspace, [PY, "-c", HOLDER])
    document["doors"]["shell"] = {"workspace": "overlay"}  # type: ignore[index]
    document["edges"] = [["app", "shell"], ["shell", "fs"]]
    manifest = write_manifest(tmp_path, document)
    launcher = subprocess.Popen([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                                 "--audit-dir", str(tmp_path / "audit")],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert launcher.stdout is not None
        assert launcher.stdout.readline() == b"started\n"
        sid = wait_for_session_dir(launcher.pid)
        uids = session_uids(sid)
        launcher.kill()
        launcher.wait()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    gc = subprocess.run([*LAUNCHER, "gc", "--json"], capture_output=True, text=True, timeout=60)
    assert gc.returncode == 0, gc.stdout + gc.stderr
    # A door the launcher forked ends by its parent-death signal and waits for the host's init to reap it.
    assert leftovers(sid) == {} and [pid for pid in pids_with_uids(uids) if _state(pid) not in ("Z", "gone")] == []
    assert os.listdir(workspace) == [] and sid not in Path("/proc/self/mountinfo").read_text()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
