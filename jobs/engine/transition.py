"""The one function through which every job state change goes.

:func:`transition` checks the planned moves against :data:`jobs.engine.state.TRANSITIONS`, then
writes them with one compare-and-set statement (``job_transition`` in ``sql/queries.sql``): the job
rows are locked, only rows whose current state is a planned source (and, when fenced, whose current
attempt is the writer) move, and the event (a notice, for a job with an origin) and the end of the
previous attempt are written in the same statement. Rows that did not move are returned as such;
callers turn them into typed errors. Writes from an attempt that lost its lease become ``ignored``
events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from typing import Any

from jobs.engine import observe
from jobs.engine.db import Conn
from jobs.engine.queries import q, q_with_sets
from jobs.engine.state import LIVE, TERMINAL, Actor, State, check_moves, sources
from jobs.engine.views import Fence, Move, Moved, Row
from jobs.secrets import scrub, scrub_data

# The state sets the statement needs (who holds a lease, what is finished), from the table.
_LIVE = sorted(s.value for s in LIVE)
_TERMINAL = sorted(s.value for s in TERMINAL)

KEEP_REASON = "@keep"
"""A move reason meaning "keep the job's current reason" (e.g. the cancel reason)."""


async def transition(
    conn: Conn,
    *,
    actor: Actor,
    moves: Sequence[Move],
    rows: Sequence[Row],
    fence: Fence,
    nominal: State,
    cancel_by: str | None = None,
    cancel_reason: str | None = None,
    data: dict[str, Any] | None = None,
) -> list[Moved]:
    """Move ``rows`` along ``moves`` as ``actor``, atomically, and say which moved.

    Args:
        conn: a connection; the statement is atomic on its own, callers may wrap a transaction.
        actor: who causes the change; every move must be in the table for this actor.
        moves: the edges allowed for this request, at most one per source state.
        rows: the jobs, with the writer's attempt, reason, result, error and next ``run_at``.
        fence: ``attempt`` to accept only the current attempt's writes, ``claim`` when the row's
            attempt takes the lease, ``none`` otherwise.
        nominal: the target named in an ``ignored`` event when a fenced write is refused.
        cancel_by: who asked to cancel (recorded once, on the job).
        cancel_reason: why (recorded once, on the job).
        data: extra evidence stored on every event written.

    Raises:
        ValueError: a move is not in the transition table (a programming error).
    """
    check_moves(actor, {m.source: m.target for m in moves})
    if len({m.source for m in moves}) != len(moves):
        raise ValueError("at most one move per source state")
    if not rows:
        return []
    # Every job record goes through here: a configured secret (a provider's error echoing the
    # API key) is masked by value whatever the writer did. Patterns are applied where text is
    # made (errors), not to results, which may legitimately look like "token: ...".
    rows = [
        replace(
            r,
            reason=scrub(r.reason, patterns=False) if r.reason else r.reason,
            result=scrub_data(r.result, patterns=False),
            error=scrub_data(r.error, patterns=False),
        )
        if r.reason or r.result is not None or r.error is not None
        else r  # nothing to mask (most ends of a batch): no copy
        for r in rows
    ]
    records = await conn.fetch(
        q("job_transition"),
        [r.job_id for r in rows],
        [r.attempt_id for r in rows],
        [r.reason for r in rows],
        [r.result for r in rows],
        [r.error for r in rows],
        [r.run_at for r in rows],
        [m.source.value for m in moves],
        [m.target.value for m in moves],
        actor.value,
        fence,
        [m.reason for m in moves],
        [m.outcome for m in moves],
        cancel_by,
        cancel_reason,
        data,
        nominal.value,
        _LIVE,
        _TERMINAL,
        [m.charge for m in moves],
    )
    result = [
        Moved(
            job_id=r["id"],
            source=State(r["from_state"]),
            target=State(r["to_state"]) if r["to_state"] is not None else None,
            record=dict(r),
        )
        for r in records
    ]
    observe.transitions_written(actor, fence, moves, result)
    return result


CLAIM = Move(State.QUEUED, State.RUNNING)
"""The one move of a claim (a worker takes a due job)."""


@cache
def _claim_sql() -> str:
    """``job_claim`` with the claimable states (from the table) written in as a constant."""
    return q_with_sets(
        "job_claim", claimable=(s.value for s in sources(Actor.WORKER, CLAIM.target))
    )


async def claim(
    conn: Conn,
    *,
    worker: str,
    limit: int,
    lease_seconds: float,
    kinds: Sequence[str] | None,
) -> list[Moved]:
    """Claim up to ``limit`` due jobs for ``worker`` in one statement (``job_claim``).

    The same rules as :func:`transition` with ``fence="claim"``: the move is checked against
    the table, the sources come from it, every moved job gets its event (a notice when it has
    an origin), in the statement that locks the jobs (``SKIP LOCKED``) and opens their
    attempts. Without BEGIN/COMMIT: one round trip from the claim to the rows to dispatch.
    """
    check_moves(Actor.WORKER, {CLAIM.source: CLAIM.target})
    records = await conn.fetch(
        _claim_sql(),
        worker,
        lease_seconds,
        limit,
        list(kinds) if kinds is not None else None,
    )
    result = [
        Moved(job_id=r["id"], source=State(r["from_state"]), target=CLAIM.target, record=dict(r))
        for r in records
    ]
    observe.transitions_written(Actor.WORKER, "claim", [CLAIM], result)
    return result


async def request_cancel(
    conn: Conn,
    public_id: str,
    *,
    actor: Actor,
    moves: Sequence[Move],
    cancel_by: str,
    cancel_reason: str,
) -> Moved | None:
    """Move one job (by public id) along ``moves`` as a cancel request, in one statement.

    ``job_cancel`` locks the job, moves it, ends its attempt when the move leaves the live
    states, records who asked and why, writes the event (a notice) and NOTIFYs the attempt.

    Returns:
        None for an unknown job; else the job as it now is (``record``: the full row) and
        whether it moved.
    """
    check_moves(actor, {m.source: m.target for m in moves})
    if len({m.source for m in moves}) != len(moves):
        raise ValueError("at most one move per source state")
    # The reason is a person's text: a configured secret pasted into it is masked by value.
    record = await conn.fetchrow(
        q("job_cancel"),
        public_id,
        [m.source.value for m in moves],
        [m.target.value for m in moves],
        [scrub(m.reason, patterns=False) if m.reason else m.reason for m in moves],
        [m.outcome for m in moves],
        actor.value,
        cancel_by,
        scrub(cancel_reason, patterns=False),
        _LIVE,
        _TERMINAL,
    )
    if record is None:
        return None
    row = dict(record)
    moved = Moved(
        job_id=row["id"],
        source=State(row["from_state"]),
        target=State(row["state"]) if row["moved"] else None,
        record=row,
    )
    observe.transitions_written(actor, "none", moves, [moved])
    return moved
