"""The agent's model requests and tokens per minute, one budget in PostgreSQL for the whole
fleet: two workers against the fake provider never exceed it in any window, and the jobs that
wait for it wait visibly, then succeed without using up an attempt."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from jobs.engine.store import JobStore, Submission
from jobs.runtime.registry import Registry
from tests.fakes.chat_server import ChatServer, chat_server
from tests.support.runtime import job_reaches, running_worker

WINDOW = 2.0  # the provider's "minute", shortened (ERRAND_AGENT_RATE_WINDOW_SECONDS)
PER_WINDOW = 3


@pytest.fixture
async def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatServer]:
    catalog = tmp_path / "commands.toml"
    catalog.write_text("")
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(catalog))
    async with chat_server({}) as srv:
        monkeypatch.setenv("ERRAND_AGENT_BASE_URL", srv.url)
        monkeypatch.setenv("ERRAND_AGENT_API_KEY", "sk-test-rates")
        monkeypatch.setenv("ERRAND_AGENT_MAX_RETRIES", "0")
        monkeypatch.setenv("ERRAND_AGENT_REQUESTS_PER_MINUTE", str(PER_WINDOW))
        monkeypatch.setenv("ERRAND_AGENT_RATE_WINDOW_SECONDS", str(WINDOW))
        yield srv


def most_in_any_window(times: list[float], window: float) -> int:
    """The most of ``times`` that fall within any ``window`` seconds."""
    ordered = sorted(times)
    return max(
        (sum(1 for t in ordered if start <= t < start + window) for start in ordered), default=0
    )


async def test_two_workers_share_the_model_request_rate_and_throttled_jobs_succeed(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
    provider: ChatServer,
    pool: asyncpg.Pool,
) -> None:
    """Nine agent jobs of one model call each, 3 requests per 2 s, two workers: at most 3
    requests are sent in any 2 s, the others wait and say so, and all nine succeed in their
    first attempt."""
    made = await store.submit_many(
        [Submission("agent", {"prompt": f"task {n}"}, "alice") for n in range(9)]
    )
    notes: set[str] = set()
    taken: set[float] = set()  # the budget forgets what left its window; kept here

    async def watch() -> None:
        while True:
            for r in await pool.fetch("SELECT progress FROM job WHERE progress IS NOT NULL"):
                notes.add(str(r["progress"].get("note")))
            for r in await pool.fetch(
                "SELECT at FROM rate_use WHERE scope LIKE 'model requests %'"
            ):
                taken.add(r["at"].timestamp())
            await asyncio.sleep(0.05)

    watcher = asyncio.create_task(watch())
    try:
        async with (
            running_worker(store, registry, db_dsn, tmp_path),
            running_worker(store, registry, db_dsn, tmp_path),
        ):
            for public_id, _ in made:
                await job_reaches(store, public_id, {"succeeded"}, within=30)
    finally:
        watcher.cancel()
    for r in await pool.fetch("SELECT at FROM rate_use WHERE scope LIKE 'model requests %'"):
        taken.add(r["at"].timestamp())  # the last ones, taken since the watcher's last look
    assert len(provider.arrivals) == 9
    # The fleet's record of each request taken (the database's clock) holds the budget
    # exactly; at the provider, the way from the take to the request's arrival adds the test
    # machine's scheduling delays (seen up to 0.25 s on two loaded cores; nothing at a real
    # minute's scale).
    assert len(taken) == 9
    assert most_in_any_window(list(taken), WINDOW) <= PER_WINDOW
    assert most_in_any_window(provider.arrivals, WINDOW - 0.5) <= PER_WINDOW
    # Nine requests at three per window take at least two windows more than the first three.
    assert max(provider.arrivals) - min(provider.arrivals) >= 2 * WINDOW - 0.3
    assert any("waiting for the model's request rate (3/min)" in n for n in notes), notes
    rows = await pool.fetch("SELECT attempts, failures FROM job")
    assert {(r["attempts"], r["failures"]) for r in rows} == {(1, 0)}


async def test_the_token_budget_counts_each_call_s_most(
    store: JobStore, tmp_path: Path, provider: ChatServer, pool: asyncpg.Pool
) -> None:
    """The budget itself: an amount that fits is taken at once; one that does not says how long
    until the window frees enough, and takes nothing."""
    assert await store.take_rate("t", 60, 100, window=WINDOW) == 0.0
    wait = await store.take_rate("t", 60, 100, window=WINDOW)
    assert 0 < wait <= WINDOW
    assert await pool.fetchval("SELECT sum(amount) FROM rate_use WHERE scope = 't'") == 60
    await asyncio.sleep(wait + 0.05)
    assert await store.take_rate("t", 60, 100, window=WINDOW) == 0.0
    # A single amount above the whole budget goes alone, once nothing else is in the window.
    assert await store.take_rate("big", 500, 100, window=WINDOW) == 0.0
