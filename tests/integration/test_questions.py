"""A handler asks (``ctx.ask``), a person answers (``JobStore.answer``), against real PostgreSQL
and an in-process worker: the answer in the worker and after a park, once per key, its first
valid answer winning, timeouts with and without a default, and refusals on the timeline."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from pydantic import BaseModel, ConfigDict

from jobs.engine.attempt_mail import AttemptMail
from jobs.engine.moves import AnswerResult
from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.errors import NoAnswer, NoOpenQuestion, NotOffered, UnknownJob
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind, Registry
from jobs.runtime.worker import Worker
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


class AskParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = "colour"
    choices: list[str] | None = None
    timeout: float | None = None
    default: str | None = None


async def asker(ctx: Context, params: AskParams) -> dict[str, Any]:
    extra: dict[str, Any] = {} if params.default is None else {"default": params.default}
    answer = await ctx.ask(
        params.key, "Which colour?", params.choices, timeout=params.timeout, **extra
    )
    return {"answer": str(answer), "by": getattr(answer, "by", None), "attempt": ctx.attempt}


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


async def quiet(ctx: Context, params: NoParams) -> None:
    await ctx.sleep(60)


def asking_registry() -> Registry:
    reg = Registry()
    reg.add(Kind(name="asker", handler=asker, params=AskParams, retry_safe=True))
    reg.add(Kind(name="quiet", handler=quiet, params=NoParams, retry_safe=True))
    return reg


@pytest.fixture
def reg() -> Registry:
    return asking_registry()


@pytest.fixture
def talk(pool: asyncpg.Pool, reg: Registry) -> JobStore:
    return JobStore(pool, reg)


@pytest.fixture
async def parking_worker(talk: JobStore, reg: Registry, db_dsn: str) -> AsyncIterator[Worker]:
    """A worker that parks a wait at once."""
    async with running_worker(talk, reg, db_dsn, park_after_seconds=0) as w:
        yield w


async def _asked(pool: asyncpg.Pool, job_id: int) -> None:
    await poll(lambda: pool.fetchval("SELECT count(*) FROM job_question WHERE job_id = $1", job_id))


async def test_an_answer_reaches_a_handler_waiting_in_its_worker(
    talk: JobStore, reg: Registry, db_dsn: str, pool: asyncpg.Pool
) -> None:
    """Within the park threshold the handler waits in its worker: the job stays running in one
    attempt, and the answer (a choice, as words in another case) wakes it."""
    job, _ = await talk.submit("asker", {"choices": ["red", "green"]}, requester="alice")
    async with running_worker(talk, reg, db_dsn, park_after_seconds=30):
        await _asked(pool, job.id)
        assert (await talk.get(job.public_id)).state.value == "running"
        outcome = await talk.answer(job.public_id, "GREEN", actor=Actor.REQUESTER, by="alice")
        assert outcome.result is AnswerResult.ANSWERED
        done = await job_reaches(talk, job.public_id, {"succeeded"})
    assert done.result == {"answer": "green", "by": "alice", "attempt": 1}
    status = await talk.status(job.public_id)
    [question] = status.questions
    assert (question.status.value, question.answer, question.answer_choice) == (
        "answered",
        "green",
        1,
    )
    assert [a.outcome for a in status.attempts] == ["succeeded"]
    reasons = [e.reason for e in status.events if e.topic == "question"]
    assert reasons == ["asked: Which colour?", "answered by alice: green"]


async def test_time_waited_in_its_worker_for_an_answer_is_not_run_time(
    talk: JobStore, reg: Registry, db_dsn: str, pool: asyncpg.Pool
) -> None:
    """A second spent waiting in the worker for a person is recorded on the attempt and left out
    of the run time the job shows, as it is left out of its time bound."""
    job, _ = await talk.submit("asker", {}, requester="alice")
    async with running_worker(talk, reg, db_dsn, park_after_seconds=30):
        await _asked(pool, job.id)
        await asyncio.sleep(1.0)
        await talk.answer(job.public_id, "blue", actor=Actor.REQUESTER, by="alice")
        await job_reaches(talk, job.public_id, {"succeeded"})
    waited = await pool.fetchval("SELECT waited_seconds FROM attempt WHERE job_id = $1", job.id)
    assert waited >= 0.9
    done = await talk.get(job.public_id)
    assert done.run_seconds is not None
    assert done.run_seconds < 0.5


async def test_a_parked_job_holds_no_lease_and_resumes_with_its_answer(
    talk: JobStore, parking_worker: Worker, pool: asyncpg.Pool
) -> None:
    """Past the threshold the job parks: waiting, no attempt open, nothing holding a lease; the
    answer queues it and a new attempt returns the recorded answer without asking again."""
    job, _ = await talk.submit("asker", {}, requester="alice")
    waiting = await job_reaches(talk, job.public_id, {"waiting"})
    assert (waiting.wait_for, waiting.wait_key, waiting.wait_text) == (
        "question",
        "colour",
        "Which colour?",
    )
    assert waiting.current_attempt_id is None
    assert waiting.waiting is not None
    assert waiting.waiting["for"] == "question"
    open_attempts = await pool.fetchval(
        "SELECT count(*) FROM attempt WHERE job_id = $1 AND ended_at IS NULL", job.id
    )
    assert open_attempts == 0
    outcome = await talk.answer(job.public_id, "blue", actor=Actor.OPERATOR, by="ops")
    assert outcome.result is AnswerResult.ANSWERED
    done = await job_reaches(talk, job.public_id, {"succeeded"})
    assert done.result == {"answer": "blue", "by": "ops", "attempt": 2}
    assert (done.attempts, done.failures) == (2, 0)
    status = await talk.status(job.public_id)
    assert [a.outcome for a in status.attempts] == ["parked", "succeeded"]
    assert len(status.questions) == 1  # asked once, whatever the attempts
    moves = [
        (e.from_state and e.from_state.value, e.to_state.value, e.actor)
        for e in status.events
        if e.topic == "transition"
    ]
    assert moves == [
        (None, "queued", "requester"),
        ("queued", "running", "worker"),
        ("running", "waiting", "worker"),
        ("waiting", "queued", "operator"),
        ("queued", "running", "worker"),
        ("running", "succeeded", "worker"),
    ]


async def test_two_answers_at_once_give_one_answer_and_the_other_is_told_who_won(
    talk: JobStore, parking_worker: Worker
) -> None:
    """Forty pairs of answers racing: exactly one answers each question, the other gets
    "already answered by" the winner, and both are on the timeline."""
    jobs = [(await talk.submit("asker", {"key": f"k{i}"}, requester="alice"))[0] for i in range(40)]
    for job in jobs:
        await job_reaches(talk, job.public_id, {"waiting", "running"})
        await poll(lambda job=job: talk.status(job.public_id), until=lambda s: bool(s.questions))
    for job in jobs:
        first, second = await asyncio.gather(
            talk.answer(job.public_id, "red", actor=Actor.REQUESTER, by="alice"),
            talk.answer(job.public_id, "blue", actor=Actor.OPERATOR, by="ops"),
        )
        results = sorted([first.result.value, second.result.value])
        assert results == ["already_answered", "answered"]
        winner = first if first.result is AnswerResult.ANSWERED else second
        loser = second if winner is first else first
        assert loser.why == f"already answered by {winner.question.answered_by}"
    for job in jobs:
        done = await job_reaches(talk, job.public_id, {"succeeded"})
        status = await talk.status(job.public_id)
        assert [m.refused is None for m in status.messages].count(True) == 1
        assert done.result is not None
        assert done.result["answer"] == status.questions[0].answer


async def test_a_timeout_takes_the_default_and_without_one_the_job_fails(
    talk: JobStore, reg: Registry, db_dsn: str
) -> None:
    """In the worker and parked alike: no answer in time is the default, or a failure saying so;
    a late answer is refused as closed."""
    async with running_worker(talk, reg, db_dsn, park_after_seconds=0.3, reaper_seconds=0.1):
        short = (await talk.submit("asker", {"timeout": 0.2, "default": "grey"}, requester="a"))[0]
        parked = (await talk.submit("asker", {"timeout": 2.0, "default": "pink"}, requester="a"))[0]
        none = (await talk.submit("asker", {"timeout": 0.2}, requester="a"))[0]
        assert (await job_reaches(talk, short.public_id, {"succeeded"})).result["answer"] == "grey"
        await job_reaches(talk, parked.public_id, {"waiting"})
        assert (await job_reaches(talk, parked.public_id, {"succeeded"})).result["answer"] == "pink"
        failed = await job_reaches(talk, none.public_id, {"failed"})
    assert failed.reason == str(NoAnswer("colour"))
    for job in (short, parked, none):
        late = await talk.answer(job.public_id, "red", key="colour", actor=Actor.REQUESTER, by="a")
        assert (late.result, late.why) == (AnswerResult.CLOSED, "no answer in time")
    status = await talk.status(parked.public_id)
    assert status.questions[0].status.value == "timed_out"
    assert [m.refused for m in status.messages] == ["no answer in time"]
    reasons = [e.reason for e in status.events if e.topic == "question"]
    assert reasons == ["asked: Which colour?", "no answer in time"]


async def test_an_answer_after_a_cancel_is_refused_as_closed(
    talk: JobStore, parking_worker: Worker
) -> None:
    """A waiting job is cancelled at once and its question closed; the answer racing the
    cancel either came first (the job was queued, then cancelled) or is refused."""
    job, _ = await talk.submit("asker", {}, requester="alice")
    await job_reaches(talk, job.public_id, {"waiting"})
    cancelled = await talk.cancel(job.public_id, actor=Actor.REQUESTER, by="alice")
    assert (cancelled.outcome.value, cancelled.job.state.value) == ("cancelled", "cancelled")
    late = await talk.answer(job.public_id, "red", key="colour", actor=Actor.REQUESTER, by="a")
    assert (late.result, late.why) == (AnswerResult.CLOSED, "the job was cancelled")
    for _ in range(20):
        raced, _ = await talk.submit("asker", {}, requester="alice")
        await job_reaches(talk, raced.public_id, {"waiting"})
        answer, cancel = await asyncio.gather(
            talk.answer(raced.public_id, "red", actor=Actor.REQUESTER, by="alice"),
            talk.cancel(raced.public_id, actor=Actor.OPERATOR, by="ops"),
        )
        final = await job_reaches(talk, raced.public_id, {"cancelled", "succeeded"})
        status = await talk.status(raced.public_id)
        if answer.result is AnswerResult.ANSWERED:
            assert status.questions[0].status.value == "answered"
            # The answer first: the job resumed, and the cancel stopped it, or came when it had
            # already succeeded (too late, truly).
            assert (cancel.outcome.value, final.state.value) in {
                ("cancelled", "cancelled"),
                ("cancelling", "cancelled"),
                ("cancelling", "succeeded"),
                ("too_late", "succeeded"),
            }
        else:
            assert (cancel.outcome.value, cancel.job.state.value) == ("cancelled", "cancelled")
            assert answer.result is AnswerResult.CLOSED
            assert final.state.value == "cancelled"
            assert status.questions[0].status.value == "closed"


async def test_bad_answers_change_nothing(talk: JobStore, parking_worker: Worker) -> None:
    """An unknown job, a job that asks nothing, a key it never asked and a choice it does not
    offer are refused with a reason, and nothing is recorded."""
    job, _ = await talk.submit("asker", {"choices": ["red", "green"]}, requester="alice")
    await job_reaches(talk, job.public_id, {"waiting"})
    with pytest.raises(UnknownJob):
        await talk.answer("zzzzzzzz", "red", actor=Actor.OPERATOR, by="ops")
    with pytest.raises(NoOpenQuestion, match="question 'size'"):
        await talk.answer(job.public_id, "red", key="size", actor=Actor.OPERATOR, by="ops")
    with pytest.raises(NotOffered, match="not one of the choices"):
        await talk.answer(job.public_id, "blue", actor=Actor.OPERATOR, by="ops")
    with pytest.raises(NotOffered, match="no choice 3"):
        await talk.answer(job.public_id, choice=2, actor=Actor.OPERATOR, by="ops")
    other, _ = await talk.submit("quiet", {}, requester="alice")
    await job_reaches(talk, other.public_id, {"waiting"})  # for a time: it asks nothing
    with pytest.raises(NoOpenQuestion, match="not waiting for a question"):
        await talk.answer(other.public_id, "y", actor=Actor.OPERATOR, by="ops")
    status = await talk.status(job.public_id)
    assert (status.job.state.value, status.messages) == ("waiting", [])


async def test_a_resent_answer_is_recorded_once_and_answers_as_the_first(
    talk: JobStore, parking_worker: Worker
) -> None:
    """The transport's id of an answer (a Discord interaction) makes a resend a replay."""
    job, _ = await talk.submit("asker", {}, requester="alice")
    await job_reaches(talk, job.public_id, {"waiting"})
    first = await talk.answer(
        job.public_id, "red", actor=Actor.REQUESTER, by="alice", transport_id="discord:1"
    )
    again = await talk.answer(
        job.public_id, "red", actor=Actor.REQUESTER, by="alice", transport_id="discord:1"
    )
    assert (first.result, again.result, again.replayed) == (
        AnswerResult.ANSWERED,
        AnswerResult.ANSWERED,
        True,
    )
    await job_reaches(talk, job.public_id, {"succeeded"})
    assert len((await talk.status(job.public_id)).messages) == 1


async def test_every_way_a_job_ends_cancelled_or_failed_closes_its_questions(
    pool: asyncpg.Pool,
) -> None:
    """Not only the worker's end and a person's cancel: a lease the reaper settles as failed (a
    crash with no attempt left), an operator's resolve of an ``unknown`` job as cancelled, and
    the reaper's forced end of a cancel nobody acknowledged each close the job's open question,
    with its event, so an answer after it is refused as closed."""
    reg = Registry()
    # Not retry-safe, and crashes count: a lost lease ends the job (unknown, or failed once
    # its attempts are used up).
    reg.add(Kind(name="asker", handler=asker, params=AskParams, count_crashes=True))
    store = JobStore(pool, reg)

    async def asked(max_attempts: int = 1) -> tuple[str, int, int]:
        job, _ = await store.submit("asker", {}, requester="alice")
        await pool.execute("UPDATE job SET max_attempts = $2 WHERE id = $1", job.id, max_attempts)
        [claim] = await store.claim("w", limit=1, lease_seconds=30, kinds=["asker"])
        mail = AttemptMail(pool, claim.job_id, claim.attempt_id, claim.public_id)
        await mail.ask("colour", "Which colour?", (), allow_text=True, expires_in=None)
        return job.public_id, job.id, claim.attempt_id

    async def closed(public_id: str, job_id: int, why: str) -> None:
        status = await store.status(public_id)
        assert [(q.status.value, q.closed_reason) for q in status.questions] == [("closed", why)]
        notes = await pool.fetchval(
            "SELECT count(*) FROM event WHERE job_id = $1 AND topic = 'question' AND reason = $2",
            job_id,
            why,
        )
        assert notes == 1
        late = await store.answer(public_id, "red", actor=Actor.REQUESTER, by="alice")
        assert late.result is AnswerResult.CLOSED

    # A crash with its one attempt used up: the reaper ends it failed.
    crashed, crashed_id, attempt = await asked()
    await pool.execute(
        "UPDATE attempt SET lease_expires_at = now() - interval '1 s' WHERE id = $1", attempt
    )
    await store.reap(cancel_grace_seconds=60, retry_base=0)
    assert (await store.get(crashed)).state.value == "failed"
    await closed(crashed, crashed_id, "the job failed")

    # A lost lease with attempts left of a kind not safe to re-run: unknown, question still
    # open (someone may resolve it as a retry); an operator resolves it as cancelled.
    lost, lost_id, attempt = await asked(max_attempts=3)
    await pool.execute(
        "UPDATE attempt SET lease_expires_at = now() - interval '1 s' WHERE id = $1", attempt
    )
    await store.reap(cancel_grace_seconds=60, retry_base=0)
    assert (await store.get(lost)).state.value == "unknown"
    assert (await store.status(lost)).questions[0].status.value == "open"
    await store.resolve(lost, actor=Actor.OPERATOR, outcome="cancelled", note="n", by="ops")
    await closed(lost, lost_id, "the job was cancelled")

    # A cancel its worker never acknowledged: the reaper forces it after the grace.
    ignored, ignored_id, _ = await asked()
    await store.cancel(ignored, actor=Actor.REQUESTER, by="alice")
    assert (await store.get(ignored)).state.value == "cancelling"
    await pool.execute(
        "UPDATE job SET cancel_requested_at = now() - interval '1 hour' WHERE id = $1", ignored_id
    )
    await store.reap(cancel_grace_seconds=60, retry_base=0)
    assert (await store.get(ignored)).state.value == "cancelled"
    await closed(ignored, ignored_id, "the job was cancelled")
