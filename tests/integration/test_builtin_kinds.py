"""Built-in kinds as a new user meets them: ``sleep`` reports progress instead of looking frozen,
and ``agent`` with no model configured fails at once, saying what to set."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


async def test_sleep_reports_its_progress_while_it_sleeps(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    job, _ = await store.submit("sleep", {"seconds": 3}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):

        async def progressed() -> bool:
            seen = await store.get(job.public_id)
            return seen.state.value == "running" and (seen.progress or {}).get("done", 0) >= 1

        await poll(progressed, within=10)
        running = await store.get(job.public_id)
        assert running.progress is not None
        assert running.progress["total"] == 3
        assert running.progress["note"].endswith("of 3 s")
        done = await job_reaches(store, job.public_id, {"succeeded"})
    assert done.progress is not None
    assert (done.progress["done"], done.progress["total"]) == (3, 3)


async def test_agent_without_a_model_fails_at_once_saying_what_to_set(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ERRAND_AGENT_BASE_URL", "ERRAND_AGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    job, _ = await store.submit("agent", {"prompt": "hello"}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert done.state.value == "failed"
    assert done.attempts == 1
    assert done.reason is not None
    assert "no model is configured" in done.reason
    assert "ERRAND_AGENT_BASE_URL" in done.reason
    assert "APIConnectionError" not in str(done.error)
