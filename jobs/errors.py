"""Typed errors of the job engine; transports map them to user-facing answers."""

from __future__ import annotations


class ErrandError(Exception):
    """Base of every error the engine raises on purpose."""


class UnknownJob(ErrandError):
    """No job with this id exists (or the caller may not see it)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no such job: {job_id}")
        self.job_id = job_id


class UnknownKind(ErrandError):
    """The kind is not registered."""

    def __init__(self, kind: str, known: list[str]) -> None:
        super().__init__(f"unknown kind {kind!r}; known kinds: {', '.join(sorted(known))}")
        self.kind = kind


class InvalidParams(ErrandError):
    """Parameters failed validation for their kind; nothing was created."""


class QuotaExceeded(ErrandError):
    """A submit would exceed a requester or origin-group quota; nothing was created."""


class IllegalTransition(ErrandError):
    """The transition table does not allow this move from the job's current state."""

    def __init__(self, job_id: str, state: str, target: str, actor: str) -> None:
        super().__init__(f"job {job_id} is {state}; {actor} cannot move it to {target}")
        self.job_id, self.state, self.target, self.actor = job_id, state, target, actor


class StaleTransition(IllegalTransition):
    """A write from an attempt that no longer holds the lease; recorded as an ignored event."""


class NotAllowed(ErrandError):
    """The caller is not permitted to do this to this job."""
