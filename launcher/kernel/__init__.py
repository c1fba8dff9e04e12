"""Kernel primitives, each a thin root-only wrapper.

Landlock, seccomp, cgroups, netns, the mount namespace, accounts, the confinement sequence, the probe and the
cffi layer (`_sys`).
"""
