"""Public job ids: short, unambiguous, safe to type in Discord and copy from a phone."""

from __future__ import annotations

import re
import secrets

# Lowercase letters and digits without the look-alikes 0/o, 1/l/i: nothing Discord's markdown
# changes, nothing a user mistypes when copying by eye.
ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
LENGTH = 8  # 31**8 ~ 8.5e11 ids; collisions are retried against the unique index anyway.
PATTERN = re.compile(rf"^[{ALPHABET}]{{{LENGTH}}}$")


def new_public_id() -> str:
    """A fresh random public id."""
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def normalize(text: str) -> str:
    """Lower-case and strip a typed id; users paste ids with spaces, backticks and caps."""
    return text.strip().strip("`").strip().lower()
