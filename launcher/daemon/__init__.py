"""sharness-launchd: the launcher as a root service that people (not root) ask for sessions over a Unix socket.

The policy (policy, policy_file) says who may ask and for what; the confused-deputy rule (deputy, reach)
refuses anything the caller could not reach itself; the rest is the socket, its frames, and the loop.
"""
