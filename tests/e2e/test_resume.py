"""A deploy in the middle of a job, seen in Discord: a 40-step ``demo`` whose worker process is
stopped with SIGTERM three times (a fresh one started each time) ends succeeded with exactly 40
steps run and no failure counted, and its progress message never steps backwards."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from bot.client import ErrandBot
from tests.support.polling import poll
from tests.support.worker_process import start_worker, stop_worker

from .conftest import Errand, state_of

STEP = re.compile(r"Step (\d+) of 40")


async def test_three_sigterms_during_a_demo_lose_no_step_and_never_step_back(
    errand: Errand, bot: ErrandBot, tmp_path: Path
) -> None:
    _, job_id = await errand.summon(params="steps=40 step_seconds=0.15")
    proc = await start_worker(errand.dsn, tmp_path)
    for target in (6, 16, 26):

        async def reached(target: int = target) -> bool:
            job = await errand.job(job_id)
            return job.state.value == "running" and (job.progress or {}).get("done", 0) >= target

        await poll(reached, within=40)
        assert await stop_worker(proc, signal.SIGTERM) == 0
        released = await errand.job(job_id)
        assert (released.state.value, released.reason) == ("queued", "released by worker shutdown")
        proc = await start_worker(errand.dsn, tmp_path)
    try:
        await errand.wait_progress_state(job_id, "succeeded", timeout=60)
    finally:
        await stop_worker(proc)

    job = await errand.job(job_id)
    assert (job.state.value, job.attempts, job.failures) == ("succeeded", 4, 0)
    status = await errand.store.status(job_id)
    assert [a.outcome for a in status.attempts] == ["released"] * 3 + ["succeeded"]
    ok = [s["name"] for s in status.steps if s["outcome"] == "ok"]
    assert ok == [f"step {n}" for n in range(1, 41)]  # each once, in order
    assert {s["outcome"] for s in status.steps} <= {"ok", "interrupted"}
    assert job.usage["steps"] == 40

    message = await errand.progress_message(job_id)
    versions = [v.content for v in errand.emu.message(message.id).versions]
    shown = [int(m[1]) for v in versions if (m := STEP.search(v))]
    assert len(shown) >= 4
    assert shown == sorted(shown), shown  # no edit shows a lower step than an earlier one
    final = versions[-1]
    assert state_of(final) == "succeeded"
    assert "100% · 40 of 40 steps done" in final
    assert "attempt 4 · 0 failures (max 3)" in final
    assert "40 steps" in final
