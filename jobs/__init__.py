"""Errand's job engine: durable, transport-agnostic job records, their state machine and runtime.

This door is what a kind's author uses: ``from jobs import kind, Context, JobFailed``. A
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
    from jobs.runtime.budget import Budget, Meter, estimate_tokens
    from jobs.runtime.context import Context
    from jobs.runtime.registry import Kind, kind

if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = exports(globals())
