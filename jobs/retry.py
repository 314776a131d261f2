"""The one backoff formula: how long to wait before retry number ``attempt``.

Used for job retries (:mod:`jobs.runtime.execute`, the reaper), outbox delivery retries
(:mod:`jobs.engine.notices`), the worker's waits through a database outage, and transports.
"""

from __future__ import annotations

import random


def backoff(
    attempt: int, *, base: float, cap: float, floor: float = 0.0, jitter: bool = True
) -> float:
    """Seconds to wait before retry number ``attempt`` (1 for the first retry).

    The ceiling doubles with each attempt, ``base * 2 ** (attempt - 1)``, and never exceeds
    ``cap``. With ``jitter`` the wait is drawn uniformly between ``floor`` and the ceiling
    ("full jitter" when ``floor`` is 0), so clients that failed together do not retry
    together; a ``floor`` above the ceiling is lowered to it. Without ``jitter`` the wait is
    the ceiling itself. An ``attempt`` below 1 counts as 1.
    """
    ceiling: float = min(cap, base * 2.0 ** max(0, attempt - 1))
    if not jitter:
        return ceiling
    return random.uniform(min(floor, ceiling), ceiling)
