"""Parking: a waiting job costs no worker and no lease, resumes where it parked, and cannot use
waiting to escape a bound; the races of a park with an answer, a stop and a deadline."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from pydantic import BaseModel, ConfigDict

from jobs.engine.mail import Wait, WaitFor
from jobs.engine.moves import AttemptOutcome, Finish
from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.runtime.budget import Budget
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind, Registry
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 0.0
    asks: int = 1


async def asker(ctx: Context, params: Params) -> dict[str, Any]:
    """Asks ``asks`` questions, a step around each and a checkpoint after each answer."""
    done = list((ctx.resume_state or {}).get("answers", []))
    for n in range(len(done), params.asks):
        async with ctx.step(f"ask {n}"):
            done.append(str(await ctx.ask(f"q{n}", f"question {n}?")))
        await ctx.checkpoint({"answers": done})
    return {"answers": done}


async def sleeper(ctx: Context, params: Params) -> dict[str, Any]:
    """A short sleep, then a long one, with no checkpoint between: a replay must return from
    the long one, not the short one."""
    marks = []
    await ctx.sleep(0.01)
    marks.append(ctx.attempt)
    await ctx.sleep(params.seconds)
    return {"attempt": ctx.attempt, "marks": marks}


async def noop(ctx: Context, params: Params) -> dict[str, Any]:
    return {}


async def unsafe(ctx: Context, params: Params) -> dict[str, Any]:
    """Not retry-safe and no checkpoint: it must not park (nobody could resume it)."""
    return {"answer": str(await ctx.ask("only", "go on?"))}


@pytest.fixture
def reg() -> Registry:
    reg = Registry()
    for name, handler in (("asker", asker), ("sleeper", sleeper), ("noop", noop)):
        reg.add(Kind(name=name, handler=handler, params=Params, retry_safe=True))
    reg.add(Kind(name="unsafe", handler=unsafe, params=Params, retry_safe=False))
    return reg


@pytest.fixture
def talk(pool: asyncpg.Pool, reg: Registry) -> JobStore:
    return JobStore(pool, reg)


async def test_fifty_waiting_jobs_hold_no_lease_and_one_slot_runs_other_jobs(
    talk: JobStore, reg: Registry, db_dsn: str, pool: asyncpg.Pool
) -> None:
    """A worker of concurrency 1 parks fifty askers one after another, then runs ten other jobs
    while they wait; no waiting job has an attempt open or a lease."""
    waiting = [(await talk.submit("asker", {}, requester="a"))[0] for _ in range(50)]
    async with running_worker(talk, reg, db_dsn, concurrency=1, park_after_seconds=0):
        await poll(
            lambda: pool.fetchval("SELECT count(*) FROM job WHERE state = 'waiting'"),
            within=30,
            until=lambda n: n == 50,
        )
        others = [(await talk.submit("noop", {}, requester="b"))[0] for _ in range(10)]
        for job in others:
            await job_reaches(talk, job.public_id, {"succeeded"})
        leases = await pool.fetchval(
            "SELECT count(*) FROM job j JOIN attempt a ON a.job_id = j.id"
            " WHERE j.state = 'waiting' AND (a.ended_at IS NULL OR j.current_attempt_id = a.id)"
        )
        assert leases == 0
        assert await pool.fetchval(
            "SELECT count(*) FROM job WHERE state = 'waiting' AND current_attempt_id IS NULL"
        ) == len(waiting)


async def test_an_answer_that_comes_while_the_park_is_written_queues_the_job_at_once(
    talk: JobStore, pool: asyncpg.Pool
) -> None:
    """The handler gave up waiting in its worker, the answer came before its park was written:
    the park finds it, and the job is queued (due now), not left waiting for an answer given."""
    job, _ = await talk.submit("asker", {}, requester="a")
    [claim] = await talk.claim("w", limit=1, lease_seconds=30)
    ctx = Context(claim, store=talk)
    question = await ctx.mail.ask("q0", "question 0?", (), allow_text=True, expires_in=None)
    answered = await talk.answer(job.public_id, "yes", actor=Actor.REQUESTER, by="a")
    assert answered.job.state.value == "running"  # it was still in its worker
    wait = Wait(WaitFor.QUESTION, 1, key=question.key, text=question.text)
    [moved] = await talk.finish(
        [Finish(job.id, claim.attempt_id, outcome=AttemptOutcome.PARKED, wait=wait)]
    )
    assert moved.target is not None
    assert moved.target.value == "queued"
    view = await talk.get(job.public_id)
    assert view.reason == "what it waited for came while it parked"
    assert view.run_at <= await pool.fetchval("SELECT now()")
    # Claimed again, it parks for a question nobody answered yet: then it waits.
    [claim] = await talk.claim("w", limit=1, lease_seconds=30)
    assert claim.job_id == job.id
    await Context(claim, store=talk).mail.ask("q1", "q?", (), allow_text=True, expires_in=None)
    wait = Wait(WaitFor.QUESTION, 1, key="q1", text="q?")
    await talk.finish([Finish(job.id, claim.attempt_id, outcome=AttemptOutcome.PARKED, wait=wait)])
    assert (await talk.get(job.public_id)).state.value == "waiting"


async def test_a_long_sleep_parks_and_a_replay_returns_from_the_wait_it_parked_at(
    talk: JobStore, reg: Registry, db_dsn: str
) -> None:
    job, _ = await talk.submit("sleeper", {"seconds": 1.5}, requester="a")
    async with running_worker(talk, reg, db_dsn, park_after_seconds=0.3, reaper_seconds=0.1):
        parked = await job_reaches(talk, job.public_id, {"waiting"})
        assert parked.wait_for == "time"
        assert parked.reason is not None
        assert parked.reason.startswith("waiting until")
        done = await job_reaches(talk, job.public_id, {"succeeded"})
    assert done.result == {"attempt": 2, "marks": [2]}
    assert (done.attempts, done.failures) == (2, 0)


async def test_a_worker_stopping_during_a_wait_parks_the_job(
    talk: JobStore, reg: Registry, db_dsn: str
) -> None:
    """Waiting for an answer is a safe place to stop: the job parks instead of being
    released to ask again, and an answer resumes it on the next worker."""
    job, _ = await talk.submit("asker", {}, requester="a")
    async with running_worker(talk, reg, db_dsn, park_after_seconds=60):
        await poll(lambda: talk.status(job.public_id), until=lambda s: bool(s.questions))
    assert (await talk.get(job.public_id)).state.value == "waiting"
    await talk.answer(job.public_id, "yes", actor=Actor.REQUESTER, by="a")
    async with running_worker(talk, reg, db_dsn):
        done = await job_reaches(talk, job.public_id, {"succeeded"})
    assert done.result == {"answers": ["yes"]}


async def test_a_kind_that_cannot_resume_waits_in_its_worker_instead_of_parking(
    talk: JobStore, reg: Registry, db_dsn: str
) -> None:
    job, _ = await talk.submit("unsafe", {}, requester="a")
    async with running_worker(talk, reg, db_dsn, park_after_seconds=0):
        await poll(lambda: talk.status(job.public_id), until=lambda s: bool(s.questions))
        await talk.answer(job.public_id, "yes", actor=Actor.REQUESTER, by="a")
        done = await job_reaches(talk, job.public_id, {"succeeded"})
    assert done.attempts == 1


async def test_the_step_budget_counts_across_parks(
    talk: JobStore, reg: Registry, db_dsn: str
) -> None:
    """Each step counts once however often the job parked in it (the interrupted one runs
    again), and the budget is the job's across all its attempts: the third step is refused."""
    job, _ = await talk.submit("asker", {"asks": 3}, requester="a")
    async with running_worker(talk, reg, db_dsn, budget=Budget(job_steps=2), park_after_seconds=0):
        for n in range(2):
            await job_reaches(talk, job.public_id, {"waiting"})
            await talk.answer(job.public_id, f"a{n}", actor=Actor.REQUESTER, by="a")
        failed = await job_reaches(talk, job.public_id, {"failed"})
    assert failed.reason is not None
    assert "steps per job" in failed.reason
    status = await talk.status(job.public_id)
    assert [s["name"] for s in status.steps if s["outcome"] == "ok"] == ["ask 0", "ask 1"]
    assert {s["outcome"] for s in status.steps} == {"ok", "interrupted"}  # step 3 never opened
    assert status.job.usage["steps"] == 2
    assert [a.outcome for a in status.attempts] == ["parked", "parked", "failed"]


async def test_the_time_bound_does_not_count_waiting(
    talk: JobStore, reg: Registry, db_dsn: str, pool: asyncpg.Pool
) -> None:
    """Two answers that each take longer than the job's whole time bound, in its worker and
    parked: the job succeeds, and its attempts record the time they waited for a person."""
    job, _ = await talk.submit("asker", {"asks": 2}, requester="a")
    budget = Budget(job_seconds=1.0)
    async with running_worker(talk, reg, db_dsn, budget=budget, park_after_seconds=0.6):
        for n in range(2):
            await job_reaches(talk, job.public_id, {"waiting"})
            await asyncio.sleep(0.6)
            await talk.answer(job.public_id, f"a{n}", actor=Actor.REQUESTER, by="a")
        done = await job_reaches(talk, job.public_id, {"succeeded"})
    assert done.result == {"answers": ["a0", "a1"]}
    waited = await pool.fetch(
        "SELECT waited_seconds FROM attempt WHERE job_id = $1 ORDER BY number", job.id
    )
    assert [w["waited_seconds"] >= 0.5 for w in waited] == [True, True, False]


async def test_a_deadline_ends_a_waiting_job_and_closes_its_question(
    talk: JobStore, reg: Registry, db_dsn: str, pool: asyncpg.Pool
) -> None:
    job, _ = await talk.submit("asker", {}, requester="a")
    await pool.execute(
        "UPDATE job SET deadline_at = $2 WHERE id = $1",
        job.id,
        datetime.now(UTC) + timedelta(seconds=1.5),
    )
    async with running_worker(talk, reg, db_dsn, park_after_seconds=0, reaper_seconds=0.1):
        await job_reaches(talk, job.public_id, {"waiting"})
        done = await job_reaches(talk, job.public_id, {"cancelled"})
    assert done.reason == "timed_out"
    [question] = (await talk.status(job.public_id)).questions
    assert (question.status.value, question.closed_reason) == (
        "closed",
        "the job's deadline passed",
    )
