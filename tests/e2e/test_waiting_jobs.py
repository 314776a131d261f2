"""Waiting costs no worker, with the real bot and a real ``errand worker``: while fifty jobs wait
for their answers, a worker with a concurrency of 1 runs the next job summoned on Discord, and
no waiting job holds a lease (counted in the database)."""

from __future__ import annotations

from pathlib import Path

from bot.client import ErrandBot
from tests.support.polling import poll
from tests.support.runtime import job_reaches
from tests.support.worker_process import start_worker, stop_worker

from .conftest import Errand
from .test_questions import ASK

WAITING = 50


async def test_fifty_waiting_jobs_leave_a_one_slot_worker_free_for_the_next_job(
    errand: Errand, bot: ErrandBot, tmp_path: Path
) -> None:
    _, summoned = await errand.summon(params=ASK)
    for n in range(WAITING - 1):
        await errand.store.submit(
            "demo",
            {"steps": 1, "step_seconds": 0, "ask": f"Question {n}?", "choices": ["a", "b"]},
            requester="discord:1",
        )
    proc = await start_worker(
        errand.dsn,
        tmp_path,
        ERRAND_WORKER_CONCURRENCY="1",
        ERRAND_WORKER_PARK_AFTER_SECONDS="0",
    )
    try:
        await poll(
            lambda: errand.pool.fetchval("SELECT count(*) FROM job WHERE state = 'waiting'"),
            within=40,
            until=lambda n: n == WAITING,
        )
        await errand.wait_progress_state(summoned, "waiting")
        _, other = await errand.summon("a job beside them", params="steps=2 step_seconds=0.05")
        done = await job_reaches(errand.store, other, {"succeeded"}, within=20)
        assert done.attempts == 1
        await errand.wait_progress_state(other, "succeeded")
        leases = await errand.pool.fetchval(
            "SELECT count(*) FROM job j JOIN attempt a ON a.job_id = j.id"
            " WHERE j.state = 'waiting' AND (a.ended_at IS NULL OR j.current_attempt_id = a.id)"
        )
        assert leases == 0
        parked = await errand.pool.fetchval(
            "SELECT count(*) FROM job WHERE state = 'waiting' AND current_attempt_id IS NULL"
        )
        assert parked == WAITING
    finally:
        await stop_worker(proc)
