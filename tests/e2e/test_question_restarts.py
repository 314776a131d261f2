"""Three restarts while a job waits for its answer, with the real bot and a real ``errand worker``
against the emulator: the worker SIGKILLed (the answer comes while no worker runs), the bot
restarted (the question's buttons still work), PostgreSQL restarted (no answer is lost)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bot.client import ErrandBot
from discord_emulator import Emulator
from discord_emulator.testing import World, running_bot
from jobs.engine.db import create_pool
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.pg_restart import own_database, restart
from tests.support.runtime import job_reaches
from tests.support.worker_process import start_worker, stop_worker

from .conftest import Errand
from .test_questions import ASK, click, custom_ids, question_of

STEPS = 'steps=3 step_seconds=0.05 ask="Which colour?" ask_at_step=2 choices=red,green'


@pytest.mark.parametrize("park_after", ["0", "60"], ids=["parked", "in-its-worker"])
async def test_an_answer_while_no_worker_runs_resumes_the_job_and_no_step_runs_again(
    errand: Errand, bot: ErrandBot, tmp_path: Path, park_after: str
) -> None:
    """The worker is SIGKILLed while the job waits (parked, or in the worker); the requester
    answers while none runs; a new worker resumes the job after step 1, once."""
    alice = errand.world.alice
    proc = await start_worker(errand.dsn, tmp_path, ERRAND_WORKER_PARK_AFTER_SECONDS=park_after)
    try:
        _, job_id = await errand.summon(params=STEPS)
        question = await question_of(errand, job_id)
        await job_reaches(errand.store, job_id, {"waiting" if park_after == "0" else "running"})
        assert await stop_worker(proc, signal.SIGKILL) == -signal.SIGKILL
        answered = await click(errand, alice, question, custom_ids(question)[1])
        assert answered.response_type == 7
        proc = await start_worker(errand.dsn, tmp_path)
        done = await job_reaches(errand.store, job_id, {"succeeded"}, within=30)
    finally:
        await stop_worker(proc)
    assert done.result == {
        "steps": 3,
        "attempt": 2,
        "answer": "green",
        "answered_by": f"discord:{alice.id}",
    }
    assert done.failures == 0
    status = await errand.store.status(job_id)
    assert [s["name"] for s in status.steps if s["outcome"] == "ok"] == [
        "step 1",
        "step 2",
        "step 3",
    ]
    assert {s["outcome"] for s in status.steps} == {"ok"}  # nothing ran twice
    await errand.wait_progress_state(job_id, "succeeded")


async def test_the_buttons_of_a_question_asked_before_the_bot_restarted_still_work(
    errand: Errand, tmp_path: Path
) -> None:
    alice = errand.world.alice
    proc = await start_worker(errand.dsn, tmp_path, ERRAND_WORKER_PARK_AFTER_SECONDS="0")
    try:
        async with running_bot(errand.emu, errand.new_bot()):
            _, job_id = await errand.summon(params=ASK)
            question = await question_of(errand, job_id)
            await job_reaches(errand.store, job_id, {"waiting"})
        async with running_bot(errand.emu, errand.new_bot()):
            answered = await click(errand, alice, question, custom_ids(question)[0])
            assert answered.response_type == 7
            done = await job_reaches(errand.store, job_id, {"succeeded"}, within=30)
            assert done.result is not None
            assert done.result["answer"] == "red"
            await errand.wait_progress_state(job_id, "succeeded")
    finally:
        await stop_worker(proc)


async def test_no_answer_is_lost_across_postgres_restarts(
    emu: Emulator, world: World, registry: Registry, data_root: Path, tmp_path: Path
) -> None:
    """An answer recorded just before PostgreSQL is killed survives it (the worker, started
    after, resumes the job with it); a click right after a fast restart is recorded too."""
    pgdata, dsn = await own_database(data_root)
    pool = await create_pool(dsn, max_size=5)
    errand = Errand(emu, world, JobStore(pool, registry), pool, dsn, registry)
    alice = world.alice
    try:
        async with running_bot(emu, errand.new_bot()):
            proc = await start_worker(dsn, tmp_path, ERRAND_WORKER_PARK_AFTER_SECONDS="0")
            _, before = await errand.summon(params=ASK)
            _, after = await errand.summon(params=ASK)
            first = await question_of(errand, before)
            second = await question_of(errand, after)
            for job_id in (before, after):
                await job_reaches(errand.store, job_id, {"waiting"})
            await stop_worker(proc)
            await click(errand, alice, first, custom_ids(first)[1])
            await restart(pgdata, kill=True)
            await restart(pgdata, kill=False)
            clicked = await click(errand, alice, second, custom_ids(second)[0])
            assert clicked.response_type == 7
            proc = await start_worker(dsn, tmp_path)
            try:
                for job_id, colour in ((before, "green"), (after, "red")):
                    done = await job_reaches(errand.store, job_id, {"succeeded"}, within=40)
                    assert done.result is not None
                    assert done.result["answer"] == colour
                    assert len((await errand.store.status(job_id)).messages) == 1
            finally:
                await stop_worker(proc)
    finally:
        await pool.close()
