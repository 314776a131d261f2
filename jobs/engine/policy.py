"""The race policy, as data: which edges each kind of request takes (docs/state-machine.md).

Every request that moves a job is one :class:`~jobs.engine.moves.Policy` here: an attempt's end
(by how it ended), a cancel (plain or forced), a resolve, the reaper's settlements and the
deadline. Each is checked against the transition table when this module loads, so a policy the
table does not allow cannot even be imported. :data:`SQL_SETS` are the sets of states the SQL
names (``{set}`` in jobs/engine/sql), derived from the table and these policies.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobs.engine.moves import AttemptOutcome as Out
from jobs.engine.moves import Move, Policy, ResolveAs
from jobs.engine.state import ACTIVE, LIVE, TERMINAL, Actor, sources
from jobs.engine.state import State as S

COMPLETED_DESPITE_CANCEL = "completed despite cancel request"
STOPPED_MID_RUN = "worker stopped mid-run"

KEEP_REASON = "@keep"
"""A move reason meaning "keep the job's current reason" (e.g. the cancel reason)."""

_ACK = Move(S.CANCELLING, S.CANCELLED, KEEP_REASON, outcome=Out.CANCELLED)
"""Once cancelling, a failure or a release ends the job as cancelled, never as a retry."""


def _worker(nominal: S, *moves: Move) -> Policy:
    return Policy(Actor.WORKER, moves, "attempt", nominal)


# -- how an attempt's end moves its job (the worker, fenced by the attempt) -------------------

# Only a handler failure (failed, or a retry) uses up one of max_attempts (docs/state-machine.md,
# "Attempts and failures"); a success reported before acknowledging a cancel still counts.
FINISH: Mapping[Out, Policy] = {
    Out.SUCCEEDED: _worker(
        S.SUCCEEDED,
        Move(S.RUNNING, S.SUCCEEDED, outcome=Out.SUCCEEDED),
        Move(S.CANCELLING, S.SUCCEEDED, COMPLETED_DESPITE_CANCEL, outcome=Out.SUCCEEDED),
    ),
    Out.FAILED: _worker(S.FAILED, Move(S.RUNNING, S.FAILED, outcome=Out.FAILED, charge=True), _ACK),
    Out.RETRY: _worker(S.QUEUED, Move(S.RUNNING, S.QUEUED, outcome=Out.RETRY, charge=True), _ACK),
    Out.CANCELLED: _worker(S.CANCELLED, _ACK),
    Out.RELEASED: _worker(
        S.QUEUED,
        Move(S.RUNNING, S.QUEUED, "released by worker shutdown", outcome=Out.RELEASED),
        _ACK,
    ),
    Out.UNKNOWN: _worker(S.UNKNOWN, Move(S.RUNNING, S.UNKNOWN, outcome=Out.UNKNOWN)),
    # A park uses up nothing (docs/state-machine.md, "Waiting"); once cancelling it ends cancelled.
    Out.PARKED: _worker(S.WAITING, Move(S.RUNNING, S.WAITING, outcome=Out.PARKED), _ACK),
}

PARKED_SATISFIED = _worker(
    S.QUEUED,
    Move(S.RUNNING, S.QUEUED, "what it waited for came while it parked", outcome=Out.PARKED),
    _ACK,
)
"""A park whose answer, message or time came before the park was written: queued, due at once,
instead of waiting for something that already happened."""

STOP_MID_RUN = _worker(S.UNKNOWN, Move(S.RUNNING, S.UNKNOWN, outcome=Out.RELEASED), _ACK)
"""Stopped by a worker shutdown, but not safe to run again from the start: nobody knows how far
it got (the attempt itself counts as released)."""


# -- people: cancel and resolve --------------------------------------------------------------


def cancel(actor: Actor) -> Policy:
    """A cancel: ``queued`` is cancelled at once, ``running`` is told to stop (the row's reason,
    the request's, is the reason)."""
    return Policy(
        actor,
        (
            Move(S.QUEUED, S.CANCELLED),
            Move(S.RUNNING, S.CANCELLING),
            Move(S.WAITING, S.CANCELLED),  # nothing runs: cancelled at once
        ),
        "none",
        S.CANCELLED,
    )


FORCE_CANCEL = Policy(
    Actor.OPERATOR,
    (
        Move(S.QUEUED, S.CANCELLED),
        Move(S.RUNNING, S.CANCELLED, outcome=Out.REVOKED),
        Move(S.CANCELLING, S.CANCELLED, outcome=Out.REVOKED),
        Move(S.WAITING, S.CANCELLED),
        Move(S.UNKNOWN, S.CANCELLED),
    ),
    "none",
    S.CANCELLED,
)
"""An operator's forced cancel: anything not terminal ends cancelled now, its attempt revoked."""

RESOLVE_TARGETS: Mapping[ResolveAs, S] = {
    ResolveAs.SUCCEEDED: S.SUCCEEDED,
    ResolveAs.FAILED: S.FAILED,
    ResolveAs.RETRY: S.QUEUED,
    ResolveAs.CANCELLED: S.CANCELLED,
}


def resolve(actor: Actor, target: S) -> Policy:
    """Settling an ``unknown`` job as ``target``."""
    return Policy(actor, (Move(S.UNKNOWN, target),), "none", target)


# -- the system: the reaper and the deadline ---------------------------------------------------

DEADLINE = Policy(
    Actor.SYSTEM,
    (
        Move(S.QUEUED, S.CANCELLED, "timed_out"),
        Move(S.RUNNING, S.CANCELLING, "timed_out"),
        Move(S.WAITING, S.CANCELLED, "timed_out"),
    ),
    "none",
    S.CANCELLED,
)
"""What a deadline does: a job not running is cancelled at once, a running one told to stop."""


def wake(actor: Actor) -> Policy:
    """A waiting job's wait is over: an answer or a message came (requester, operator) or its
    timer passed (system). Queued, due at once (the row's ``run_at``), with the row's reason."""
    return Policy(actor, (Move(S.WAITING, S.QUEUED),), "none", S.QUEUED)


def cancel_forced(reason: str, outcome: Out) -> Policy:
    """A cancelling job whose attempt did not stop in time (grace over, or its lease expired)."""
    return Policy(
        Actor.SYSTEM,
        (Move(S.CANCELLING, S.CANCELLED, reason, outcome=outcome),),
        "attempt",
        S.CANCELLED,
    )


LOST_WITH_EFFECT = Policy(
    Actor.SYSTEM,
    (
        Move(
            S.RUNNING,
            S.UNKNOWN,
            "worker lost while a side effect was in flight",
            outcome=Out.ABANDONED,
        ),
    ),
    "attempt",
    S.UNKNOWN,
)


def expired(target: S, reason: str, outcome: Out, *, charge: bool) -> Policy:
    """A running job whose lease expired, settled as ``target`` (queued, failed or unknown)."""
    return Policy(
        Actor.SYSTEM,
        (Move(S.RUNNING, target, reason, outcome, charge=charge),),
        "attempt",
        target,
    )


SQL_SETS: Mapping[str, frozenset[S]] = {
    "claimable": sources(Actor.WORKER, S.RUNNING),
    "live": LIVE,
    "terminal": TERMINAL,
    "active": ACTIVE,
    "deadline": frozenset(m.source for m in DEADLINE.moves),
    "waiting": frozenset(m.source for m in wake(Actor.SYSTEM).moves),
}
"""The sets of states the SQL names as ``{set}`` (written in when the queries load)."""
