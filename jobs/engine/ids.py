"""Ids: a job's public id (short, unambiguous, safe to type in Discord and copy from a phone),
and the name of a running process (the holder of a worker's leases or a transport's outbox
leases)."""

from __future__ import annotations

import os
import re
import secrets
import socket

from jobs.errors import UnknownJob

# Lowercase letters and digits without the look-alikes 0/o, 1/l/i: nothing Discord's markdown
# changes, nothing a user mistypes when copying by eye.
ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
LENGTH = 8  # 31**8 ~ 8.5e11 ids; collisions are retried against the unique index anyway.
SHAPE = rf"[{ALPHABET}]{{{LENGTH}}}"
"""What a public id looks like, as a regular expression without anchors."""
PATTERN = re.compile(rf"^{SHAPE}$")


# Ids: one random byte per character. The first 248 byte values (8 x 31) map evenly onto
# the alphabet (b % 31) and the last 8 are dropped, so every character, and every id, is
# equally likely. Translating and dropping run in C: bulk submits make tens of thousands of ids
# in one call.
_ACCEPTED = len(ALPHABET) * (256 // len(ALPHABET))
_CHARS = bytes(ALPHABET.encode()[b % len(ALPHABET)] if b < _ACCEPTED else 0 for b in range(256))
_DROPPED = bytes(range(_ACCEPTED, 256))


def new_public_ids(count: int) -> list[str]:
    """``count`` fresh random public ids (uniform over the id space, from the OS's CSPRNG)."""
    need = count * LENGTH
    chars = b""
    while len(chars) < need:
        short = need - len(chars)
        # A sixteenth more bytes than needed covers the 1 in 32 dropped; the loop tops up.
        chars += secrets.token_bytes(short + short // 16 + 16).translate(_CHARS, _DROPPED)
    text = chars[:need].decode()
    return [text[i : i + LENGTH] for i in range(0, need, LENGTH)]


def new_public_id() -> str:
    """A fresh random public id."""
    return new_public_ids(1)[0]


def normalize(text: str) -> str:
    """Lower-case and strip a typed id; users paste ids with spaces, backticks and caps."""
    return text.strip().strip("`").strip().lower()


class IdReader:
    """Reads a job's public id as people type it (:data:`read_id`, the transports' one way)."""

    pattern = SHAPE
    """What an id looks like, as a regular expression without anchors (a page that links the
    ids in a text finds them with it)."""

    def __call__(self, text: str) -> str:
        """The public id ``text`` names, as :func:`normalize` reads it (spaces, backticks and
        capitals forgiven).

        Raises:
            UnknownJob: ``text`` cannot be an id, so no job has it; its ``job_id`` is the text
                as read, for a caller that says so.
        """
        public_id = normalize(text)
        if not PATTERN.fullmatch(public_id):
            raise UnknownJob(public_id)
        return public_id


read_id = IdReader()
"""A typed job id, read: ``read_id(" `AB3DEF7K` ")`` is ``"ab3def7k"``, and text that is no id
raises :class:`~jobs.errors.UnknownJob` before anything asks the database; ``read_id.pattern``
is what an id looks like."""


def incarnation() -> str:
    """A name unique to this process and this start of it: ``host:pid:random``.

    The random part keeps a restarted process with a reused pid (a container's pid 1) from
    passing for its predecessor, whose leases may still be live.
    """
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
