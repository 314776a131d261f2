"""Real concurrency on separate connections: cancel against complete, many rounds."""

from __future__ import annotations

import asyncio
import itertools

import asyncpg

from jobs.engine.moves import Finish
from jobs.engine.policy import COMPLETED_DESPITE_CANCEL
from jobs.engine.state import TRANSITIONS, Actor, State
from jobs.engine.store import JobStore
from jobs.errors import StaleTransition
from tests.support.rows import events

ROUNDS = 60


async def _round(store: JobStore, *, outcome: str, force: bool) -> tuple[str, str, int]:
    job, _ = await store.submit("sleep", {}, requester="a", origin={"t": 1})
    [claim] = await store.claim("w", limit=1, lease_seconds=30)
    actor = Actor.OPERATOR if force else Actor.REQUESTER

    async def finish() -> bool:
        try:
            await store.finish_one(
                Finish(
                    claim.job_id,
                    claim.attempt_id,
                    outcome,
                    result={"r": 1},
                    error={"type": "E", "message": "m"},
                )
            )
        except StaleTransition:
            return False
        return True

    cancel, finished = await asyncio.gather(
        store.cancel(job.public_id, actor=actor, by="x", force=force), finish()
    )
    final = await store.get(job.public_id)
    return cancel.outcome, f"{final.state.value}|{final.reason or ''}|{finished}", job.id


async def _check_history(pool: asyncpg.Pool, job_id: int) -> None:
    """Every change is a legal edge, has one event, and cancelled never becomes succeeded."""
    evs = await events(pool, job_id)
    changes = [e for e in evs if not e["ignored"]]
    for prev, nxt in itertools.pairwise(changes):
        assert prev["to_state"] == nxt["from_state"]
        assert (
            State(nxt["to_state"]) in TRANSITIONS[(State(nxt["from_state"]), Actor(nxt["actor"]))]
        )
    states = [e["to_state"] for e in changes]
    if "cancelled" in states:
        assert states[-1] == "cancelled"
    outbox = await pool.fetchval("SELECT count(*) FROM outbox WHERE job_id = $1", job_id)
    assert outbox == len(changes)


async def test_cancel_against_success(store: JobStore, pool: asyncpg.Pool) -> None:
    """Either the success committed first (cancel too late) or the cancel did (success still
    counts, 'completed despite cancel request'); both are seen, nothing else ever is."""
    seen = set()
    for _ in range(ROUNDS):
        cancel, final, job_id = await _round(store, outcome="succeeded", force=False)
        seen.add((cancel, final))
        await _check_history(pool, job_id)
    assert seen <= {
        ("too_late", "succeeded||True"),
        ("cancelling", f"succeeded|{COMPLETED_DESPITE_CANCEL}|True"),
    }


async def test_cancel_against_failure(store: JobStore, pool: asyncpg.Pool) -> None:
    """A failure racing a cancel: failed (cancel too late) or cancelled; never a retry."""
    seen = set()
    for _ in range(ROUNDS):
        cancel, final, job_id = await _round(store, outcome="failed", force=False)
        seen.add((cancel, final.split("|")[0]))
        await _check_history(pool, job_id)
    assert seen <= {("too_late", "failed"), ("cancelling", "cancelled")}


async def test_forced_cancel_against_success(store: JobStore, pool: asyncpg.Pool) -> None:
    """An operator's forced cancel racing a success: exactly one wins; a cancelled job never
    later reports success (the late result is an ignored event)."""
    seen = set()
    for _ in range(ROUNDS):
        cancel, final, job_id = await _round(store, outcome="succeeded", force=True)
        state, _, finished = final.split("|")
        seen.add((cancel, state, finished))
        await _check_history(pool, job_id)
        if state == "cancelled":
            ignored = [e for e in await events(pool, job_id) if e["ignored"]]
            assert [e["data"]["left_behind_result"] for e in ignored] == [{"r": 1}]
    assert seen <= {("too_late", "succeeded", "True"), ("cancelled", "cancelled", "False")}
