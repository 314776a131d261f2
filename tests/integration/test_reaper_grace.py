"""The reaper's grace, one rule at a time (docs/state-machine.md, "An outage longer than the
lease"): a periodic reaper reaps only a lease it watched run out, with the database there, for a
whole lease; a heartbeat that holds or has renewed a lease is never overtaken.

tests/ops/test_outage_grace.py proves the whole with real processes and real outages; here each
rule is driven directly, with time made to pass by moving an attempt's timestamps.
"""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from jobs.engine.queries import engine_queries
from jobs.engine.store import JobStore, ReaperWatch

LEASE = 2.0


@pytest.fixture(autouse=True)
async def _server_older_than_the_heartbeats(pool: asyncpg.Pool) -> None:
    """The heartbeats these tests move into the past stay after the server's start (before it,
    the attempt would be one lost to a restart)."""
    age = await pool.fetchval(
        "SELECT extract(epoch FROM now() - pg_postmaster_start_time())::float8"
    )
    await asyncio.sleep(max(0.0, 3.5 - age))


async def _claimed_and_silent(store: JobStore, pool: asyncpg.Pool) -> tuple[int, int]:
    """A job whose attempt (a 2 s lease) last heartbeated 3 s ago: its lease ran out."""
    job, _ = await store.submit("sleep", {"seconds": 60}, requester="r")
    [claim] = await store.claim("w", limit=1, lease_seconds=LEASE)
    await pool.execute(
        "UPDATE attempt SET heartbeat_at = now() - interval '3 s', "
        "lease_expires_at = now() - interval '1 s' WHERE id = $1",
        claim.attempt_id,
    )
    return job.id, claim.attempt_id


async def _rounds(store: JobStore, watch: ReaperWatch, seconds: float) -> dict[str, int]:
    """Reaper rounds 0.1 s apart for ``seconds``: what they did, together."""
    done: dict[str, int] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, n in (
            await store.reap(cancel_grace_seconds=60, retry_base=0, watch=watch)
        ).items():
            done[key] = done.get(key, 0) + n
        await asyncio.sleep(0.1)
    return done


async def _outcome(pool: asyncpg.Pool, attempt_id: int) -> str | None:
    value: str | None = await pool.fetchval("SELECT outcome FROM attempt WHERE id = $1", attempt_id)
    return value


async def test_a_reaper_that_just_started_watches_a_whole_lease_first(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """It has not seen the leases run out: an expired one is reaped one lease after its first
    round, and as a crash (``abandoned``), since it saw no outage."""
    _, attempt = await _claimed_and_silent(store, pool)
    watch = ReaperWatch(0.1)
    assert await _rounds(store, watch, LEASE - 0.8) == {}
    assert await _rounds(store, watch, 1.5) == {"retried": 1}
    assert await _outcome(pool, attempt) == "abandoned"


async def test_a_one_off_round_reaps_at_once(store: JobStore, pool: asyncpg.Pool) -> None:
    """Without a watch the caller vouches for the database: the lease is reaped as it stands."""
    _, attempt = await _claimed_and_silent(store, pool)
    assert await store.reap(cancel_grace_seconds=60, retry_base=0) == {"retried": 1}
    assert await _outcome(pool, attempt) == "abandoned"


async def test_a_gap_in_the_reapers_rounds_is_an_outage_it_did_not_see(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Rounds every 0.1 s, then none for longer than the reaper counts as lag: what ran out
    meanwhile gets a lease from the next round, and is then recorded as lost to the outage
    (``lease_lost``, not charged), not as a crash."""
    watch = ReaperWatch(0.1)
    assert await _rounds(store, watch, LEASE + 0.2) == {}  # it has watched for a lease
    job_id, attempt = await _claimed_and_silent(store, pool)
    await asyncio.sleep(watch.blind_after + 0.1)  # the gap: no round got through
    assert await _rounds(store, watch, LEASE - 0.8) == {}
    assert await _rounds(store, watch, 1.5) == {"retried": 1}
    assert await _outcome(pool, attempt) == "lease_lost"
    assert await pool.fetchval("SELECT failures FROM job WHERE id = $1", job_id) == 0


async def test_rounds_without_a_gap_reap_on_time(store: JobStore, pool: asyncpg.Pool) -> None:
    """A reaper that has watched without a gap for more than a lease reaps an expired lease in
    its next round."""
    watch = ReaperWatch(0.1)
    assert await _rounds(store, watch, LEASE + 0.2) == {}
    _, attempt = await _claimed_and_silent(store, pool)
    assert await store.reap(cancel_grace_seconds=60, retry_base=0, watch=watch) == {"retried": 1}
    assert await _outcome(pool, attempt) == "abandoned"


async def test_a_heartbeat_holding_the_attempt_is_not_overtaken(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """The reaper locks the attempt with its job: while a heartbeat holds the attempt it skips
    the job, and once the heartbeat commits the renewed lease no longer counts as run out."""
    _, attempt = await _claimed_and_silent(store, pool)
    async with pool.acquire() as beating, beating.transaction():
        verdicts = await engine_queries().fetch(
            beating, "attempt_heartbeat", worker="w", lease_seconds=30, attempt_ids=[attempt]
        )
        assert verdicts == []  # renewed, not yet committed
        assert await store.reap(cancel_grace_seconds=60, retry_base=0) == {}
    assert await store.reap(cancel_grace_seconds=60, retry_base=0) == {}
    assert await _outcome(pool, attempt) is None


async def test_a_reaper_statement_that_waited_through_an_outage_reaps_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """The round's locked statement reaches the database long after its first one (it hung in
    an outage): nothing is reaped in it, the grace runs from now."""
    _, attempt = await _claimed_and_silent(store, pool)

    async def expired(first_statement_ago: float) -> list[int]:
        async with pool.acquire() as conn, conn.transaction():
            rows = await engine_queries().fetch(
                conn,
                "job_expired_leases",
                limit=10,
                grace_from=None,
                outage_end=None,
                seen_at=await conn.fetchval(
                    "SELECT now() - make_interval(secs => $1)", first_statement_ago
                ),
                blind_after=1.1,
            )
        return [r["attempt_id"] for r in rows]

    assert await expired(10.0) == []
    assert await expired(0.0) == [attempt]  # the same statement, right after the round's first
