"""The mount's inodes: one FUSE inode per path the kernel knows, kept as (parent, name), with its lookup count.
Pure: no I/O.

A FUSE inode names a path, not a file on disk: the door's rows are path rows, so two names of one file (a hard
link made before the session) are two inodes, each judged by its own path. A rename moves one node, and every
node beneath it follows, since a path is read by walking up. A name the app created but the door has not
committed yet is `pending`: lookups see it (the app just made it), the disk does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from doors.fs._paths import WorkspacePath

ROOT_INODE = 1  # FUSE_ROOT_ID
# Numbers for a node whose disk inode number is taken (a hard link's second name, a number reused while an
# unlinked node is still open): far above any number ext4, xfs or btrfs hand out.
SYNTHETIC_BASE = 1 << 62


@dataclass
class Node:
    """One inode: where it is (None once unlinked or replaced) and how many lookups the kernel holds."""

    ino: int
    parent: int | None
    name: str
    lookups: int = 0
    pending: bool = False  # created through the mount, not yet committed to the disk
    handles: int = 0  # open file handles on it (an unlinked node lives while one is open)


@dataclass
class NodeTable:
    """Every inode the kernel may name, by number and by (parent, name)."""

    _nodes: dict[int, Node] = field(default_factory=lambda: {ROOT_INODE: Node(ROOT_INODE, None, "", 1)})
    _names: dict[tuple[int, str], int] = field(default_factory=dict)
    _pending: dict[int, set[str]] = field(default_factory=dict)  # parent → names created, not yet committed
    _next: int = SYNTHETIC_BASE

    def get(self, ino: int) -> Node | None:
        """The node, or None when the kernel names one that was forgotten."""
        return self._nodes.get(ino)

    def path(self, ino: int) -> WorkspacePath | None:
        """The path of `ino` from the root, or None when it has no place any more (unlinked, forgotten)."""
        parts: list[str] = []
        node = self._nodes.get(ino)
        while node is not None and node.ino != ROOT_INODE:
            if node.parent is None:
                return None
            parts.append(node.name)
            node = self._nodes.get(node.parent)
        if node is None:
            return None
        return WorkspacePath(tuple(reversed(parts)))

    def child(self, parent: int, name: str) -> Node | None:
        """The node at `name` in `parent`, if the table holds one."""
        ino = self._names.get((parent, name))
        return None if ino is None else self._nodes[ino]

    def place(self, parent: int, name: str, *, pending: bool = False, disk_ino: int = 0) -> Node:
        """The node at (parent, name), made when missing, numbered as the disk numbers it where that number is
        free (so a program comparing st_ino, as git does, sees a file keep its number across the kernel's
        forgetting it); its lookup count is not changed."""
        node = self.child(parent, name)
        if node is None:
            ino = disk_ino if disk_ino > ROOT_INODE and disk_ino < SYNTHETIC_BASE and disk_ino not in self._nodes \
                else self._synthetic()
            node = Node(ino, parent, name, pending=pending)
            self._nodes[node.ino] = node
            self._names[(parent, name)] = node.ino
            if pending:
                self._pending.setdefault(parent, set()).add(name)
        return node

    def _synthetic(self) -> int:
        while self._next in self._nodes:
            self._next += 1
        ino, self._next = self._next, self._next + 1
        return ino

    def committed(self, node: Node) -> None:
        """A pending file is on the disk now."""
        if node.pending:
            node.pending = False
            self._unpend(node)

    def _unpend(self, node: Node) -> None:
        if node.parent is not None:
            names = self._pending.get(node.parent)
            if names is not None:
                names.discard(node.name)
                if not names:
                    del self._pending[node.parent]

    def remember(self, node: Node, count: int = 1) -> None:
        """The kernel took `count` more references (a lookup, create, mkdir or readdirplus entry)."""
        node.lookups += count

    def forget(self, ino: int, count: int) -> None:
        """The kernel dropped `count` references; a node nobody names or holds open goes."""
        node = self._nodes.get(ino)
        if node is None or ino == ROOT_INODE:
            return
        node.lookups = max(0, node.lookups - count)
        self._drop_if_unused(node)

    def _drop_if_unused(self, node: Node) -> None:
        if node.lookups or node.handles:
            return
        self.detach(node)
        self._nodes.pop(node.ino, None)

    def detach(self, node: Node) -> None:
        """The node loses its name (unlinked, replaced, or a pending file refused)."""
        if node.pending:
            self._unpend(node)
            node.pending = False
        if node.parent is not None and self._names.get((node.parent, node.name)) == node.ino:
            del self._names[(node.parent, node.name)]
        node.parent = None

    def opened(self, node: Node) -> None:
        node.handles += 1

    def closed(self, node: Node) -> None:
        node.handles = max(0, node.handles - 1)
        self._drop_if_unused(node)

    def move(self, parent: int, name: str, new_parent: int, new_name: str) -> None:
        """A rename done on the disk: the node at the destination (replaced) loses its name; the source takes it."""
        replaced = self.child(new_parent, new_name)
        if replaced is not None:
            self.detach(replaced)
        node = self.child(parent, name)
        if node is None:
            return
        pending = node.pending
        if pending:
            self._unpend(node)
        del self._names[(parent, name)]
        node.parent, node.name = new_parent, new_name
        self._names[(new_parent, new_name)] = node.ino
        if pending:
            self._pending.setdefault(new_parent, set()).add(new_name)

    def pending_in(self, parent: int) -> list[str]:
        """Names created in `parent` and not yet committed (a listing shows them: the app made them)."""
        return sorted(self._pending.get(parent, ()))
