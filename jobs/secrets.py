"""Keeping secrets out of job records, errors and logs."""

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


def scrub(text: str) -> str:
    """``text`` with anything that looks like a credential replaced by ``***``."""
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m["keep"] + "***", text)
    return text
