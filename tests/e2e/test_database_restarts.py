"""The bot rides out PostgreSQL restarts: its delivery loop keeps going and a job that runs
across the restarts, and one summoned after them, are both followed to the end in Discord."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from discord_emulator import Emulator
from discord_emulator.testing import World, running_bot
from jobs.engine.db import create_pool
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.cli import CLI, ROOT, cli_environment
from tests.support.pg_restart import own_database, restart
from tests.support.polling import poll

from .conftest import Errand, state_of


async def test_the_bot_follows_jobs_across_three_postgres_restarts(
    emu: Emulator, world: World, registry: Registry, data_root: Path, tmp_path: Path
) -> None:
    """A job runs while PostgreSQL restarts three times (fast, SIGKILL, fast) under the bot and a
    worker process: its progress message ends ``succeeded`` with its notice; a job summoned
    after the restarts is delivered too; the bot's delivery loop never stopped."""
    pgdata, dsn = await own_database(data_root)
    pool = await create_pool(dsn, max_size=5)
    errand = Errand(emu, world, JobStore(pool, registry), pool, dsn, registry)
    bot = errand.new_bot()
    log = tmp_path / "worker.log"
    env = cli_environment(dsn, tmp_path / "data")
    try:
        async with running_bot(emu, bot):
            with log.open("wb") as sink:
                worker = await asyncio.create_subprocess_exec(
                    *CLI, "worker", env=env, cwd=ROOT, stdout=sink, stderr=sink
                )
            try:
                _, first = await errand.summon(params="steps=20 step_seconds=0.4")
                await errand.wait_progress_state(first, "running", timeout=30)
                for kill in (False, True, False):
                    await restart(pgdata, kill=kill)
                    await asyncio.sleep(0.5)
                assert bot.delivery._task is not None
                assert not bot.delivery._task.done()
                _, second = await errand.summon(params="steps=1 step_seconds=0.1")
                for job_id in (first, second):
                    msg = await errand.wait_progress_state(job_id, "succeeded", timeout=40)
                    assert state_of(emu.message(msg.id).content) == "succeeded"
                    thread = await errand.thread_of(job_id)
                    notices = await poll(lambda thread=thread: errand.notices(thread), within=20)
                    assert len(notices) == 1
                    assert (await errand.job(job_id)).attempts == 1
                assert not bot.delivery._task.done()
                assert worker.returncode is None
            finally:
                worker.send_signal(signal.SIGTERM)
                await asyncio.wait_for(worker.wait(), 30)
    finally:
        await pool.close()
