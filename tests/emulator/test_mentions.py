"""Mentions (issue point 1): Discord fills ``mentions``, ``mention_roles`` and
``mention_everyone`` from the content on create and edit, filtered by ``allowed_mentions`` and
the author's Mention Everyone permission; a message mentioning the bot keeps its content
without the message content intent."""

from __future__ import annotations

import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, permissions
from discord_emulator.testing import running_bot

from .conftest import World


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_user_mentions_are_parsed_and_filtered_by_allowed_mentions(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    pinged = await channel.send(f"<@{world.alice.id}> your job is done")
    assert [u.id for u in pinged.mentions] == [world.alice.id]
    assert emu.message(pinged.id).mention_ids == [world.alice.id]

    quiet = await channel.send(
        f"<@{world.alice.id}> your job is done", allowed_mentions=discord.AllowedMentions.none()
    )
    assert quiet.mentions == []

    only_bob = emu.create_user("bob")
    emu.add_member(world.guild, only_bob)
    listed = await channel.send(
        f"<@{world.alice.id}> and <@{only_bob.id}>",
        allowed_mentions=discord.AllowedMentions(users=[discord.Object(only_bob.id)]),
    )
    assert [u.id for u in listed.mentions] == [only_bob.id]

    # Editing re-parses the content.
    edited = await quiet.edit(
        content=f"<@{only_bob.id}> now", allowed_mentions=discord.AllowedMentions(users=True)
    )
    assert [u.id for u in edited.mentions] == [only_bob.id]
    assert emu.message(quiet.id).mention_ids == [only_bob.id]


async def test_everyone_and_roles_need_permission_and_allowed_mentions(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    quiet_role = emu.create_role(world.guild, "ops")  # not mentionable
    loud_role = emu.create_role(world.guild, "oncall")
    loud_role.mentionable = True
    content = f"@everyone @here <@&{quiet_role.id}> <@&{loud_role.id}>"
    # Without Mention Everyone, @everyone and unmentionable roles do not ping.
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.MENTION_EVERYONE)
    sent = await channel.send(content, allowed_mentions=discord.AllowedMentions.all())
    assert sent.mention_everyone is False
    assert [r.id for r in sent.role_mentions] == [loud_role.id]
    none = await channel.send(content, allowed_mentions=discord.AllowedMentions.none())
    assert none.mention_everyone is False
    assert none.role_mentions == []
    # With it (the @everyone default) everything pings; the client's none() still wins.
    emu.set_overwrite(world.channel, emu.bot_user, deny=0)
    everyone = await channel.send(content, allowed_mentions=discord.AllowedMentions.all())
    assert everyone.mention_everyone is True
    assert [r.id for r in everyone.role_mentions] == [quiet_role.id, loud_role.id]
    none = await channel.send(content, allowed_mentions=discord.AllowedMentions.none())
    assert none.mention_everyone is False
    # A member (alice) sending without allowed_mentions pings everything.
    user_msg = emu.send_message(world.alice, world.channel, content)
    assert user_msg.mention_everyone is True
    assert user_msg.mention_role_ids == [quiet_role.id, loud_role.id]


async def test_invalid_allowed_mentions_is_a_form_error(
    world: World, running: commands.Bot
) -> None:
    channel = text_channel(running, world.channel.id)
    route = discord.http.Route("POST", "/channels/{channel_id}/messages", channel_id=channel.id)
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.request(
            route,
            json={
                "content": "hi",
                "allowed_mentions": {"parse": ["users"], "users": [str(world.alice.id)]},
            },
        )
    assert (exc.value.status, exc.value.code) == (400, 50035)


async def test_message_mentioning_the_bot_keeps_content_without_the_intent(
    emu: Emulator, world: World
) -> None:
    seen: list[discord.Message] = []
    bot = commands.Bot(
        command_prefix="!", intents=discord.Intents.default(), guild_ready_timeout=0.05
    )

    @bot.event
    async def on_message(message: discord.Message) -> None:
        seen.append(message)

    async with running_bot(emu, bot):
        emu.send_message(world.alice, world.channel, "hidden text")
        emu.send_message(world.alice, world.channel, f"hey <@{emu.bot_user.id}> look")
        await emu.wait_until(lambda: len(seen) == 2, 5)
    assert seen[0].content == ""
    assert seen[1].content == f"hey <@{emu.bot_user.id}> look"
    assert [u.id for u in seen[1].mentions] == [emu.bot_user.id]
