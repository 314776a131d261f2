"""The claim's order and limits (docs/state-machine.md, "The claim's order"): priority first,
then fair share between requesters, then due time; paused kinds wait; a kind's cap and a
requester's cap hold across claims made at once."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from jobs.engine.line import Fairness
from jobs.engine.queries import engine_queries
from jobs.engine.state import Actor
from jobs.engine.store import JobStore, Submission
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


async def test_a_high_priority_job_behind_a_thousand_low_ones_is_claimed_next(
    store: JobStore,
) -> None:
    """1,000 jobs at priority -5 queued first; one at 5 after them: the next claim takes it."""
    await store.submit_many([Submission("noop", {}, "alice", priority=-5) for _ in range(1000)])
    urgent, _ = await store.submit("noop", {}, requester="alice", priority=5)
    [first] = await store.claim("w", limit=1, lease_seconds=30, kinds=["noop"])
    assert first.public_id == urgent.public_id
    # and the kind's own default sits between them
    normal, _ = await store.submit("noop", {}, requester="alice")
    assert (urgent.priority, normal.priority) == (5, 0)
    [second] = await store.claim("w", limit=1, lease_seconds=30, kinds=["noop"])
    assert second.public_id == normal.public_id


async def test_fair_share_takes_the_other_requester_first_whatever_the_backlog(
    store: JobStore,
) -> None:
    """Alice has 1,000 queued and 4 running; Bob submits one later: the next claim of one
    takes Bob's, and a claim of ten alternates them by how many each has running."""
    await store.submit_many([Submission("noop", {}, "alice") for _ in range(1000)])
    held = await store.claim("w", limit=4, lease_seconds=30, kinds=["noop"])
    assert len(held) == 4
    bob, _ = await store.submit("noop", {}, requester="bob")
    [first] = await store.claim("w", limit=1, lease_seconds=30, kinds=["noop"])
    assert first.public_id == bob.public_id
    await store.submit_many([Submission("noop", {}, "bob") for _ in range(20)])
    batch = await store.claim("w", limit=10, lease_seconds=30, kinds=["noop"])
    who = await _requesters(store, [c.public_id for c in batch])
    # Alice 4 running, Bob 1: Bob's next 3 come first, then they alternate, Alice first on a
    # tie (her jobs were due first): b b b a b a b a b a.
    assert (who.count("bob"), who.count("alice")) == (6, 4)


async def test_groups_share_before_their_requesters(store: JobStore) -> None:
    """Server A has two busy members, server B one: B's member gets half the slots."""
    rows = [
        Submission("noop", {}, who, origin_group=group)
        for _ in range(50)
        for who, group in (("a1", "A"), ("a2", "A"), ("b1", "B"))
    ]
    await store.submit_many(rows)
    batch = await store.claim("w", limit=12, lease_seconds=30, kinds=["noop"])
    who = await _requesters(store, [c.public_id for c in batch])
    assert (who.count("b1"), who.count("a1"), who.count("a2")) == (6, 3, 3)
    flat = await store.claim(
        "w", limit=12, lease_seconds=30, kinds=["noop"], fairness=Fairness(by_group=False)
    )
    who = await _requesters(store, [c.public_id for c in flat])
    # Without groups, requesters share alone: b1 (6 running) waits for a1 and a2 (3 each).
    assert (who.count("a1"), who.count("a2"), who.count("b1")) == (5, 5, 2)


async def test_a_kind_limit_holds_across_claims_made_at_once(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Six claimers at once, the kind capped at 3 by an operator: 3 run, never more; a freed
    slot goes to the next claim, and clearing the cap lets the rest go."""
    await store.submit_many([Submission("noop", {}, f"r{i % 5}") for i in range(40)])
    await store.set_limit("noop", 3)
    for _ in range(5):
        await asyncio.gather(
            *(store.claim(f"w{i}", limit=5, lease_seconds=30, kinds=["noop"]) for i in range(6))
        )
        assert await _running(pool) == 3
    job_id = await pool.fetchval("SELECT public_id FROM job WHERE state = 'running' LIMIT 1")
    await store.cancel(job_id, actor=Actor.OPERATOR, by="t", force=True)
    assert await _running(pool) == 2
    got = await store.claim("w", limit=5, lease_seconds=30, kinds=["noop"])
    assert (len(got), await _running(pool)) == (1, 3)
    await store.set_limit("noop", None)
    got = await store.claim("w", limit=50, lease_seconds=30, kinds=["noop"])
    assert len(got) == 36


async def test_one_lane_is_claimed_by_the_lone_statement_as_the_full_one_would(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """One requester's jobs, some not yet due: job_claim_lone takes the same jobs, in the same
    order, with the same attempts and events as job_claim, and store.claim goes that way."""
    later = datetime.now(UTC) + timedelta(hours=1)
    await store.submit_many(
        [Submission("noop", {}, "alice", origin={"transport": "t"}) for _ in range(8)]
        + [Submission("noop", {}, "alice", run_at=later) for _ in range(3)]
    )
    await store.submit("sleep", {}, requester="bob")  # a kind this claim does not run
    taken = {}
    for name in ("job_claim_lone", "job_claim"):
        async with pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            rows = await engine_queries().fetch(conn, name, **_claim_args(name, ["noop"], 5))
            events = await conn.fetch(
                "SELECT e.from_state, e.to_state, e.actor, e.notice_at IS NOT NULL AS notice,"
                " a.number, a.worker FROM event e JOIN attempt a ON a.id = e.attempt_id"
                " WHERE e.to_state = 'running' ORDER BY e.job_id"
            )
            await tx.rollback()
        taken[name] = ([r["public_id"] for r in rows], [tuple(e) for e in events])
    assert taken["job_claim_lone"] == taken["job_claim"]
    assert len(taken["job_claim"][0]) == 5
    assert taken["job_claim"][1][0] == ("queued", "running", "worker", True, 1, "w")

    claims = await store.claim("w", limit=20, lease_seconds=30, kinds=["noop"])
    assert len(claims) == 8
    assert store.lone_claims.due()  # it did not decline


async def test_the_lone_statement_declines_two_lanes_or_a_rule_and_changes_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A second lane (another requester, another priority) or a rule on a kind the worker runs
    (a limit, a rate, a pause): job_claim_lone takes nothing, leaves the worker's listing as
    waiting, and says so; store.claim then claims with job_claim, and tries the lone statement
    again only after a pause. A rule on a kind the worker does not run changes nothing."""
    await store.submit_many([Submission("noop", {}, "alice") for _ in range(3)])
    await pool.execute("INSERT INTO worker_waiting (pid, worker) VALUES (424242, 'w')")

    async def lone() -> list[bool]:
        rows = await engine_queries().fetch(pool, "job_claim_lone", **_claim_args("", ["noop"], 5))
        return [r["declined"] for r in rows]

    async def unchanged() -> None:
        assert await _running(pool) == 0
        assert await pool.fetchval("SELECT count(*) FROM worker_waiting") == 1

    await store.set_limit("sleep", 1)  # not a kind this claim runs
    async with pool.acquire() as conn:
        tx = conn.transaction()
        await tx.start()
        rows = await engine_queries().fetch(conn, "job_claim_lone", **_claim_args("", ["noop"], 5))
        assert [r["declined"] for r in rows] == [False] * 3
        await tx.rollback()
    for rule in ("limit", "rate", "pause"):
        if rule == "limit":
            await store.set_limit("noop", 10)
        elif rule == "rate":
            await store.set_rate("noop", 10)
        else:
            await store.pause("noop", by="t")
        assert await lone() == [True], rule
        await unchanged()
        await pool.execute("DELETE FROM kind_setting WHERE kind = 'noop'")
    for other in (Submission("noop", {}, "bob"), Submission("noop", {}, "alice", priority=3)):
        await store.submit_many([other])
        assert await lone() == [True]
        await unchanged()
        await pool.execute("DELETE FROM job WHERE requester = 'bob' OR priority = 3")

    await store.submit("noop", {}, requester="bob")
    claims = await store.claim("w", limit=2, lease_seconds=30, kinds=["noop"])
    who = await _requesters(store, [c.public_id for c in claims])
    assert sorted(who) == ["alice", "bob"]  # fair share, by job_claim
    assert not store.lone_claims.due()


def _claim_args(name: str, kinds: list[str], limit: int) -> dict[str, object]:
    """The parameters of job_claim_lone, and job_claim's extra ones (no cap, by group)."""
    args: dict[str, object] = {
        "worker": "w",
        "lease_seconds": 30.0,
        "limit": limit,
        "kinds": kinds,
        "waiting_pid": 424242,
        "unlist_at": 0,
    }
    if name == "job_claim":
        args |= {
            "declared_caps": [None] * len(kinds),
            "declared_rates": [None] * len(kinds),
            "per_requester": None,
            "by_group": True,
        }
    return args


async def test_a_declared_concurrency_is_the_cap_until_an_operator_sets_one(
    pool: asyncpg.Pool, registry: Registry
) -> None:
    """A kind declaring ``concurrency=2`` runs 2 at a time; ``kind limit`` overrides it."""
    capped = Registry()
    capped.add(dataclasses.replace(registry.get("noop"), concurrency=2))
    store = JobStore(pool, capped)
    await store.submit_many([Submission("noop", {}, "a") for _ in range(10)])
    await store.claim("w", limit=10, lease_seconds=30, kinds=["noop"])
    assert await _running(pool) == 2
    await store.set_limit("noop", 4)
    await store.claim("w", limit=10, lease_seconds=30, kinds=["noop"])
    assert await _running(pool) == 4
    [line] = await store.kind_lines(["noop"])
    assert (line.concurrency, line.declared_concurrency, line.operator_concurrency) == (4, 2, 4)
    assert line.throttled == "at its limit"


async def test_a_requester_cap_holds_across_kinds_and_claims(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """At most 2 running per requester, whatever the kind, with three claimers at once."""
    await store.submit_many(
        [Submission(k, {}, who) for k in ("noop", "sleep") for who in ("a", "b") for _ in range(5)]
    )
    fair = Fairness(running_per_requester=2)
    await asyncio.gather(
        *(
            store.claim(f"w{i}", limit=10, lease_seconds=30, kinds=["noop", "sleep"], fairness=fair)
            for i in range(3)
        )
    )
    rows = await pool.fetch(
        "SELECT requester, count(*) AS n FROM job WHERE state = 'running' GROUP BY requester"
    )
    assert {r["requester"]: r["n"] for r in rows} == {"a": 2, "b": 2}


async def test_a_paused_kind_waits_its_running_jobs_finish_and_it_runs_after_resume(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """Pause with one job running: it finishes, the queued ones stay queued and say why; after
    resume all of them run."""
    first, _ = await store.submit("sleep", {"seconds": 0.6}, requester="a")
    async with running_worker(store, registry, db_dsn, tmp_path):
        await job_reaches(store, first.public_id, {"running"})
        await store.pause("sleep", by="op")
        later = [
            (await store.submit("sleep", {"seconds": 0.1}, requester="a"))[0] for _ in range(3)
        ]
        await job_reaches(store, first.public_id, {"succeeded"})
        await asyncio.sleep(1.0)  # several claims' worth
        for job in later:
            assert (await store.get(job.public_id)).state.value == "queued"
        place = await store.place(later[-1])
        assert place is not None
        assert (place.why, place.starts_in) == ("paused", None)
        [line] = [k for k in await store.kind_lines() if k.kind == "sleep"]
        assert (line.paused, line.queued, line.throttled) == (True, 3, "paused")
        await store.resume("sleep", by="op")
        for job in later:
            await job_reaches(store, job.public_id, {"succeeded"})


async def test_fair_share_with_two_workers_starts_bob_within_one_run_of_a_free_slot(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """The acceptance line: Alice submits 500 demo jobs, then Bob 1, against 2 workers of
    concurrency 4 (8 slots, all Alice's). Bob's job starts within one job's run time of a slot
    coming free (a demo job here runs 0.4 s)."""
    run = 0.4
    params = {"steps": 1, "step_seconds": run}
    await store.submit_many([Submission("demo", params, "alice") for _ in range(500)])
    async with (
        running_worker(store, registry, db_dsn, tmp_path, concurrency=4),
        running_worker(store, registry, db_dsn, tmp_path, concurrency=4),
    ):
        await poll(lambda: _running(store.pool), until=lambda n: n == 8, within=10)
        submitted = time.monotonic()
        bob, _ = await store.submit("demo", params, requester="bob")
        started = await poll(
            lambda: store.get(bob.public_id), until=lambda j: j.started_at is not None
        )
        waited = time.monotonic() - submitted
        assert started.started_at is not None
        # Every slot was busy when Bob submitted: the first to free (within one run) is his.
        assert waited <= run + 0.35, waited
        ahead = await store.pool.fetchval(
            "SELECT count(*) FROM job WHERE requester = 'alice' AND started_at > $1",
            started.started_at,
        )
        assert ahead == 0 or ahead <= 8
        await job_reaches(store, bob.public_id, {"succeeded"})


async def test_a_delayed_job_waits_for_its_time_and_can_be_cancelled_before_it(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """``run_at`` two seconds ahead: it starts no earlier, and within a second after; one
    cancelled before its time never runs."""
    at = datetime.now(UTC) + timedelta(seconds=2)
    later, _ = await store.submit("noop", {}, requester="a", run_at=at)
    never, _ = await store.submit("noop", {}, requester="a", run_at=at)
    async with running_worker(store, registry, db_dsn, tmp_path):
        await store.cancel(never.public_id, by="a")
        done = await job_reaches(store, later.public_id, {"succeeded"})
        assert done.started_at is not None
        assert at <= done.started_at <= at + timedelta(seconds=1)
        await asyncio.sleep(0.3)
    gone = await store.get(never.public_id)
    assert (gone.state.value, gone.attempts, gone.started_at) == ("cancelled", 0, None)


async def _running(pool: asyncpg.Pool) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM job WHERE state = 'running'"))


async def _requesters(store: JobStore, public_ids: list[str]) -> list[str]:
    return [(await store.get(p)).requester for p in public_ids]
