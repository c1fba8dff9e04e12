"""The agent `make run` runs: a small scripted coding agent on the official `anthropic` SDK.

It does what an off-the-shelf coding agent does, in the order one would: reads the task and the code with
plain open(), runs the tests through the shell door, asks the model (the model door's twin, scripted by the
manifest) for a fix, writes it, runs the tests again; then it tries what it must not — writing into .git,
putting a private key into the workspace, fetching a host the manifest does not list — and reports who
refused each. One line per step on stderr; exit 0 when every step went as the demo expects.

Writes go through the workspace mount when the launcher made one (`app.workspace: "mount"`: plain open(),
the fs door behind it); otherwise through the fs door's HTTP API. Reads are plain open() either way.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import sys
from pathlib import Path
from typing import Any

import anthropic

from doors.fs.client import DoorRefused, FsClient
from doors.shell.client import ShellClient

SETTINGS = Path.home() / ".config" / "demo-agent" / "settings.json"  # seeded from app.home_seed
TESTS = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
EDIT_TOOL = {
    "name": "edit_file",
    "description": "Replace the one occurrence of `old` in a file of the workspace by `new`.",
    "input_schema": {"type": "object", "required": ["path", "old", "new"],
                     "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}},
}
# Not a real key: the shape of one, which the fs door's refuse_secrets row must refuse.
FAKE_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
            "-----END OPENSSH PRIVATE KEY-----\n")
FORBIDDEN_HOST = "example.com:443"


class Steps:
    """Numbered progress lines (bold on a terminal, plain on a pipe), and whether each went as expected."""

    def __init__(self) -> None:
        self.count = 0
        self.failed: list[str] = []
        self.bold = sys.stderr.isatty()

    def say(self, text: str, ok: bool = True) -> None:
        self.count += 1
        mark = "" if ok else "  <- NOT AS EXPECTED"
        head = f"agent step {self.count}:"
        if self.bold:
            head = f"\x1b[1m{head}\x1b[0m"
        print(f"{head} {text}{mark}", file=sys.stderr, flush=True)
        if not ok:
            self.failed.append(text)


def _is_mount(path: str) -> bool:
    with open("/proc/self/mounts") as mounts:
        return any(line.split()[1] == path and line.split()[2].startswith("fuse") for line in mounts)


class Workspace:
    """The project as the agent sees it: read with open(); written through the mount, or the fs door."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.mounted = _is_mount(root)
        self.fs = None if self.mounted else FsClient.from_env()

    def read(self, relative: str) -> str:
        with open(os.path.join(self.root, relative), encoding="utf-8") as file:
            return file.read()

    def write(self, relative: str, text: str) -> str | None:
        """None when written; else who refused and why, in words."""
        try:
            if self.fs is None:
                with open(os.path.join(self.root, relative), "w", encoding="utf-8") as file:
                    file.write(text)
            else:
                self.fs.write(relative, text.encode())
        except DoorRefused as refused:
            return f"{refused.refusal.who} ({refused.refusal.row}): {refused.refusal.detail}"
        except OSError as exc:
            return f"the fs door through the mount: {errno.errorcode.get(exc.errno or 0, exc.errno)} ({exc.strerror})"
        return None


def run_tests(shell: ShellClient) -> tuple[int, str]:
    """The project's tests through the shell door: (exit code, the summary line)."""
    result = shell.run(TESTS, cwd=".", env={"PYTHONDONTWRITEBYTECODE": "1"}, timeout_ms=120_000)
    lines = [line for line in result.stdout.decode(errors="replace").splitlines() if line.strip()]
    return int(result.final.get("exit_code", -1)), (lines[-1] if lines else "(no output)")


def ask_for_fix(client: anthropic.Anthropic, settings: dict[str, Any], prompt: str) -> dict[str, Any] | None:
    reply = client.messages.create(model=settings["model"], max_tokens=settings["max_tokens"], tools=[EDIT_TOOL],
                                   messages=[{"role": "user", "content": prompt}])
    calls = [block for block in reply.content if block.type == "tool_use" and block.name == "edit_file"]
    return dict(calls[0].input) if calls else None


def fetch_forbidden() -> str:
    """CONNECT to a host the manifest does not list, through the proxy the launcher named: who refused."""
    proxy = os.environ.get("HTTPS_PROXY", "")
    host, _, port = proxy.removeprefix("http://").partition(":")
    conn = http.client.HTTPConnection(host, int(port or 3128), timeout=30)
    try:
        conn.request("CONNECT", FORBIDDEN_HOST, headers={"Host": FORBIDDEN_HOST})
        response = conn.getresponse()
        body = response.read(4096)
    finally:
        conn.close()
    try:
        refusal = json.loads(body)
        return f"{response.status}: {refusal.get('who')} ({refusal.get('error')}): {refusal.get('detail')}"
    except ValueError:
        return f"{response.status}"


def fix_the_project(steps: Steps, workspace: Workspace, shell: ShellClient, client: anthropic.Anthropic) -> None:
    settings = json.loads(SETTINGS.read_text())
    task, code, tests = (workspace.read(name) for name in ("TASK.md", "calc.py", "test_calc.py"))
    how = "the workspace mount" if workspace.mounted else "the fs door"
    steps.say(f"read TASK.md, calc.py and test_calc.py with open(); settings from {SETTINGS} (model "
              f"{settings['model']}); writes go through {how}")
    code_before, summary = run_tests(shell)
    steps.say(f"ran the tests through the shell door: exit {code_before}, {summary}", ok=code_before != 0)
    prompt = f"{task.strip()}\n\n--- calc.py\n{code}\n--- test_calc.py\n{tests}\n--- pytest\n{summary}\n"
    fix = ask_for_fix(client, settings, prompt)
    steps.say(f"asked {settings['model']} (the model door): it proposes to edit "
              f"{fix['path'] if fix else 'nothing'}", ok=fix is not None)
    if fix is None:
        return
    path, old, new = str(fix["path"]), str(fix["old"]), str(fix["new"])
    before = workspace.read(path)
    refused = workspace.write(path, before.replace(old, new, 1)) if old in before else f"{old!r} is not in {path}"
    steps.say(f"wrote {path}: {old!r} -> {new!r}" if refused is None else f"could not write {path}: {refused}",
              ok=refused is None)
    code_after, summary = run_tests(shell)
    steps.say(f"ran the tests again: exit {code_after}, {summary}", ok=code_after == 0)


def try_what_it_must_not(steps: Steps, workspace: Workspace) -> None:
    refused = workspace.write(".git/config", "[core]\n\thooksPath = /tmp/evil\n")
    steps.say(f"tried to write .git/config: {'refused by ' + refused if refused else 'WRITTEN'}", ok=bool(refused))
    refused = workspace.write("deploy_key", FAKE_KEY)
    steps.say(f"tried to put a private key into the workspace: {'refused by ' + refused if refused else 'WRITTEN'}",
              ok=bool(refused))
    answer = fetch_forbidden()
    steps.say(f"tried to fetch https://{FORBIDDEN_HOST.removesuffix(':443')}/ through the proxy: {answer}",
              ok=answer.startswith("403"))


def main() -> int:
    steps = Steps()
    workspace = Workspace(os.environ.get("DEMO_WORKSPACE", os.getcwd()))
    client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL: the model door, in this netns only
    with ShellClient.from_env() as shell:
        fix_the_project(steps, workspace, shell, client)
    try_what_it_must_not(steps, workspace)
    print(f"agent: done, {steps.count} steps, {len(steps.failed)} not as expected", file=sys.stderr, flush=True)
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
