"""Keeping secrets out of job records, errors, logs, assets, Discord messages and CLI output.

Two lines of defence:

1. **By value.** Every secret Errand is configured with (the Discord token, the model API key,
   the database password, values a command's environment passes through) is registered at
   start-up with :func:`register` (see :func:`register_settings`), and :func:`scrub` replaces
   each occurrence of it, whatever the text around it looks like: a provider's error that echoes
   the key is caught even when the key has no recognisable shape.
2. **By pattern.** Things that look like credentials (URL passwords, bearer tokens, ``sk-...``
   keys, Discord tokens, ``password=...``) are replaced too, for secrets nobody registered.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from pydantic import SecretStr

    from jobs.settings import Settings

MASK = "***"

# Shorter values would mask ordinary words (and "unset", the placeholder API key); no real
# credential is this short.
MIN_SECRET_LENGTH = 8

# Things that look like credentials in free text: URL passwords, bearer tokens, API keys, and
# Discord bot tokens (three dot-separated base64 segments).
_PATTERNS = [
    # Bounded: an unbounded scheme made this quadratic on a long word (a command's output line),
    # blocking the worker's event loop for seconds. A URL's password holds no "/" unescaped.
    re.compile(r"(?P<keep>[a-z][a-z0-9+.-]{0,31}://[^:/\s@]*:)[^@\s/]+(?=@)", re.IGNORECASE),
    re.compile(r"(?P<keep>bearer\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
    re.compile(r"(?P<keep>)\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?P<keep>)\b[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}"),
    re.compile(r"(?P<keep>(?:password|token|api_key|secret)\s*[=:]\s*)\S+", re.IGNORECASE),
]

_lock = threading.Lock()
_values: frozenset[str] = frozenset()
_by_value: re.Pattern[str] | None = None


def register(*values: str | SecretStr | None) -> None:
    """Redact these values by value from now on, in this process (blank or short ones ignored).

    A value's URL-encoded and URL-decoded forms are registered too (a password appears both
    ways in a DSN).
    """
    global _values, _by_value
    found: set[str] = set()
    for value in values:
        if value is None:
            continue
        text = value if isinstance(value, str) else value.get_secret_value()
        for form in (text, text.strip(), unquote(text)):
            if len(form) >= MIN_SECRET_LENGTH:
                found.add(form)
    with _lock:
        if found <= _values:
            return
        _values = _values | found
        # Longest first, so a secret that contains another is masked whole.
        ordered = sorted(_values, key=len, reverse=True)
        _by_value = re.compile("|".join(re.escape(v) for v in ordered))


def registered() -> int:
    """How many secret values are registered (for start-up logs; never the values)."""
    return len(_values)


def url_password(url: str | None) -> str | None:
    """The password in a ``scheme://user:password@host/...`` URL, if any."""
    if not url:
        return None
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def register_settings(settings: Settings) -> None:
    """Register the secrets of Errand's settings: the database password and the model key."""
    url = settings.db.url.get_secret_value() if settings.db.url is not None else None
    register(url_password(url), settings.agent.api_key)


def scrub(text: str, *, patterns: bool = True) -> str:
    """``text`` with every registered secret (and, with ``patterns``, anything that looks like
    one) replaced by ``***``."""
    pattern = _by_value
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if patterns:
        for p in _PATTERNS:
            text = p.sub(lambda m: m["keep"] + MASK, text)
    return text


def scrub_bytes(data: bytes) -> bytes:
    """``data`` with every registered secret (as UTF-8) replaced; patterns are not applied to
    binary data."""
    for value in _values:
        encoded = value.encode()
        if encoded in data:
            data = data.replace(encoded, MASK.encode())
    return data


def scrub_data(value: Any, *, patterns: bool = True) -> Any:
    """A JSON-like value with :func:`scrub` applied to every string in it (keys too)."""
    if _by_value is None and not patterns:
        return value
    if isinstance(value, str):
        return scrub(value, patterns=patterns)
    if isinstance(value, dict):
        return {
            scrub(k, patterns=patterns) if isinstance(k, str) else k: scrub_data(
                v, patterns=patterns
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub_data(v, patterns=patterns) for v in value]
    return value


def redact_error(exc: BaseException, limit: int = 2000) -> dict[str, str]:
    """An error as stored: type and message, secrets masked, cut short; never locals or
    arguments."""
    # PostgreSQL text and jsonb cannot hold NUL; a message carrying one (a command's output)
    # would make the attempt's end unwritable.
    message = scrub(str(exc)).replace("\x00", "\ufffd")
    return {"type": type(exc).__name__, "message": message[:limit]}
