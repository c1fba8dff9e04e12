"""app.home_seed read as root (nothing but its owner's files, no link followed) and written as another user."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from launcher.kernel.confine import ConfinementError
from launcher.lifecycle.home_seed import read_home_seed, write_home_seed
from launcher.lifecycle.preflight import PreflightError
from launcher.policy.home_seed import HomeSeed, SeedBudget

pytestmark = pytest.mark.root
BUDGET = SeedBudget(1 << 20, 100)
NOBODY = 65534


def _seed(tmp_path: Path) -> Path:
    seed = tmp_path / "seed"
    (seed / ".config" / "agent").mkdir(parents=True)
    (seed / ".config" / "agent" / "settings.json").write_text('{"theme": "dark"}')
    (seed / ".agentrc").write_text("model = claude\n")
    return seed


def _refusal(seed: Path, budget: SeedBudget = BUDGET) -> PreflightError:
    with pytest.raises(PreflightError) as refused:
        read_home_seed(str(seed), budget)
    assert refused.value.row == "/app/home_seed" and refused.value.hint
    return refused.value


def test_the_seed_is_read_in_creation_order(tmp_path: Path) -> None:
    seed = read_home_seed(str(_seed(tmp_path)), BUDGET)
    assert [entry.path for entry in seed.entries] == [".agentrc", ".config", ".config/agent",
                                                     ".config/agent/settings.json"]
    assert seed.total_bytes == len("model = claude\n") + len('{"theme": "dark"}')


def test_a_symlink_out_of_the_seed_is_refused_not_followed(tmp_path: Path) -> None:
    seed = _seed(tmp_path)
    (seed / ".config" / "shadow").symlink_to("/etc/shadow")
    assert "shadow is a symlink" in _refusal(seed).message


def test_a_seed_reached_through_a_symlink_is_refused(tmp_path: Path) -> None:
    seed = _seed(tmp_path)
    (tmp_path / "link").symlink_to(seed)
    assert "without following a symlink" in _refusal(tmp_path / "link").message


def test_a_hard_link_to_roots_file_is_refused(tmp_path: Path) -> None:
    seed = _seed(tmp_path)
    os.chown(seed, NOBODY, NOBODY)
    for path in seed.rglob("*"):
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    secret = tmp_path / "root-only"
    secret.write_text("root's secret")
    secret.chmod(0o600)
    os.link(secret, seed / "stolen")
    assert "stolen is owned by uid 0" in _refusal(seed).message


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    seed = _seed(tmp_path)
    os.mkfifo(seed / "pipe")  # opening it would block the launcher: it is never opened
    assert "neither a regular file nor a directory" in _refusal(seed).message


def test_a_seed_past_its_budget_is_refused(tmp_path: Path) -> None:
    seed = _seed(tmp_path)
    (seed / "big").write_bytes(b"x" * 2048)
    assert "more than 1024 bytes" in _refusal(seed, SeedBudget(1024, 100)).message
    assert "more than 3 entries" in _refusal(seed, SeedBudget(1 << 20, 3)).message


def test_a_seed_deeper_than_its_bound_is_refused_not_walked(tmp_path: Path) -> None:
    seed = _seed(tmp_path)
    deep = seed.joinpath(*["d"] * 40)  # past the bound of 32, well inside the entry budget
    deep.mkdir(parents=True)
    assert "more than 32 directories deep" in _refusal(seed).message


def test_the_copy_belongs_to_the_user_who_writes_it(tmp_path: Path) -> None:
    seed = read_home_seed(str(_seed(tmp_path)), BUDGET)
    home = Path(tempfile.mkdtemp(prefix="sh-test-seed-"))  # tmp_path's parents admit root only
    os.chown(home, NOBODY, NOBODY)
    try:
        _write_as_nobody(seed, home)
        copied = home / ".config" / "agent" / "settings.json"
        assert copied.read_text() == '{"theme": "dark"}'
        assert {path.stat().st_uid for path in home.rglob("*")} == {NOBODY}
    finally:
        shutil.rmtree(home)


def _write_as_nobody(seed: HomeSeed, home: Path) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            write_home_seed(seed, str(home))
            os._exit(0)
        except BaseException:
            os._exit(1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_a_full_home_is_a_named_confinement_step(tmp_path: Path) -> None:
    seed = read_home_seed(str(_seed(tmp_path)), BUDGET)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".agentrc").write_text("already here")
    with pytest.raises(ConfinementError) as failed:
        write_home_seed(seed, str(home))
    assert failed.value.step == "home_seed" and "scratch" in failed.value.detail
