"""The overlay's change list (doors/shell/_changes.py): what each upper-layer entry asks, in which order. Pure."""

from __future__ import annotations

import pytest

from doors.shell._changes import MAX_DEPTH, MAX_PATH_BYTES, UpperEntry, applied_stamp, change_list, change_of


def entry(path: str, kind: str = "file", **fields: object) -> UpperEntry:
    return UpperEntry(tuple(path.split("/")), kind, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("upper", "op", "executable"), [
    (entry("a.txt"), "write", False),
    (entry("run.sh", mode=0o755), "write", True),
    (entry("group-x", mode=0o640 | 0o010), "write", True),
    (entry("gone", "whiteout"), "delete", False),
    (entry("made", "dir"), "mkdir", False),
    (entry("remade", "dir", opaque=True, keep=("n",)), "replace_dir", False),
    (entry("link", "symlink"), "refuse", False),
    (entry("fifo", "other"), "refuse", False),
])
def test_each_kind_of_upper_entry_asks_one_thing_of_the_workspace(upper: UpperEntry, op: str, executable: bool) -> None:
    change = change_of(upper)
    assert (change.op, change.path, change.executable) == (op, upper.path, executable)


def test_a_symlink_or_a_special_file_is_refused_by_the_shell_saying_why() -> None:
    assert "symlink" in change_of(entry("l", "symlink")).reason
    assert "special file" in change_of(entry("p", "other")).reason


@pytest.mark.parametrize("names", [
    ("..",), ("a", ".."), (".",), ("",), ("a/b",), ("nul\0",), ("a", "b\0c"), (),
])
def test_a_name_no_directory_can_hold_is_refused_never_sent(names: tuple[str, ...]) -> None:
    assert change_of(UpperEntry(names, "file")).op == "refuse"


@pytest.mark.parametrize("name", ["new\nline", "tab\there", "\u202eevil", "caf\udce9", " lead", "-dash"])
def test_a_hostile_but_possible_name_goes_to_the_fs_door_as_it_is(name: str) -> None:
    # The fs door's path rules judge it (control, bidi, non-UTF-8 are its row `path`): the core does not mangle it.
    change = change_of(entry(f"dir/{name}"))
    assert (change.op, change.path) == ("write", f"dir/{name}")


def test_a_path_over_the_fs_doors_limit_is_refused_and_one_at_it_is_sent() -> None:
    at_limit = "/".join(["d" * 254] * 17)[:MAX_PATH_BYTES]
    assert len(at_limit.encode()) == MAX_PATH_BYTES
    assert change_of(entry(at_limit)).op == "write"
    over = change_of(entry(at_limit + "x"))
    assert over.op == "refuse" and str(MAX_PATH_BYTES) in over.reason
    # Counted in bytes: 2049 two-byte characters are 4098 bytes.
    assert change_of(entry("é" * 2049)).op == "refuse"


def test_parents_come_first_and_in_each_directory_deletions_then_files_then_directories() -> None:
    upper = (
        entry("b", "dir"), entry("b/z"), entry("b/gone", "whiteout"), entry("b/c", "dir"), entry("b/c/x"),
        entry("a.txt"), entry("zz", "whiteout"), entry("a", "dir"), entry("a/y"),
    )
    assert [c.path for c in change_list(upper)] == [
        "zz", "a.txt", "a", "a/y", "b", "b/gone", "b/z", "b/c", "b/c/x",
    ]


def test_a_rename_of_a_lower_file_is_a_deletion_of_the_old_name_and_a_write_of_the_new() -> None:
    # What overlayfs leaves for `mv old new` of a lower file: a whiteout at old, a full copy at new.
    changes = change_list((entry("new"), entry("old", "whiteout")))
    assert [(c.op, c.path) for c in changes] == [("delete", "old"), ("write", "new")]


def test_a_renamed_lower_directory_is_a_new_tree_and_a_deletion() -> None:
    # redirect_dir=nofollow: rename(2) of a lower directory is EXDEV; mv copies, then deletes the old tree.
    changes = change_list((entry("src2", "dir"), entry("src2/m.py"), entry("src", "whiteout")))
    assert [(c.op, c.path) for c in changes] == [("delete", "src"), ("mkdir", "src2"), ("write", "src2/m.py")]


def test_an_opaque_directory_keeps_only_what_the_upper_layer_holds_then_fills_it() -> None:
    changes = change_list((entry("out", "dir", opaque=True, keep=("a", "sub")), entry("out/a"),
                           entry("out/sub", "dir"), entry("out/sub/b")))
    assert [(c.op, c.path) for c in changes] == [("replace_dir", "out"), ("write", "out/a"), ("mkdir", "out/sub"),
                                                 ("write", "out/sub/b")]
    assert changes[0].entry.keep == ("a", "sub")


def test_what_was_applied_leaves_the_list_until_it_changes_again() -> None:
    old = entry("f", stamp=(7, 3, 100, 100, 0o644))
    ledger = {"f": applied_stamp(old), "d": applied_stamp(entry("d", "dir", stamp=(9,)))}
    assert change_list((old, entry("d", "dir", stamp=(9,)), entry("d/new", stamp=(10,)))) != ()
    assert [c.path for c in change_list((old, entry("d", "dir", stamp=(9,)), entry("d/new")), ledger)] == ["d/new"]
    edited = entry("f", stamp=(7, 4, 200, 200, 0o644))
    assert [c.path for c in change_list((edited,), ledger)] == ["f"]
    # The same path as another kind (deleted after it was applied) is a new change too.
    assert [c.op for c in change_list((entry("f", "whiteout", stamp=(7, 100)),), ledger)] == ["delete"]
    # A directory made opaque since is too.
    assert [c.op for c in change_list((entry("d", "dir", opaque=True, stamp=(9,)),), ledger)] == ["replace_dir"]


def test_a_path_deeper_than_the_fs_doors_limit_is_refused() -> None:
    assert change_of(entry("/".join(["d"] * MAX_DEPTH))).op == "write"
    deep = change_of(entry("/".join(["d"] * (MAX_DEPTH + 1)), "dir"))
    assert deep.op == "refuse" and f"{MAX_DEPTH} levels" in deep.reason
