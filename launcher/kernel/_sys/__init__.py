"""Thin cffi bindings (ABI mode) to the syscalls and libraries the launcher's confinement needs.

Nothing here decides anything: each function makes one call and raises OSError with the kernel's errno.
"""
