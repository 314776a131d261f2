"""Follow-ups (``JobStore.tell``) reach a handler through ``ctx.messages`` and
``ctx.wait_for_message``, each once and in order, whether it waits in its worker, parked, or
resumes after a worker stop; what it read is part of its checkpoint."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest
from pydantic import BaseModel, ConfigDict

from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.errors import JobEnded, UnknownJob
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind, Registry
from tests.support.runtime import job_reaches, running_worker


class ListenParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = 3
    timeout: float | None = None


async def listener(ctx: Context, params: ListenParams) -> dict[str, Any]:
    """Collects ``count`` follow-ups, checkpointing after each one it keeps."""
    heard: list[str] = list((ctx.resume_state or {}).get("heard", []))
    while len(heard) < params.count:
        message = await ctx.wait_for_message(params.timeout)
        if message is None:
            return {"heard": heard, "timed_out": True}
        heard.append(message.text)
        await ctx.checkpoint({"heard": heard})
    return {"heard": heard, "attempt": ctx.attempt}


async def skimmer(ctx: Context, params: ListenParams) -> dict[str, Any]:
    """Reads what is there with ``ctx.messages`` between sleeps, checkpointing what it kept."""
    heard: list[str] = list((ctx.resume_state or {}).get("heard", []))
    while len(heard) < params.count:
        heard += [m.text for m in await ctx.messages()]
        await ctx.checkpoint({"heard": heard})
        await ctx.sleep(0.05)
    return {"heard": heard}


@pytest.fixture
def reg() -> Registry:
    reg = Registry()
    reg.add(Kind(name="listener", handler=listener, params=ListenParams, retry_safe=True))
    reg.add(Kind(name="skimmer", handler=skimmer, params=ListenParams, retry_safe=True))
    return reg


@pytest.fixture
def talk(pool: asyncpg.Pool, reg: Registry) -> JobStore:
    return JobStore(pool, reg)


@pytest.mark.parametrize("park_after", [30.0, 0.0])
async def test_follow_ups_arrive_once_and_in_order(
    talk: JobStore, reg: Registry, db_dsn: str, park_after: float
) -> None:
    """In its worker (it runs one attempt) and parked (an attempt per message) alike."""
    job, _ = await talk.submit("listener", {}, requester="alice")
    async with running_worker(talk, reg, db_dsn, park_after_seconds=park_after):
        for word in ("one", "two", "three"):
            await job_reaches(talk, job.public_id, {"running" if park_after else "waiting"})
            told = await talk.tell(job.public_id, word, actor=Actor.REQUESTER, by="alice")
            assert told.message.text == word
        done = await job_reaches(talk, job.public_id, {"succeeded"})
    assert done.result is not None
    assert done.result["heard"] == ["one", "two", "three"]
    status = await talk.status(job.public_id)
    assert [m.seq for m in status.messages] == [1, 2, 3]
    outcomes = [a.outcome for a in status.attempts]
    assert outcomes == (["succeeded"] if park_after else ["parked"] * 3 + ["succeeded"])


async def test_messages_sent_at_once_and_across_worker_stops_are_each_read_once(
    talk: JobStore, reg: Registry, db_dsn: str
) -> None:
    """Thirty follow-ups sent concurrently while the worker is stopped twice (its attempts
    released): the handler keeps each exactly once, in the mailbox's order."""
    job, _ = await talk.submit("skimmer", {"count": 30}, requester="alice")

    async def send(n: int) -> None:
        await talk.tell(job.public_id, f"m{n}", actor=Actor.OPERATOR, by="ops")

    for batch in range(3):
        async with running_worker(talk, reg, db_dsn):
            await job_reaches(talk, job.public_id, {"running"})
            await asyncio.gather(*(send(batch * 10 + n) for n in range(10)))
            if batch == 2:
                done = await job_reaches(talk, job.public_id, {"succeeded"})
    status = await talk.status(job.public_id)
    order = [m.text for m in status.messages]
    assert done.result == {"heard": order}
    assert sorted(order) == sorted(f"m{n}" for n in range(30))
    assert [a.outcome for a in status.attempts][:2] == ["released", "released"]


async def test_a_wait_for_a_message_times_out_in_the_worker_and_parked(
    talk: JobStore, reg: Registry, db_dsn: str
) -> None:
    async with running_worker(talk, reg, db_dsn, park_after_seconds=0.2, reaper_seconds=0.1):
        short = (await talk.submit("listener", {"timeout": 0.1}, requester="a"))[0]
        long = (await talk.submit("listener", {"timeout": 2.0}, requester="a"))[0]
        assert (await job_reaches(talk, short.public_id, {"succeeded"})).result == {
            "heard": [],
            "timed_out": True,
        }
        waiting = await job_reaches(talk, long.public_id, {"waiting"})
        assert (waiting.wait_for, waiting.wait_until is not None) == ("message", True)
        done = await job_reaches(talk, long.public_id, {"succeeded"})
    assert done.result == {"heard": [], "timed_out": True}
    events = (await talk.status(long.public_id)).events
    assert [e.reason for e in events if e.from_state and e.from_state.value == "waiting"] == [
        "no message in time"
    ]


async def test_telling_an_unknown_or_ended_job_is_refused_and_records_nothing(
    talk: JobStore, reg: Registry, db_dsn: str, pool: asyncpg.Pool
) -> None:
    with pytest.raises(UnknownJob):
        await talk.tell("zzzzzzzz", "hi", actor=Actor.OPERATOR, by="ops")
    job, _ = await talk.submit("listener", {}, requester="a")
    await talk.cancel(job.public_id, actor=Actor.OPERATOR, by="ops")
    with pytest.raises(JobEnded, match="already cancelled"):
        await talk.tell(job.public_id, "hi", actor=Actor.OPERATOR, by="ops")
    assert await pool.fetchval("SELECT count(*) FROM job_message") == 0
