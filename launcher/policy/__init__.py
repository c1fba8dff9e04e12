"""Pure decisions of the launcher: no I/O, no root; their tests run in milliseconds."""
