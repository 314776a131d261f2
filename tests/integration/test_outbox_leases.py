"""Outbox delivery leases are owned and fenced: a process that lost its lease records nothing,
a sharded transport delivers only the jobs of its own partitions, and a round reads the job
with the notices it leases."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from jobs.engine.notices import Outbox
from jobs.engine.state import State
from jobs.engine.store import JobStore, Submission
from jobs.errors import UnknownJob


async def test_a_process_that_lost_its_lease_cannot_record_the_delivery(
    pool: asyncpg.Pool, store: JobStore
) -> None:
    job, _ = await store.submit(
        "noop", {}, requester="alice", origin={"transport": "t", "partition": 0}
    )
    slow = Outbox(pool, "t", lease_seconds=0.2, owner="slow")
    fast = Outbox(pool, "t", lease_seconds=30, owner="fast")
    (row,) = (await slow.claim(job.id)).notices
    assert (await fast.claim(job.id)).notices == ()  # leased: nobody else may take it
    await asyncio.sleep(0.3)  # the slow process stalls past its lease
    (taken,) = (await fast.claim(job.id)).notices
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
    (row,) = (await slow.claim(job.id)).notices
    await asyncio.sleep(0.3)
    (taken,) = (await fast.claim(job.id)).notices
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


async def test_a_partition_that_is_no_number_belongs_to_zero_and_stops_no_poll(
    pool: asyncpg.Pool, store: JobStore
) -> None:
    """The poll filters on the job's typed partition (migration 0013): an origin whose partition
    is no integer is delivered by partition 0, and every other job is still polled."""
    odd, _ = await store.submit(
        "noop", {}, requester="a", origin={"transport": "t", "partition": 1}
    )
    junk, _ = await store.submit(
        "noop", {}, requester="a", origin={"transport": "t", "partition": "abc"}
    )
    other, _ = await store.submit("noop", {}, requester="a", origin={"transport": "elsewhere"})
    assert {d.job_id for d in await Outbox(pool, "t", partition=(2, [0])).due_jobs()} == {junk.id}
    assert {d.job_id for d in await Outbox(pool, "t", partition=(2, [1])).due_jobs()} == {odd.id}
    assert {d.job_id for d in await Outbox(pool, "t").due_jobs()} == {odd.id, junk.id}
    assert {d.job_id for d in await Outbox(pool, "elsewhere").due_jobs()} == {other.id}


async def test_every_way_a_job_is_made_writes_its_transport_and_partition(
    pool: asyncpg.Pool, store: JobStore
) -> None:
    """A submit, a bulk submit (one origin for the batch, and one per row) and an operator's
    retry each write the columns the poll filters on (migration 0025), as 0013's expressions
    read them from the origin."""
    one, _ = await store.submit(
        "noop", {}, requester="a", origin={"transport": "t", "partition": 3}
    )
    shared = {"transport": "t", "partition": 5}
    await store.submit_many([Submission("noop", {}, "a", shared) for _ in range(2)])
    await store.submit_many(
        [
            Submission("noop", {}, "a", {"transport": "t", "partition": "abc"}),
            Submission("noop", {}, "a", {"transport": "u", "partition": -2}),
            Submission("noop", {}, "a", None),
        ]
    )
    await pool.execute("UPDATE job SET state = 'failed', finished_at = now() WHERE id = $1", one.id)
    retried = await store.retry(one.public_id, by="ops")
    rows = await pool.fetch("SELECT origin, transport, partition FROM job ORDER BY id")
    assert [(r["transport"], r["partition"]) for r in rows] == [
        ("t", 3),
        ("t", 5),
        ("t", 5),
        ("t", 0),
        ("u", -2),
        (None, 0),
        ("t", 3),
    ]
    assert rows[-1]["origin"] == {"transport": "t", "partition": 3}
    assert {d.job_id for d in await Outbox(pool, "t", partition=(2, [1])).due_jobs()} >= {
        one.id,
        retried.id,
    }


async def test_a_round_reads_the_job_as_it_is_now_with_its_notices_in_one_statement(
    pool: asyncpg.Pool, store: JobStore
) -> None:
    """``claim`` leases the job's due notices and returns the job as it is now (state, counts,
    progress, what it left) with them; ``look`` reads the same job and leases nothing; a job
    that is gone is UnknownJob."""
    job, _ = await store.submit("noop", {}, requester="alice", origin={"transport": "t"})
    [claim] = await store.claim("w1", limit=1, lease_seconds=30)
    await store.set_progress(claim.job_id, claim.attempt_id, {"done": 1, "total": 2})
    await pool.execute(
        "INSERT INTO asset (job_id, attempt_id, name, size, data) VALUES ($1, $2, 'b.txt', 3,"
        " 'abc'), ($1, $2, 'a.md', 12, 'twelve bytes')",
        job.id,
        claim.attempt_id,
    )
    outbox = Outbox(pool, "t", owner="me")
    shown = await outbox.claim(job.id)
    assert [(n.from_state, n.to_state) for n in shown.notices] == [
        (None, State.QUEUED),
        (State.QUEUED, State.RUNNING),
    ]
    assert all(n.lease_token is not None and n.attempts == 1 for n in shown.notices)
    assert shown.job == await store.get(job.public_id)
    assert shown.job.state is State.RUNNING
    assert shown.job.attempts == 1
    assert shown.job.progress == {"done": 1, "total": 2}
    assert shown.assets == (("b.txt", 3), ("a.md", 12))  # in the order they were made

    looked = await outbox.look(job.id)
    assert looked.notices == ()
    assert looked.job == shown.job
    assert looked.assets == shown.assets
    leases = await pool.fetch(
        "SELECT lease_token, delivery_attempts FROM event WHERE job_id = $1 ORDER BY id", job.id
    )
    assert [(r["lease_token"], r["delivery_attempts"]) for r in leases] == [
        (n.lease_token, 1) for n in shown.notices
    ]
    assert (await outbox.claim(job.id)).notices == ()  # leased already

    await pool.execute("DELETE FROM job WHERE id = $1", job.id)
    with pytest.raises(UnknownJob):
        await outbox.claim(job.id)
    with pytest.raises(UnknownJob):
        await outbox.look(job.id)
