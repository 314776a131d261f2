"""The chat page's server side: the composer's command language, the user's view of the world
(ephemeral answers only for their user), sending commands and messages, and the served files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from discord_emulator import Emulator, User, permissions
from discord_emulator.testing import World, fast_config, make_world, running_bot
from discord_emulator.web import PageConfig, serve_page
from discord_emulator.web.commandline import CommandLineError, focus, parse, suggest

from .conftest import make_bot

COMMANDS: list[dict[str, Any]] = [
    {
        "name": "summon",
        "type": 1,
        "description": "Start a job",
        "options": [
            {"name": "task", "type": 3, "description": "What to do", "required": True},
            {
                "name": "kind",
                "type": 3,
                "description": "Kind of job",
                "choices": [{"name": "demo", "value": "demo"}, {"name": "agent", "value": "agent"}],
            },
            {"name": "steps", "type": 4, "description": "Steps"},
            {"name": "private", "type": 5, "description": "Only me"},
        ],
    },
    {
        "name": "job",
        "type": 1,
        "description": "Jobs",
        "options": [
            {
                "name": "status",
                "type": 1,
                "description": "A job's state",
                "options": [{"name": "id", "type": 3, "description": "Job id", "required": True}],
            },
            {"name": "list", "type": 1, "description": "Recent jobs", "options": []},
        ],
    },
    {"name": "Report", "type": 3, "description": ""},
]


def test_parse_reads_subcommand_paths_and_named_options() -> None:
    """``/job status id:X`` names a subcommand path and its options."""
    inv = parse("/job status id:01JABC", COMMANDS)
    assert (inv.path, inv.options) == ("job status", {"id": "01JABC"})


def test_parse_keeps_spaces_inside_values_and_converts_booleans_and_choices() -> None:
    """A value runs until the next known ``name:``; booleans become bools, choices their value."""
    inv = parse("/summon task:count the words: all of them kind:agent private:yes", COMMANDS)
    expected = {"task": "count the words: all of them", "kind": "agent", "private": True}
    assert expected == inv.options


def test_parse_fills_the_first_option_from_a_bare_value() -> None:
    """``/job status 01J`` is read as ``id:01J``; quotes are removed."""
    assert parse("/job status 01J", COMMANDS).options == {"id": "01J"}
    assert parse('/summon "a b"', COMMANDS).options == {"task": "a b"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/nope", "unknown command /nope"),
        ("/job", "needs one of: status, list"),
        ("/job status", "needs id:"),
        ("/summon task:x private:maybe", "expected true or false"),
        ("/summon task:x task:y", "given twice"),
        ("/job list extra", "unexpected text"),
        # Discord's client sends no empty value: an empty required option is a missing one.
        ("/summon task:", "needs task:"),
        ("/summon task:   kind:demo", "needs task:"),
        ('/summon task:""', "needs task:"),
        ("/job status id:", "needs id:"),
    ],
)
def test_parse_refuses_what_discord_would_not_send(text: str, message: str) -> None:
    """Unknown commands, missing subcommands or required options, bad booleans are refused."""
    with pytest.raises(CommandLineError, match=message):
        parse(text, COMMANDS)


def test_an_empty_optional_option_is_one_not_given() -> None:
    assert parse("/summon task:x kind:", COMMANDS).options == {"task": "x"}


def test_suggest_offers_paths_then_missing_options_then_choices() -> None:
    """Completion walks from command paths to options (required first) to declared choices."""
    assert [s.text for s in suggest("/", COMMANDS)] == ["/summon ", "/job status ", "/job list "]
    assert [s.text for s in suggest("/job st", COMMANDS)] == ["/job status "]
    assert [s.text for s in suggest("/summon ", COMMANDS)] == [
        "/summon task:",
        "/summon kind:",
        "/summon steps:",
        "/summon private:",
    ]
    assert [s.text for s in suggest("/summon task:x ki", COMMANDS)] == ["/summon task:x kind:"]
    assert [s.text for s in suggest("/summon kind:a", COMMANDS)] == ["/summon kind:agent "]
    assert suggest("hello", COMMANDS) == []


def test_focus_names_the_autocompleted_option_being_typed() -> None:
    """Typing the value of an autocomplete option gives the path, the options so far, the
    option and its partial value; other positions give nothing."""
    commands = [
        {
            "name": "summon",
            "type": 1,
            "options": [
                {"name": "task", "type": 3, "required": True},
                {"name": "kind", "type": 3, "autocomplete": True},
            ],
        }
    ]
    typing = focus("/summon task:two words kind:de", commands)
    assert typing is not None
    assert (typing.path, typing.options, typing.name, typing.value, typing.base) == (
        "summon",
        {"task": "two words"},
        "kind",
        "de",
        "/summon task:two words kind:",
    )
    assert focus("/summon task:x", commands) is None
    assert focus("/nope kind:x", commands) is None


@pytest.fixture
async def page_emu() -> AsyncIterator[tuple[Emulator, World, User]]:
    emu = Emulator(fast_config())
    emu.create_application("Errand")
    world = make_world(emu)
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    emu.create_forum(world.guild, "reports")
    emu.create_dm(world.alice)
    serve_page(emu, PageConfig(viewers=[world.alice.id, bob.id], title="Sandbox"))
    async with emu:
        yield emu, world, bob


def page_bot() -> commands.Bot:
    bot = make_bot()
    job = app_commands.Group(name="job", description="Jobs")

    @job.command(name="status", description="A job's state")
    async def status(interaction: discord.Interaction, id: str) -> None:
        await interaction.response.send_message(f"job {id}: running", ephemeral=True)

    @bot.tree.command(name="summon", description="Start a job")
    async def summon(interaction: discord.Interaction, task: str, kind: str | None = None) -> None:
        await interaction.response.send_message(f"queued {task}")
        message = await interaction.original_response()
        await message.create_thread(name=f"job {task}")

    @summon.autocomplete("kind")
    async def kinds(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        names = ["demo", "command", "agent"]
        return [app_commands.Choice(name=n, value=n) for n in names if n.startswith(current)]

    bot.tree.add_command(job)

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    return bot


async def test_page_sends_commands_and_shows_ephemeral_answers_only_to_their_user(
    page_emu: tuple[Emulator, World, User],
) -> None:
    """A command typed on the page reaches the bot; its ephemeral answer is in alice's view of
    the channel and not in bob's; a public answer and its thread are in both."""
    emu, world, bob = page_emu
    base = f"{emu.base_url}/_emulator/page"
    channel = str(world.channel.id)
    async with running_bot(emu, page_bot()), aiohttp.ClientSession() as session:

        async def send(user: User, text: str) -> tuple[int, dict[str, Any]]:
            body = {"user_id": str(user.id), "channel_id": channel, "text": text}
            async with session.post(f"{base}/send", json=body) as resp:
                return resp.status, await resp.json()

        async def view(user: User) -> list[dict[str, Any]]:
            async with session.get(f"{base}/channels/{channel}/messages?user_id={user.id}") as r:
                return list((await r.json())["messages"])

        status, answer = await send(world.alice, "/job status id:J1")
        assert status == 200
        inter = emu.state.interactions[int(answer["interaction_id"])]
        await emu.wait_until(lambda: inter.original_message_id, 5)
        await send(world.alice, "/summon hello")
        await emu.wait_until(lambda: emu.threads(world.channel), 5)
        await send(bob, "plain words")

        alice_view = [(m["content"], m["ephemeral"]) for m in await view(world.alice)]
        bob_view = [(m["content"], m["ephemeral"]) for m in await view(bob)]
        assert alice_view == [
            ("job J1: running", True),
            ("queued hello", False),
            ("plain words", False),
        ]
        assert bob_view == [("queued hello", False), ("plain words", False)]
        assert (await view(bob))[0]["thread"]["name"] == "job hello"

        assert await send(world.alice, "/job status") == (400, {"error": "/job status needs id:"})

        async with session.get(f"{base}/world?user_id={bob.id}") as resp:
            sidebar = await resp.json()
        assert [c["name"] for c in sidebar["channels"]] == ["general", "reports"]
        assert [t["name"] for t in sidebar["channels"][0]["threads"]] == ["job hello"]
        async with session.get(f"{base}/world?user_id={world.alice.id}") as resp:
            kinds = [c["kind"] for c in (await resp.json())["channels"]]
        assert kinds == ["text", "forum", "dm"]
        async with session.get(
            f"{base}/complete", params={"channel_id": channel, "text": "/job "}
        ) as resp:
            suggestions = (await resp.json())["suggestions"]
        assert [s["text"] for s in suggestions] == ["/job status "]
        async with session.get(
            f"{base}/complete",
            params={"channel_id": channel, "user_id": str(bob.id), "text": "/summon task:x kind:"},
        ) as resp:
            suggestions = (await resp.json())["suggestions"]
        assert [s["label"] for s in suggestions] == ["demo", "command", "agent"]
        assert suggestions[0]["text"] == "/summon task:x kind:demo "


async def test_page_serves_its_files_without_external_assets(
    page_emu: tuple[Emulator, World, User],
) -> None:
    """``/`` is the page (titled from the config); its script and style load from the emulator
    and nothing refers to another host."""
    emu, _, _ = page_emu
    async with aiohttp.ClientSession() as session:
        async with session.get(emu.base_url + "/") as resp:
            html = await resp.text()
        assert "<title>Sandbox</title>" in html
        for name in ("text.js", "messages.js", "composer.js", "page.js", "page.css"):
            async with session.get(f"{emu.base_url}/_page/{name}") as resp:
                assert resp.status == 200
                text = await resp.text()
            assert "http://" not in text
            assert "https://" not in text
        async with session.get(f"{emu.base_url}/_page/secret.py") as resp:
            assert resp.status == 404


async def test_the_composer_offers_an_administrators_command_only_to_administrators(
    page_emu: tuple[Emulator, World, User],
) -> None:
    """A command with ``default_member_permissions: "0"`` is neither suggested to nor sent for
    a member who is not an administrator, as Discord's client hides it."""
    emu, world, bob = page_emu
    admins = emu.create_role(world.guild, "admins", permissions.ADMINISTRATOR)
    world.guild.members[bob.id].roles.append(admins.id)
    bot = make_bot()

    @bot.tree.command(name="purge", description="Only for administrators")
    @app_commands.default_permissions()
    async def purge(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("purged", ephemeral=True)

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    base = f"{emu.base_url}/_emulator/page"
    channel = str(world.channel.id)
    async with running_bot(emu, bot), aiohttp.ClientSession() as session:

        async def offered(user: User) -> list[str]:
            params = {"channel_id": channel, "user_id": str(user.id), "text": "/pu"}
            async with session.get(f"{base}/complete", params=params) as resp:
                return [s["text"] for s in (await resp.json())["suggestions"]]

        async def send(user: User) -> tuple[int, dict[str, Any]]:
            body = {"user_id": str(user.id), "channel_id": channel, "text": "/purge"}
            async with session.post(f"{base}/send", json=body) as resp:
                return resp.status, await resp.json()

        assert await offered(world.alice) == []
        assert await offered(bob) == ["/purge "]
        assert await send(world.alice) == (400, {"error": "unknown command /purge"})
        status, answer = await send(bob)
        assert status == 200
        handle = emu.state.interactions[int(answer["interaction_id"])]
        await emu.wait_until(lambda: handle.original_message_id, 5)
    assert emu.message(handle.original_message_id or 0).content == "purged"


async def test_the_newest_message_of_a_thread_shows_under_the_message_that_started_it(
    page_emu: tuple[Emulator, World, User],
) -> None:
    """As in Discord's client, a message that started a thread shows the thread's newest
    message (its author and first line, cut at a word); the thread opens with the starter
    (THREAD_STARTER_MESSAGE with the message it refers to). System messages are not previews."""
    emu, world, bob = page_emu
    base = f"{emu.base_url}/_emulator/page"
    starter = emu.send_message(world.alice, world.channel, "let's discuss")
    thread = emu.actions.create_thread(
        world.channel, world.alice.id, "discussion", from_message=starter
    )
    async with aiohttp.ClientSession() as session:

        async def view(channel_id: int) -> list[dict[str, Any]]:
            url = f"{base}/channels/{channel_id}/messages?user_id={world.alice.id}"
            async with session.get(url) as resp:
                return list((await resp.json())["messages"])

        async def preview() -> Any:
            return (await view(world.channel.id))[0]["thread_preview"]

        assert await preview() is None  # only the thread's starter so far
        emu.send_message(bob, thread, "first line\nsecond line")
        assert await preview() == {"author": bob.payload(), "content": "first line"}
        emu.edit_thread(thread, name="renamed")  # a system message: not a preview
        assert (await preview())["content"] == "first line"
        words = "lorem ipsum dolor sit amet " * 8
        emu.send_message(world.alice, thread, words)
        shown = (await preview())["content"]
        assert shown.endswith("…")
        assert words.startswith(shown.removesuffix("…"))
        assert words[len(shown) - 1] == " "  # cut between words
        opening = (await view(thread.id))[0]
    assert opening["type"] == 21
    assert opening["referenced_message"]["content"] == "let's discuss"


async def test_an_at_name_typed_in_the_page_is_sent_as_a_mention(emu: Emulator) -> None:
    """``@alice`` for a member becomes ``<@id>`` (what Discord's client sends, and what makes
    the message mention them); an unknown name, an address or a mention already written stay."""
    from discord_emulator.web.page import typed_mentions

    world = make_world(emu)
    alice = world.alice.id
    assert typed_mentions(emu, "@Alice hi, @nobody") == f"<@{alice}> hi, @nobody"
    assert typed_mentions(emu, "a@alice.com <@1>") == "a@alice.com <@1>"


async def test_a_body_that_is_not_a_json_object_is_a_400_not_a_500(
    page_emu: tuple[Emulator, World, User], caplog: pytest.LogCaptureFixture
) -> None:
    """``POST /_emulator/page/send`` (and the control API's POSTs) with a body that is not a
    JSON object: 400 with a JSON error, and no traceback in the log (issue #32, item 17)."""
    emu, _, _ = page_emu
    bodies = [b"not json", b"\xff\xfe", b"[1, 2]", b'"text"']
    async with aiohttp.ClientSession() as session:
        for path in ("/_emulator/page/send", "/_emulator/clicks", "/_emulator/users"):
            for body in bodies:
                async with session.post(
                    emu.base_url + path, data=body, headers={"Content-Type": "application/json"}
                ) as resp:
                    assert resp.status == 400, (path, body)
                    assert await resp.json() == {"error": "the request body must be a JSON object"}
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
