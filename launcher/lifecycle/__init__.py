"""The session lifecycle, all of it I/O.

Preflight, create, spawn, supervise, audit, the pty relay, teardown and the sweep of dead sessions.
"""
