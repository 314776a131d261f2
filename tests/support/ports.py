"""A free TCP port on the loopback interface, for a server a test starts on a port of its own."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it; a race with another process that
    binds it first is possible but rare)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
