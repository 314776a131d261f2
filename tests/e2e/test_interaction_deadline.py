"""Discord's 3-second interaction deadline: a command stalled by the database (a row lock) is
still acknowledged in time, then answered once the work is done."""

from __future__ import annotations

import time

from bot.client import ErrandBot
from discord_emulator.testing import running_bot

from .conftest import Errand, fast_bot_settings

DEFERRED = 5


async def test_a_cancel_stalled_by_the_database_is_acknowledged_before_the_deadline(
    errand: Errand,
) -> None:
    """/job cancel and the Cancel button wait for the job's row lock (a worker's transition
    holds it); the bot acknowledges within Discord's 3 s (an ephemeral deferred answer), then
    says what happened once the cancel went through."""
    emu, world = errand.emu, errand.world
    bot = ErrandBot(
        store=errand.store,
        dsn=errand.dsn,
        registry=errand.registry,
        settings=fast_bot_settings(defer_after_seconds=0.3),
    )
    async with running_bot(emu, bot):
        errand.bot = bot
        _, job_id = await errand.summon(params="steps=1 step_seconds=60")
        msg = await errand.wait_progress_state(job_id, "queued")
        # The button first: once the job is cancelled, the re-rendered progress message has no
        # Cancel button left to click.
        for how in ("button", "command"):
            async with errand.pool.acquire() as conn, conn.transaction():
                await conn.execute("SELECT 1 FROM job WHERE public_id = $1 FOR UPDATE", job_id)
                started = time.perf_counter()
                if how == "command":
                    handle = await emu.invoke_slash(
                        world.alice, world.channel, "job cancel", {"id": job_id}
                    )
                else:
                    handle = await emu.click(world.alice, msg, f"errand:cancel:{job_id}")
                await handle.wait_response(timeout=2.0)
                assert time.perf_counter() - started < 1.5
                assert handle.response_type == DEFERRED
            answer = await handle.wait_original()
            assert answer.ephemeral
            expected = (
                f"Cancelled job `{job_id}`."
                if how == "button"
                else f"Too late: job `{job_id}` already cancelled."
            )
            assert expected == answer.content
        await errand.wait_progress_state(job_id, "cancelled")
