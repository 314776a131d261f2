"""Outbox delivery leases are owned and fenced: a process that lost its lease records nothing,
and a sharded transport delivers only the jobs of its own partitions."""

from __future__ import annotations

import asyncio

import asyncpg

from jobs.engine.notices import Outbox
from jobs.engine.store import JobStore


async def test_a_process_that_lost_its_lease_cannot_record_the_delivery(
    pool: asyncpg.Pool, store: JobStore
) -> None:
    job, _ = await store.submit(
        "noop", {}, requester="alice", origin={"transport": "t", "partition": 0}
    )
    slow = Outbox(pool, "t", lease_seconds=0.2, owner="slow")
    fast = Outbox(pool, "t", lease_seconds=30, owner="fast")
    (row,) = await slow.claim(job.id)
    assert await fast.claim(job.id) == []  # leased: nobody else may take it
    await asyncio.sleep(0.3)  # the slow process stalls past its lease
    (taken,) = await fast.claim(job.id)
    assert taken.id == row.id
    assert taken.lease_token != row.lease_token
    assert await slow.done(row, "from-slow") is False
    assert await slow.failed(row, "late failure") is False
    await slow.release([row], 0)
    assert await fast.done(taken, "from-fast") is True
    stored = await pool.fetchrow(
        "SELECT external_id, delivered_at, dead_at, lease_owner FROM outbox WHERE id = $1", row.id
    )
    assert stored["external_id"] == "from-fast"
    assert stored["delivered_at"] is not None
    assert stored["dead_at"] is None
    assert stored["lease_owner"] == "fast"


async def test_a_lost_lease_cannot_dead_letter_a_row(pool: asyncpg.Pool, store: JobStore) -> None:
    job, _ = await store.submit("noop", {}, requester="alice", origin={"transport": "t"})
    slow = Outbox(pool, "t", lease_seconds=0.2, owner="slow", max_attempts=1)
    fast = Outbox(pool, "t", lease_seconds=30, owner="fast")
    (row,) = await slow.claim(job.id)
    await asyncio.sleep(0.3)
    (taken,) = await fast.claim(job.id)
    assert await slow.failed(row, "gave up") is False  # max attempts reached, but not its row
    assert await pool.fetchval("SELECT dead_at FROM outbox WHERE id = $1", row.id) is None
    assert await fast.done(taken, "ok") is True


async def test_a_sharded_transport_sees_only_its_partitions(
    pool: asyncpg.Pool, store: JobStore
) -> None:
    jobs = {}
    for partition in range(6):
        job, _ = await store.submit(
            "noop", {}, requester="alice", origin={"transport": "t", "partition": partition}
        )
        jobs[partition] = job.id
    dm_job, _ = await store.submit("noop", {}, requester="alice", origin={"transport": "t"})
    odd = Outbox(pool, "t", partition=(2, [1]))
    even = Outbox(pool, "t", partition=(2, [0]))
    everyone = Outbox(pool, "t")
    assert {d.job_id for d in await odd.due_jobs()} == {jobs[1], jobs[3], jobs[5]}
    # a job without a partition (a DM) belongs to partition 0, as DMs go to shard 0
    assert {d.job_id for d in await even.due_jobs()} == {jobs[0], jobs[2], jobs[4], dm_job.id}
    assert len(await everyone.due_jobs()) == 7
