"""Job states, actors and the transition table: the one authority for how a job's state changes.

Every state change in Errand goes through :func:`jobs.engine.transition.transition`, which checks
the move against :data:`TRANSITIONS` and derives the compare-and-set
``WHERE state = ANY(...)`` of its
``UPDATE`` from it. The PostgreSQL enum and ``docs/state-machine.md`` are checked against this
module by tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class State(StrEnum):
    """The durable state of a job."""

    @property
    def terminal(self) -> bool:
        """Whether a job in this state never leaves it (:data:`TERMINAL`)."""
        return self in TERMINAL

    QUEUED = "queued"
    """Waiting to run, first time or after a retry (``run_at`` says when, ``attempts`` how many
    so far). Left by a worker claiming it, or by a requester, operator or deadline cancelling it."""

    RUNNING = "running"
    """An attempt holds the lease and runs the handler. Left by that attempt finishing (succeeded,
    failed, retry, unknown, released on shutdown), by a cancel request (-> cancelling), or by the
    reaper when the lease expires."""

    CANCELLING = "cancelling"
    """A cancel was requested while running; the attempt has been told. Left by the attempt
    acknowledging (-> cancelled), finishing anyway (-> succeeded, "completed despite cancel
    request") or failing (-> cancelled), or by the reaper after the grace period (-> cancelled,
    reason ``forced``)."""

    SUCCEEDED = "succeeded"
    """Terminal: the handler returned; ``result`` holds what it returned."""

    FAILED = "failed"
    """Terminal: the handler failed and no retry remains, or a budget or deadline was exceeded;
    ``reason`` and ``error`` say why."""

    CANCELLED = "cancelled"
    """Terminal: stopped on request (``reason`` names who and why, ``forced`` or ``timed_out``)."""

    WAITING = "waiting"
    """Not terminal, and nothing runs: the handler asked a question, waits for a message or for
    a time, and its attempt ended (``parked``), so it holds no lease and no worker slot. The job
    records what it waits for and until when (``wait_*``). Left by an answer or a message
    (requester or operator: queued, due at once), its timer (system: queued), a cancel
    (cancelled at once) or its deadline (cancelled, ``timed_out``)."""

    UNKNOWN = "unknown"
    """The outcome is indeterminate (e.g. a side effect was in flight when the worker died and
    cannot be looked up). Not terminal and never retried automatically: an operator (or the
    requester, when the kind allows it) resolves it to succeeded, failed, cancelled or a retry."""


class Actor(StrEnum):
    """Who causes a transition."""

    REQUESTER = "requester"
    """The person (or client) who submitted the job."""
    WORKER = "worker"
    """A worker; for a running job only the attempt holding the current lease."""
    SYSTEM = "system"
    """Errand itself: the reaper (expired leases, cancel grace) and the deadline."""
    OPERATOR = "operator"
    """Someone with operator rights, through the CLI."""


TERMINAL: frozenset[State] = frozenset({State.SUCCEEDED, State.FAILED, State.CANCELLED})
"""States a job never leaves."""

LIVE: frozenset[State] = frozenset({State.RUNNING, State.CANCELLING})
"""States in which an attempt holds a lease."""

ACTIVE: frozenset[State] = frozenset(State) - TERMINAL
"""States not yet terminal (``unknown`` too, until resolved): what counts against a quota."""

S, A = State, Actor

TRANSITIONS: Mapping[tuple[State, Actor], frozenset[State]] = {
    # queued
    (S.QUEUED, A.REQUESTER): frozenset({S.CANCELLED}),
    (S.QUEUED, A.OPERATOR): frozenset({S.CANCELLED}),
    (S.QUEUED, A.WORKER): frozenset({S.RUNNING}),  # claim
    (S.QUEUED, A.SYSTEM): frozenset({S.CANCELLED}),  # deadline passed while waiting
    # running
    (S.RUNNING, A.REQUESTER): frozenset({S.CANCELLING}),
    (S.RUNNING, A.OPERATOR): frozenset({S.CANCELLING, S.CANCELLED}),  # cancelled = --force
    # queued = retry, released on shutdown, or parked with its answer already there; waiting =
    # parked; unknown = an effect's outcome could not be known.
    (S.RUNNING, A.WORKER): frozenset({S.SUCCEEDED, S.FAILED, S.QUEUED, S.WAITING, S.UNKNOWN}),
    # reaper on an expired lease (queued/failed/unknown); deadline (cancelling).
    (S.RUNNING, A.SYSTEM): frozenset({S.QUEUED, S.FAILED, S.UNKNOWN, S.CANCELLING}),
    # cancelling: a failure or a release now ends as cancelled, never as a retry; a success the
    # attempt reports before acknowledging still counts ("completed despite cancel request").
    (S.CANCELLING, A.WORKER): frozenset({S.CANCELLED, S.SUCCEEDED}),
    (S.CANCELLING, A.SYSTEM): frozenset({S.CANCELLED}),  # grace over or lease expired: forced
    (S.CANCELLING, A.OPERATOR): frozenset({S.CANCELLED}),
    (S.CANCELLING, A.REQUESTER): frozenset(),  # a repeated cancel changes nothing
    # waiting: nothing runs, so a cancel ends it at once; an answer or a message (a person) or
    # its timer (the system) queues it, due at once; the deadline cancels it.
    (S.WAITING, A.REQUESTER): frozenset({S.QUEUED, S.CANCELLED}),
    (S.WAITING, A.OPERATOR): frozenset({S.QUEUED, S.CANCELLED}),
    (S.WAITING, A.SYSTEM): frozenset({S.QUEUED, S.CANCELLED}),
    (S.WAITING, A.WORKER): frozenset(),  # no attempt runs: a worker has nothing to say
    # unknown: resolved by a person, never by a worker or the system.
    (S.UNKNOWN, A.OPERATOR): frozenset({S.SUCCEEDED, S.FAILED, S.QUEUED, S.CANCELLED}),
    # The kind must also allow its requester to resolve (checked by the store).
    (S.UNKNOWN, A.REQUESTER): frozenset({S.SUCCEEDED, S.FAILED, S.QUEUED}),
    (S.UNKNOWN, A.WORKER): frozenset(),
    (S.UNKNOWN, A.SYSTEM): frozenset(),
    # terminal states: nothing, from anyone
    **{(t, a): frozenset() for t in TERMINAL for a in Actor},
}


def allowed(state: State, actor: Actor) -> frozenset[State]:
    """Next states ``actor`` may move a job in ``state`` to."""
    return TRANSITIONS[(state, actor)]


def sources(actor: Actor, target: State) -> frozenset[State]:
    """States from which ``actor`` may move a job to ``target`` (the CAS ``WHERE`` clause)."""
    return frozenset(s for s in State if target in TRANSITIONS[(s, actor)])


def check_moves(actor: Actor, moves: Mapping[State, State]) -> None:
    """Raise ``ValueError`` when a planned move is not in the table: a programming error."""
    for source, target in moves.items():
        if target not in TRANSITIONS[(source, actor)]:
            raise ValueError(f"transition {source} -> {target} by {actor} is not in the table")
