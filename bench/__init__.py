"""The handshake-latency bench suite: `python -m bench [--quick]`."""
