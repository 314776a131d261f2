"""A real discord.py bot answers a slash command, opens a thread and edits a
progress message; the emulator shows the reply, the thread and the full edit history."""

from __future__ import annotations

import discord
from discord.ext import commands

from discord_emulator import Emulator
from discord_emulator.testing import running_bot

from .conftest import World


async def test_slash_command_reply_thread_and_edit_history(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> None:
    @plain_bot.tree.command(name="work", description="Do some work with progress")
    async def work(interaction: discord.Interaction, name: str) -> None:
        await interaction.response.send_message(f"Starting {name}")
        reply = await interaction.original_response()
        thread = await reply.create_thread(name=f"work {name}")
        progress = await thread.send("progress 0%")
        await progress.edit(content="progress 50%")
        await progress.edit(content="progress 100%")
        await interaction.followup.send("done")

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "work", {"name": "report"})
        reply = await handle.wait_original()
        assert reply.content == "Starting report"
        assert reply.author_id == emu.bot_user.id
        assert not reply.ephemeral

        (done,) = await handle.wait_followups(1)
        assert done.content == "done"

        thread = emu.thread_of(reply)
        assert thread is not None
        assert thread.name == "work report"
        assert thread.id == reply.id  # a thread started from a message takes the message id
        assert thread.parent_id == world.channel.id

        # The thread opens with a THREAD_STARTER_MESSAGE that refers to the reply.
        starter, progress = emu.history(thread)
        assert (starter.type, starter.content) == (21, "")
        assert starter.message_reference is not None
        assert starter.message_reference["message_id"] == str(reply.id)
        assert [v.content for v in progress.versions] == [
            "progress 0%",
            "progress 50%",
            "progress 100%",
        ]
        stamps = [v.at for v in progress.versions]
        assert stamps == sorted(stamps)
        assert progress.edited_at == stamps[-1]
        # The channel shows the reply and the follow-up, in order.
        assert [m.content for m in emu.history(world.channel)] == ["Starting report", "done"]
        # What discord.py sees matches: fetch through the REST API.
        fetched = await plain_bot.get_channel(thread.id).fetch_message(progress.id)  # type: ignore[union-attr]
        assert fetched.content == "progress 100%"
        assert fetched.edited_at is not None
