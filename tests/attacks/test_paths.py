"""Every path means what it says (issue 19, items 1, 2 and 12): as the manifest's author, real launcher runs
whose paths would bring the host back into reach are refused before anything exists (65 by their spelling,
78 by what they resolve to here), each naming its row; as the app, in a real session, what a path gives is
one read-only mount, and /etc is only the files the tools need. The app is paths_app.py: it tries, and
prints what it got; where a run is refused, it never starts.

Without these changes every refused manifest here ran, and its app got what the test names in `would`: the
host's /run sockets through /var/run, a 0666 socket through a symlink, the host's proc through a symlink to /
or a proc mounted in a project, its own $TMPDIR executable through /proc/self/root or an alias of /run, a
submount's files, a secret through an alias of a read path; in the session, rw binds and /etc whole.

Mounts the attacks need (an alias bind, a submount, a proc) are made in a mount namespace of the launcher's
own (`unshare --mount`), so the host never holds them.
"""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import LAUNCHER, basic_manifest, manifest_hash, write_manifest

pytestmark = pytest.mark.root
HERE = Path(__file__).parent
TAG = f"sh-test-paths-{secrets.token_hex(3)}"


@dataclass
class World:
    """What the attacks aim at: a scratch root under /var/lib, 0666 sockets on the host, files under /etc."""

    root: Path
    host_socket: Path  # under /tmp: what a symlink in a repository points at
    etc_token: Path  # stands for /etc/pip.conf or /etc/npmrc: 0644, holding a token
    etc_secret: Path  # a secret source under /etc/<tag>/ (where /etc/sharness/secrets lies), 0644 by mistake
    usr_secret: Path  # a secret source under /usr, which every component reads
    launches: int = 0
    sockets: list[socket.socket] = field(default_factory=list)


def _listener(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    path.chmod(0o666)
    sock.listen(8)
    return sock


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    root = Path(tempfile.mkdtemp(prefix=f"{TAG}-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    host_dir = Path(tempfile.mkdtemp(prefix=f"{TAG}-host-", dir="/tmp"))
    host_dir.chmod(0o755)
    etc_dir, usr_dir = Path(f"/etc/{TAG}"), Path(f"/usr/local/share/{TAG}")
    w = World(root, host_dir / "svc.sock", Path(f"/etc/{TAG}.conf"), etc_dir / "secret", usr_dir / "secret")
    try:
        for directory in (etc_dir, usr_dir):
            directory.mkdir(mode=0o755, parents=True)
        for path, text in ((w.etc_token, "token=sh-attack-etc-token\n"), (w.etc_secret, "sk-attack-etc\n"),
                           (w.usr_secret, "sk-attack-usr\n")):
            path.write_text(text)
            path.chmod(0o644)
        w.sockets = [_listener(w.host_socket)]
        yield w
    finally:
        for sock in w.sockets:
            sock.close()
        w.etc_token.unlink(missing_ok=True)
        for directory in (root, host_dir, etc_dir, usr_dir):
            shutil.rmtree(directory, ignore_errors=True)


@dataclass
class Launch:
    code: int
    stderr: str
    probes: dict[str, dict[str, Any]]

    def said(self) -> str:
        return f"exit {self.code}; the app got {self.probes}; stderr: {self.stderr[-1500:]}"


def _document(w: World, attempts: list[list[str]], read: Sequence[str] = (), exec_: Sequence[str] = (),
              secret: str | None = None) -> dict[str, Any]:
    w.launches += 1
    workspace = w.root / f"ws-{w.launches}"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, str(HERE / "paths_app.py"), json.dumps(attempts)])
    document["app"]["files"] = {"read": list(read), "exec": list(exec_)}  # type: ignore[index]
    if secret is not None:  # the keys door is given it; only net, on its edge, may ask for it
        document["doors"] = {**document["doors"], "net": {"allow": {"app": ["pypi.org:443"]}},  # type: ignore[dict-item]
                             "keys": {"secrets": {"s": {"from": secret, "roles": ["net"], "hosts": ["pypi.org"]}}}}
        document["edges"] = [["app", "fs"], ["app", "net"], ["net", "keys"]]
    return document


def _launch(w: World, document: dict[str, Any], in_own_mounts: str = "") -> Launch:
    """`sharness-launch run` as the person would (--best-effort: keys.secrets is not held in this version);
    `in_own_mounts`: shell commands run first in a mount namespace of the launcher's own."""
    directory = w.root / f"m-{w.launches}"
    directory.mkdir()
    manifest = write_manifest(directory, document)
    try:
        approved = manifest_hash(manifest)
    except subprocess.CalledProcessError:  # a manifest `hash` refuses: `run` must refuse it the same way
        approved = "sha256:" + "0" * 64
    command = [*LAUNCHER, "run", str(manifest), "--expect-hash", approved, "--best-effort",
               "--audit-dir", str(w.root / "audit")]
    if in_own_mounts:
        command = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                   f"{in_own_mounts} && exec {shlex.join(command)}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"probe"')]
    return Launch(done.returncode, done.stderr, {line["probe"]: line for line in lines})


def _refused(launch: Launch, code: int, pointer: str, *words: str) -> None:
    assert launch.code == code, launch.said()
    assert launch.probes == {}, launch.said()  # the app never ran
    assert pointer in launch.stderr, launch.said()
    assert code == 65 or "nothing was created" in launch.stderr, launch.said()  # 65: before the run begins
    for word in words:
        assert word in launch.stderr, launch.said()


# --- as the manifest's author: refused by what the path resolves to here (78) ----------------------------


def test_var_run_a_symlink_to_run_is_refused_not_bound(world: World) -> None:
    """would: /run bound whole through /var/run (the scan skipped the symlink): the host's 0666 socket
    connected, and with it D-Bus, resolved and journald where they run."""
    run_socket = Path(f"/run/{TAG}.sock")  # only while this test runs: the alias test below has /run whole
    try:
        with _listener(run_socket):
            via = f"/var/run/{run_socket.name}"
            launch = _launch(world, _document(world, [["run.socket", "connect", via]], read=["/var/run"]))
    finally:
        run_socket.unlink(missing_ok=True)
    _refused(launch, 78, "/app/files/read/0", "'/var/run' is a symlink (to '/run')", "write the path it resolves to")


def test_a_read_entry_that_is_a_symlink_to_a_0666_socket_is_refused(world: World) -> None:
    """would: connected (the scan lstat()ed the link and skipped it; the bind followed it)."""
    link = world.root / "db.sock"
    link.symlink_to(world.host_socket)
    launch = _launch(world, _document(world, [["link.socket", "connect", str(link)]], read=[str(link)]))
    _refused(launch, 78, "/app/files/read/0", "is a symlink", str(world.host_socket))


def test_a_symlink_to_the_root_in_a_repository_is_refused(world: World) -> None:
    """would: the host's whole tree bound with its submounts, and its proc without hidepid: other users'
    processes listed, the /tmp socket connected."""
    repo = world.root / "repo"
    repo.mkdir()
    (repo / "everything").symlink_to("/")
    through = repo / "everything"
    attempts = [["root.proc", "other_uids", f"{through}/proc"],
                ["root.socket", "connect", f"{through}{world.host_socket}"]]
    launch = _launch(world, _document(world, attempts, read=[str(repo / "everything")]))
    _refused(launch, 78, "/app/files/read/0", "is a symlink (to '/')")


def test_an_alias_of_run_in_files_exec_is_refused_by_identity(world: World) -> None:
    """A bind mount of /run elsewhere (no spelling rule knows it): its identity is an ancestor of the app's
    $TMPDIR. would: a script the app wrote in $TMPDIR ran through the alias (Landlock's exec rule on /run's
    inode covers it, and so does the write rule on tmp)."""
    alias = world.root / "run-alias"
    alias.mkdir()
    attempts = [["alias.exec_tmpdir", "exec_via", f"{alias}/sharness/{{sid}}/app/tmp/{{name}}"]]
    launch = _launch(world, _document(world, attempts, exec_=[str(alias)]), f"mount --bind /run {alias}")
    _refused(launch, 78, "/app/files/exec/0", "which it may write", "a writable path is never executable")


def test_a_directory_holding_a_mount_is_refused(world: World) -> None:
    """would: the submount's file read (the bind was recursive)."""
    project = world.root / "with-submount"
    (project / "inner").mkdir(parents=True)
    setup = f"mount -t tmpfs tmpfs {project}/inner && echo only-in-the-submount > {project}/inner/file"
    launch = _launch(world, _document(world, [["submount.read", "read", f"{project}/inner/file"]],
                                      read=[str(project)]), setup)
    _refused(launch, 78, "/app/files/read/0", "holds other mounts", f"{project}/inner")


def test_a_proc_mounted_in_a_project_is_refused(world: World) -> None:
    """would: a proc with no hidepid in the app's root: other users' processes listed."""
    mounted = world.root / "myproc"
    mounted.mkdir()
    launch = _launch(world, _document(world, [["proc.others", "other_uids", str(mounted)]], read=[str(mounted)]),
                     f"mount -t proc proc {mounted}")
    _refused(launch, 78, "/app/files/read/0", "on a proc file system")


@pytest.mark.parametrize("where", ["alias", "usr", "symlink"])
def test_a_secret_another_component_could_read_is_refused(world: World, where: str) -> None:
    """An alias (a bind of the app's read directory: no spelling rule sees it), /usr (every component reads
    it), a symlink. would: the app read the secret through its read path, or through /usr."""
    shared, alias, link = (world.root / f"{name}-{where}" for name in ("shared", "alias", "link"))
    for directory in (shared, alias):
        directory.mkdir()
    (shared / "secret").write_text("sk-attack-alias\n")
    link.symlink_to(world.etc_secret)
    where_to_keep = "keep secrets where no component's paths reach, e.g. /etc/sharness/secrets"
    source, setup, words = {
        "alias": (f"{alias}/secret", f"mount --bind {shared} {alias}", (f"'{shared}', which the app is given",
                                                                        where_to_keep)),
        "usr": (str(world.usr_secret), "", ("lies under '/usr', which the app is given", where_to_keep)),
        "symlink": (str(link), "", ("is a symlink", str(world.etc_secret))),
    }[where]
    attempts = [["secret.via_read", "read", f"{shared}/secret"], ["secret.via_usr", "read", str(world.usr_secret)]]
    launch = _launch(world, _document(world, attempts, read=[str(shared)], secret=source), setup)
    _refused(launch, 78, "/doors/keys/secrets/s/from", *words)


def test_check_says_the_same_refusals_with_their_rows(world: World) -> None:
    """`check` (no session) lists what `run` would refuse here, with the pointer and the resolved path."""
    document = _document(world, [], read=["/var/run"])
    manifest = write_manifest(world.root / f"ws-{world.launches}", document)
    done = subprocess.run([*LAUNCHER, "check", str(manifest)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "refused on this machine" in done.stdout and "/app/files/read/0: '/var/run' is a symlink" in done.stdout
    assert "write the path it resolves to, '/run'" in done.stdout
    as_json = subprocess.run([*LAUNCHER, "check", "--json", str(manifest)], capture_output=True, text=True,
                             timeout=60)
    assert [row["pointer"] for row in json.loads(as_json.stdout)["refused_here"]] == ["/app/files/read/0"]


# --- as the manifest's author: refused by spelling (65) ---------------------------------------------------


@pytest.mark.parametrize(("key", "path", "words"), [
    ("read", "/", "the whole file system"),
    ("exec", "/proc/self/root", "under /proc"),
    ("read", "/dev/shm", "every user may write"),
    ("read", "/sys/fs/cgroup", "under /sys"),
])
def test_the_kernels_places_are_refused_as_written(world: World, key: str, path: str, words: str) -> None:
    """would: /proc/self/root made the whole private root executable, $TMPDIR with it (the script ran);
    /dev/shm listed every user's shared memory; / granted read of everything in the root."""
    attempts = [["magic.exec_tmpdir", "exec_via", "/run/sharness/{sid}/app/tmp/{name}"], ["shm.list", "list", path]]
    document = _document(world, attempts, **{"read" if key == "read" else "exec_": [path]})
    _refused(_launch(world, document), 65, f"/app/files/{key}/0", words)


# --- as the app, in a real session ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session(world: World) -> Launch:
    """One session whose app reads a 0777 directory, holds a secret source under /etc/<tag>/ (given to keys
    only), and tries /etc and its tools."""
    open_dir = world.root / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    attempts = [
        ["ro.create", "create", str(open_dir)], ["ro.options", "mount_options", str(open_dir)],
        ["etc.token", "read", str(world.etc_token)], ["etc.secret", "read", str(world.etc_secret)],
        ["etc.shadow", "read", "/etc/shadow"], ["etc.passwd", "read", "/etc/passwd"],
        ["etc.listing", "list", "/etc"], ["etc.hosts", "read", "/etc/hosts"],
        ["tool.git", "git_commit", ""], ["tool.curl", "run", json.dumps(["curl", "--version"])],
        ["tool.python_tls", "python_tls", ""], ["tool.awk", "run", json.dumps(["awk", "BEGIN { print 6 * 7 }"])],
    ]
    # The keys door's own source must be root 0600 (the launcher refuses another mode, 78); the app aims at the
    # 0644 file beside it, which only the private root keeps from it.
    source = world.etc_secret.with_name("source")
    source.write_text("sk-attack-source\n")
    source.chmod(0o600)
    try:
        launch = _launch(world, _document(world, attempts, read=[str(open_dir)], secret=str(source)))
    finally:
        source.unlink(missing_ok=True)
    assert launch.code == 0, launch.said()
    return launch


def test_a_read_path_is_a_read_only_mount(session: Launch) -> None:
    """A 0777 directory in files.read: the app's create gets EROFS, the mount's (it was EACCES, Landlock's
    alone, on a rw bind). Landlock still stands behind it (tests/launcher/kernel/test_landlock.py)."""
    assert session.probes["ro.create"]["errno"] == "EROFS", session.said()
    assert session.probes["ro.options"]["result"] == "ro", session.said()


def test_etc_holds_only_the_named_files(session: Launch) -> None:
    """A token file and a secret source under /etc (both 0644): ENOENT, not in the root (both were read);
    /etc/shadow ENOENT (was EACCES, DAC's); /etc/passwd and /etc/hosts open; /etc itself is a directory of
    the root's tmpfs, which Landlock does not let it list."""
    for probe in ("etc.token", "etc.secret", "etc.shadow"):
        assert session.probes[probe]["errno"] == "ENOENT", session.said()
    assert session.probes["etc.passwd"]["result"].startswith("root:"), session.said()
    assert "localhost" in session.probes["etc.hosts"]["result"], session.said()
    assert session.probes["etc.listing"]["errno"] == "EACCES", session.said()  # the root's own tmpfs directory


def test_git_curl_python_tls_and_awk_still_work(session: Launch) -> None:
    """The controls of the /etc change, in the app's own root."""
    results = {probe: session.probes[probe].get("result", "") for probe in session.probes if probe.startswith("tool.")}
    assert results["tool.git"].count("exit 0") == 3 and " x" in results["tool.git"], results
    assert results["tool.curl"].startswith("exit 0: curl "), results
    ca_count = int(results["tool.python_tls"].removeprefix("exit 0: "))
    assert ca_count > 10, results  # the trust anchors of /etc/ssl/certs were found
    assert results["tool.awk"] == "exit 0: 42", results  # /usr/bin/awk → /etc/alternatives/awk → mawk
