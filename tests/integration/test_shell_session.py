"""The shell door in real sessions, as root: commands run confined, stream, end as they did, and leave nothing.

The app is tests/integration/shell_probe.py, which runs each case through ShellClient and prints what came
back; every assertion about what held (the door or the kernel) is here. The kernel's refusals of what a
command attempts are in tests/attacks/test_shell_commands.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration._session import LAUNCHER, basic_manifest, manifest_hash, write_manifest
from tests.integration._shell import Session, audit, case, final, output, py, run_session, shell_session

pytestmark = pytest.mark.root

PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
# A tree that ignores SIGTERM (an ignored signal stays ignored across exec) and double-forks out of its
# process group and session; its grandchild prints its pid.
STUBBORN = "trap '' TERM; setsid sh -c 'echo $$; exec sleep 1000' & sleep 1000"
# A program that opens its controlling terminal by name, as ssh and password prompts do.
OPEN_DEV_TTY = """import errno
try:
    with open("/dev/tty", "w") as tty:
        tty.write("via-dev-tty\\n")
    print("opened")
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""
CURL = "curl -sS -o /dev/null --max-time 20"
FLOOD = "head -c 3000000 /dev/zero | tr '\\0' o; head -c 2000000 /dev/zero | tr '\\0' e >&2"


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    cases = [
        case("echo", argv=["sh", "-c", "echo out; echo err >&2; cat hello.txt; id -u; pwd; echo $HOME $TMPDIR"]),
        case("script", script="echo from-a-script; exit 3", cwd="sub"),
        case("env", argv=["env"], env={"CI": "1"}),
        case("stdin.none", argv=["cat"]),
        case("stdin.bytes", argv=["sh", "-c", "read line; echo got:$line"], stdin="hello\n"),
        case("cwd.absolute", argv=["pwd"], cwd="/etc"),
        case("cwd.climbs", argv=["pwd"], cwd="sub/../.."),
        case("cwd.symlink", argv=["pwd"], cwd="out"),
        case("cwd.missing", argv=["pwd"], cwd="nope"),
        case("env.denied", argv=["true"], env={"LD_PRELOAD": "/tmp/evil.so"}),
        case("env.secret", argv=["true"], env={"DEPLOY_KEY": PEM}),
        case("not.found", argv=["no-such-program-here"]),
        case("argv.surrogate", argv=["echo", "a\ud800b"]),  # sent as the JSON escape \ud800: not Unicode text
        case("timeout", script=STUBBORN, timeout_ms=300),
        case("after.timeout", argv=["ps", "-e", "-o", "pid=,args="]),
        case("flood", script=FLOOD, max_output_bytes=65536),
        case("exit.signal", script="kill -KILL $$"),
        case("tty", argv=["sh", "-c", "test -t 0 && test -t 1 && test -t 2 && tty && stty size"], tty=True),
        case("tty.eof", script="read line; echo read-returned-$?", tty=True),
        case("tty.stdin", script="read line; echo got:$line", tty=True, stdin="hi\n"),
        case("no.tty", argv=["sh", "-c", "test -t 0 || test -t 1 || echo no-tty"]),
        py("tty.dev.tty", OPEN_DEV_TTY, tty=True),
        case("egress", script=f"{CURL} https://example.invalid/; echo rc=$?"),
        case("egress.forged", script=f"https_proxy=http://cmd-c1@127.0.0.1:3128 {CURL} https://example.invalid/"),
        py("no.tty.dev.tty", OPEN_DEV_TTY),
        {**case("live", script="echo first; exec sleep 1001"), "until": "first"},
        case("live.gone", script="while ps -e -o args= | grep -q '^sleep 1001'; do sleep 0.1; done; echo gone",
             timeout_ms=120_000),
    ]
    with shell_session(cases, net=True) as ran:
        yield ran



def test_a_command_streams_both_outputs_apart_and_runs_as_the_shell_in_the_workspace(session: Session) -> None:
    probes, summary = session
    echo = probes["echo"]
    assert [f["seq"] for f in echo["frames"]] == list(range(1, len(echo["frames"]) + 1))
    assert "started" in echo["frames"][0] and final(echo)["exit_code"] == 0
    # The command's own memory (its cgroup's peak), not the ~47 MB door image it was forked from.
    assert 0 < final(echo)["max_rss_kb"] < 40_000
    out = output(echo, "stdout").decode().splitlines()
    assert out[:2] == ["out", "hi"] and output(echo, "stderr") == b"err\n"
    uid, cwd, places = int(out[2]), out[3], out[4]
    assert uid not in (0, 65534) and cwd.endswith("/workspace")
    assert places == f"/run/sharness/{summary['sid']}/shell/home /run/sharness/{summary['sid']}/shell/tmp/c1"
    assert probes["hello"]["role"] == "shell"


def test_a_script_runs_in_its_cwd_and_its_exit_code_comes_back(session: Session) -> None:
    probe = session[0]["script"]
    assert output(probe, "stdout") == b"from-a-script\n" and final(probe)["exit_code"] == 3


def test_the_environment_is_clean_plus_what_was_asked(session: Session) -> None:
    env = dict(line.split("=", 1) for line in output(session[0]["env"], "stdout").decode().splitlines())
    assert env["CI"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0" and env["DEBIAN_FRONTEND"] == "noninteractive"
    command = session[0]["env"]["frames"][0]["started"]["id"]  # its label is the proxy URL's user
    assert env["HTTPS_PROXY"] == env["http_proxy"] == f"http://cmd-{command}@127.0.0.1:3128"
    assert not any(name.startswith("SHARNESS_") for name in env), env


def test_stdin_is_eof_at_once_unless_bytes_are_given(session: Session) -> None:
    probes = session[0]
    assert final(probes["stdin.none"])["exit_code"] == 0 and output(probes["stdin.none"], "stdout") == b""
    assert output(probes["stdin.bytes"], "stdout") == b"got:hello\n"


@pytest.mark.parametrize(("case", "status", "row", "who"), [
    ("cwd.absolute", 403, "shell.cwd", "shell"),
    ("cwd.climbs", 403, "shell.cwd", "shell"),
    ("cwd.symlink", 403, "shell.cwd", "kernel"),  # openat2 RESOLVE_BENEATH: EXDEV
    ("cwd.missing", 404, "shell.cwd", "shell"),
    ("env.denied", 403, "shell.env", "shell"),
    ("env.secret", 403, "shell.env", "shell"),
    ("not.found", 404, "shell.request.argv", "shell"),
    ("argv.surrogate", 400, "http.json", "door"),  # was a 500 (door.internal) before the HTTP layer refused it
])
def test_refusals_name_the_row_and_who(session: Session, case: str, status: int, row: str, who: str) -> None:
    refused = session[0][case]["refused"]
    assert (refused["status"], refused["error"], refused["who"]) == (status, row, who), refused
    assert session[0][case]["frames"] == []


def test_no_refusal_or_audit_line_holds_a_secret_value(session: Session) -> None:
    probes, summary = session
    assert "b3BlbnNzaC1rZXktdjE" not in json.dumps(probes["env.secret"])
    assert "b3BlbnNzaC1rZXktdjE" not in Path(summary["audit_dir"], "audit.jsonl").read_text()


def test_a_timeout_kills_a_tree_that_ignores_sigterm_and_double_forks(session: Session) -> None:
    probes = session[0]
    record = final(probes["timeout"])
    assert record["timed_out"] is True and record["killed_by"] == "timeout" and record["exit_code"] is None
    grandchild = int(output(probes["timeout"], "stdout").split()[0])
    listed = output(probes["after.timeout"], "stdout").decode()
    assert "sleep 1000" not in listed and str(grandchild) not in listed.split(), listed


def test_output_floods_keep_head_and_tail_per_stream(session: Session) -> None:
    probe = session[0]["flood"]
    record = final(probe)
    assert record["exit_code"] == 0 and record["truncated"] == {"stdout": True, "stderr": True}
    assert record["bytes"] == {"stdout": 3_000_000, "stderr": 2_000_000}
    assert output(probe, "stdout") == b"o" * 65536 and output(probe, "stderr") == b"e" * 65536
    omitted = {f["stream"]: f["omitted"] for f in probe["frames"] if "omitted" in f}
    assert omitted == {"stdout": 3_000_000 - 65536, "stderr": 2_000_000 - 65536}


def test_a_signal_death_is_never_exit_0(session: Session) -> None:
    record = final(session[0]["exit.signal"])
    assert record["exit_code"] is None and record["signal"] == 9 and record["timed_out"] is False


def test_audit_has_one_run_and_one_exit_per_command_without_env_values(session: Session) -> None:
    events = [e for e in audit(session[1]) if e.get("door") == "shell"]
    runs = {e["id"]: e for e in events if e["kind"] == "shell.run" and "id" in e}
    exits = {e["id"]: e for e in events if e["kind"] == "shell.exit"}
    assert set(runs) == set(exits) and len(runs) >= 10
    assert runs["c1"]["argv"][0] == "sh" and runs["c1"]["cwd"] == "."
    script = next(e for e in runs.values() if e.get("cwd") == "sub")
    assert "argv" not in script and script["script_bytes"] == len("echo from-a-script; exit 3")
    env_run = next(e for e in runs.values() if e.get("argv") == ["env"])
    assert env_run["env_names"] == ["CI"] and "1" not in json.dumps(env_run["env_names"])
    refused = [e for e in events if e.get("decision") == "refuse"]
    assert {e["row"] for e in refused} >= {"shell.cwd", "shell.env"}



def test_frames_arrive_live_and_a_client_that_leaves_has_its_command_killed(session: Session) -> None:
    probes, summary = session
    live = probes["live"]["frames"]
    assert "final" not in live[-1] and output(probes["live"], "stdout") == b"first\n"  # read before it ended
    assert output(probes["live.gone"], "stdout") == b"gone\n"
    command = live[0]["started"]["id"]
    ended = [e for e in audit(summary) if e.get("kind") == "shell.exit" and e.get("id") == command]
    assert [e["killed_by"] for e in ended] == ["client_gone"]


@pytest.fixture(scope="module")
def no_workspace() -> Iterator[Session]:
    cases = [
        case("home.cwd", argv=["sh", "-c", "pwd; ls"]),
        case("home.cwd.out", argv=["pwd"], cwd="../.."),
        {**case("too.many", argv=["true"]), "hold": 2},  # last: the held commands stay live until noticed gone
    ]
    with shell_session(cases, shell={"workspace": "none", "max_live": 2}) as ran:
        yield ran


def test_one_command_past_max_live_is_refused(no_workspace: Session) -> None:
    refused = no_workspace[0]["too.many"]["refused"]
    assert (refused["status"], refused["error"], refused["who"]) == (429, "shell.max_live", "shell")
    assert "doors.shell.max_live" in refused["hint"]


def test_without_the_workspace_commands_run_in_home(no_workspace: Session) -> None:
    probes, summary = no_workspace
    home = f"/run/sharness/{summary['sid']}/shell/home"
    assert output(probes["home.cwd"], "stdout").decode().splitlines()[0] == home
    assert probes["home.cwd.out"]["refused"]["error"] == "shell.cwd"


SH_CLI = """
sh_() { name=$1; shift; sharness-launch sh "$@" > "$TMPDIR/$name.out" 2> "$TMPDIR/$name.err"; echo "rc:$name:$?";
        printf 'out:%s:%s\\n' "$name" "$(cat "$TMPDIR/$name.out" | tr '\\n' '|')";
        printf 'err:%s:%s\\n' "$name" "$(cat "$TMPDIR/$name.err" | tr '\\n' '|')"; }
sh_ streams -- sh -c 'echo out; echo err >&2; exit 7'
sh_ timeout --timeout 0.3 -- sleep 100
sh_ signal -- sh -c 'kill -TERM $$'
sh_ cwd --cwd sub -- pwd
sh_ missing -- no-such-program-here
sh_ outside --cwd /etc -- pwd
sh_ json --json -- echo hi
"""


def test_sharness_launch_sh_streams_and_exits_like_timeout(tmp_path: Path) -> None:
    """The CLI inside a session, run by the app: the command's status as timeout(1) reports it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "sub").mkdir()
    document = basic_manifest(workspace, ["/bin/sh", "-c", SH_CLI])
    document["doors"] = {"shell": {"workspace": "read"}}
    document["edges"] = [["app", "shell"]]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                           "--best-effort", "--audit-dir", str(tmp_path / "audit")],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = dict(line.split(":", 1)[1].rsplit(":", 1) for line in done.stdout.splitlines() if line.startswith("rc:"))
    lines = {tuple(line.split(":", 2)[:2]): line.split(":", 2)[2] for line in done.stdout.splitlines()
             if line.startswith(("out:", "err:"))}
    assert seen == {"streams": "7", "timeout": "124", "signal": "143", "cwd": "0", "missing": "127",
                    "outside": "1", "json": "0"}, done.stdout
    assert lines[("out", "streams")] == "out|" and lines[("err", "streams")] == "err|"
    assert lines[("out", "cwd")].endswith("/workspace/sub|")
    assert "shell.cwd" in lines[("err", "outside")] and "refused by shell" in lines[("err", "outside")]
    frames = [json.loads(part) for part in lines[("out", "json")].split("|") if part]
    assert frames[1] == {"seq": 2, "stream": "stdout", "text": "hi\n"} and frames[-1]["final"]["exit_code"] == 0


def test_started_commands_take_writes_polls_and_signals(tmp_path: Path) -> None:
    with shell_session([{"name": "jobs", "jobs": True, "body": {}}]) as (probes, _):
        seen = probes["jobs"]
    by_seq = {f["seq"]: f for f in seen["first"] + seen["rest"]}  # rest was polled from the start again
    text = "".join(f.get("text", "") for _, f in sorted(by_seq.items()) if f.get("stream") == "stdout")
    assert text == "got:one\ngot:two\nbye\n"
    assert seen["rest"][-1]["final"]["exit_code"] == 0
    late = seen["late"]
    assert (late["status"], late["error"]) == (409, "shell.command") and "ended" in late["detail"]
    listed = {c["id"]: c for c in seen["listed"]["commands"]}
    assert listed["c1"]["running"] is False and listed["c2"]["running"] is True
    assert listed["c2"]["argv"] == ["sleep", "1000"]
    assert seen["signalled"]["signalled"] == 1
    final = seen["sleeper"][-1]["final"]
    assert final["signal"] == 15 and final["exit_code"] is None and final["timed_out"] is False


def test_a_tty_command_gets_a_pty_of_its_own(session: Session) -> None:
    probes = session[0]
    assert final(probes["tty"])["exit_code"] == 0, output(probes["tty"], "stdout")
    lines = output(probes["tty"], "stdout").decode().split("\r\n")
    assert lines[0].startswith("/dev/pts/") and lines[1] == "24 80"  # its own devpts, not the host's ptys
    assert b"read-returned-1" in output(probes["tty.eof"], "stdout")  # no stdin: EOF, not a wait
    assert b"got:hi" in output(probes["tty.stdin"], "stdout")
    assert output(probes["no.tty"], "stdout") == b"no-tty\n" and output(probes["tty"], "stderr") == b""


def test_a_program_opening_dev_tty_reaches_its_pty_and_gets_enxio_without_one(session: Session) -> None:
    probes = session[0]
    assert output(probes["tty.dev.tty"], "stdout") == b"via-dev-tty\r\nopened\r\n"
    assert output(probes["no.tty.dev.tty"], "stdout") == b"ENXIO\n"  # no controlling terminal: not ENOENT


def test_the_net_doors_events_name_the_command_that_made_the_request(session: Session) -> None:
    probes, summary = session
    command = probes["egress"]["frames"][0]["started"]["id"]
    events = audit(summary)
    run = next(e for e in events if e.get("kind") == "shell.run" and e.get("id") == command)
    assert run["egress_command"] == command  # where its requests are: net events with this command
    mine = [e for e in events if e.get("kind") == "net.request" and e.get("command") == command]
    assert [(e["client_role"], e["method"], e["host"]) for e in mine] == [("shell", "CONNECT", "example.invalid")]
    # A label, not an identity: a command that sets its own proxy URL names another command (an Expectation).
    forger = probes["egress.forged"]["frames"][0]["started"]["id"]
    assert forger != "c1" and not any(e.get("command") == forger for e in events if e.get("door") == "net")
    assert any(e.get("command") == "c1" and e.get("host") == "example.invalid" for e in events
               if e.get("kind") == "net.request")


def test_shell_files_exec_lets_commands_run_a_tool_and_nothing_else_outside(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "hello-tool").write_text("#!/bin/sh\necho hello from $0\n")
    (tools / "hello-tool").chmod(0o755)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x").write_text("#!/bin/sh\necho x\n")
    (tmp_path / "elsewhere" / "x").chmod(0o755)
    cases = [case("tool", argv=[str(tools / "hello-tool")]),
             case("not.listed", argv=[str(tmp_path / "elsewhere" / "x")])]
    probes, _ = run_session(tmp_path, cases, {"workspace": "none", "files": {"exec": [str(tools)]}})
    assert output(probes["tool"], "stdout") == f"hello from {tools / 'hello-tool'}\n".encode()
    refused = probes["not.listed"]["refused"]  # not in the shell's private root at all
    assert (refused["status"], refused["error"]) == (404, "shell.request.argv")
