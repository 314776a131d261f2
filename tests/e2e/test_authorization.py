"""Discord authorization follows the job's channel: moderating needs the permission there, seeing
a job needs to see its channel, and /summon is refused where the bot could not post."""

from __future__ import annotations

from bot.client import ErrandBot
from discord_emulator import permissions as P

from .conftest import Errand


async def _ask(
    errand: Errand, user: object, channel: object, command: str, options: dict[str, object]
) -> tuple[str, bool]:
    handle = await errand.emu.invoke_slash(user, channel, command, options)  # type: ignore[arg-type]
    answer = await handle.wait_original()
    return answer.content, answer.ephemeral


async def _count_jobs(errand: Errand) -> int:
    return int(await errand.pool.fetchval("SELECT count(*) FROM job"))


async def test_manage_threads_in_another_channel_does_not_let_a_member_cancel_a_job(
    errand: Errand, bot: ErrandBot
) -> None:
    """carol has Manage Threads in #mods only: typing /job cancel there for alice's job in
    #general is refused and changes nothing; once she has it in #general, the same command
    typed in #mods cancels."""
    emu, world = errand.emu, errand.world
    mods = emu.create_channel(world.guild, "mods")
    carol = emu.create_user("carol")
    emu.add_member(world.guild, carol)
    emu.set_overwrite(mods, carol, allow=P.MANAGE_THREADS)
    _, job_id = await errand.summon(params="steps=1 step_seconds=60")
    await errand.wait_progress_state(job_id, "queued")

    text, ephemeral = await _ask(errand, carol, mods, "job cancel", {"id": job_id})
    assert ephemeral
    assert text == f"Only the requester or an operator can cancel job `{job_id}`."
    assert (await errand.job(job_id)).state.value == "queued"
    assert [e.to_state.value for e in (await errand.store.status(job_id)).events] == ["queued"]

    def channel_reads() -> int:
        wanted = f"/channels/{world.channel.id}"
        return sum(1 for r in emu.request_log() if r.method == "GET" and r.path.endswith(wanted))

    emu.set_overwrite(world.channel, carol, allow=P.MANAGE_THREADS)
    before = channel_reads()
    text, _ = await _ask(errand, carol, mods, "job cancel", {"id": job_id})
    assert text == f"Cancelled job `{job_id}`."
    assert (await errand.job(job_id)).state.value == "cancelled"
    # Seeing the job and moderating it read its channel from Discord once, not once each.
    assert channel_reads() - before == 1


async def test_a_job_in_a_private_channel_is_no_such_job_to_members_who_cannot_view_it(
    errand: Errand, bot: ErrandBot
) -> None:
    """alice's job in #secret (hidden from @everyone): bob, who cannot view #secret, asking
    /job status from #general gets exactly the answer of an unknown id, without the task;
    alice and a member allowed into #secret see it."""
    emu, world = errand.emu, errand.world
    secret = emu.create_channel(world.guild, "secret")
    emu.set_overwrite(secret, world.guild, deny=P.VIEW_CHANNEL)
    emu.set_overwrite(secret, world.alice, allow=P.VIEW_CHANNEL)
    emu.set_overwrite(secret, emu.bot_user, allow=P.VIEW_CHANNEL)
    bob, dave = emu.create_user("bob"), emu.create_user("dave")
    emu.add_member(world.guild, bob)
    emu.add_member(world.guild, dave)
    emu.set_overwrite(secret, dave, allow=P.VIEW_CHANNEL)
    _, job_id = await errand.summon(
        "merger plans for acme", channel=secret, params="steps=1 step_seconds=60"
    )

    hidden, ephemeral = await _ask(errand, bob, world.channel, "job status", {"id": job_id})
    unknown, _ = await _ask(errand, bob, world.channel, "job status", {"id": "zzzzzzzz"})
    assert ephemeral
    assert hidden == unknown == "No such job."
    cancel, _ = await _ask(errand, bob, world.channel, "job cancel", {"id": job_id})
    assert cancel == "No such job."
    assert (await errand.job(job_id)).state.value == "queued"

    for allowed in (world.alice, dave):
        page, _ = await _ask(errand, allowed, world.channel, "job status", {"id": job_id})
        assert "merger plans for acme" in page


async def test_summon_is_refused_before_any_job_where_the_bot_cannot_make_the_thread(
    errand: Errand, bot: ErrandBot
) -> None:
    """In a channel where the bot lacks Create Public Threads, /summon is refused with a clear
    reason naming the permission, and no job exists; the same in a channel where it may post
    works."""
    emu, world = errand.emu, errand.world
    closed = emu.create_channel(world.guild, "announcements")
    emu.set_overwrite(closed, emu.bot_user, deny=P.CREATE_PUBLIC_THREADS)
    text, ephemeral = await _ask(
        errand, world.alice, closed, "summon", {"task": "count", "kind": "demo"}
    )
    assert ephemeral
    assert "Create Public Threads" in text
    assert "No job was created" in text
    assert await _count_jobs(errand) == 0
    _, job_id = await errand.summon(params="steps=1 step_seconds=0.1")
    assert await _count_jobs(errand) == 1
    assert job_id


async def test_a_nul_in_the_task_is_refused_clearly(errand: Errand, bot: ErrandBot) -> None:
    """A NUL character in the task: a clear ephemeral refusal, not "Something went wrong", and
    no job."""
    world = errand.world
    text, ephemeral = await _ask(
        errand, world.alice, world.channel, "summon", {"task": "a\x00b", "kind": "demo"}
    )
    assert ephemeral
    assert "NUL" in text
    assert "Something went wrong" not in text
    assert await _count_jobs(errand) == 0
