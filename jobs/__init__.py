"""Errand's job engine: durable, transport-agnostic job records, their state machine and runtime.

This door is what a kind's author uses: ``from jobs import kind, Context, JobFailed``: the
decorator, what a handler receives, its budget and the errors it raises or catches (the types it
meets without naming them, a registered kind and a step's meter, stay behind it; the meter
estimates the tokens a provider did not report, ``meter.estimate(...)``). A
transport (``bot/``) enters through the second door, :mod:`jobs.transport`. Nothing else is
public. Names load on first use (:mod:`jobs.lazy`), so a short CLI command imports only the
modules it touches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.lazy import exports

if TYPE_CHECKING:
    from jobs.errors import (
        BudgetExceeded,
        EffectInDoubt,
        ErrandError,
        JobCancelled,
        JobFailed,
        LeaseLost,
    )
    from jobs.runtime.budget import Budget
    from jobs.runtime.context import Context
    from jobs.runtime.registry import kind

if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = exports(globals())
