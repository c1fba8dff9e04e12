"""Exec from the app's own writable directory: held by Landlock, and the loader's mmap of it by the scratch
tmpfs's noexec. What an interpreter or a memfd runs is not an exec of a writable path, so neither holds it:
those are asserted as they are, and each shows that what ran is still inside the app's Landlock domain."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


def test_a_create_that_dac_allows_is_refused_by_the_read_only_bind_and_landlock_behind_it(attacks: AttackRun) -> None:
    """The app's private dir (parent of $TMPDIR) is its own, mode 0700, so DAC lets it create there: its bind is
    read-only (EROFS, the baseline the limits use); in the host's mounts, where the directory is writable, its
    Landlock rules refuse the same create (read there, write in tmp/ only): EACCES."""
    assert attacks.a.probes["landlock.private_dir_create"]["errno"] == "EROFS"
    assert attacks.outside_landlocked["landlock.private_dir_create"]["errno"] == "EACCES"


@pytest.mark.parametrize("probe", ["exec.tmpdir_script", "exec.tmpdir_binary"])
def test_a_file_the_app_wrote_in_its_tmpdir_is_never_executable(attacks: AttackRun, probe: str) -> None:
    """execve of a script or an ELF the app dropped in $TMPDIR (mode 0755, its own file): Landlock, EACCES."""
    assert attacks.a.probes[probe]["errno"] == "EACCES", attacks.a.probes[probe]


def test_an_executable_the_fs_door_wrote_is_not_executable_by_the_app(attacks: AttackRun) -> None:
    """bin/tool.sh, written 0755 through the door (doors.fs.exec lists bin): ENOENT, the workspace is not in
    the app's private root. Behind it, as the app's uid in its Landlock rules in the host's mounts: EACCES,
    Landlock (the workspace is in none of the app's paths; DAC, 0755, would let it run)."""
    assert (attacks.workspace_a / "bin" / "tool.sh").stat().st_mode & 0o111
    assert attacks.a.probes["workspace.exec_door_written"]["errno"] == "ENOENT"
    assert attacks.outside_landlocked["workspace.exec_door_written"]["errno"] == "EACCES"


@pytest.mark.parametrize("probe", ["limit.sh_reads_script", "limit.python_reads_script"])
def test_limit_an_interpreter_runs_a_script_from_tmpdir_but_it_stays_confined(attacks: AttackRun, probe: str) -> None:
    """NOT held by Landlock (a read is not an exec): the script runs, and its create in the private dir is
    refused (the read-only bind it inherited)."""
    seen = attacks.a.probes[probe]
    assert seen["errno"] is None and seen["stdout"] == "ran-from-tmpdir", seen
    assert seen["exit"] != 0 and "Read-only file system" in seen["stderr"], seen


def test_the_loader_cannot_map_a_binary_from_tmpdir(attacks: AttackRun) -> None:
    """ld.so (an allowed exec) runs, but its mmap(PROT_EXEC) of the dropped ELF is refused: TMPDIR is the app's
    scratch tmpfs, mounted noexec (Landlock does not govern mmap; on the host's /run this was a limit)."""
    seen = attacks.a.probes["exec.loader_maps_binary"]
    assert seen["errno"] is None and seen["exit"] == 127, seen
    assert "failed to map segment from shared object" in seen["stderr"], seen


def test_limit_a_memfd_executes_but_stays_confined(attacks: AttackRun) -> None:
    """NOT held by Landlock: a memfd has no path under any rule (internal mount). execve works; the program
    inherits the app's mount namespace, Landlock domain, seccomp filter, uid, netns and cgroup (its create is
    refused)."""
    seen = attacks.a.probes["limit.memfd_exec"]
    assert seen["errno"] is None and seen["exit"] == 1, seen
    assert "cannot touch" in seen["stderr"] and "Read-only file system" in seen["stderr"], seen
