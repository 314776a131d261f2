"""Every error Errand raises on purpose, in one module.

Every one is an :class:`ErrandError`, in two families: :class:`Refused` and its subclasses are
answers to a caller of the store (transports map them to user-facing messages); the others end
or interrupt a handler's attempt (:class:`JobFailed`, :class:`JobCancelled`, :class:`LeaseLost`,
:class:`BudgetExceeded`, :class:`EffectInDoubt`, :class:`DatabaseUnavailable`,
:class:`JobParked`) and the runtime maps them to the attempt's outcome (see
:mod:`jobs.runtime.execute`).
"""

from __future__ import annotations


class ErrandError(Exception):
    """Base of every error Errand raises on purpose."""


class Refused(ErrandError):
    """A request was refused and changed nothing: an answer to the caller, in one line."""


class UnknownJob(Refused):
    """No job with this id exists (or the caller may not see it)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no such job: {job_id}")
        self.job_id = job_id


class UnknownKind(Refused):
    """The kind is not registered."""

    def __init__(self, kind: str, known: list[str]) -> None:
        super().__init__(f"unknown kind {kind!r}; known kinds: {', '.join(sorted(known))}")
        self.kind = kind


class InvalidParams(Refused):
    """Parameters failed validation for their kind; nothing was created."""


class QuotaExceeded(Refused):
    """A submit would exceed a requester or origin-group quota; nothing was created."""


class IdempotencyConflict(Refused):
    """An idempotency key was reused for a different request (another kind or other params).

    As Stripe's API does: the key names one request; a different request under it is refused,
    never answered with the job the key already made.
    """

    def __init__(self, key: str, job_id: str) -> None:
        super().__init__(
            f"idempotency key {key!r} was already used for a different request (job {job_id}); "
            "use a new key"
        )
        self.key, self.job_id = key, job_id


class IllegalTransition(Refused):
    """The transition table does not allow this move from the job's current state."""

    def __init__(self, job_id: str, state: str, target: str, actor: str) -> None:
        super().__init__(f"job {job_id} is {state}; {actor} cannot move it to {target}")
        self.job_id, self.state, self.target, self.actor = job_id, state, target, actor


class StaleTransition(IllegalTransition):
    """A write from an attempt that no longer holds the lease; recorded as an ignored event."""


class NotAllowed(Refused):
    """The caller is not permitted to do this to this job."""


class NoOpenQuestion(Refused):
    """An answer to a job that asks nothing (now), or to a question it never asked."""


class NotOffered(Refused):
    """An answer that is not one of the question's choices (and it takes no words of one's
    own); nothing was recorded."""


class JobEnded(Refused):
    """A message to a job that has ended: nobody would read it; nothing was recorded."""


# -- what ends or interrupts a handler's attempt ---------------------------------------------


class JobFailed(ErrandError):
    """Raised by a handler to fail the job now, without a retry (e.g. a non-zero exit)."""


class JobCancelled(ErrandError):
    """Raised at a checkpoint once the job was asked to stop (cancel, deadline or shutdown)."""


class LeaseLost(ErrandError):
    """This attempt no longer holds the job's lease: whatever it writes would be ignored."""


class JobParked(ErrandError):
    """Raised inside a handler that waits longer than its worker keeps it (``ctx.ask``, a long
    ``ctx.sleep``...): the attempt ends and the job waits without a worker. Let it through, as
    :class:`JobCancelled`: the job resumes from its checkpoint once the wait is over."""


class NoAnswer(JobFailed):
    """``ctx.ask`` ran out of time without an answer and was given no default: the job fails
    (no retry) unless the handler catches it."""

    def __init__(self, key: str) -> None:
        super().__init__(f"no answer to question {key!r} in time")
        self.key = key


BOUND_NAMES: dict[str, str] = {
    "step_tokens": "tokens per step",
    "step_tool_calls": "tool_calls per step",
    "step_seconds": "seconds per step",
    "job_steps": "steps per job",
    "job_tokens": "tokens per job",
    "job_seconds": "seconds per job (all attempts)",
}
"""Human names of the bounds of a :class:`jobs.runtime.budget.Budget`, as failure reasons say
them."""


class BudgetExceeded(ErrandError):
    """A bound was exceeded; the job fails (no retry) unless the handler recovers."""

    def __init__(
        self, bound: str, used: float, limit: float, note: str = "", *, message: str | None = None
    ) -> None:
        self.bound, self.used, self.limit = bound, used, limit
        if message is not None:
            super().__init__(f"budget exceeded: {BOUND_NAMES[bound]} {message}")
            return
        shown, bound_text = _num(used), _num(limit)
        digits = 6
        while shown == bound_text and used != limit and digits < 12:
            # The measured value must never print as the bound ("0.3 > 0.3").
            digits += 2
            shown = f"{used:.{digits}g}"
        suffix = f" ({note})" if note else ""
        super().__init__(f"budget exceeded: {BOUND_NAMES[bound]} {shown} > {bound_text}{suffix}")


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class EffectInDoubt(ErrandError):
    """An earlier attempt may have done this effect and nothing can tell: the job is unknown."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"effect {key!r} was in flight when an earlier attempt ended and has no lookup; "
            "its outcome is unknown"
        )


class DatabaseUnavailable(ErrandError):
    """A runtime write could not reach the database for as long as it was allowed to try.

    Not the job's fault: the worker records nothing for the attempt and leaves it to lease
    expiry and the reaper, whose rules say whether it runs again.
    """
