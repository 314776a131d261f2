"""The dashboard's own errors, each an :class:`~jobs.ErrandError` like the engine's."""

from __future__ import annotations

from jobs import ErrandError


class CannotServe(ErrandError):
    """The dashboard cannot start: no login is configured, or its settings do not fit; the
    message says why and what to set."""
