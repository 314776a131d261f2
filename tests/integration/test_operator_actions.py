"""An operator's actions beyond one job's cancel and resolve (jobs/engine/store/operator.py):
a retry is a new job linked to the failed one, a bulk action moves exactly the jobs its filter
matches, and each is recorded naming the person; the fleet's processes and the overview's reads
return what the database holds."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from jobs.engine.state import Actor, State
from jobs.engine.store import JobStore, Submission
from jobs.engine.views import JobFilter
from jobs.errors import NotAllowed


async def failed(store: JobStore, pool: asyncpg.Pool, kind: str = "noop", n: int = 1) -> list[str]:
    """``n`` jobs of ``kind`` ended failed (written directly: how they failed does not matter)."""
    made = await store.submit_many(
        [Submission(kind, {}, "discord:1", {"transport": "t", "task": "t"}, "g1") for _ in range(n)]
    )
    ids = [public_id for public_id, _ in made]
    await pool.execute(
        "UPDATE job SET state = 'failed', finished_at = now(), reason = 'boom'"
        " WHERE public_id = ANY($1)",
        ids,
    )
    return ids


async def test_a_retry_is_a_new_job_linked_to_the_failed_one_and_names_the_operator(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    [old] = await failed(store, pool)
    new = await store.retry(old, by="ada@example.com")
    before = await store.get(old)
    assert new.state is State.QUEUED
    assert new.retry_of == before.id
    assert (new.kind, new.params, new.requester, new.origin) == (
        before.kind,
        before.params,
        before.requester,
        before.origin,
    )
    status = await store.status(new.public_id)
    [created] = status.events
    assert (created.actor, created.to_state, created.reason) == (
        "operator",
        State.QUEUED,
        f"retry of {old}",
    )
    assert created.data == {"by": "ada@example.com", "retry_of": old}
    assert (await store.get(old)).state is State.FAILED  # the old job keeps its end
    # Twice: the same retry, no second job.
    assert (await store.retry(old, by="bob")).public_id == new.public_id
    assert [j.public_id for j in await store.retries_of(before.id)] == [new.public_id]
    actions = await store.actions_on(before.id)
    assert [(a.by, a.action, a.detail) for a in actions] == [
        ("ada@example.com", "retry", {"new": new.public_id})
    ]


async def test_only_a_failed_job_is_retried(store: JobStore) -> None:
    job, _ = await store.submit("noop", {}, requester="r")
    with pytest.raises(NotAllowed, match="only a failed job"):
        await store.retry(job.public_id, by="ada")
    assert await store.count(JobFilter(), cap=10) == 1


async def test_an_operators_cancel_names_the_person_on_its_event(store: JobStore) -> None:
    job, _ = await store.submit("noop", {}, requester="r")
    await store.cancel(job.public_id, actor=Actor.OPERATOR, by="ada")
    [_, cancelled] = (await store.status(job.public_id)).events
    assert (cancelled.actor, cancelled.to_state, cancelled.data) == (
        "operator",
        State.CANCELLED,
        {"by": "ada"},
    )


async def test_a_bulk_cancel_moves_exactly_the_jobs_its_filter_matches(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    sleeps = await store.submit_many([Submission("sleep", {"seconds": 5}, "r") for _ in range(5)])
    noops = await store.submit_many([Submission("noop", {}, "r") for _ in range(3)])
    done = await failed(store, pool, "sleep")
    where = JobFilter(kind="sleep")
    assert await store.count(where, cap=100) == 6
    outcome = await store.cancel_matching(where, by="ada")
    assert (outcome.matched, outcome.changed) == (5, 5)  # the failed one is not cancellable
    states = dict(await pool.fetch("SELECT public_id, state::text FROM job"))
    assert {states[p] for p, _ in sleeps} == {"cancelled"}
    assert {states[p] for p, _ in noops} == {"queued"}
    assert states[done[0]] == "failed"
    data = await pool.fetch("SELECT data FROM event WHERE to_state = 'cancelled' ORDER BY job_id")
    assert [d["data"] for d in data] == [{"by": "ada", "bulk": True}] * 5
    [action] = await store.actions()
    assert (action.by, action.action) == ("ada", "bulk_cancel")
    assert action.detail["matched"] == 5
    assert action.detail["filter"]["kind"] == "sleep"


async def test_a_bulk_retry_retries_the_failed_jobs_of_the_filter_once(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    sleeps = await failed(store, pool, "sleep", 3)
    await failed(store, pool, "noop", 2)
    outcome = await store.retry_matching(JobFilter(kind="sleep"), by="ada")
    assert (outcome.matched, outcome.changed) == (3, 3)
    linked = await pool.fetch(
        "SELECT o.public_id FROM job n JOIN job o ON o.id = n.retry_of ORDER BY o.public_id"
    )
    assert [r[0] for r in linked] == sorted(sleeps)
    again = await store.retry_matching(JobFilter(kind="sleep"), by="ada")
    assert (again.matched, again.changed) == (3, 0)  # each retried once
    assert await pool.fetchval("SELECT count(*) FROM job WHERE retry_of IS NOT NULL") == 3
    # A filter asking for other states retries nothing.
    nothing = await store.retry_matching(JobFilter(states=(State.QUEUED,)), by="ada")
    assert (nothing.matched, nothing.changed) == (0, 0)


async def test_pausing_and_resuming_a_kind_is_recorded_with_who(store: JobStore) -> None:
    await store.pause("sleep", by="ada")
    await store.resume("sleep", by="bob")
    actions = await store.actions()
    assert [(a.by, a.action, a.kind) for a in actions] == [
        ("bob", "resume", "sleep"),
        ("ada", "pause", "sleep"),
    ]
    [line] = [k for k in await store.kind_lines() if k.kind == "sleep"]
    assert not line.paused


async def test_the_fleet_shows_each_process_with_its_heartbeat_until_it_goes(
    store: JobStore,
) -> None:
    await store.process_seen("h:1:a", ["worker"], {})
    await store.process_seen("h:2:b", ["bot"], {"shards": [0, 1], "shard_count": 4})
    await store.process_seen("h:1:a", ["worker"], {})
    seen = {p.name: p for p in await store.processes()}
    assert set(seen) == {"h:1:a", "h:2:b"}
    assert seen["h:2:b"].detail == {"shards": [0, 1], "shard_count": 4}
    assert seen["h:1:a"].seen_seconds_ago < 5
    await store.process_gone("h:1:a")
    assert [p.name for p in await store.processes()] == ["h:2:b"]


async def test_failure_rates_and_the_backlog_read_what_the_database_holds(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    await failed(store, pool, "sleep", 1)
    ok = await store.submit_many([Submission("sleep", {"seconds": 1}, "r") for _ in range(3)])
    await pool.execute(
        "UPDATE job SET state = 'succeeded', finished_at = now() WHERE public_id = ANY($1)",
        [p for p, _ in ok],
    )
    rates = await store.failure_rates(["sleep", "noop"])
    assert rates == {"sleep": 0.25}
    backlog = await store.backlog()
    assert backlog.pending == 1  # the failed job's creation notice (it has an origin)
    assert backlog.dead == 0


async def test_two_operators_retrying_one_job_at_once_make_one_new_job(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """The old job's row lock orders them; the second finds the retry's key taken and gets the
    first one's job."""
    [old] = await failed(store, pool)
    for _ in range(20):
        first, second = await asyncio.gather(store.retry(old, by="ada"), store.retry(old, by="bob"))
        assert first.public_id == second.public_id
    assert await pool.fetchval("SELECT count(*) FROM job WHERE retry_of IS NOT NULL") == 1
    assert await pool.fetchval("SELECT count(*) FROM operator_action") == 1


async def test_a_bulk_cancel_racing_claims_leaves_every_job_truthfully_moved(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A bulk cancel and claims at once, as docs/state-machine.md's race table says: a job the
    claim took first is cancelling (its attempt told), one the cancel took first is cancelled
    with no attempt, and none is left cancelled with an attempt open."""
    await store.submit_many([Submission("sleep", {"seconds": 60}, "r") for _ in range(300)])

    async def claims() -> int:
        taken = 0
        for _ in range(6):
            taken += len(await store.claim("w", limit=25, lease_seconds=30))
            await asyncio.sleep(0)
        return taken

    before = len(await store.claim("w", limit=50, lease_seconds=30))  # running before it
    outcome, taken = await asyncio.gather(
        store.cancel_matching(JobFilter(kind="sleep"), by="ada"), claims()
    )
    taken += before
    states = dict(await pool.fetch("SELECT state::text, count(*) FROM job GROUP BY state"))
    # Every job was queued or running when the filter read it, and each moved: a claimed one
    # to cancelling, the others to cancelled, none left running.
    assert (outcome.matched, outcome.changed) == (300, 300)
    assert set(states) <= {"cancelled", "cancelling"}
    assert before <= states.get("cancelling", 0) <= taken
    open_under_cancelled = await pool.fetchval(
        "SELECT count(*) FROM job j JOIN attempt a ON a.job_id = j.id"
        " WHERE j.state = 'cancelled' AND a.ended_at IS NULL"
    )
    assert open_under_cancelled == 0
