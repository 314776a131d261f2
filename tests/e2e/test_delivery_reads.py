"""A delivery round reads its job once, in the statement that leases its notices, and at most
once more when news came while it waited to edit; never the store's status (five SELECTs), never
the binding again. Counted at the store boundary: every statement the bot's pool runs is logged
by asyncpg's query logger on each of its connections."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from bot.client import ErrandBot
from bot.queries import bot_queries
from discord_emulator.testing import running_bot
from jobs.engine.db import init_connection, keep_session
from jobs.engine.queries import engine_queries
from jobs.engine.store import JobStore
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import Errand, fast_bot_settings, state_of

ENGINE = engine_queries()
ROUND = ENGINE["notice_round"]
# What JobStore.status runs (five statements), and the single-job reads.
STATUS = {
    ENGINE[name].sql
    for name in (
        "job_get",
        "job_get_by_id",
        "attempt_list_by_job",
        "event_list_by_job",
        "step_list_by_job",
        "asset_list_by_job",
    )
}


@pytest.fixture
async def logged(
    errand: Errand,
) -> AsyncIterator[tuple[list[tuple[str, tuple[Any, ...]]], ErrandBot]]:
    """The bot on a pool of its own whose every statement is logged, (text, arguments)."""
    seen: list[tuple[str, tuple[Any, ...]]] = []

    async def init(conn: asyncpg.Connection) -> None:
        await init_connection(conn)
        conn.add_query_logger(lambda q: seen.append((q.query, tuple(q.args))))

    pool = await asyncpg.create_pool(
        errand.dsn, min_size=1, max_size=10, init=init, reset=keep_session
    )
    assert pool is not None
    bot = ErrandBot(
        store=JobStore(pool, errand.registry),
        dsn=errand.dsn,
        # Long pauses between edits, and progress more often than that: news comes while a
        # round waits to edit.
        settings=fast_bot_settings(edit_interval_seconds=0.5),
        registry=errand.registry,
    )
    try:
        async with running_bot(errand.emu, bot):
            errand.bot = bot
            yield seen, bot
    finally:
        await pool.close()


async def test_a_round_reads_the_job_once_when_it_claims_and_at_most_once_more(
    errand: Errand, worker: Worker, logged: tuple[list[tuple[str, tuple[Any, ...]]], ErrandBot]
) -> None:
    seen, _ = logged
    _, public_id = await errand.summon(params="steps=6 step_seconds=0.2")
    msg = await errand.wait_progress_state(public_id, "succeeded", timeout=20)
    thread = await errand.thread_of(public_id)
    [notice] = await poll(lambda: errand.notices(thread))
    assert "**succeeded**" in notice.content
    job_id = (await errand.job(public_id)).id

    async def delivered() -> bool:
        pending = await errand.pool.fetchval(
            "SELECT count(*) FROM outbox WHERE job_id = $1 AND delivered_at IS NULL", job_id
        )
        return pending == 0

    await poll(delivered)

    texts = [text for text, _ in seen]
    assert not [t for t in texts if t in STATUS]  # no status read, no job read by id
    assert bot_queries()["binding_get"].sql not in texts  # the binding comes with its lease
    claim_at, job_at = ROUND.params.index("claim"), ROUND.params.index("job_id")
    # C: a round's claim (the job and its notices); L: the round's second look at the job.
    rounds = "".join(
        "C" if args[claim_at] else "L"
        for text, args in seen
        if text == ROUND.sql and args[job_at] == job_id
    )
    assert rounds.startswith("C"), rounds
    assert "LL" not in rounds, rounds  # at most one more read per round
    assert rounds.count("C") >= 3, rounds  # queued, running and its progress, succeeded
    assert "L" in rounds, rounds  # news came while a round waited: it looked once more
    states = [state_of(v.content) for v in errand.emu.message(msg.id).versions]
    assert states[states.index("succeeded") :] == ["succeeded"], states
