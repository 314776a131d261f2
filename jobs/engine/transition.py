"""The one place a job's state changes: a claim, or a transition by a policy.

:func:`transition` writes the rows along a :class:`~jobs.engine.moves.Policy` (checked against
:data:`jobs.engine.state.TRANSITIONS` when the policy was made) with one compare-and-set
statement, ``job_transition``: the job rows are locked, only rows whose current state is a
source of the policy (and, when fenced, whose current attempt is the writer) move, and the
event (a notice, for a job with an origin) and the end of the previous attempt are written in
the same statement. Rows that did not move come back as such; callers turn them into typed
errors. Writes from an attempt that lost its lease become ``ignored`` events. A job that ended
cancelled or failed reads no answer: its open questions close here too, whoever moved it.

:func:`claim` is the other write: ``queued -> running`` for due jobs, with their attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobs.engine import observe
from jobs.engine.db import Conn
from jobs.engine.line import Fairness, KindCaps, LoneClaims
from jobs.engine.mail import QuestionStatus
from jobs.engine.moves import CancelRequest, Moved, Policy, Row
from jobs.engine.queries import engine_queries
from jobs.engine.state import Actor, State, check_moves
from jobs.engine.views import Claim
from jobs.secrets import scrub, scrub_data


async def transition(
    conn: Conn,
    policy: Policy,
    rows: Sequence[Row],
    *,
    cancel: CancelRequest | None = None,
    data: dict[str, Any] | None = None,
    closing: str | None = None,
) -> list[Moved]:
    """Move ``rows`` along ``policy``, atomically, and say which moved; then close the open
    questions of the jobs that ended cancelled or failed (:func:`close_questions`: in the
    caller's transaction, or just after the move when it has none).

    Args:
        conn: a connection; the statement is atomic on its own, callers may wrap a transaction.
            A row a claim raced comes back :attr:`~jobs.engine.moves.Moved.raced`, not moved.
        policy: who moves the jobs, along which edges, under which fence.
        rows: the jobs, with the writer's attempt, reason, result, error and next ``run_at``.
        cancel: who asked to stop the jobs and why (recorded once, on each job).
        data: extra evidence stored on every event written.
        closing: why those questions close, when not the end itself ("the job was cancelled",
            "the job failed").
    """
    if not rows:
        return []
    moves = policy.moves
    # Every job record goes through here: a configured secret (a provider's error echoing the
    # API key) is masked by value whatever the writer did. Patterns are applied where text is
    # made (errors), not to results, which may legitimately look like "token: ...".
    records = await engine_queries().fetch(
        conn,
        "job_transition",
        job_ids=[r.job_id for r in rows],
        attempt_ids=[r.attempt_id for r in rows],
        reasons=[scrub(r.reason, patterns=False) if r.reason else r.reason for r in rows],
        results=[scrub_data(r.result, patterns=False) for r in rows],
        errors=[scrub_data(r.error, patterns=False) for r in rows],
        run_ats=[r.run_at for r in rows],
        from_states=[m.source.value for m in moves],
        to_states=[m.target.value for m in moves],
        move_reasons=[m.reason for m in moves],
        outcomes=[m.outcome for m in moves],
        charges=[m.charge for m in moves],
        actor=policy.actor.value,
        fence=policy.fence,
        nominal=policy.nominal.value,
        cancel_by=cancel.by if cancel else None,
        cancel_reason=scrub(cancel.reason, patterns=False) if cancel else None,
        data=data,
    )
    moved = [
        Moved(
            job_id=r["id"],
            source=State(r["from_state"]),
            target=State(r["to_state"]) if r["to_state"] is not None else None,
            public_id=r["public_id"],
            kind=r["kind"],
            since_due=r["since_due"],
            raced=r["raced"],
        )
        for r in records
    ]
    observe.transitions_written(policy, moved)
    for target, said in ENDS_THAT_CLOSE.items():
        if said is None:
            continue
        ended = [m.job_id for m in moved if m.target is target]
        await close_questions(
            conn,
            ended,
            status=QuestionStatus.CLOSED,
            reason=closing or said,
            # Not the worker: no handler closed them; the system did, as the job ended.
            actor=Actor.SYSTEM if policy.actor is Actor.WORKER else policy.actor,
        )
    return moved


ENDS_THAT_CLOSE: dict[State, str | None] = {
    State.CANCELLED: "the job was cancelled",
    State.FAILED: "the job failed",
    # A success closes nothing: its handler waited for its answers (one it did not wait for is
    # closed when someone answers it).
    State.SUCCEEDED: None,
    # Nobody knows how far it got: a resolve may run it again, and its question with it.
    State.UNKNOWN: None,
    # Not ended: a job queued again may ask the same question again (the same row answers).
    State.QUEUED: None,
    State.RUNNING: None,
    State.WAITING: None,
    State.CANCELLING: None,  # an answer is refused while it stops; its end closes them
}
"""For each state a move may end in, whether nobody will read an answer after it, and how a
question it closes says why (None: it closes none)."""


async def close_questions(
    conn: Conn,
    job_ids: Sequence[int],
    *,
    status: QuestionStatus,
    reason: str,
    actor: Actor,
    keys: Sequence[str | None] | None = None,
) -> int:
    """Close the open questions of ``job_ids`` (each job's question of the key at the same
    place in ``keys``, or all of them), each with its event; how many. Under the jobs' row
    locks when ``conn`` is in a transaction; without them an answer racing the close is still
    decided once, by the question's row (``status = 'open'``)."""
    if not job_ids:
        return 0
    closed = await engine_queries().fetch(
        conn,
        "question_close",
        job_ids=list(job_ids),
        keys=list(keys) if keys is not None else [None] * len(job_ids),
        status=status.value,
        reason=reason,
        actor=actor.value,
        attempt_id=None,
        question_id=None,
    )
    return len(closed)


async def claim(
    conn: Conn,
    *,
    worker: str,
    limit: int,
    lease_seconds: float,
    kinds: Sequence[str] | None,
    caps: Sequence[KindCaps] = (),
    fairness: Fairness | None = None,
    waiting_pid: int | None = None,
    unlist_at: int = 0,
    lone: LoneClaims | None = None,
) -> list[Claim]:
    """Claim up to ``limit`` due jobs for ``worker`` in one statement (``job_claim``), in the
    claim's order (priority, fair share, due time) and within every limit that applies.

    The same rules as :func:`transition`: the move is in the table (checked here), its sources
    come from it (``{claimable}``), every moved job gets its event (a notice when it has an
    origin) in the statement that locks the jobs (``SKIP LOCKED``) and opens their attempts.
    Without BEGIN/COMMIT: one round trip from the claim to the rows to dispatch. The worker's
    row in ``worker_waiting`` (``waiting_pid``) goes when at least ``unlist_at`` jobs moved.

    When ``lone`` is due and this caller declares no cap, ``job_claim_lone`` goes first: when
    no rule applies and one lane holds every queued job it may take, it takes what ``job_claim``
    would, at a fraction of the cost; otherwise it takes nothing, ``job_claim`` follows, and
    ``lone`` is told (it spares the next claims that second round trip for a while).

    Args:
        kinds: the kinds this worker runs (None: any); ``caps``: what some of them declare.
        fairness: the fleet's rules between requesters (default: by group, no cap).
    """
    check_moves(Actor.WORKER, {State.QUEUED: State.RUNNING})
    fair = fairness or Fairness()
    names = list(kinds) if kinds is not None else None
    common = {
        "worker": worker,
        "lease_seconds": lease_seconds,
        "limit": limit,
        "kinds": names,
        "waiting_pid": waiting_pid,
        "unlist_at": unlist_at,
    }
    records: list[Any] | None = None
    if lone is not None and lone.due() and not caps and fair.running_per_requester is None:
        records = await engine_queries().fetch(conn, "job_claim_lone", **common)
        if records and records[-1]["declined"]:
            lone.declined()
            records = None
    if records is None:
        declared = {c.kind: c for c in caps}
        records = await engine_queries().fetch(
            conn,
            "job_claim",
            **common,
            declared_caps=[_cap(declared, k, "concurrency") for k in names] if names else None,
            declared_rates=[_cap(declared, k, "starts_per_minute") for k in names]
            if names
            else None,
            per_requester=fair.running_per_requester,
            by_group=fair.by_group,
        )
    claims = [Claim.from_record(r) for r in records]
    observe.claimed(claims)
    return claims


def _cap(declared: dict[str, KindCaps], kind: str, field: str) -> int | None:
    found = declared.get(kind)
    return getattr(found, field) if found is not None else None
