"""A submit wakes a worker only when one waits for work (docs/state-machine.md, "Waking a
worker"): no NOTIFY while every worker is busy, a NOTIFY at once while one waits, and no job left
to the polling fallback when a worker lists itself as waiting while a submit is committing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from jobs.engine.ids import new_public_id
from jobs.engine.queries import engine_queries
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker

# Far beyond every wait below: a job these tests see start was woken, not found by a poll.
NO_POLL = {"poll_seconds": 60.0}


@asynccontextmanager
async def wake_ups(dsn: str) -> AsyncIterator[list[str]]:
    """The payloads of ``NOTIFY errand_job`` sent while the block runs, as they arrive."""
    got: list[str] = []
    conn = await asyncpg.connect(dsn)
    await conn.add_listener("errand_job", lambda *args: got.append(str(args[3])))
    try:
        yield got
    finally:
        await conn.close()


async def listed(pool: asyncpg.Pool) -> int:
    """How many workers are listed as waiting for work."""
    return int(await pool.fetchval("SELECT count(*) FROM worker_waiting"))


async def test_a_submit_while_every_worker_is_busy_sends_no_notify(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A worker whose one slot runs a job is not listed; a submit then sends no NOTIFY, and the
    job waits until the slot frees, when the worker claims it without being woken."""
    async with (
        running_worker(store, registry, db_dsn, tmp_path, concurrency=1, **NO_POLL),
        wake_ups(db_dsn) as woke,
    ):
        await poll(lambda: listed(pool), what="the idle worker listed as waiting")
        first, _ = await store.submit("sleep", {"seconds": 1.5}, requester="a")
        await job_reaches(store, first.public_id, {"running"})
        assert await listed(pool) == 0  # busy: its claim took the listing away
        woken_before = len(woke)
        assert woken_before == 1  # the first submit woke the waiting worker

        second, _ = await store.submit("noop", {}, requester="a")
        await asyncio.sleep(0.5)  # a NOTIFY would have arrived by now
        assert woke[woken_before:] == []
        assert (await store.get(second.public_id)).state.value == "queued"
        # The slot frees (the sleep ends about 1 s later), and the worker claims at once.
        await job_reaches(store, second.public_id, {"succeeded"}, within=5)


async def test_a_submit_while_a_worker_waits_wakes_it_at_once(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A worker with free slots that found nothing to claim is listed; each submit then wakes it
    and the job starts long before the polling fallback (60 s here) could have found it."""
    async with (
        running_worker(store, registry, db_dsn, tmp_path, **NO_POLL),
        wake_ups(db_dsn) as woke,
    ):
        for n in range(20):
            # Listed again after each wake-up, once its claim found the queue empty.
            await poll(lambda: listed(pool), what="the worker listed as waiting")
            submitted = time.monotonic()
            job, _ = await store.submit("noop", {}, requester="a")
            await job_reaches(store, job.public_id, {"succeeded"}, within=5)
            assert time.monotonic() - submitted < 2.0
            assert len(woke) == n + 1


async def test_a_job_committed_while_a_worker_lists_itself_is_claimed_without_a_poll(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The race, held open: a submit checks for waiting workers while the only worker is busy
    (none: no NOTIFY) and has not committed when the worker's slot frees, its claim finds nothing
    and it lists itself. The listing waits for the submit to commit, and the claim after it
    starts the job: no NOTIFY was sent for it, and no poll (60 s) found it."""
    async with (
        running_worker(store, registry, db_dsn, tmp_path, concurrency=1, **NO_POLL),
        wake_ups(db_dsn) as woke,
    ):
        await poll(lambda: listed(pool), what="the idle worker listed as waiting")
        busy, _ = await store.submit("sleep", {"seconds": 1.0}, requester="a")
        await job_reaches(store, busy.public_id, {"running"})
        woken_before = len(woke)

        public_id = new_public_id()
        async with pool.acquire() as conn:
            held = conn.transaction()
            await held.start()
            await engine_queries().fetchrow(
                conn,
                "job_insert",
                public_id=public_id,
                kind="noop",
                params={},
                requester="a",
                origin={},
                origin_group=None,
                idempotency_key=None,
                max_attempts=1,
                deadline_seconds=None,
                priority=0,
                run_at=None,
                traceparent=None,
            )
            # The sleep ends; the worker's claim cannot see the uncommitted job, and it lists
            # itself: the listing waits for the lock this submit holds (were it not to wait, the
            # listing would show, and the job would be left to the poll once committed).
            await poll(
                lambda: pool.fetchval(
                    "SELECT (SELECT count(*) FROM pg_locks"
                    "        WHERE locktype = 'advisory' AND NOT granted)"
                    "     + (SELECT count(*) FROM worker_waiting)"
                ),
                within=10,
                what="the worker listing itself while the submit is open",
            )
            # The slot is free; the worker's batched finish records the sleep's end soon after.
            await job_reaches(store, busy.public_id, {"succeeded"}, within=5)
            await held.commit()
            committed = time.monotonic()
        await job_reaches(store, public_id, {"succeeded"}, within=5)
        assert time.monotonic() - committed < 2.0
        assert woke[woken_before:] == []  # found by the claim after the listing, not woken


async def test_a_stopped_or_dead_worker_leaves_no_listing(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A worker that stops takes its listing away; a listing whose backend no longer exists (a
    worker that was killed) goes when another worker lists itself."""
    async with running_worker(store, registry, db_dsn, tmp_path):
        await poll(lambda: listed(pool), what="the worker listed as waiting")
    assert await listed(pool) == 0

    dead = await asyncpg.connect(db_dsn)
    dead_pid = dead.get_server_pid()
    await dead.close()
    await store.wait_for_jobs("gone", dead_pid)
    await poll(
        lambda: pool.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", dead_pid),
        until=lambda n: n == 0,
        what="the closed connection's backend gone",
    )
    async with running_worker(store, registry, db_dsn, tmp_path):
        await poll(
            lambda: pool.fetchval("SELECT array_agg(worker) FROM worker_waiting"),
            until=lambda workers: workers is not None and "gone" not in workers,
            what="only the live worker listed",
        )
