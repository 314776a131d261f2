"""What a newcomer meets on Discord, with the real bot, worker and PostgreSQL against the emulator
(issue #32, part 2): params meant for another kind name that kind (item 5), a run time that
leaves out the time nothing ran (item 9), a silent worker said to be silent (item 12), and a
lone surrogate in an option refused (item 20)."""

from __future__ import annotations

import asyncio
import re

from bot import render
from bot.client import ErrandBot
from discord_emulator.testing import running_bot
from tests.support.polling import poll

from .conftest import Errand, running_worker


async def _count_jobs(errand: Errand) -> int:
    return int(await errand.pool.fetchval("SELECT count(*) FROM job"))


async def test_params_meant_for_another_kind_name_that_kind(errand: Errand) -> None:
    """With a model configured /summon runs the agent by default; the docs' old example
    ``params:steps=60`` belongs to demo: the answer says to add ``kind:demo``, and no job is
    made (it used to be "invalid params for agent: steps: Extra inputs are not permitted")."""
    emu, world = errand.emu, errand.world
    async with running_bot(emu, errand.new_bot(default_kind="agent")):
        handle = await emu.invoke_slash(
            world.alice, world.channel, "summon", {"task": "a long count", "params": "steps=60"}
        )
        answer = await handle.wait_original()
    assert answer.ephemeral
    assert answer.content == (
        "`agent` jobs take no `steps`; `demo` jobs do: add `kind:demo` to your /summon."
    )
    assert await _count_jobs(errand) == 0


async def test_a_lone_surrogate_in_an_option_is_refused(errand: Errand, bot: ErrandBot) -> None:
    """A lone surrogate reaches the bot inside the gateway's JSON (``\\ud800``): the task, or a
    parameter's JSON value, is refused in one ephemeral line; no job, no internal error."""
    emu, world = errand.emu, errand.world
    cases = [
        ({"task": "a\ud800b", "kind": "demo"}, render.NOT_TEXT),
        ({"task": "ok", "kind": "demo", "params": "steps=a\udc80"}, render.NOT_TEXT),
        (
            {"task": "ok", "kind": "demo", "params": "steps='\"a\\ud800\"'"},
            "params: contains \\ud800, a lone surrogate, which is not text",
        ),
    ]
    for options, said in cases:
        handle = await emu.invoke_slash(world.alice, world.channel, "summon", options)
        answer = await handle.wait_original()
        assert answer.ephemeral, options
        assert answer.content == said, options
    assert await _count_jobs(errand) == 0


async def test_a_silent_worker_is_shown_before_its_lease_ends(
    errand: Errand, bot: ErrandBot
) -> None:
    """A running job whose worker stops heartbeating (a SIGKILL) would look alive until the
    reaper takes it back, a lease later: the progress message says when its worker was last
    heard from, once, and stops saying so when the worker is heard from again."""
    emu = errand.emu
    _, job_id = await errand.summon(params="steps=1 step_seconds=60")
    await errand.wait_progress_state(job_id, "queued")
    [claim] = await errand.store.claim("a-worker-that-dies", limit=1, lease_seconds=300)
    msg = await errand.wait_progress_state(job_id, "running")
    assert "heard from" not in emu.message(msg.id).content
    # Its last heartbeat 20 s ago, and none since: the worker was killed.
    heard = await errand.pool.fetchval(
        "UPDATE attempt SET heartbeat_at = now() - interval '20 seconds' WHERE id = $1 "
        "RETURNING heartbeat_at",
        claim.attempt_id,
    )
    warning = f"⚠️ Its worker was last heard from <t:{int(heard.timestamp())}:R>"
    await emu.wait_until(lambda: warning in emu.message(msg.id).content, 10)
    content = emu.message(msg.id).content
    assert "**running**" in content
    assert emu.message(msg.id).components  # still cancellable: a cancel is what to do
    versions = len(emu.message(msg.id).versions)
    await asyncio.sleep(1.0)  # five delivery polls: the same silence is shown once
    assert len(emu.message(msg.id).versions) == versions
    await errand.pool.execute(
        "UPDATE attempt SET heartbeat_at = now() WHERE id = $1", claim.attempt_id
    )
    await emu.wait_until(lambda: "heard from" not in emu.message(msg.id).content, 10)
    assert "**running**" in emu.message(msg.id).content


async def test_the_run_time_leaves_out_the_time_nothing_ran(errand: Errand, bot: ErrandBot) -> None:
    """A job released by a worker that stopped, then idle for 3 s, then finished by another:
    its notice and progress message name both times, and only the wall time counts the wait
    (it used to read "succeeded after" the whole span)."""
    emu = errand.emu
    _, job_id = await errand.summon(params="steps=8 step_seconds=0.5")
    async with running_worker(errand.store, errand.registry, errand.dsn):
        await poll(
            lambda: errand.job(job_id),
            10,
            until=lambda job: (job.progress or {}).get("done", 0) >= 1,
            what="a first step done",
        )
    assert (await errand.job(job_id)).state.value == "queued"  # released: it is retry-safe
    await asyncio.sleep(3.0)  # nothing runs it
    async with running_worker(errand.store, errand.registry, errand.dsn):
        msg = await errand.wait_progress_state(job_id, "succeeded", timeout=20)
    job = await errand.job(job_id)
    assert job.run_seconds is not None
    assert job.finished_at is not None
    wall = (job.finished_at - job.created_at).total_seconds()
    assert 3.5 <= job.run_seconds <= wall - 2.9, (job.run_seconds, wall)
    times = f"Run time {render.seconds(job.run_seconds)} · wall time {render.seconds(wall)}"
    assert times in emu.message(msg.id).content
    [notice] = await poll(lambda: errand.notices(msg.channel_id))
    assert re.search(rf"^{re.escape(times)} · attempt 2 · 0 failures", notice.content, re.M)
