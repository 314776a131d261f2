"""A job's life through Discord: submitting long work returns an id at once (a slow submit is
acknowledged before the deadline), its status tells the truth at each stage, completion and
failure notify the origin, and a cancelled job stops and never reports success. A real
discord.py bot against the emulator, a real worker and PostgreSQL."""

from __future__ import annotations

import asyncio
import re
import time

from bot.client import ErrandBot
from discord_emulator.testing import running_bot
from jobs.engine.store import JobStore, Quotas
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import JOB_ID, Errand, fast_bot_settings, state_of


async def test_submitting_long_work_returns_an_id_without_holding_the_transport_open(
    errand: Errand, bot: ErrandBot
) -> None:
    """/summon of an hour-long job is answered at once with the id; the interaction is done
    (no deferred follow-up pending) and the job is queued durably."""
    started = time.perf_counter()
    handle, job_id = await errand.summon(params="steps=1 step_seconds=3600")
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"answered in {elapsed:.2f}s"
    assert handle.response_type == 4  # a complete answer, not a deferral
    assert handle.original is not None
    assert not handle.original.ephemeral
    assert f"`{job_id}`" in handle.original.content
    job = await errand.job(job_id)
    assert job.state.value == "queued"
    assert job.origin["interaction_id"] == str(handle.id)


async def test_polling_the_id_reports_state_truthfully_at_each_stage(
    errand: Errand, bot: ErrandBot
) -> None:
    """/job status says queued while no worker runs, running while it runs (with its step),
    succeeded at the end: each time what the database says."""
    _, job_id = await errand.summon(params="steps=3 step_seconds=0.4")

    async def status() -> str:
        handle = await errand.emu.invoke_slash(
            errand.world.alice, errand.world.channel, "job status", {"id": job_id}
        )
        answer = await handle.wait_original()
        assert answer.ephemeral
        return answer.content

    page = await status()
    assert state_of(page) == "queued" == (await errand.job(job_id)).state.value

    async with asyncio.timeout(10):
        from .conftest import running_worker

        async with running_worker(errand.store, errand.registry, errand.dsn):
            await poll(lambda: _is(errand, job_id, "running"))
            page = await status()
            assert state_of(page) == "running"
            assert "attempt 1 · 0 failures (max 3)" in page
            assert "queued → running by worker" in page
            await poll(lambda: _is(errand, job_id, "succeeded"))
    page = await status()
    assert state_of(page) == "succeeded"
    assert re.search(r"\(run time [\d.]+ s · wall time [\d.]+ s\)", page), page
    assert "running → succeeded by worker" in page


async def _is(errand: Errand, job_id: str, state: str) -> bool:
    return (await errand.job(job_id)).state.value == state


async def test_completion_notifies_the_origin(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """A finished job gets one reply in its thread that mentions the requester."""
    handle, job_id = await errand.summon()
    msg = await errand.wait_progress_state(job_id, "succeeded")
    thread = errand.emu.thread_of(handle.original)  # type: ignore[arg-type]
    assert thread is not None
    assert thread.id == msg.channel_id
    notices = await poll(lambda: errand.notices(thread.id))
    await asyncio.sleep(0.3)  # nothing else arrives
    assert len(errand.notices(thread.id)) == 1
    assert notices[0].content.startswith(
        f"<@{errand.world.alice.id}> ✅ Job `{job_id}` **succeeded**"
    )
    row = await errand.pool.fetchrow(
        "SELECT * FROM outbox o JOIN job j ON j.id = o.job_id WHERE j.public_id = $1 "
        "AND o.payload->>'to' = 'succeeded'",
        job_id,
    )
    assert row["delivered_at"] is not None
    assert row["external_id"] == str(notices[0].id)


async def test_failure_notifies_the_origin(errand: Errand, bot: ErrandBot, worker: Worker) -> None:
    """A failed job says so in its progress message and in one notice with the reason."""
    _handle, job_id = await errand.summon(params="steps=3 step_seconds=0.05 fail_at_step=2")
    msg = await errand.wait_progress_state(job_id, "failed")
    assert "failed at step 2 as asked" in errand.emu.message(msg.id).content
    notices = await poll(lambda: errand.notices(msg.channel_id))
    assert len(notices) == 1
    assert "**failed**" in notices[0].content
    assert "failed at step 2" in notices[0].content
    assert (await errand.job(job_id)).state.value == "failed"


async def test_a_cancelled_job_stops_ends_cancelled_and_never_reports_success(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """/job cancel on a running job: it stops, ends cancelled with the reason, and neither the
    job nor any message later says it succeeded."""
    _, job_id = await errand.summon(params="steps=3 step_seconds=30")
    await poll(lambda: _is(errand, job_id, "running"))
    handle = await errand.emu.invoke_slash(
        errand.world.alice,
        errand.world.channel,
        "job cancel",
        {"id": job_id, "reason": "not needed"},
    )
    answer = await handle.wait_original()
    assert answer.ephemeral
    assert answer.content.startswith(f"Asked job `{job_id}` to stop")
    msg = await errand.wait_progress_state(job_id, "cancelled")
    job = await errand.job(job_id)
    assert job.state.value == "cancelled"
    assert "not needed" in (job.reason or "")
    await asyncio.sleep(1.0)  # longer than a step would take to report anything late
    assert (await errand.job(job_id)).state.value == "cancelled"
    shown = [state_of(v.content) for v in errand.emu.message(msg.id).versions]
    assert "succeeded" not in shown
    assert shown[-1] == "cancelled"
    assert errand.emu.message(msg.id).components == []  # the Cancel button is gone
    notices = errand.notices(msg.channel_id)
    assert [("**cancelled**" in n.content) for n in notices] == [True]


async def test_a_slow_submit_is_acknowledged_before_the_deadline_then_answered(
    errand: Errand,
) -> None:
    """When the database stalls the submit (here: a quota lock held elsewhere), the bot
    acknowledges within the deadline (deferred), answers with the id once the job exists, and
    the thread still starts from that answer."""
    emu, world = errand.emu, errand.world
    store = JobStore(errand.pool, errand.registry, quotas=Quotas(per_requester=100))
    bot = ErrandBot(
        store=store,
        dsn=errand.dsn,
        registry=errand.registry,
        settings=fast_bot_settings(defer_after_seconds=0.3),
    )
    async with running_bot(emu, bot):
        errand.bot = bot
        async with errand.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", f"discord:{world.alice.id}"
            )
            started = time.perf_counter()
            handle = await emu.invoke_slash(
                world.alice, world.channel, "summon", {"task": "slow db", "kind": "demo"}
            )
            await handle.wait_response()
            assert time.perf_counter() - started < 1.0
            assert handle.response_type == 5  # deferred: acknowledged, answer to follow
            await asyncio.sleep(0.5)
            assert await errand.pool.fetchval("SELECT count(*) FROM job") == 0
        answer = await handle.wait_original()
        match = JOB_ID.search(answer.content)
        assert match is not None
        msg = await errand.wait_progress_state(match[1], "queued")
        assert msg.channel_id == answer.id  # the thread started from the answer
