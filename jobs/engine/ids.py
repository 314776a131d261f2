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
_BYTES = 5  # 2**40 > 31**8: one draw of 40 random bits per id, rejected when >= _SPACE
# Every pair of characters, so an id is written with four divisions instead of eight (bulk
# submits make tens of thousands of ids in one call).
_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]
_PAIR = len(_PAIRS)


def _write(n: int) -> str:
    n, a = divmod(n, _PAIR)
    n, b = divmod(n, _PAIR)
    d, c = divmod(n, _PAIR)
    return _PAIRS[d] + _PAIRS[c] + _PAIRS[b] + _PAIRS[a]


def new_public_ids(count: int) -> list[str]:
    """``count`` fresh random public ids (uniform over the id space, from the OS's CSPRNG)."""
    out: list[str] = []
    while len(out) < count:
        # A quarter more draws than needed covers the ~22% rejected; the loop tops up the rest.
        need = count - len(out)
        pool = secrets.token_bytes(_BYTES * (need + need // 4 + 4))
        for i in range(0, len(pool), _BYTES):
            n = int.from_bytes(pool[i : i + _BYTES])
            if n < _SPACE:  # rejection keeps every id equally likely
                out.append(_write(n))
                if len(out) == count:
                    break
    return out


def new_public_id() -> str:
    """A fresh random public id."""
    return _write(secrets.randbelow(_SPACE))


def normalize(text: str) -> str:
    """Lower-case and strip a typed id; users paste ids with spaces, backticks and caps."""
    return text.strip().strip("`").strip().lower()


def incarnation() -> str:
    """A name unique to this process and this start of it: ``host:pid:random``.

    The random part keeps a restarted process with a reused pid (a container's pid 1) from
    passing for its predecessor, whose leases may still be live.
    """
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
