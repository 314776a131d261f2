"""Bounds on everything people and clients hand Errand, checked at the edge (CLI, bot) and again
by the store before anything is written.

A value outside them is refused with one short line naming the input and the bound; nothing is
changed. The bounds are generous for real use and small enough that no input can crash a
process, overflow a PostgreSQL type or exhaust memory (a 50,000-deep JSON value, a 100 KB id, a
``NaN`` limit).
"""

from __future__ import annotations

import math
import re
from typing import Any

from jobs.errors import InvalidParams

MAX_JOB_ID = 64
"""A typed job id (ids are 8 characters; room for pasted spaces and backticks)."""
MAX_NAME = 200
"""Kind names, requesters, idempotency keys, states, filters."""
MAX_REASON = 500
"""A cancel reason."""
MAX_NOTE = 2000
"""A resolution note."""
MAX_PARAMS_BYTES = 64 * 1024
"""A job's parameters (and its origin), as JSON."""
MAX_DEPTH = 32
"""Nesting of a JSON value (objects and arrays)."""
MAX_LIMIT = 1000
"""Rows a listing returns at most."""
MAX_SECONDS = 100 * 365 * 86400.0
"""A duration (a filter or a retention period): a century."""
MAX_BIGINT = 9_223_372_036_854_775_807  # 2^63 - 1
"""The largest id PostgreSQL stores (``bigint``)."""


# How json.dumps writes a NUL (an escape not itself escaped), which jsonb refuses.
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def has_nul_escape(json_text: str) -> bool:
    """Whether JSON text (as ``json.dumps`` writes it) holds a NUL, which jsonb cannot store."""
    return _NUL_ESCAPE.search(json_text) is not None


class InvalidInput(InvalidParams):
    """An input outside Errand's bounds; nothing was changed."""


def _surrogate(name: str, value: str, exc: UnicodeEncodeError) -> InvalidInput:
    """The refusal of text holding a lone surrogate (``\\ud800``): no character, so it
    cannot be written as UTF-8 (to PostgreSQL, a file, Discord)."""
    found = f"\\u{ord(value[exc.start]):04x}"
    return InvalidInput(f"{name}: contains {found}, a lone surrogate, which is not text")


def _not_text(name: str, value: str) -> InvalidInput | None:
    """Why ``value`` cannot be stored as text (a NUL, a lone surrogate), or None."""
    if "\x00" in value:
        return InvalidInput(f"{name}: contains a NUL character")
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        return _surrogate(name, value, exc)
    return None


def is_text(value: str) -> bool:
    """Whether ``value`` can be stored as text: no NUL, no lone surrogate."""
    return _not_text("", value) is None


def text(name: str, value: str, limit: int = MAX_NAME) -> str:
    """``value`` if it is at most ``limit`` characters of text (no NUL, no lone surrogate);
    else InvalidInput."""
    refused = _not_text(name, value)
    if refused is not None:
        raise refused
    if len(value) > limit:
        raise InvalidInput(f"{name}: too long ({len(value)} characters; at most {limit})")
    return value


def number(name: str, value: float, low: float, high: float) -> float:
    """``value`` if it is a finite number within ``[low, high]``; else InvalidInput."""
    if not math.isfinite(value):
        raise InvalidInput(f"{name}: must be a finite number, not {value}")
    if not low <= value <= high:
        raise InvalidInput(f"{name}: must be within [{low:g}, {high:g}]")
    return value


def integer(name: str, value: int, low: int, high: int) -> int:
    """``value`` if it is within ``[low, high]``; else InvalidInput."""
    if not low <= value <= high:
        raise InvalidInput(f"{name}: must be within [{low}, {high}]")
    return value


def json_value(name: str, value: Any, max_bytes: int = MAX_PARAMS_BYTES) -> Any:
    """``value`` if it can be stored as ``jsonb`` within the bounds: nesting at most
    :data:`MAX_DEPTH`, no NUL or lone surrogate in any string or key, only finite numbers, at
    most ``max_bytes`` as JSON. Checked without recursion, so a hostile depth cannot crash the
    check itself."""
    size = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise InvalidInput(f"{name}: nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        raise InvalidInput(f"{name}: object keys must be text")
                    refused = _not_text(name, key)
                    if refused is not None:
                        raise refused
                    size += len(key) + 4
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)
                size += 2
        elif isinstance(item, str):
            if "\x00" in item:
                raise InvalidInput(f"{name}: contains a NUL character")
            try:
                size += len(item.encode()) + 2
            except UnicodeEncodeError as exc:
                raise _surrogate(name, item, exc) from None
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInput(f"{name}: numbers must be finite, not {item}")
            size += 24
        elif isinstance(item, bool | int) or item is None:
            if isinstance(item, int) and not isinstance(item, bool) and abs(item) > 10**100:
                raise InvalidInput(f"{name}: a number is too large")
            size += 8
        else:
            raise InvalidInput(f"{name}: unsupported value of type {type(item).__name__}")
        if size > max_bytes:
            raise InvalidInput(f"{name}: too large (at most {max_bytes // 1024} KB as JSON)")
    return value
