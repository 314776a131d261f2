"""The one way a test waits for something to happen: :func:`poll`.

A test that waits for a state, a row or a message polls for it with a deadline, and on timeout
fails naming what it waited for and what it last saw, so a slow machine reads as a clear failure
rather than a hang.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")

EVERY = 0.02  # seconds between checks: short, so a test waits little past the moment


async def poll(
    check: Callable[[], T | Awaitable[T]],
    within: float = 10.0,
    *,
    until: Callable[[T], Any] = bool,
    every: float = EVERY,
    what: str | None = None,
    show: Callable[[T], str] = repr,
) -> T:
    """Call ``check`` (sync or async) until ``until`` holds for what it returns (by default:
    until it returns something truthy), and return that value.

    Args:
        check: what to look at; an exception it raises fails the test at once.
        within: seconds before the test fails.
        until: whether a value of ``check`` is the one awaited.
        every: seconds between two calls of ``check``.
        what: what is awaited, for the failure message (default: ``check``'s name, or the
            source line of a lambda).
        show: how the failure message shows the last value.

    Raises:
        AssertionError: ``within`` seconds passed; the message names what was awaited and the
            last value ``check`` returned.
    """
    deadline = time.monotonic() + within
    while True:
        value: Any = check()
        if inspect.isawaitable(value):
            value = await value
        if until(value):
            return cast(T, value)
        if time.monotonic() > deadline:
            raise AssertionError(
                f"not reached within {within} s: {what or describe(check)} "
                f"(last: {_short(show(value))})"
            )
        await asyncio.sleep(every)


def describe(check: Callable[..., object]) -> str:
    """A reader's name for ``check``: its qualified name, or a lambda's source text."""
    name = getattr(check, "__qualname__", None)
    if name is None:
        return repr(check)
    if name.endswith("<lambda>"):
        try:
            return " ".join(inspect.getsource(check).split())
        except (OSError, TypeError):
            return name
    return re.sub(r"\.<locals>\.", ".", name)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
