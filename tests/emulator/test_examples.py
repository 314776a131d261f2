"""discord.py's own example bots (v2.7.1 ``examples/``, vendored unmodified in ``examples/``) run
against the emulator: each is acted out as a user would (messages, reactions, slash and context
menu commands, buttons, selects, modals) and what the user would see is asserted.

Out of scope (not vendored): ``basic_voice.py`` (voice), ``advanced_startup.py`` (a PostgreSQL
server and extension modules it does not ship) and ``views/embed_like.py`` (random.dog), and in
``secret.py`` the ``emoji`` subcommand (Discord's CDN and custom emojis).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from discord_emulator import (
    DEFAULT_BOT_PERMISSIONS,
    Emulator,
    InteractionRefused,
    Message,
    Upload,
    permissions,
)
from discord_emulator.models import Channel
from discord_emulator.testing import World, fast_config, make_world

from .example_runner import EXAMPLES, run_example

TOKEN = "token"  # what every example but custom_context.py passes to client.run


@pytest.fixture
def app_token() -> str:
    return TOKEN


@pytest.fixture
async def emu(app_token: str) -> AsyncIterator[Emulator]:
    """An emulator whose application has the token the example hard-codes."""
    async with Emulator(fast_config()) as emulator:
        emulator.create_application("Example Bot", token=app_token)
        yield emulator


def by_bot(emu: Emulator) -> Callable[[Message], bool]:
    return lambda m: m.author_id == emu.bot_user.id


async def bot_says(
    emu: Emulator,
    channel: Channel | int,
    content: str | None = None,
    *,
    after: int = 0,
    timeout: float = 5.0,  # noqa: ASYNC109
) -> Message:
    """The bot's first live message in ``channel`` after message id ``after`` (with
    ``content``, if given)."""
    return await emu.wait_for_message(
        channel,
        lambda m: (
            m.author_id == emu.bot_user.id
            and m.id > after
            and (content is None or m.content == content)
        ),
        timeout,
    )


def components_of(msg: Message) -> list[dict[str, Any]]:
    """Every component of a message, depth first (rows, containers, sections, accessories)."""
    out: list[dict[str, Any]] = []

    def walk(items: list[dict[str, Any]]) -> None:
        for comp in items:
            out.append(comp)
            walk(comp.get("components") or [])
            if isinstance(comp.get("accessory"), dict):
                walk([comp["accessory"]])

    walk(msg.components)
    return out


def custom_id(msg: Message, label: str) -> str:
    (found,) = [c["custom_id"] for c in components_of(msg) if c.get("label") == label]
    return str(found)


def test_vendored_examples_are_byte_for_byte_upstream() -> None:
    """Each vendored file has the git blob id it has in discord.py v2.7.1 (``SOURCES``)."""
    lines = (EXAMPLES / "SOURCES").read_text().splitlines()
    expected: dict[str, str] = {}
    for line in lines:
        if not line.startswith("#"):
            blob_id, name = line.split("  ")
            expected[name] = blob_id
    actual = {}
    for path in sorted(EXAMPLES.rglob("*")):
        if path.is_file() and path.name != "SOURCES":
            data = path.read_bytes()
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False)
            actual[str(path.relative_to(EXAMPLES))] = blob.hexdigest()
    assert expected == actual


def test_every_vendored_example_is_acted_out() -> None:
    """Each vendored example is run by a test of this file."""
    source = Path(__file__).read_text(encoding="utf-8")
    named = set(re.findall(r'"([a-z_/]+\.py)"', source))
    vendored = {str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.py")}
    assert vendored == named & vendored
    assert len(vendored) == 27


# ----- message commands (discord.ext.commands and on_message) ------------------------------


async def test_reply(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "reply.py"):
        asked = emu.send_message(world.alice, world.channel, "!hello")
        answer = await bot_says(emu, world.channel)
    assert answer.content == "Hello!"
    assert answer.message_reference is not None
    assert answer.message_reference["message_id"] == str(asked.id)
    assert answer.mention_ids == [world.alice.id]  # mention_author=True


async def test_basic_bot(emu: Emulator) -> None:
    world = make_world(emu)
    member = world.guild.members[world.alice.id]
    alice, channel = world.alice, world.channel
    async with run_example(emu, "basic_bot.py"):
        for command, expected in [
            ("?add 2 3", ["5"]),
            ("?roll 3d1", ["1, 1, 1"]),
            ("?roll three", ["Format has to be in NdN!"]),
            ("?choose tea", ["tea"]),
            ("?repeat 2 hi", ["hi", "hi"]),
            (f"?joined <@{alice.id}>", [f"alice joined <t:{int(member.joined_at)}>"]),
            ("?cool bot", ["Yes, the bot is cool."]),
            ("?cool alice", ["No, alice is not cool"]),
        ]:
            asked = emu.send_message(alice, channel, command)
            for text in expected:
                said = await bot_says(emu, channel, text, after=asked.id)
                asked = said
        asked = emu.send_message(alice, channel, "?help")
        help_text = (await bot_says(emu, channel, after=asked.id)).content
    assert help_text.startswith("```")
    assert "An example bot to showcase the discord.ext.commands extension" in help_text
    assert "Adds two numbers together." in help_text


async def test_converters(emu: Emulator) -> None:
    world = make_world(emu)
    alice, channel = world.alice, world.channel
    dm = emu.create_dm(alice)
    async with run_example(emu, "converters.py"):
        asked = emu.send_message(alice, channel, f"!userinfo <@{alice.id}>")
        info = await bot_says(emu, channel, after=asked.id)
        asked = emu.send_message(alice, channel, "!userinfo nobody")
        await bot_says(emu, channel, "Couldn't find that user.", after=asked.id)
        asked = emu.send_message(alice, channel, f"!notify <#{channel.id}>")
        await bot_says(emu, channel, "Hello, general!", after=asked.id)
        emu.send_message(alice, channel, f"!notify <@{alice.id}>")
        await bot_says(emu, dm, "Hello, alice!")
        asked = emu.send_message(alice, channel, f"!ignore <@{alice.id}>")
        await bot_says(
            emu,
            channel,
            f"Member found: <@{alice.id}>, adding them to the ignore list.",
            after=asked.id,
        )
        asked = emu.send_message(alice, channel, f"!ignore <#{channel.id}>")
        await bot_says(
            emu,
            channel,
            f"Channel found: <#{channel.id}>, adding it to the ignore list.",
            after=asked.id,
        )
        asked = emu.send_message(alice, channel, "!multiply 3 yes")
        await bot_says(emu, channel, "6", after=asked.id)
        asked = emu.send_message(alice, channel, "!multiply 3 off")
        await bot_says(emu, channel, "15", after=asked.id)
    first, avatar = info.content.split("\n")
    assert first == f"User found: {alice.id} -- alice"
    assert avatar.startswith("https://cdn.discordapp.com/embed/avatars/")


@pytest.mark.parametrize("app_token", ["your token here"])
async def test_custom_context(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "custom_context.py"):
        guess = emu.send_message(world.alice, world.channel, "!guess 3")
        reacted = await emu.wait_until(
            lambda: [k for k, users in guess.reactions.items() if emu.bot_user.id in users]
        )
    assert reacted in (["\N{WHITE HEAVY CHECK MARK}"], ["\N{CROSS MARK}"])


async def test_edits(emu: Emulator) -> None:
    world = make_world(emu)
    alice, channel = world.alice, world.channel
    async with run_example(emu, "edits.py"):
        emu.send_message(alice, channel, "!editme")
        ten = await bot_says(emu, channel, "10")
        # While the example sleeps its 3 s before editing, alice edits a message of hers.
        typo = emu.send_message(alice, channel, "helo")
        emu.edit_message(alice, typo, "hello")
        await bot_says(emu, channel, "**alice** edited their message:\nhelo -> hello")
        with pytest.raises(PermissionError):
            emu.edit_message(alice, ten, "not hers")
        await bot_says(emu, channel, "**Example Bot** edited their message:\n10 -> 40", timeout=5)
    assert [v.content for v in ten.versions] == ["10", "40"]
    assert [v.content for v in typo.versions] == ["helo", "hello"]


async def test_deleted(emu: Emulator) -> None:
    world = make_world(emu)
    alice, channel = world.alice, world.channel
    async with run_example(emu, "deleted.py"):
        emu.send_message(alice, channel, "!deleteme")
        await bot_says(
            emu, channel, "Example Bot has deleted the message: I will delete myself now..."
        )
        goodbye = await bot_says(emu, channel, "Goodbye in 3 seconds...")
        oops = emu.send_message(alice, channel, "oops, wrong channel")
        emu.delete_message(alice, oops)
        await bot_says(emu, channel, "alice has deleted the message: oops, wrong channel")
        with pytest.raises(PermissionError):
            emu.delete_message(alice, goodbye)  # not hers, and she cannot manage messages
        await bot_says(
            emu, channel, "Example Bot has deleted the message: Goodbye in 3 seconds...", timeout=5
        )
    first = next(m for m in emu.history(channel) if m.content == "I will delete myself now...")
    assert [first.deleted, goodbye.deleted, oops.deleted] == [True, True, True]


async def test_guessing_game(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "guessing_game.py"):
        emu.send_message(world.alice, world.channel, "$guess")
        prompt = await bot_says(emu, world.channel, "Guess a number between 1 and 10.")
        emu.send_message(world.alice, world.channel, "not a number")
        emu.send_message(world.alice, world.channel, "5")
        verdict = await bot_says(emu, world.channel, after=prompt.id)
    if verdict.content != "You are right!":
        assert verdict.content.startswith("Oops. It is actually ")
        number = int(verdict.content.removeprefix("Oops. It is actually ").rstrip("."))
        assert number in set(range(1, 11)) - {5}


@pytest.mark.parametrize("example", ["background_task.py", "background_task_asyncio.py"])
async def test_background_task(emu: Emulator, example: str) -> None:
    world = make_world(emu)
    fill = {"self.get_channel(1234567)": f"self.get_channel({world.channel.id})"}
    async with run_example(emu, example, fill=fill):
        # The task starts once discord.py is ready, guild_ready_timeout (2 s) after connecting.
        first = await bot_says(emu, world.channel, timeout=5)
    assert first.content == "1"


async def test_reaction_roles(emu: Emulator) -> None:
    # The bot's role sits above the roles it hands out, as the example needs.
    guild = emu.create_guild("Roles", bot_permissions=None)
    channel = emu.create_channel(guild, "roles")
    alice = emu.create_user("alice")
    emu.add_member(guild, alice)
    red = emu.create_role(guild, "red")
    yellow = emu.create_role(guild, "yellow")
    bot_role = emu.create_role(
        guild, "Example Bot", DEFAULT_BOT_PERMISSIONS | permissions.MANAGE_ROLES, managed=True
    )
    emu.add_member(guild, emu.bot_user, roles=[bot_role])
    menu = emu.send_message(guild.owner_id, channel, "React to get a role")
    other = emu.send_message(guild.owner_id, channel, "Not the role message")
    fill = {
        "self.role_message_id = 0": f"self.role_message_id = {menu.id}",
        "discord.PartialEmoji(name='🔴'): 0": f"discord.PartialEmoji(name='🔴'): {red.id}",
        "discord.PartialEmoji(name='🟡'): 0": f"discord.PartialEmoji(name='🟡'): {yellow.id}",
    }
    member = guild.members[alice.id]
    async with run_example(emu, "reaction_roles.py", fill=fill):
        emu.react(alice, menu, "🔴")
        await emu.wait_until(lambda: red.id in member.roles)
        emu.react(alice, menu, "🟡")
        await emu.wait_until(lambda: yellow.id in member.roles)
        emu.unreact(alice, menu, "🔴")
        await emu.wait_until(lambda: red.id not in member.roles)
        emu.react(alice, other, "🔴")
        emu.react(alice, menu, "👍")
        # Both were ignored: a later reaction is handled after them, and nothing else changed.
        emu.unreact(alice, menu, "🟡")
        await emu.wait_until(lambda: yellow.id not in member.roles)
    assert member.roles == []


async def test_new_member(emu: Emulator) -> None:
    world = make_world(emu)
    guild, channel = world.guild, world.channel
    quiet = emu.create_guild("Quiet")  # no system channel
    quiet_channel = emu.create_channel(quiet, "general")
    emu.edit_guild(guild, system_channel=channel)
    async with run_example(emu, "new_member.py"):
        bob = emu.create_user("bob")
        emu.add_member(guild, bob)
        await bot_says(emu, channel, f"Welcome <@{bob.id}> to Test Guild!")
        carol = emu.create_user("carol")
        emu.add_member(quiet, carol)
        emu.edit_guild(guild, system_channel_flags=1)  # SUPPRESS_JOIN_NOTIFICATIONS
        dave = emu.create_user("dave")
        emu.add_member(guild, dave)
        await bot_says(emu, channel, f"Welcome <@{dave.id}> to Test Guild!")
    # Discord's own join notice (USER_JOIN, type 7) comes first, unless suppressed (dave).
    assert [(m.type, m.author_id, m.content) for m in emu.history(channel)] == [
        (7, bob.id, ""),
        (0, emu.bot_user.id, f"Welcome <@{bob.id}> to Test Guild!"),
        (0, emu.bot_user.id, f"Welcome <@{dave.id}> to Test Guild!"),
    ]
    # Carol's join was handled before dave's: where there is no system channel, no welcome.
    assert emu.history(quiet_channel) == []


async def test_secret(emu: Emulator) -> None:
    guild = emu.create_guild(
        "Secrets", bot_permissions=DEFAULT_BOT_PERMISSIONS | permissions.MANAGE_CHANNELS
    )
    channel = emu.create_channel(guild, "general")
    alice = emu.create_user("alice")
    emu.add_member(guild, alice)
    agents = emu.create_role(guild, "agents")
    bot = f"<@{emu.bot_user.id}>"
    async with run_example(emu, "secret.py"):
        # commands.when_mentioned: messages that mention the bot carry their content even
        # without the message content intent, which this example does not ask for.
        emu.send_message(alice, channel, f"{bot} secret")
        await bot_says(emu, channel, "Shh!")
        emu.send_message(alice, channel, f"{bot} secret text hideout <@&{agents.id}> <@{alice.id}>")
        text = await emu.wait_until(lambda: named(emu, guild.id, "hideout"))
        emu.send_message(alice, channel, f"{bot} secret voice lounge <@&{agents.id}>")
        voice = await emu.wait_until(lambda: named(emu, guild.id, "lounge"))
    assert (text.type, voice.type) == (0, 2)
    assert text.topic == (
        "Top secret text channel. Any leakage of this channel may result in serious trouble."
    )
    view = permissions.VIEW_CHANNEL
    assert sorted((o.id, o.type, o.allow, o.deny) for o in text.overwrites) == sorted(
        [
            (agents.id, 0, view, 0),
            (alice.id, 1, view, 0),
            (guild.id, 0, 0, view),  # @everyone
            (emu.bot_user.id, 1, view, 0),
        ]
    )
    assert permissions.channel_permissions(emu.state, voice, alice.id) == 0
    assert permissions.channel_permissions(emu.state, text, alice.id) & view


def named(emu: Emulator, guild_id: int, name: str) -> Channel | None:
    guild = emu.state.guilds[guild_id]
    return next((emu.channel(c) for c in guild.channel_ids if emu.channel(c).name == name), None)


# ----- views --------------------------------------------------------------------------------


async def test_views_confirm(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "views/confirm.py"):
        emu.send_message(world.alice, world.channel, "$ask")
        asked = await bot_says(emu, world.channel, "Do you want to continue?")
        handle = await emu.click(world.alice, asked, custom_id(asked, "Confirm"))
        answer = await handle.wait_original()
    assert answer.content == "Confirming"
    assert answer.ephemeral
    assert [c["label"] for c in components_of(asked) if c["type"] == 2] == ["Confirm", "Cancel"]


async def test_views_counter(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "views/counter.py"):
        emu.send_message(world.alice, world.channel, "$counter")
        press = await bot_says(emu, world.channel, "Press!")
        button = custom_id(press, "0")
        for _ in range(5):
            await (await emu.click(world.alice, press, button)).wait_response()
    labels = [
        [(c["label"], c["style"], c.get("disabled", False)) for c in components_of_version(v)]
        for v in press.versions
    ]
    red, green = 4, 3
    assert labels == [
        [("0", red, False)],
        [("1", red, False)],
        [("2", red, False)],
        [("3", red, False)],
        [("4", red, False)],
        [("5", green, True)],
    ]


def components_of_version(version: Any) -> list[dict[str, Any]]:
    return [c for row in version.components for c in row.get("components") or []]


async def test_views_dropdown(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "views/dropdown.py"):
        emu.send_message(world.alice, world.channel, "$colour")
        menu = await bot_says(emu, world.channel, "Pick your favourite colour:")
        (select,) = [c for c in components_of(menu) if c["type"] == 3]
        # min_values=1, max_values=1: Discord's client sends exactly one of the options.
        for wrong in ([], ["Red", "Blue"], ["Purple"]):
            with pytest.raises(InteractionRefused):
                await emu.click(world.alice, menu, select["custom_id"], values=wrong)
        handle = await emu.click(world.alice, menu, select["custom_id"], values=["Green"])
        answer = await handle.wait_original()
    assert [o["label"] for o in select["options"]] == ["Red", "Green", "Blue"]
    assert answer.content == "Your favourite colour is Green"
    assert not answer.ephemeral


async def test_views_dynamic_counter(emu: Emulator) -> None:
    world = make_world(emu)
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    alice = world.alice
    async with run_example(emu, "views/dynamic_counter.py"):
        # commands.when_mentioned: the message mentions the bot, so it has content without
        # the message content intent.
        emu.send_message(alice, world.channel, f"<@{emu.bot_user.id}> counter")
        panel = await bot_says(emu, world.channel, "Here is your very own button!")
        first = await emu.click(alice, panel, f"counter:0:user:{alice.id}")
        await first.wait_response()
        refused = await emu.click(bob, panel, f"counter:1:user:{alice.id}")
        second = await emu.click(alice, panel, f"counter:1:user:{alice.id}")
        await second.wait_response()
    assert [(c["label"], c["custom_id"]) for c in components_of(panel) if c["type"] == 2] == [
        ("Total: 2", f"counter:2:user:{alice.id}")
    ]
    # Bob's click failed the item's interaction_check: discord.py answered nothing.
    assert refused.response_type is None


async def test_views_ephemeral(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "views/ephemeral.py"):
        emu.send_message(world.alice, world.channel, "$counter")
        press = await bot_says(emu, world.channel, "Press!")
        handle = await emu.click(world.alice, press, custom_id(press, "Click"))
        mine = await handle.wait_original()
        await (await emu.click(world.alice, mine, custom_id(mine, "0"))).wait_response()
    assert mine.ephemeral
    assert mine.content == "Enjoy!"
    assert [c["label"] for c in components_of(mine) if c["type"] == 2] == ["1"]


async def test_views_layout(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "views/layout.py"):
        emu.send_message(world.alice, world.channel, "$layout")
        layout = await bot_says(emu, world.channel)
        handle = await emu.click(world.alice, layout, custom_id(layout, "Click Me!"))
        answer = await handle.wait_original()
    assert layout.flags & (1 << 15)  # IS_COMPONENTS_V2
    texts = [c["content"] for c in components_of(layout) if c["type"] == 10]
    assert texts == ["Click the above button to receive a **very special** message!"]
    assert (answer.content, answer.ephemeral) == ("Hi!", True)


async def test_views_link(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "views/link.py"):
        emu.send_message(world.alice, world.channel, "$google discord emulator")
        result = await bot_says(emu, world.channel)
    assert result.content == "Google Result for: `discord emulator`"
    assert [
        (c["label"], c["style"], c["url"]) for c in components_of(result) if c["type"] == 2
    ] == [("Click Here", 5, "https://www.google.com/search?q=discord+emulator")]


async def test_views_persistent_across_a_restart(emu: Emulator) -> None:
    world = make_world(emu)
    assert emu.application is not None
    owner = emu.application.owner_id  # @commands.is_owner(): the application's owner
    emu.add_member(world.guild, owner)
    alice = world.alice
    async with run_example(emu, "views/persistent.py"):
        emu.send_message(owner, world.channel, "$prepare")
        colours = await bot_says(emu, world.channel, "What's your favourite colour?")
        emu.send_message(alice, world.channel, "$dynamic_button")
        own = await bot_says(emu, world.channel, "Here is your very own button!")
    # A new process of the bot still answers the buttons of the messages the old one sent.
    # Restarting takes longer than the 5 s Discord wants between two IDENTIFYs.
    emu.advance(5)
    async with run_example(emu, "views/persistent.py"):
        green = await emu.click(alice, colours, "persistent_view:green")
        mine = await emu.click(alice, own, f"button:user:{alice.id}")
        green_answer = await green.wait_original()
        mine_answer = await mine.wait_original()
    assert (green_answer.content, green_answer.ephemeral) == ("This is green.", True)
    assert (mine_answer.content, mine_answer.ephemeral) == ("This is your very own button!", True)


async def test_views_tic_tac_toe(emu: Emulator) -> None:
    world = make_world(emu)
    async with run_example(emu, "views/tic_tac_toe.py"):
        emu.send_message(world.alice, world.channel, "$tic")
        board = await bot_says(emu, world.channel, "Tic Tac Toe: X goes first")
        grid = [[c["custom_id"] for c in row["components"]] for row in board.components]
        contents = []
        for x, y in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]:
            await (await emu.click(world.alice, board, grid[y][x])).wait_response()
            contents.append(board.content)
    assert contents == [
        "It is now O's turn",
        "It is now X's turn",
        "It is now O's turn",
        "It is now X's turn",
        "X won!",
    ]
    cells = [
        [(c["label"], c.get("disabled", False)) for c in row["components"]]
        for row in board.components
    ]
    assert cells == [
        [("X", True), ("X", True), ("X", True)],
        [("O", True), ("O", True), ("\u200b", True)],
        [("\u200b", True), ("\u200b", True), ("\u200b", True)],
    ]


def select_of(msg: Message, ctype: int) -> dict[str, Any]:
    (found,) = [c for c in components_of(msg) if c["type"] == ctype]
    return found


async def test_views_settings(emu: Emulator) -> None:
    world = make_world(emu)
    alice, channel = world.alice, world.channel
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    voice = emu.create_channel(world.guild, "lounge", type=2)
    bot = f"<@{emu.bot_user.id}>"
    async with run_example(emu, "views/settings.py"):
        emu.send_message(alice, channel, f"{bot} settings")
        panel = await bot_says(emu, channel)

        async def choose(ctype: int, values: list[Any]) -> None:
            await (
                await emu.click(alice, panel, select_of(panel, ctype)["custom_id"], values=values)
            ).wait_response()

        await choose(3, ["banana"])  # the fruit
        # The channel select offers text channels and public threads only.
        with pytest.raises(InteractionRefused):
            await emu.click(alice, panel, select_of(panel, 8)["custom_id"], values=[voice])
        await choose(8, [channel])
        await choose(5, [alice, bob])  # the members to mention
        count = await emu.click(alice, panel, custom_id(panel, "1"))
        await count.wait_response()
        assert count.interaction.modal is not None
        (row,) = count.interaction.modal["components"]
        (field,) = row["components"]
        assert (field["label"], field["value"]) == ("Count", "1")
        await (await emu.submit_modal(alice, count, {field["custom_id"]: "3"})).wait_response()
        await (await emu.click(alice, panel, custom_id(panel, "\N{BELL} Enabled"))).wait_response()
        shown = [c.get("label") for c in components_of(panel) if c["type"] == 2]
        finish = await emu.click(alice, panel, custom_id(panel, "Finish"))
        (saved,) = await finish.wait_followups()
        await emu.wait_until(lambda: panel.deleted)
        asked = emu.send_message(alice, channel, f"{bot} send")
        sent = await bot_says(emu, channel, after=asked.id)
    assert shown == ["3", "\N{BELL WITH CANCELLATION STROKE} Disabled", "Finish"]
    fruits = select_of(panel, 3)["options"]
    assert [o["value"] for o in fruits if o.get("default")] == ["banana"]
    defaults = {t: select_of(panel, t)["default_values"] for t in (8, 5)}
    assert defaults == {
        8: [{"id": channel.id, "type": "channel"}],
        5: [{"id": alice.id, "type": "user"}, {"id": bob.id, "type": "user"}],
    }
    assert (saved.content, saved.ephemeral) == ("Settings saved.", True)
    assert sent.content == f"<@{alice.id}> <@{bob.id}> 🍌 🍌 🍌"
    assert sent.flags & (1 << 12)  # SUPPRESS_NOTIFICATIONS: the "silent" setting


# ----- application commands and modals -------------------------------------------------------


def guild_fill(world: World, placeholder: str = "discord.Object(id=0)") -> dict[str, str]:
    # Both placeholders end in "0)": the id a user is told to put there.
    return {placeholder: placeholder.removesuffix("0)") + f"{world.guild.id})"}


async def test_app_commands_basic(emu: Emulator) -> None:
    world = make_world(emu)
    alice, channel = world.alice, world.channel
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    log = emu.create_channel(world.guild, "mod-log")
    joined_at = {u.id: int(world.guild.members[u.id].joined_at) for u in (alice, bob)}
    fill = guild_fill(world)
    fill["interaction.guild.get_channel(0)"] = f"interaction.guild.get_channel({log.id})"
    async with run_example(emu, "app_commands/basic.py", fill=fill):
        hello = await emu.invoke_slash(alice, channel, "hello")
        add = await emu.invoke_slash(alice, channel, "add", {"first_value": 2, "second_value": 3})
        send = await emu.invoke_slash(alice, channel, "send", {"text": "hi there"})
        joined = await emu.invoke_slash(alice, channel, "joined")
        # The context menu commands: Apps > Show Join Date on bob, Report on his message.
        shown = await emu.invoke_user_command(alice, channel, "Show Join Date", bob)
        rude = emu.send_message(bob, channel, "something rude")
        report = await emu.invoke_message_command(alice, rude, "Report to Moderators")
        replies = [(await h.wait_original()).content for h in (hello, add, send, joined, shown)]
        thanks = await report.wait_original()
        logged = await bot_says(emu, log)
        # A user command needs Send Messages in the channel, else the client refuses it.
        emu.set_overwrite(channel, alice, deny=permissions.SEND_MESSAGES)
        with pytest.raises(InteractionRefused):
            await emu.invoke_user_command(alice, channel, "Show Join Date", bob)
    assert replies == [
        f"Hi, <@{alice.id}>",
        "2 + 3 = 5",
        "hi there",
        f"alice joined <t:{joined_at[alice.id]}>",
        f"bob joined at <t:{joined_at[bob.id]}>",
    ]
    assert (thanks.content, thanks.ephemeral) == (
        f"Thanks for reporting this message by <@{bob.id}> to our moderators.",
        True,
    )
    (embed,) = logged.embeds
    assert (embed["title"], embed["description"], embed["author"]["name"]) == (
        "Reported Message",
        "something rude",
        "bob",
    )
    (button,) = components_of_version(logged.versions[0])
    assert (button["label"], button["url"]) == (
        "Go to Message",
        f"https://discord.com/channels/{world.guild.id}/{channel.id}/{rude.id}",
    )


async def test_app_commands_transformers(emu: Emulator) -> None:
    world = make_world(emu)
    alice, channel = world.alice, world.channel
    voice = emu.create_channel(world.guild, "lounge", type=2)
    forum = emu.create_forum(world.guild, "ideas")
    async with run_example(emu, "app_commands/transformers.py", fill=guild_fill(world)):
        add = await emu.invoke_slash(alice, channel, "add", {"first": 5, "second": 7})
        info = await emu.invoke_slash(alice, channel, "channel-info", {"channel": channel})
        voice_info = await emu.invoke_slash(alice, channel, "channel-info", {"channel": voice})
        # Union[VoiceChannel, TextChannel] declares channel_types [2, 0]: a forum is not offered.
        with pytest.raises(InteractionRefused, match="channel types"):
            await emu.invoke_slash(alice, channel, "channel-info", {"channel": forum})
        shop = await emu.invoke_slash(alice, channel, "shop", {"action": "Buy", "item": "apple"})
        fruit = await emu.invoke_slash(alice, channel, "fruit", {"fruit": 1})
        graph = await emu.invoke_slash(alice, channel, "graph", {"point": "1, 2"})
        graph3d = await emu.invoke_slash(alice, channel, "graph3d", {"point": "1,2,3"})
        answers = [await h.wait_original() for h in (add, info, shop, fruit, graph, graph3d)]
        voice_answer = await voice_info.wait_original()
    added, channel_info, *rest = answers
    assert (added.content, added.ephemeral) == ("5 + 7 = 12", True)
    (embed,) = channel_info.embeds
    assert embed["title"] == "Channel Info"
    assert [(f["name"], f["value"]) for f in embed["fields"]] == [
        ("Name", "general"),
        ("ID", str(channel.id)),
        ("Type", "Text"),
    ]
    (voice_embed,) = voice_answer.embeds
    assert voice_embed["fields"][2] == {"name": "Type", "value": "Voice", "inline": True}
    assert [m.content for m in rest] == [
        "Action: Buy\nItem: apple",
        "<Fruits.banana: 1>",
        "Point(x=1, y=2)",
        "Point3D(x=1, y=2, z=3)",
    ]


def modal_inputs_by_label(modal: dict[str, Any]) -> dict[str, str]:
    """``{label: custom_id}`` of a modal's inputs (text inputs in rows, or inside labels)."""
    found: dict[str, str] = {}
    for comp in modal["components"]:
        if comp["type"] == 18:
            found[comp["label"]] = comp["component"]["custom_id"]
        elif comp["type"] == 1:
            for inner in comp["components"]:
                found[inner["label"]] = inner["custom_id"]
    return found


async def test_modals_basic(emu: Emulator) -> None:
    world = make_world(emu)
    fill = guild_fill(world, "TEST_GUILD = discord.Object(0)")
    async with run_example(emu, "modals/basic.py", fill=fill):
        opened = await (
            await emu.invoke_slash(world.alice, world.channel, "feedback")
        ).wait_response()
        assert opened.interaction.modal is not None
        inputs = modal_inputs_by_label(opened.interaction.modal)
        name, feedback = inputs["Name"], inputs["What do you think of this new feature?"]
        # Discord's client sends neither an empty required input nor one over max_length.
        with pytest.raises(InteractionRefused, match="required"):
            await emu.submit_modal(world.alice, opened, {feedback: "Nice"})
        with pytest.raises(InteractionRefused, match="at most 300"):
            await emu.submit_modal(world.alice, opened, {name: "Bob", feedback: "x" * 301})
        submitted = await emu.submit_modal(world.alice, opened, {name: "Bob", feedback: "x" * 300})
        thanks = await submitted.wait_original()
    assert (thanks.content, thanks.ephemeral) == ("Thanks for your feedback, Bob!", True)


async def test_modals_report_with_an_uploaded_image(emu: Emulator) -> None:
    world = make_world(emu)
    reports = emu.create_channel(world.guild, "reports")
    fill = guild_fill(world, "TEST_GUILD = discord.Object(0)")
    fill["REPORTS_CHANNEL_ID = 0"] = f"REPORTS_CHANNEL_ID = {reports.id}"
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
    async with run_example(emu, "modals/report.py", fill=fill):
        opened = await emu.invoke_slash(world.alice, world.channel, "report")
        await opened.wait_response()
        assert opened.interaction.modal is not None
        inputs = modal_inputs_by_label(opened.interaction.modal)
        values = {
            inputs["Topic"]: ["Bug"],
            inputs["Title"]: "Crash on /ping",
            inputs["Description"]: "It crashes.",
            inputs["Images"]: [Upload("crash.png", png, "image/png")],
        }
        with pytest.raises(InteractionRefused, match="no option 'Crash'"):
            await emu.submit_modal(world.alice, opened, {**values, inputs["Topic"]: ["Crash"]})
        thanks = await (await emu.submit_modal(world.alice, opened, values)).wait_original()
        report = await bot_says(emu, reports)
    assert (thanks.content, thanks.ephemeral) == (
        "Thank you for your report! We will look into it shortly.",
        True,
    )
    texts = [c["content"] for c in components_of(report) if c["type"] == 10]
    assert texts[:3] == ["-# User Report\n## Bug", "### Crash on /ping", ">>> It crashes."]
    assert texts[3].startswith(f"-# Reported by alice (ID: {world.alice.id}) | <t:")
    (gallery,) = [c for c in components_of(report) if c["type"] == 12]
    (item,) = gallery["items"]
    async with aiohttp.ClientSession() as http, http.get(item["media"]["url"]) as resp:
        assert await resp.read() == png  # the uploaded file, served at its attachment url


async def test_modals_label_times_a_member_out(emu: Emulator) -> None:
    guild = emu.create_guild(
        "Moderated", bot_permissions=DEFAULT_BOT_PERMISSIONS | permissions.MODERATE_MEMBERS
    )
    channel = emu.create_channel(guild, "general")
    alice, bob = emu.create_user("alice"), emu.create_user("bob")
    emu.add_member(guild, alice)
    emu.add_member(guild, bob)
    fill = {"TEST_GUILD = discord.Object(0)": f"TEST_GUILD = discord.Object({guild.id})"}
    async with run_example(emu, "modals/label.py", fill=fill):
        opened = await emu.invoke_slash(alice, channel, "timeout", {"member": bob})
        await opened.wait_response()
        assert opened.interaction.modal is not None
        inputs = modal_inputs_by_label(opened.interaction.modal)
        values = {inputs["Duration"]: ["300"], inputs["Reason"]: "spam"}
        done = await (await emu.submit_modal(alice, opened, values)).wait_original()
    member = guild.members[bob.id]
    assert member.communication_disabled_until is not None
    until = int(member.communication_disabled_until)
    assert abs(until - (emu.clock.time() + 300)) < 5  # the 5 minutes chosen
    assert (done.content, done.ephemeral) == (
        f"Timeout <@{bob.id}> until <t:{until}> with reason: spam",
        True,
    )
    # A timed-out member keeps only View Channel and Read Message History.
    assert permissions.channel_permissions(emu.state, channel, bob.id) == (
        permissions.VIEW_CHANNEL | permissions.READ_MESSAGE_HISTORY
    )
