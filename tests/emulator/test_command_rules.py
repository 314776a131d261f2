"""Who may run a command and what a command may hold: ``default_member_permissions`` (``"0"``
leaves a command to administrators), the 8000 characters of a slash command, and the number of
commands of each type. Each test syncs with the real discord.py client."""

from __future__ import annotations

from typing import Any

import discord
import pytest
from discord import app_commands
from discord.ext import commands

from discord_emulator import Emulator, permissions
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


async def test_default_member_permissions_zero_leaves_a_command_to_administrators(
    emu: Emulator, world: World
) -> None:
    bot = make_bot()
    ran: list[int] = []

    @bot.tree.command(name="purge", description="Only for administrators")
    @app_commands.default_permissions()  # sends default_member_permissions "0"
    async def purge(interaction: discord.Interaction) -> None:
        ran.append(interaction.user.id)
        await interaction.response.send_message("purged", ephemeral=True)

    @bot.tree.command(name="tidy", description="For those who manage messages")
    @app_commands.default_permissions(manage_messages=True)
    async def tidy(interaction: discord.Interaction) -> None:
        ran.append(interaction.user.id)
        await interaction.response.send_message("tidied", ephemeral=True)

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    bob = emu.create_user("bob")
    admins = emu.create_role(world.guild, "admins", permissions.ADMINISTRATOR)
    emu.add_member(world.guild, bob, roles=[admins])
    mods = emu.create_role(world.guild, "mods", permissions.MANAGE_MESSAGES)
    carol = emu.create_user("carol")
    emu.add_member(world.guild, carol, roles=[mods])
    async with running_bot(emu, bot):
        assert emu.application is not None
        synced = {c["name"]: c for c in emu.application.global_commands}
        assert synced["purge"]["default_member_permissions"] == "0"
        for user in (world.alice, carol):  # a plain member, and one with Manage Messages
            with pytest.raises(PermissionError):
                await emu.invoke_slash(user, world.channel, "purge")
        with pytest.raises(PermissionError):
            await emu.invoke_slash(world.alice, world.channel, "tidy")
        answers = [
            await emu.invoke_slash(bob, world.channel, "purge"),  # an administrator
            await emu.invoke_slash(world.guild.owner_id, world.channel, "purge"),  # the owner
            await emu.invoke_slash(carol, world.channel, "tidy"),
        ]
        contents = [(await h.wait_original()).content for h in answers]
    assert contents == ["purged", "purged", "tidied"]
    assert ran == [bob.id, world.guild.owner_id, carol.id]


def option(name: str, **extra: Any) -> dict[str, Any]:
    return {"type": 3, "name": name, "description": "d" * 100, **extra}


async def test_a_slash_command_holds_at_most_8000_characters(
    emu: Emulator, world: World, running: commands.Bot
) -> None:
    """Names, descriptions and choice values of the command, its options and their choices
    count; of a localized field only its longest version."""
    app_id = running.application_id
    assert app_id is not None
    choices = [{"name": f"c{i:02}", "value": "v" * 96} for i in range(20)]  # 100 each
    # 2 + 100 + 3 x (2 + 100 + 20 x 100) = 6408 characters: accepted.
    big: dict[str, Any] = {
        "name": "go",
        "description": "d" * 100,
        "options": [option(f"o{i}", choices=choices) for i in range(3)],
    }
    ok = await running.http.bulk_upsert_guild_commands(app_id, world.guild.id, [big])
    assert [c["name"] for c in ok] == ["go"]
    # A fourth such option makes 8510.
    big["options"].append(option("o3", choices=choices))
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.bulk_upsert_guild_commands(app_id, world.guild.id, [big])
    assert (exc.value.status, exc.value.code) == (400, 50035)
    assert "Command exceeds maximum size (8000)" in exc.value.text
    # A long localization counts in place of the shorter default: 6408 - 100 + 2000.
    localized = dict(big, options=big["options"][:3])
    localized["description_localizations"] = {"fr": "d" * 100, "de": "d" * 2000}
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.bulk_upsert_guild_commands(app_id, world.guild.id, [localized])
    assert "Command exceeds maximum size (8000)" in exc.value.text
    # Nothing of the refused syncs was stored.
    assert emu.application is not None
    assert [len(c["options"]) for c in emu.application.guild_commands[world.guild.id]] == [3]


async def test_a_scope_holds_100_slash_15_user_and_15_message_commands(
    emu: Emulator, world: World, running: commands.Bot
) -> None:
    app_id = running.application_id
    assert app_id is not None
    slash = [{"name": f"s{i}", "description": "d", "type": 1} for i in range(100)]
    users = [{"name": f"User {i}", "type": 2} for i in range(15)]
    messages = [{"name": f"Message {i}", "type": 3} for i in range(15)]
    ok = await running.http.bulk_upsert_guild_commands(
        app_id, world.guild.id, slash + users + messages
    )
    assert len(ok) == 130
    for extra in (
        {"name": "s100", "description": "d", "type": 1},
        {"name": "User 15", "type": 2},
        {"name": "Message 15", "type": 3},
    ):
        with pytest.raises(discord.HTTPException) as exc:
            await running.http.bulk_upsert_guild_commands(
                app_id, world.guild.id, [*slash, *users, *messages, extra]
            )
        assert (exc.value.status, exc.value.code) == (400, 30032)
    assert emu.application is not None
    assert len(emu.application.guild_commands[world.guild.id]) == 130
