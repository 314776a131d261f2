"""An ``unknown`` outcome on Discord: what the requester is told, and resolving it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.client import ErrandBot
from jobs.engine.moves import Finish
from jobs.runtime.context import Context
from jobs.runtime.registry import kind
from tests.support.polling import poll

from .conftest import Errand, state_of


async def test_unknown_is_shown_with_what_to_do_and_an_operator_resolves_it(
    errand: Errand, bot: ErrandBot
) -> None:
    """A worker reports the outcome unknown: the progress message says so and who can act, the
    requester gets one notice; the requester may not resolve a demo job, an operator (admin
    role) may, inside the job's thread without its id, and the progress message then shows the
    resolution."""
    emu, world = errand.emu, errand.world
    _, job_id = await errand.summon(params="steps=1 step_seconds=60")
    await errand.wait_progress_state(job_id, "queued")
    [claim] = await errand.store.claim("test-worker", limit=1, lease_seconds=30)
    await errand.store.finish_one(
        Finish(claim.job_id, claim.attempt_id, "unknown", reason="payment call timed out")
    )
    msg = await errand.wait_progress_state(job_id, "unknown")
    content = emu.message(msg.id).content
    assert "The outcome is unknown: payment call timed out" in content
    assert "An operator has to check what happened and resolve it." in content
    assert emu.message(msg.id).components == []
    [notice] = await poll(lambda: errand.notices(msg.channel_id))
    assert notice.content.startswith(f"<@{world.alice.id}> ❓ Job `{job_id}` **unknown**")

    handle = await emu.invoke_slash(
        world.alice,
        world.channel,
        "job resolve",
        {"id": job_id, "outcome": "succeeded", "note": "paid"},
    )
    assert "can only be resolved by an operator" in (await handle.wait_original()).content
    assert (await errand.job(job_id)).state.value == "unknown"

    operator = emu.create_user("olga")
    emu.add_member(world.guild, operator)
    emu.create_role(world.guild, "errand-admin", 0, members=[operator])
    errand.bot.settings.admin_role = "errand-admin"  # type: ignore[union-attr]
    handle = await emu.invoke_slash(  # outside a job's thread, the id is needed
        operator, world.channel, "job resolve", {"outcome": "succeeded", "note": "paid"}
    )
    assert (await handle.wait_original()).content == "Give a job id, or ask inside a job's thread."
    assert (await errand.job(job_id)).state.value == "unknown"
    handle = await emu.invoke_slash(  # inside it, the thread names the job
        operator,
        emu.channel(msg.channel_id),
        "job resolve",
        {"outcome": "succeeded", "note": "paid"},
    )
    assert (await handle.wait_original()).content == f"Resolved job `{job_id}`: now succeeded."
    await errand.wait_progress_state(job_id, "succeeded")
    assert state_of(emu.message(msg.id).content) == "succeeded"
    notices = await poll(lambda: n if len(n := errand.notices(msg.channel_id)) == 2 else None)
    # Who resolved it is shown as Discord shows a person (a mention), never the record's raw
    # "discord:<id>" (issue #32, item 2): in the notice, the progress message and /job status.
    assert notices[1].content.splitlines()[0] == (
        f"<@{world.alice.id}> ✅ Job `{job_id}` **succeeded**, resolved by <@{operator.id}>: paid"
    )
    handle = await emu.invoke_slash(operator, world.channel, "job status", {"id": job_id})
    status = (await handle.wait_original()).content
    assert f"unknown → succeeded by <@{operator.id}>: resolved as succeeded: paid" in status
    for shown in (notices[1].content, emu.message(msg.id).content, status):
        assert "discord:" not in shown, shown


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


@kind("e2e_resolvable", params=_Params, requester_may_resolve=True)
async def _resolvable(ctx: Context, params: _Params) -> dict[str, bool]:
    """A kind whose requester may settle an unknown outcome."""
    return {"ok": True}


async def test_the_requester_resolves_when_the_kind_allows_it(
    errand: Errand, bot: ErrandBot
) -> None:
    """For a kind with requester_may_resolve, the progress message tells the requester how, and
    /job resolve by the requester settles it; another member is refused."""
    emu, world = errand.emu, errand.world
    _, job_id = await errand.summon(kind="e2e_resolvable", params=None)
    await errand.wait_progress_state(job_id, "queued")
    [claim] = await errand.store.claim("test-worker", limit=1, lease_seconds=30)
    await errand.store.finish_one(Finish(claim.job_id, claim.attempt_id, "unknown", reason="lost"))
    msg = await errand.wait_progress_state(job_id, "unknown")
    assert (
        f"Check whether it happened, then `/job resolve {job_id}`." in emu.message(msg.id).content
    )
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    handle = await emu.invoke_slash(
        bob, world.channel, "job resolve", {"id": job_id, "outcome": "failed", "note": "x"}
    )
    assert (await handle.wait_original()).content.startswith("Only the requester")
    handle = await emu.invoke_slash(
        world.alice,
        world.channel,
        "job resolve",
        {"id": job_id, "outcome": "failed", "note": "never sent"},
    )
    assert (await handle.wait_original()).content == f"Resolved job `{job_id}`: now failed."
    final = await errand.wait_progress_state(job_id, "failed")
    assert "resolved as failed" in emu.message(final.id).content
