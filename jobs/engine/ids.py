"""Ids: a job's public id (short, unambiguous, safe to type in Discord and copy from a phone),
and the name of a running process (the holder of a worker's leases or a transport's outbox
leases)."""

from __future__ import annotations

import os
import re
import secrets
import socket

# Lowercase letters and digits without the look-alikes 0/o, 1/l/i: nothing Discord's markdown
# changes, nothing a user mistypes when copying by eye.
ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
LENGTH = 8  # 31**8 ~ 8.5e11 ids; collisions are retried against the unique index anyway.
PATTERN = re.compile(rf"^[{ALPHABET}]{{{LENGTH}}}$")


_SPACE = len(ALPHABET) ** LENGTH


def new_public_id() -> str:
    """A fresh random public id."""
    # One draw from the OS's CSPRNG, written in base 31 (uniform, like LENGTH separate choices,
    # at a fraction of the cost: bulk submits make tens of thousands at once).
    n = secrets.randbelow(_SPACE)
    out = []
    for _ in range(LENGTH):
        n, r = divmod(n, len(ALPHABET))
        out.append(ALPHABET[r])
    return "".join(out)


def normalize(text: str) -> str:
    """Lower-case and strip a typed id; users paste ids with spaces, backticks and caps."""
    return text.strip().strip("`").strip().lower()


def incarnation() -> str:
    """A name unique to this process and this start of it: ``host:pid:random``.

    The random part keeps a restarted process with a reused pid (a container's pid 1) from
    passing for its predecessor, whose leases may still be live.
    """
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
