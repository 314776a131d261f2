"""The job record against real PostgreSQL: submit, claim, finish, cancel, reap, resolve."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers crashy, a kind whose crashes count)
from jobs.engine.moves import Finish, Moved
from jobs.engine.policy import COMPLETED_DESPITE_CANCEL
from jobs.engine.queries import engine_queries
from jobs.engine.state import Actor, State
from jobs.engine.store import JobStore, Submission
from jobs.engine.views import Claim
from jobs.errors import (
    IllegalTransition,
    InvalidParams,
    JobFailed,
    NotAllowed,
    StaleTransition,
    UnknownKind,
)
from jobs.runtime.context import Context
from tests.support.polling import poll
from tests.support.rows import events, expire_lease, moves, state
from tests.support.runtime import NoParams, job_reaches, noop, registry_of, running_worker

ORIGIN = {"transport": "test", "channel": "1"}


async def submit_and_claim(store: JobStore, kind: str = "sleep", worker: str = "w1") -> Claim:
    job, _ = await store.submit(kind, {}, requester="alice", origin=ORIGIN)
    [claim] = await store.claim(worker, limit=1, lease_seconds=30)
    assert claim.job_id == job.id
    return claim


async def test_submit_is_idempotent_on_its_key(store: JobStore, pool: asyncpg.Pool) -> None:
    """Repeating a submit with the same key returns the same job and creates nothing more."""
    first, created = await store.submit(
        "sleep", {"seconds": 1}, requester="a", idempotency_key="k1"
    )
    again, created_again = await store.submit(
        "sleep", {"seconds": 1}, requester="a", idempotency_key="k1"
    )
    assert (created, created_again) == (True, False)
    assert first.public_id == again.public_id
    assert await pool.fetchval("SELECT count(*) FROM job") == 1
    assert await moves(pool, first.id) == [(None, "queued")]


async def test_concurrent_idempotent_submits_make_one_job(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Twenty submits with one key on separate connections, at once: one job, one event."""
    results = await asyncio.gather(
        *(
            store.submit("sleep", {}, requester="a", idempotency_key="same", origin=ORIGIN)
            for _ in range(20)
        )
    )
    assert len({job.public_id for job, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert await pool.fetchval("SELECT count(*) FROM job") == 1
    assert await pool.fetchval("SELECT count(*) FROM event") == 1
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 1


async def test_bad_params_and_unknown_kind_create_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Invalid params and unknown kinds raise a clear error and leave no row."""
    with pytest.raises(InvalidParams, match="seconds"):
        await store.submit("sleep", {"seconds": "soon"}, requester="a")
    with pytest.raises(InvalidParams, match="bogus"):
        await store.submit("sleep", {"bogus": 1}, requester="a")
    with pytest.raises(UnknownKind, match="known kinds"):
        await store.submit("nope", {}, requester="a")
    assert await pool.fetchval("SELECT count(*) FROM job") == 0


async def test_public_ids_are_short_and_safe_to_type(store: JobStore) -> None:
    """Public ids have at most 12 characters, lowercase letters and digits without look-alikes."""
    for _ in range(20):
        job, _ = await store.submit("noop", {}, requester="a")
        assert len(job.public_id) <= 12
        assert not set(job.public_id) & set("01ilo")
        assert job.public_id.isalnum()
        assert job.public_id.islower()


async def test_concurrent_claims_never_share_a_job(store: JobStore, pool: asyncpg.Pool) -> None:
    """SKIP LOCKED: four claimers at once split 40 jobs without overlap."""
    for _ in range(40):
        await store.submit("noop", {}, requester="a")
    batches = await asyncio.gather(
        *(store.claim(f"w{i}", limit=15, lease_seconds=30) for i in range(4))
    )
    claimed = [c.job_id for batch in batches for c in batch]
    assert len(claimed) == len(set(claimed)) == 40
    assert await pool.fetchval("SELECT count(*) FROM attempt WHERE ended_at IS NULL") == 40
    assert await pool.fetchval("SELECT count(*) FROM job WHERE state = 'running'") == 40


async def test_claim_records_the_attempt_event_and_outbox(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A claim opens attempt 1 with a lease, makes it current and records queued -> running."""
    claim = await submit_and_claim(store)
    row = await pool.fetchrow("SELECT * FROM attempt WHERE id = $1", claim.attempt_id)
    assert (row["number"], row["worker"], row["ended_at"]) == (1, "w1", None)
    assert row["lease_expires_at"] > datetime.now(UTC) + timedelta(seconds=20)
    job = await store.get(claim.public_id)
    assert (job.state, job.current_attempt_id, job.attempts) == (State.RUNNING, claim.attempt_id, 1)
    assert await moves(pool, claim.job_id) == [(None, "queued"), ("queued", "running")]
    topics = await pool.fetch(
        "SELECT payload FROM outbox WHERE job_id = $1 ORDER BY id", claim.job_id
    )
    assert [t["payload"]["to"] for t in topics] == ["queued", "running"]


async def test_duplicate_success_is_ignored_with_evidence(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A second success report changes nothing and is recorded as an ignored event."""
    claim = await submit_and_claim(store)
    await store.finish_one(Finish(claim.job_id, claim.attempt_id, "succeeded", result={"n": 1}))
    with pytest.raises(StaleTransition):
        await store.finish_one(Finish(claim.job_id, claim.attempt_id, "succeeded", result={"n": 2}))
    job = await store.get(claim.public_id)
    assert (job.state, job.result) == (State.SUCCEEDED, {"n": 1})
    evs = await events(pool, claim.job_id)
    assert [(e["to_state"], e["ignored"]) for e in evs][-2:] == [
        ("succeeded", False),
        ("succeeded", True),
    ]
    assert evs[-1]["data"]["left_behind_result"] == {"n": 2}
    ended = await pool.fetchval("SELECT outcome FROM attempt WHERE id = $1", claim.attempt_id)
    assert ended == "succeeded"


async def test_late_failure_after_success_changes_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A failure reported after success is ignored; the job stays succeeded."""
    claim = await submit_and_claim(store)
    await store.finish_one(Finish(claim.job_id, claim.attempt_id, "succeeded", result={}))
    with pytest.raises(StaleTransition):
        await store.finish_one(
            Finish(claim.job_id, claim.attempt_id, "failed", error={"type": "X", "message": "late"})
        )
    assert await state(pool, claim.job_id) == "succeeded"
    last = (await events(pool, claim.job_id))[-1]
    assert (last["to_state"], last["ignored"], last["data"]["error"]["message"]) == (
        "failed",
        True,
        "late",
    )


async def test_a_heartbeat_does_not_wait_for_an_attempt_another_statement_is_ending(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A batched finish locks its jobs, then ends their attempts in an order of its own. A
    heartbeat that waited for one of those attempts while holding another closed a cycle (CI
    saw the deadlock). It skips the attempt being written, without calling it lost, renews the
    rest, and the writer goes on to the next attempt without waiting."""
    first = await submit_and_claim(store)
    second = await submit_and_claim(store)
    leases = "SELECT id, lease_expires_at FROM attempt WHERE id = ANY($1::bigint[])"
    end = "UPDATE attempt SET ended_at = now(), outcome = 'succeeded' WHERE id = $1"
    ids = [first.attempt_id, second.attempt_id]
    before = dict(await pool.fetch(leases, ids))
    async with pool.acquire() as writer:
        finish = writer.transaction()
        await finish.start()
        # What a finish does, one attempt after the other, inside its one statement.
        await writer.execute(end, second.attempt_id)
        verdicts = await asyncio.wait_for(store.heartbeat("w1", 60, ids), 5)
        await asyncio.wait_for(writer.execute(end, first.attempt_id), 5)
        after = dict(await pool.fetch(leases, ids))
        await finish.rollback()  # the finish failed: both attempts are still live
    assert verdicts == {}
    assert after[first.attempt_id] > before[first.attempt_id]  # renewed
    assert after[second.attempt_id] == before[second.attempt_id]  # skipped, not lost
    assert await store.heartbeat("w1", 60, ids) == {}
    assert dict(await pool.fetch(leases, ids))[second.attempt_id] > after[second.attempt_id]


async def test_stale_attempt_cannot_write_after_its_lease_was_taken_over(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Attempt 1 loses its lease; attempt 2 runs; nothing attempt 1 sends lands."""
    claim1 = await submit_and_claim(store)
    await expire_lease(pool, claim1.job_id)
    assert await store.reap(cancel_grace_seconds=10, retry_base=0) == {"retried": 1}
    [claim2] = await store.claim("w2", limit=1, lease_seconds=30)
    assert (claim2.job_id, claim2.attempt) == (claim1.job_id, 2)

    assert not await store.set_progress(claim1.job_id, claim1.attempt_id, {"done": 9})
    assert await store.heartbeat("w1", 30, [claim1.attempt_id]) == {claim1.attempt_id: "lost"}
    with pytest.raises(StaleTransition):
        await store.finish_one(
            Finish(claim1.job_id, claim1.attempt_id, "succeeded", result={"from": 1})
        )
    assert await store.set_progress(claim2.job_id, claim2.attempt_id, {"done": 1})
    await store.finish_one(
        Finish(claim2.job_id, claim2.attempt_id, "succeeded", result={"from": 2})
    )
    job = await store.get(claim1.public_id)
    assert (job.state, job.result, job.progress) == (State.SUCCEEDED, {"from": 2}, {"done": 1})
    outcomes = await pool.fetch(
        "SELECT number, outcome FROM attempt WHERE job_id = $1 ORDER BY number", claim1.job_id
    )
    assert [(r["number"], r["outcome"]) for r in outcomes] == [(1, "abandoned"), (2, "succeeded")]


async def test_repeated_cancellation_is_idempotent(store: JobStore, pool: asyncpg.Pool) -> None:
    """Cancel twice on queued and on running: one transition each, truthful answers."""
    queued, _ = await store.submit("sleep", {}, requester="a")
    first = await store.cancel(queued.public_id, by="a")
    second = await store.cancel(queued.public_id, by="a")
    assert (first.outcome, first.changed, first.job.state) == ("cancelled", True, State.CANCELLED)
    assert (second.outcome, second.changed) == ("too_late", False)
    assert await moves(pool, queued.id) == [(None, "queued"), ("queued", "cancelled")]

    claim = await submit_and_claim(store)
    first = await store.cancel(claim.public_id, by="a", reason="changed my mind")
    second = await store.cancel(claim.public_id, by="a")
    assert (first.outcome, first.job.state) == ("cancelling", State.CANCELLING)
    assert (second.outcome, second.changed) == ("already_cancelling", False)
    assert first.job.cancel_reason == "changed my mind"
    assert await store.heartbeat("w1", 30, [claim.attempt_id]) == {claim.attempt_id: "cancelling"}
    await store.finish_one(Finish(claim.job_id, claim.attempt_id, "cancelled"))
    job = await store.get(claim.public_id)
    assert (job.state, job.reason, job.cancel_requested_by) == (
        State.CANCELLED,
        "changed my mind",
        "a",
    )
    assert await moves(pool, claim.job_id) == [
        (None, "queued"),
        ("queued", "running"),
        ("running", "cancelling"),
        ("cancelling", "cancelled"),
    ]
    again = await store.cancel(claim.public_id, by="a")
    assert (again.outcome, again.changed) == ("too_late", False)


async def test_success_reported_while_cancelling_counts_with_a_reason(store: JobStore) -> None:
    """Race policy: the attempt succeeds before acknowledging the cancel -> succeeded."""
    claim = await submit_and_claim(store)
    await store.cancel(claim.public_id, by="a")
    await store.finish_one(Finish(claim.job_id, claim.attempt_id, "succeeded", result={"ok": 1}))
    job = await store.get(claim.public_id)
    assert (job.state, job.reason) == (State.SUCCEEDED, COMPLETED_DESPITE_CANCEL)


async def test_failure_or_retry_while_cancelling_ends_cancelled(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Race policy: a failure or retry request while cancelling -> cancelled, never queued."""
    for outcome in ("failed", "retry", "released"):
        claim = await submit_and_claim(store)
        await store.cancel(claim.public_id, by="a", reason="stop")
        await store.finish_one(
            Finish(
                claim.job_id,
                claim.attempt_id,
                outcome,
                error={"type": "E", "message": "boom"},
                run_at=datetime.now(UTC),
            )
        )
        job = await store.get(claim.public_id)
        assert (job.state, job.reason) == (State.CANCELLED, "stop")
        assert ("cancelling", "queued") not in await moves(pool, claim.job_id)


async def test_late_success_after_cancelled_is_left_behind(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A result arriving after the job was cancelled is kept as evidence, never reported."""
    claim = await submit_and_claim(store)
    await store.cancel(claim.public_id, actor=Actor.OPERATOR, by="op", force=True)
    with pytest.raises(StaleTransition):
        await store.finish_one(
            Finish(claim.job_id, claim.attempt_id, "succeeded", result={"late": True})
        )
    job = await store.get(claim.public_id)
    assert (job.state, job.result) == (State.CANCELLED, None)
    last = (await events(pool, claim.job_id))[-1]
    assert last["ignored"]
    assert last["data"]["left_behind_result"] == {"late": True}


async def test_reaper_routes_expired_leases_by_policy(store: JobStore, pool: asyncpg.Pool) -> None:
    """Expired leases: retry-safe with attempts left -> queued (backoff); effect in flight
    without lookup -> unknown; out of attempts -> failed; cancelling -> cancelled (forced)."""
    retry = await submit_and_claim(store)
    blind = await submit_and_claim(store)
    await pool.execute(
        "INSERT INTO effect (job_id, attempt_id, key, status, has_lookup) "
        "VALUES ($1, $2, 'charge', 'intent', false)",
        blind.job_id,
        blind.attempt_id,
    )
    cancelling = await submit_and_claim(store)
    await store.cancel(cancelling.public_id, by="a")
    last = await submit_and_claim(store, kind="crashy")  # a kind whose crashes count
    await pool.execute("UPDATE job SET max_attempts = 1 WHERE id = $1", last.job_id)
    for c in (retry, blind, cancelling, last):
        await expire_lease(pool, c.job_id)

    done = await store.reap(cancel_grace_seconds=60, retry_base=10)
    assert done == {"retried": 1, "unknown": 1, "cancel_forced": 1, "failed": 1}
    assert await store.reap(cancel_grace_seconds=60) == {}  # nothing twice
    r = await store.get(retry.public_id)
    assert r.state is State.QUEUED
    assert r.run_at <= datetime.now(UTC) + timedelta(seconds=11)
    assert (await store.get(blind.public_id)).state is State.UNKNOWN
    c = await store.get(cancelling.public_id)
    assert (c.state, c.reason) == (State.CANCELLED, "forced")
    f = await store.get(last.public_id)
    assert (f.state, f.reason) == (State.FAILED, "lease expired; no attempts left")
    assert await pool.fetchval("SELECT count(*) FROM attempt WHERE outcome = 'abandoned'") == 4


async def test_unacknowledged_cancel_is_forced_after_the_grace(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """No acknowledgement within the grace: lease revoked, cancelled, reason forced."""
    claim = await submit_and_claim(store)
    await store.cancel(claim.public_id, by="a")
    assert await store.reap(cancel_grace_seconds=60) == {}
    await pool.execute(
        "UPDATE job SET cancel_requested_at = now() - interval '61 s' WHERE id = $1", claim.job_id
    )
    assert await store.reap(cancel_grace_seconds=60) == {"cancel_forced": 1}
    job = await store.get(claim.public_id)
    assert (job.state, job.reason) == (State.CANCELLED, "forced")
    assert await store.heartbeat("w1", 30, [claim.attempt_id]) == {claim.attempt_id: "lost"}
    outcome = await pool.fetchval("SELECT outcome FROM attempt WHERE id = $1", claim.attempt_id)
    assert outcome == "revoked"


async def test_deadline_stops_jobs_through_the_cancel_path(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Past the deadline: queued -> cancelled; running -> cancelling -> cancelled, timed_out."""
    claim = await submit_and_claim(store)
    waiting, _ = await store.submit("sleep", {}, requester="a")
    await pool.execute("UPDATE job SET deadline_at = now() - interval '1 s'")
    assert await store.reap(cancel_grace_seconds=60) == {"timed_out": 2}
    w = await store.get(waiting.public_id)
    assert (w.state, w.reason) == (State.CANCELLED, "timed_out")
    assert (await store.get(claim.public_id)).state is State.CANCELLING
    await store.finish_one(Finish(claim.job_id, claim.attempt_id, "cancelled"))
    r = await store.get(claim.public_id)
    assert (r.state, r.reason) == (State.CANCELLED, "timed_out")


async def test_the_reapers_first_read_keeps_the_state_indexes_in_a_generic_plan(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """``reaper_due`` runs every second in every worker as a prepared statement whose plan turns
    generic: with its states written in as constants it reads job_live and job_deadline, where
    states passed as parameters made the generic plan scan every job (1.8 ms at 20,000)."""
    await store.submit_many([Submission("sleep", {}, "r") for _ in range(20_000)])
    assert len(await store.claim("w1", limit=10, lease_seconds=30)) == 10
    await pool.execute("ANALYZE")
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        query = engine_queries()["reaper_due"]
        assert query.params == ("grace_from", "grace_seconds")
        await conn.execute("PREPARE reaper_due(timestamptz, float8) AS " + query.sql)
        rows = await conn.fetch("EXPLAIN EXECUTE reaper_due(now(), 60)")
        await conn.execute("DEALLOCATE reaper_due")
    plan = "\n".join(r[0] for r in rows)
    assert "Seq Scan on job" not in plan, plan
    assert "job_live" in plan, plan
    assert "job_deadline" in plan, plan
    assert await store.reap(cancel_grace_seconds=60) == {}  # nothing due: the read says so


async def test_resolve_unknown_by_operator_and_requester_rules(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Only unknown jobs resolve; requesters only where the kind allows; the note is kept."""
    claim = await submit_and_claim(store)
    await store.finish_one(Finish(claim.job_id, claim.attempt_id, "unknown"))
    with pytest.raises(NotAllowed):
        await store.resolve(
            claim.public_id,
            actor=Actor.REQUESTER,
            outcome="succeeded",
            note="I checked",
            by="alice",
        )
    job = await store.resolve(
        claim.public_id,
        actor=Actor.OPERATOR,
        outcome="retry",
        note="charge not found at provider",
        by="op",
    )
    assert job.state is State.QUEUED
    last = (await events(pool, claim.job_id))[-1]
    assert last["actor"] == "operator"
    assert last["data"]["note"] == "charge not found at provider"
    with pytest.raises(IllegalTransition):
        await store.resolve(
            claim.public_id, actor=Actor.OPERATOR, outcome="failed", note="x", by="op"
        )


async def test_outbox_rows_only_for_jobs_with_an_origin(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Transport-less jobs (CLI) write no outbox rows; transport jobs one per transition."""
    plain, _ = await store.submit("noop", {}, requester="cli")
    await store.cancel(plain.public_id, by="cli")
    assert await pool.fetchval("SELECT count(*) FROM outbox WHERE job_id = $1", plain.id) == 0
    claim = await submit_and_claim(store)
    await store.finish_one(Finish(claim.job_id, claim.attempt_id, "succeeded", result={}))
    payloads = await pool.fetch(
        "SELECT payload, event_id FROM outbox WHERE job_id = $1 ORDER BY id", claim.job_id
    )
    assert [p["payload"]["to"] for p in payloads] == ["queued", "running", "succeeded"]
    assert all(p["event_id"] is not None for p in payloads)


LEAK = "connect postgresql://bob:hunter2@db/x failed; Authorization: Bearer abcdefghijkl"


async def _raises(ctx: Context, params: NoParams) -> dict[str, object]:
    raise RuntimeError(LEAK)


async def _fails(ctx: Context, params: NoParams) -> dict[str, object]:
    raise JobFailed(LEAK)


async def test_errors_are_stored_redacted(pool: asyncpg.Pool, db_dsn: str, tmp_path: Path) -> None:
    """A handler's error carrying a credential (an exception, or JobFailed), run by a worker:
    the credential is in no row the job left (job, attempt, event, step), and the rest of the
    message is."""
    registry = registry_of(raises=_raises, fails=_fails)
    store = JobStore(pool, registry)
    jobs = [(await store.submit(kind, {}, requester="t"))[0] for kind in ("raises", "fails")]
    async with running_worker(store, registry, db_dsn, tmp_path):
        for job in jobs:
            done = await job_reaches(store, job.public_id, {"failed"})
            assert "connect postgresql://" in (done.reason or "")
    rows = [
        await pool.fetchval(f"SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM {table} t")
        for table in ("job", "attempt", "event", "step")
    ]
    text = "\n".join(rows)
    assert "failed; Authorization" in text
    assert "hunter2" not in text
    assert "abcdefghijkl" not in text


async def _finish_while_the_low_job_is_held(
    pool: asyncpg.Pool, outcomes: tuple[str, str]
) -> list[Moved]:
    """Claim two jobs; in another transaction lock the low one, start a finish batch that lists
    the high job first (``outcomes``: high's, low's), then lock the high one too. A batch that
    locks in id order waits for the low job holding nothing, so this never deadlocks."""
    store = JobStore(pool, registry_of(noop=noop))
    for _ in range(2):
        await store.submit("noop", {}, requester="t")
    low, high = sorted(await store.claim("w1", limit=2, lease_seconds=30), key=lambda c: c.job_id)

    def end(claim: Claim, outcome: str) -> Finish:
        if outcome == "succeeded":
            return Finish(claim.job_id, claim.attempt_id, "succeeded", result={})
        return Finish(claim.job_id, claim.attempt_id, "failed", reason="x")

    async with pool.acquire() as other:
        tx = other.transaction()
        await tx.start()
        await other.execute("SELECT 1 FROM job WHERE id = $1 FOR UPDATE", low.job_id)
        holder = other.get_server_pid()
        batch = asyncio.ensure_future(store.finish([end(high, outcomes[0]), end(low, outcomes[1])]))

        async def batch_waits_for_the_low_job() -> bool:
            # A backend blocked by ours on a lock: the batch (nothing else runs here).
            return bool(
                await pool.fetchval(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))",
                    holder,
                )
            )

        await poll(batch_waits_for_the_low_job, within=5)
        await asyncio.wait_for(
            other.execute("SELECT 1 FROM job WHERE id = $1 FOR UPDATE", high.job_id), 5
        )
        await tx.commit()
        return await asyncio.wait_for(batch, 10)


async def test_batched_finish_locks_its_jobs_in_id_order(pool: asyncpg.Pool) -> None:
    """A finish batch with outcomes of several kinds never deadlocks with a writer that locks
    the same jobs in id order (as every transition does)."""
    moved = await _finish_while_the_low_job_is_held(pool, ("succeeded", "failed"))
    assert sorted(m.target for m in moved if m.target) == ["failed", "succeeded"]


async def test_a_one_statement_finish_batch_locks_its_jobs_in_id_order(pool: asyncpg.Pool) -> None:
    """The usual batch (every end the same outcome) is one statement that locks each job as it
    reads it: listed high id first, it still locks the low one first."""
    moved = await _finish_while_the_low_job_is_held(pool, ("succeeded", "succeeded"))
    assert [m.target for m in moved] == ["succeeded", "succeeded"]
