"""Which channel types take messages, as on Discord: a voice channel's text chat does, a category
does not."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator
from discord_emulator.models import CATEGORY, VOICE
from discord_emulator.testing import World


async def test_a_bot_may_post_in_a_voice_channels_text_chat(
    emu: Emulator, world: World, running: commands.Bot
) -> None:
    """Voice channels have a text chat ("Text in Voice"; discord.py's VoiceChannel is
    Messageable), so Create Message there succeeds; a category still answers 50008."""
    voice_model = emu.create_channel(world.guild, "lounge", type=VOICE)
    category_model = emu.create_channel(world.guild, "stuff", type=CATEGORY)
    await emu.wait_until(lambda: running.get_channel(category_model.id), 5)
    voice = running.get_channel(voice_model.id)
    assert isinstance(voice, discord.VoiceChannel)
    sent = await voice.send("hello in voice chat")
    assert [sent.id] == [m.id for m in emu.history(voice_model.id)]
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.send_message(
            category_model.id, params=discord.http.handle_message_parameters(content="x")
        )
    assert exc.value.code == 50008
