"""The Discord transport's own errors, each an :class:`~jobs.ErrandError` like the engine's."""

from __future__ import annotations

from jobs import ErrandError


class BadToken(ErrandError):
    """The Discord token is missing or Discord refused it."""


class SandboxError(ErrandError):
    """The sandbox cannot start; the message says why and what to do."""


class Stopping(ErrandError):
    """The bot is stopping: the request was not sent, and none will be."""


class BindingPending(ErrandError):
    """A job's binding cannot be completed yet (its /summon answer is not recorded yet)."""


class CannotStart(ErrandError):
    """A bot process cannot start: its options do not fit, or Discord cannot be reached; the
    message says why."""
