"""The mount's inode table (pure): paths by walking up, renames carrying subtrees, pending names, numbers."""

from __future__ import annotations

from doors.fs._fuse_nodes import ROOT_INODE, SYNTHETIC_BASE, NodeTable
from doors.fs._paths import WorkspacePath


def test_a_path_is_read_by_walking_up_and_a_rename_carries_the_subtree() -> None:
    table = NodeTable()
    src = table.place(ROOT_INODE, "src", disk_ino=100)
    deep = table.place(src.ino, "a.py", disk_ino=101)
    assert table.path(deep.ino) == WorkspacePath(("src", "a.py"))
    table.move(ROOT_INODE, "src", ROOT_INODE, "lib")
    assert table.path(deep.ino) == WorkspacePath(("lib", "a.py"))
    assert table.child(ROOT_INODE, "src") is None and table.child(ROOT_INODE, "lib") is src


def test_a_replaced_or_unlinked_node_has_no_path_but_lives_while_open() -> None:
    table = NodeTable()
    kept = table.place(ROOT_INODE, "a", disk_ino=10)
    table.remember(kept)
    table.opened(kept)
    mover = table.place(ROOT_INODE, "b", disk_ino=11)
    table.move(ROOT_INODE, "b", ROOT_INODE, "a")  # rename over `a`
    assert table.path(kept.ino) is None and table.path(mover.ino) == WorkspacePath(("a",))
    table.forget(kept.ino, 1)
    assert table.get(kept.ino) is kept  # still open
    table.closed(kept)
    assert table.get(kept.ino) is None


def test_disk_numbers_are_kept_where_free_and_synthetic_otherwise() -> None:
    table = NodeTable()
    first = table.place(ROOT_INODE, "one", disk_ino=500)
    link = table.place(ROOT_INODE, "two", disk_ino=500)  # a hard link's second name: its own inode
    root_like = table.place(ROOT_INODE, "three", disk_ino=ROOT_INODE)
    assert first.ino == 500 and link.ino >= SYNTHETIC_BASE and root_like.ino >= SYNTHETIC_BASE
    assert len({first.ino, link.ino, root_like.ino}) == 3


def test_pending_names_are_listed_until_committed_or_detached() -> None:
    table = NodeTable()
    made = table.place(ROOT_INODE, "new.txt", pending=True)
    other = table.place(ROOT_INODE, "gone.txt", pending=True)
    assert table.pending_in(ROOT_INODE) == ["gone.txt", "new.txt"]
    table.move(ROOT_INODE, "new.txt", ROOT_INODE, "renamed.txt")
    assert table.pending_in(ROOT_INODE) == ["gone.txt", "renamed.txt"]
    table.committed(made)
    table.detach(other)
    assert table.pending_in(ROOT_INODE) == [] and not made.pending
    assert table.path(other.ino) is None


def test_forget_drops_a_node_nobody_names_or_holds_and_never_the_root() -> None:
    table = NodeTable()
    node = table.place(ROOT_INODE, "x", disk_ino=7)
    table.remember(node, 2)
    table.forget(node.ino, 1)
    assert table.get(node.ino) is node
    table.forget(node.ino, 1)
    assert table.get(node.ino) is None and table.child(ROOT_INODE, "x") is None
    table.forget(ROOT_INODE, 5)
    assert table.path(ROOT_INODE) == WorkspacePath(())
