"""Component limits from Discord's components reference: in a modal, labels (45), their
descriptions (100) and text inputs (pre-filled value 4000, placeholder 100, lengths 0-4000);
in a message, link buttons (a url of at most 512, no custom_id), other buttons (no url) and
action rows (five buttons or one select); and the file types a file upload takes. The bot is the
real discord.py client; payloads discord.py refuses to build go over raw HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from discord_emulator import Emulator, InteractionRefused, Upload
from discord_emulator.testing import running_bot

from .conftest import BotRecorder, World


def text_input(**extra: Any) -> discord.ui.TextInput[Any]:
    return discord.ui.TextInput(label="Answer", custom_id="answer", **extra)


def labelled(text: str = "Answer", description: str | None = None) -> discord.ui.Label[Any]:
    return discord.ui.Label(
        text=text,
        description=description,
        component=discord.ui.TextInput(custom_id="answer"),
    )


# Each modal a bot may try to open, by name, and whether Discord accepts it.
MODALS: dict[str, tuple[Callable[[], discord.ui.Item[Any]], bool]] = {
    "label of 45": (lambda: labelled("l" * 45), True),
    "label of 46": (lambda: labelled("l" * 46), False),
    "legacy label of 46": (lambda: discord.ui.TextInput(label="l" * 46, custom_id="a"), False),
    "description of 101": (lambda: labelled(description="d" * 101), False),
    "value of 4000": (lambda: text_input(default="v" * 4000), True),
    "value of 4001": (lambda: text_input(default="v" * 4001), False),
    "placeholder of 101": (lambda: text_input(placeholder="p" * 101), False),
    "min_length of 4001": (lambda: text_input(min_length=4001), False),
}


async def test_modal_labels_and_text_inputs_keep_their_limits(
    emu: Emulator, world: World, plain_bot: commands.Bot, recorder: BotRecorder
) -> None:
    @plain_bot.tree.command(name="form", description="Open a form")
    @app_commands.describe(variant="which form")
    async def form(interaction: discord.Interaction, variant: str) -> None:
        modal = discord.ui.Modal(title="Form")
        modal.add_item(MODALS[variant][0]())
        try:
            await interaction.response.send_modal(modal)
        except discord.HTTPException as exc:
            recorder.errors.append(exc)
            recorder.seen.append(variant)

    async with running_bot(emu, plain_bot):
        opened: dict[str, bool] = {}
        for variant in MODALS:
            handle = await emu.invoke_slash(
                world.alice, world.channel, "form", {"variant": variant}
            )
            await emu.wait_until(
                lambda v=variant, h=handle: h.response_type is not None or v in recorder.seen
            )
            opened[variant] = handle.interaction.modal is not None
    assert opened == {name: accepted for name, (_, accepted) in MODALS.items()}
    assert {
        (e.status, e.code) for e in recorder.errors if isinstance(e, discord.HTTPException)
    } == {(400, 50035)}
    texts = dict(
        zip(recorder.seen, [str(getattr(e, "text", "")) for e in recorder.errors], strict=True)
    )
    assert "data.components.0.label: Must be 45 or fewer in length." in texts["label of 46"]
    assert "Must be 45 or fewer in length." in texts["legacy label of 46"]
    assert "description: Must be 100 or fewer in length." in texts["description of 101"]
    assert "value: Must be 4000 or fewer in length." in texts["value of 4001"]
    assert "placeholder: Must be 100 or fewer in length." in texts["placeholder of 101"]
    assert (
        "min_length: int value should be less than or equal to 4000." in texts["min_length of 4001"]
    )


async def post_raw(emu: Emulator, channel_id: int, payload: dict[str, Any]) -> tuple[int, Any]:
    """Create Message over raw HTTP, waiting out the channel's rate limit as a client would."""
    assert emu.application is not None
    headers = {"Authorization": f"Bot {emu.application.token}"}
    url = f"{emu.api_base}/channels/{channel_id}/messages"
    async with aiohttp.ClientSession() as session:
        while True:
            async with session.post(url, json=payload, headers=headers) as resp:
                body = await resp.json()
                if resp.status != 429:
                    return resp.status, body
            await asyncio.sleep(float(body["retry_after"]))


def row(*components: dict[str, Any]) -> dict[str, Any]:
    return {"type": 1, "components": list(components)}


async def test_buttons_and_rows_keep_their_shapes(world: World, running: commands.Bot) -> None:
    """A link button has a url of at most 512 characters and no custom_id; another button has
    no url; a row holds up to five buttons or a single select."""
    emu = world.emu
    channel = running.get_channel(world.channel.id)
    assert isinstance(channel, discord.TextChannel)
    site = "https://example.org/"
    fits, too_long = discord.ui.View(), discord.ui.View()
    fits.add_item(discord.ui.Button(label="go", url=site + "a" * (512 - len(site))))
    too_long.add_item(discord.ui.Button(label="go", url=site + "a" * (513 - len(site))))
    await channel.send("fits", view=fits)
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("too long", view=too_long)
    assert exc.value.code == 50035
    assert "components.0.components.0.url: Must be 512 or fewer in length." in exc.value.text
    # discord.py will not build a link button with a custom_id: raw HTTP.
    with pytest.raises(TypeError):
        discord.ui.Button(label="go", url=site, custom_id="go")
    link = {"type": 2, "style": 5, "label": "go", "url": site}
    primary = {"type": 2, "style": 1, "label": "press", "custom_id": "press"}
    select = {"type": 3, "custom_id": "pick", "options": [{"label": "a", "value": "a"}]}
    cases = {
        "link with custom_id": [row({**link, "custom_id": "go"})],
        "link without url": [row({"type": 2, "style": 5, "label": "go"})],
        "primary with url": [row({**primary, "url": site})],
        "select beside a button": [row(select, primary)],
    }
    codes = {}
    for name, components in cases.items():
        status, body = await post_raw(
            emu, world.channel.id, {"content": name, "components": components}
        )
        assert status == 400, name
        # The error sits on the button's field, or on the select itself.
        node = body["errors"]["components"]["0"]["components"]["0"]
        (found,) = (
            node["_errors"]
            if "_errors" in node
            else [e for f in node.values() for e in f["_errors"]]
        )
        codes[name] = found["code"]
    assert codes == {
        "link with custom_id": "BUTTON_COMPONENT_CUSTOM_ID_URL_MUTUALLY_EXCLUSIVE",
        "link without url": "BASE_TYPE_REQUIRED",
        "primary with url": "BUTTON_COMPONENT_URL_REQUIRES_LINK_STYLE",
        "select beside a button": "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
    }
    status, _ = await post_raw(
        emu, world.channel.id, {"content": "ok", "components": [row(link, primary), row(select)]}
    )
    assert status == 200
    assert [m.content for m in emu.history(world.channel)] == ["fits", "ok"]


async def test_a_file_upload_takes_only_its_file_types(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> None:
    """discord.py 2.7 cannot set ``file_types``: the modal is answered over raw HTTP. Discord's
    client offers only files whose extension is in the types (a group, or an extension)."""

    @plain_bot.tree.command(name="upload", description="Upload a picture")
    async def upload(interaction: discord.Interaction) -> None:
        pass  # the test answers this interaction itself

    received: list[str] = []

    @plain_bot.event
    async def on_interaction(interaction: discord.Interaction) -> None:
        if interaction.type is discord.InteractionType.modal_submit:
            files = (interaction.data or {}).get("resolved", {}).get("attachments", {})
            received.extend(a["filename"] for a in files.values())
            await interaction.response.send_message("got it", ephemeral=True)

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "upload")
        modal = {
            "type": 9,
            "data": {
                "custom_id": "pictures",
                "title": "Pictures",
                "components": [
                    {
                        "type": 18,
                        "label": "Pictures",
                        "component": {
                            "type": 19,
                            "custom_id": "files",
                            "max_values": 2,
                            "file_types": ["image", ".PDF"],
                        },
                    }
                ],
            },
        }
        url = f"{emu.api_base}/interactions/{handle.id}/{handle.token}/callback"
        async with aiohttp.ClientSession() as session, session.post(url, json=modal) as resp:
            assert resp.status == 204
        png = Upload("cat.PNG", b"\x89PNG" + b"\0" * 8, "image/png")
        with pytest.raises(InteractionRefused, match="file types"):
            await emu.submit_modal(world.alice, handle, {"files": [png, Upload("a.exe", b"MZ")]})
        submitted = await emu.submit_modal(
            world.alice, handle, {"files": [png, Upload("notes.pdf", b"%PDF")]}
        )
        await submitted.wait_original()
    assert received == ["cat.PNG", "notes.pdf"]
