"""The bot as a process: ``errand bot`` against the emulator, killed with SIGKILL around a
notice, stopped with SIGTERM during one, restarted, and refused without a good token."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from discord_emulator import Emulator
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import Errand

ENTRY = "from bot.cli import main; main()"


def bot_env(errand: Errand, tmp_path: Path, token: str | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DISCORD_", "ERRAND_")) and k != "DATABASE_URL"
    }
    env.update(
        DATABASE_URL=errand.dsn,
        ERRAND_DATA_DIR=str(tmp_path),
        ERRAND_DISCORD_API_BASE=errand.emu.api_base,
        ERRAND_DISCORD_GATEWAY_URL=errand.emu.gateway_url,
        ERRAND_BOT_DEFAULT_KIND="demo",
        ERRAND_BOT_EDIT_INTERVAL_SECONDS="0.1",
        ERRAND_BOT_DELIVERY_POLL_SECONDS="0.2",
        ERRAND_BOT_DELIVERY_LEASE_SECONDS="1",
        ERRAND_BOT_GUILD_READY_TIMEOUT="0.05",
        ERRAND_BOT_REQUESTS_PER_SECOND="2000",
        ERRAND_LOG_FORMAT="json",
    )
    if token is not None:
        env["DISCORD_TOKEN"] = token
    return env


@asynccontextmanager
async def bot_process(
    errand: Errand, tmp_path: Path, command: str = "bot"
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``errand bot`` (or ``run``) in a subprocess, connected (answers /job list) first."""
    assert errand.emu.application is not None
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ENTRY,
        command,
        env=bot_env(errand, tmp_path, errand.emu.application.token),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await wait_connected(errand.emu, errand)
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 15)


async def wait_connected(emu: Emulator, errand: Errand) -> None:
    for _ in range(100):
        try:
            handle = await emu.invoke_slash(errand.world.alice, errand.world.channel, "job list")
        except LookupError:  # commands not synced yet
            await asyncio.sleep(0.1)
            continue
        try:
            await handle.wait_original(timeout=0.5)
            return
        except TimeoutError:
            continue
    raise TimeoutError("the bot process did not connect")


def _is_notice(event: object) -> bool:
    data = getattr(event, "data", {})
    return getattr(event, "kind", "") == "message_create" and str(
        data.get("content", "")
    ).startswith("<@")


async def _delivered_once(errand: Errand, job_id: str) -> None:
    thread_id = await errand.thread_of(job_id)
    row = await poll(
        lambda: errand.pool.fetchrow(
            "SELECT o.* FROM outbox o JOIN job j ON j.id = o.job_id WHERE j.public_id = $1 "
            "AND o.payload->>'to' = 'succeeded' AND o.delivered_at IS NOT NULL",
            job_id,
        ),
        within=20,
    )
    await asyncio.sleep(1.5)  # longer than a lease: a duplicate would have been sent by now
    notices = errand.notices(thread_id)
    assert len(notices) == 1
    assert row["external_id"] == str(notices[0].id)


async def test_sigkill_between_the_transition_and_the_notice_delivers_it_once_after_restart(
    errand: Errand, worker: Worker, tmp_path: Path
) -> None:
    """The bot dies (SIGKILL) while the job runs; the job succeeds with no bot alive (the
    outbox row waits); the restarted bot delivers exactly one notice."""
    async with bot_process(errand, tmp_path) as proc:
        _, job_id = await errand.summon(params="steps=1 step_seconds=1")
        await errand.wait_progress_state(job_id, "running")
        proc.kill()
        await proc.wait()
    await poll(lambda: _succeeded(errand, job_id))
    async with bot_process(errand, tmp_path):
        await errand.wait_progress_state(job_id, "succeeded", timeout=20)
        await _delivered_once(errand, job_id)


async def test_sigkill_as_the_notice_lands_does_not_duplicate_it(
    errand: Errand, worker: Worker, tmp_path: Path
) -> None:
    """The bot is killed after Discord made the notice and before its answer reached the bot
    (so nothing was recorded): after restart the lease runs out, the bot sends the notice again
    with the same nonce, Discord returns the message it made, and the thread has one notice."""
    async with bot_process(errand, tmp_path) as proc:
        job_id, thread_id, hold = await errand.summon_and_hold_its_notice()
        await asyncio.wait_for(hold.arrived.wait(), 20)
        proc.kill()
        await proc.wait()
        hold.release()
    assert len(errand.notices(thread_id)) == 1
    async with bot_process(errand, tmp_path):
        await _delivered_once(errand, job_id)
    posts = [
        r
        for r in errand.emu.request_log(path_contains=f"/channels/{thread_id}/messages")
        if r.method == "POST" and r.status == 200
    ]
    assert len(posts) == 3  # the progress message, the notice, and its resend under one nonce


async def test_sigterm_while_a_notice_is_in_flight_records_it_before_the_bot_exits(
    errand: Errand, worker: Worker, tmp_path: Path
) -> None:
    """A deploy stops the bot (SIGTERM) while Discord is answering a notice: the process
    waits for the answer, records the delivery, then exits 0; nothing is left to resend."""
    async with bot_process(errand, tmp_path) as proc:
        job_id, thread_id, hold = await errand.summon_and_hold_its_notice()
        await asyncio.wait_for(hold.arrived.wait(), 20)
        proc.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.5)
        assert proc.returncode is None  # still waiting for Discord's answer
        hold.release()
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    [notice] = errand.notices(thread_id)
    row = await errand.pool.fetchrow(
        "SELECT o.delivered_at, o.external_id FROM outbox o JOIN job j ON j.id = o.job_id"
        " WHERE j.public_id = $1 AND o.payload->>'to' = 'succeeded'",
        job_id,
    )
    assert row["delivered_at"] is not None
    assert row["external_id"] == str(notice.id)


async def _succeeded(errand: Errand, job_id: str) -> bool:
    return (await errand.job(job_id)).state.value == "succeeded"


async def test_a_missing_or_refused_token_is_one_line_and_exit_code_2(
    errand: Errand, tmp_path: Path
) -> None:
    """No DISCORD_TOKEN, or one Discord refuses: one clear line, exit code 2, token not shown."""
    for token in (None, "not-a-real-token-s3cr3t"):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            ENTRY,
            "bot",
            env=bot_env(errand, tmp_path, token),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 2
        lines = [ln for ln in err.decode().splitlines() if ln.startswith("error:")]
        assert len(lines) == 1, err.decode()
        assert "DISCORD_TOKEN" in lines[0]
        assert "s3cr3t" not in (out + err).decode()


async def test_errand_run_is_the_bot_and_a_worker_in_one_process(
    errand: Errand, tmp_path: Path
) -> None:
    """With ``errand run`` and no other worker, a summoned job runs to its notice."""
    async with bot_process(errand, tmp_path, "run"):
        _, job_id = await errand.summon(params="steps=2 step_seconds=0.1")
        await errand.wait_progress_state(job_id, "succeeded", timeout=20)
        await _delivered_once(errand, job_id)
