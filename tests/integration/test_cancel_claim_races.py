"""A cancel racing a claim (docs/state-machine.md, "A cancel racing a claim").

The race that once lost cancels: the claim's commit lands while the cancel waits for the job's
row. Each test here forces that order: the claim's transaction is held open on a connection of
its own, the cancel is started and seen waiting for the row (``pg_blocking_pids``), and only
then does the claim commit. A cancel must then answer truthfully (``cancelling`` for a plain
cancel of the job the claim just started, ``cancelled`` for a forced one), never raise a raw
database error, and a job that ended must have no attempt left open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import asyncpg
import pytest

from jobs.engine.db import Conn
from jobs.engine.moves import CancelOutcome, CancelResult
from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.engine.store.operator import BulkOutcome
from jobs.engine.transition import claim
from jobs.engine.views import Claim, JobFilter
from tests.support.polling import poll
from tests.support.rows import moves

HELD_RACES = 300


async def _cancel(store: JobStore, public_id: str, *, force: bool) -> CancelOutcome:
    actor = Actor.OPERATOR if force else Actor.REQUESTER
    return await store.cancel(public_id, actor=actor, by="racer", reason="race", force=force)


async def _open_attempts(pool: asyncpg.Pool, job_id: int) -> list[int]:
    rows = await pool.fetch(
        "SELECT id FROM attempt WHERE job_id = $1 AND ended_at IS NULL ORDER BY id", job_id
    )
    return [r["id"] for r in rows]


async def _held_race(
    store: JobStore,
    pool: asyncpg.Pool,
    claimer: Conn,
    *,
    force: bool,
    bulk: bool = False,
) -> tuple[int, Claim, CancelOutcome | BulkOutcome]:
    """One race with its order forced: the claim holds the row, the cancel (of the job, or
    ``bulk`` of every sleep job) waits for it, then the claim commits. Returns the job's id,
    the claim and the cancel's answer."""
    job, _ = await store.submit("sleep", {"seconds": 60}, requester="r", origin={"t": 1})
    tx = claimer.transaction()
    await tx.start()
    try:
        [claimed] = await claim(claimer, worker="w", limit=1, lease_seconds=30, kinds=None)
        cancelling: Awaitable[CancelOutcome | BulkOutcome] = (
            store.cancel_matching(JobFilter(kind="sleep"), by="ada", force=force)
            if bulk
            else _cancel(store, job.public_id, force=force)
        )
        cancel = asyncio.ensure_future(cancelling)
        pid = claimer.get_server_pid()

        async def cancel_waits_for_the_claim() -> bool:
            assert not cancel.done(), "the cancel did not wait for the claim's row lock"
            return bool(
                await pool.fetchval(
                    "SELECT EXISTS (SELECT 1 FROM pg_stat_activity "
                    "WHERE $1 = ANY(pg_blocking_pids(pid)))",
                    pid,
                )
            )

        await poll(cancel_waits_for_the_claim, within=10, every=0.002)
    except BaseException:
        await tx.rollback()
        raise
    await tx.commit()
    return job.id, claimed, await asyncio.wait_for(cancel, 10)


@pytest.mark.parametrize("force", [False, True], ids=["cancel", "force"])
async def test_a_claim_committing_while_the_cancel_waits_is_seen_by_the_cancel(
    store: JobStore, pool: asyncpg.Pool, force: bool
) -> None:
    """The cancel sees the claim's attempt: a plain cancel answers ``cancelling`` and the
    attempt is told to stop; a forced one answers ``cancelled`` and ends (revokes) the attempt.
    Either way the history is queued -> running -> the cancel's move, one event each."""
    async with pool.acquire() as claimer:
        job_id, claimed, answer = await _held_race(store, pool, claimer, force=force)
    assert isinstance(answer, CancelOutcome)
    job = await store.get(answer.job.public_id)
    attempts = await pool.fetch(
        "SELECT id, ended_at IS NOT NULL AS ended, outcome FROM attempt WHERE job_id = $1",
        job_id,
    )
    if force:
        assert (answer.outcome, answer.changed) == (CancelResult.CANCELLED, True)
        assert job.state.value == "cancelled"
        assert [(a["id"], a["ended"], a["outcome"]) for a in attempts] == [
            (claimed.attempt_id, True, "revoked")
        ]
        assert await moves(pool, job_id) == [
            (None, "queued"),
            ("queued", "running"),
            ("running", "cancelled"),
        ]
    else:
        assert (answer.outcome, answer.changed) == (CancelResult.CANCELLING, True)
        assert job.state.value == "cancelling"
        assert job.current_attempt_id == claimed.attempt_id
        assert [(a["id"], a["ended"]) for a in attempts] == [(claimed.attempt_id, False)]
        # The attempt learns of the cancel from its heartbeat even when the NOTIFY was missed.
        assert await store.heartbeat("w", 30, [claimed.attempt_id]) == {
            claimed.attempt_id: "cancelling"
        }
        assert await moves(pool, job_id) == [
            (None, "queued"),
            ("queued", "running"),
            ("running", "cancelling"),
        ]
    assert answer.job.state is job.state  # the answer shows the job as the cancel left it


@pytest.mark.parametrize("force", [False, True], ids=["cancel", "force"])
async def test_three_hundred_held_races_each_answer_truthfully(
    store: JobStore, pool: asyncpg.Pool, force: bool
) -> None:
    """300 races, each with the claim's commit landing while the cancel waits for the row:
    every cancel answers what it did, none raises, and no ended job keeps an open attempt."""
    answers: dict[CancelResult, int] = {}
    async with pool.acquire() as claimer:
        for _ in range(HELD_RACES):
            job_id, claimed, answer = await _held_race(store, pool, claimer, force=force)
            assert isinstance(answer, CancelOutcome)
            answers[answer.outcome] = answers.get(answer.outcome, 0) + 1
            state = await pool.fetchval("SELECT state::text FROM job WHERE id = $1", job_id)
            assert state == answer.outcome.value  # cancelling or cancelled, as answered
            expected_open = [] if force else [claimed.attempt_id]
            assert await _open_attempts(pool, job_id) == expected_open
    expected = CancelResult.CANCELLED if force else CancelResult.CANCELLING
    assert answers == {expected: HELD_RACES}


@pytest.mark.parametrize("force", [False, True], ids=["cancel", "force"])
async def test_a_bulk_cancel_the_claim_raced_moves_the_job_on_the_locked_path(
    store: JobStore, pool: asyncpg.Pool, force: bool
) -> None:
    """A bulk cancel's one statement finds the job the claim committed under it (raced), so it
    cancels that job again on its own: it counts as changed, and ends as a cancel of a running
    job does (cancelling with its attempt told, or forced: cancelled with it ended)."""
    async with pool.acquire() as claimer:
        job_id, claimed, answer = await _held_race(store, pool, claimer, force=force, bulk=True)
    assert isinstance(answer, BulkOutcome)
    assert (answer.matched, answer.changed) == (1, 1)
    state = await pool.fetchval("SELECT state::text FROM job WHERE id = $1", job_id)
    assert state == ("cancelled" if force else "cancelling")
    assert await _open_attempts(pool, job_id) == ([] if force else [claimed.attempt_id])
    final = "cancelled" if force else "cancelling"
    assert await moves(pool, job_id) == [
        (None, "queued"),
        ("queued", "running"),
        ("running", final),
    ]


@pytest.mark.parametrize("force", [False, True], ids=["cancel", "force"])
async def test_three_hundred_free_races_each_answer_truthfully(
    store: JobStore, pool: asyncpg.Pool, force: bool
) -> None:
    """The issue's reproduction: submit, then a claim and a cancel at once on two pool
    connections, 300 times. Whichever wins, the cancel's answer matches what the claim got and
    what the job now is, no raw database error reaches either caller, and a job that ended
    keeps no attempt open."""
    seen: set[tuple[bool, CancelResult]] = set()
    for _ in range(HELD_RACES):
        job, _ = await store.submit("sleep", {"seconds": 60}, requester="r", origin={"t": 1})
        claims, answer = await asyncio.gather(
            store.claim("w", limit=1, lease_seconds=30), _cancel(store, job.public_id, force=force)
        )
        claimed = [c.attempt_id for c in claims if c.job_id == job.id]
        seen.add((bool(claimed), answer.outcome))
        state = await pool.fetchval("SELECT state::text FROM job WHERE id = $1", job.id)
        assert state == answer.outcome.value
        open_attempts = await _open_attempts(pool, job.id)
        if state == "cancelling":
            assert open_attempts == claimed != []
        else:
            assert open_attempts == []
    if force:
        assert seen <= {(True, CancelResult.CANCELLED), (False, CancelResult.CANCELLED)}
    else:
        # Claimed first: the running job is told to stop; cancelled first: nothing to claim.
        assert seen <= {(True, CancelResult.CANCELLING), (False, CancelResult.CANCELLED)}
