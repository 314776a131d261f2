"""Keeping secrets out of job records, errors and logs.

Two nets: patterns for things that look like credentials, and the configured secrets themselves
(the Discord token, the model API key, the database password), registered by value with
:func:`register` when settings are loaded, so they are caught whatever their shape or context.
"""

from __future__ import annotations

import re

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


# Shorter values would scrub ordinary words (and "unset", the placeholder API key).
_MIN_SECRET_LENGTH = 8
_VALUES: set[str] = set()


def register(*values: str | None) -> None:
    """Scrub these exact values from now on (empty, short and placeholder values are ignored)."""
    for value in values:
        if value and len(value.strip()) >= _MIN_SECRET_LENGTH:
            _VALUES.add(value.strip())


def url_password(url: str | None) -> str | None:
    """The password in a ``scheme://user:password@host/...`` URL, if any."""
    from urllib.parse import unquote, urlsplit

    if not url:
        return None
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def scrub(text: str) -> str:
    """``text`` with every registered secret and anything that looks like a credential replaced
    by ``***``."""
    for value in sorted(_VALUES, key=len, reverse=True):  # a longer secret may contain another
        if value in text:
            text = text.replace(value, "***")
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m["keep"] + "***", text)
    return text
