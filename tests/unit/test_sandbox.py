"""The sandbox's wiring without processes: its first world, finding that world again after a
restart, its settings rooted in the data directory, and the example catalog it falls back to."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bot.sandbox import (
    GUILD_NAME,
    HEARTBEAT_ENV,
    OPERATOR_ROLE,
    SandboxError,
    archive_threads,
    build_world,
    example_catalog,
    exclusive,
    find_world,
    heartbeat_interval_ms,
    root_sandbox,
)
from discord_emulator import DM, FORUM, TEXT, Emulator
from discord_emulator.persist import dump_world, load_world
from jobs.settings import Settings


def test_first_world_has_a_text_channel_a_forum_and_dms_for_three_users() -> None:
    """alice, bob and operator are members of the sandbox guild, with a DM each with the bot;
    only operator has the role the bot treats as its operators'."""
    emu = Emulator()
    world = build_world(emu)
    types = sorted(c.type for c in emu.state.channels.values())
    assert types == [TEXT, DM, DM, DM, FORUM]
    assert [u.username for u in world.viewers] == ["alice", "bob", "operator"]
    guild = emu.state.guilds[world.guild_id]
    assert all(u.id in guild.members for u in world.viewers)
    role_names = {
        u.username: [guild.roles[r].name for r in guild.members[u.id].roles] for u in world.viewers
    }
    assert role_names == {"alice": [], "bob": [], "operator": [OPERATOR_ROLE]}


def test_a_world_saved_before_the_operator_gets_one() -> None:
    """A sandbox started on a world from an older version (alice and bob only) adds the
    operator, with the operators' role, keeping everyone else's ids."""
    first = Emulator()
    first.create_application("Errand")
    guild = first.create_guild(GUILD_NAME)
    first.create_channel(guild, "general")
    old = []
    for name in ("alice", "bob"):
        user = first.create_user(name)
        first.add_member(guild, user)
        old.append(user.id)
    second = Emulator()
    load_world(second, dump_world(first))
    found = find_world(second)
    assert [u.id for u in found.viewers[:2]] == old
    operator = found.viewers[2]
    assert operator.username == "operator"
    member = second.state.guilds[guild.id].members[operator.id]
    assert [second.state.guilds[guild.id].roles[r].name for r in member.roles] == [OPERATOR_ROLE]


def test_a_saved_world_is_found_again_with_the_same_ids() -> None:
    """After save and load the sandbox finds its guild and viewers by name, same ids."""
    first = Emulator()
    world = build_world(first)
    second = Emulator()
    load_world(second, dump_world(first))
    found = find_world(second)
    assert (found.guild_id, [u.id for u in found.viewers]) == (
        world.guild_id,
        [u.id for u in world.viewers],
    )


def test_a_foreign_world_is_refused() -> None:
    """A world file the sandbox did not write is not silently reused."""
    emu = Emulator()
    emu.create_application("Other")
    emu.create_guild("Elsewhere")
    with pytest.raises(SandboxError, match="not a sandbox's"):
        find_world(emu)


def test_settings_live_in_the_data_dir_and_the_example_catalog_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded database and assets live under the data dir; with no catalog configured,
    the command kind reads the example catalog shipped with Errand."""
    for name in ("DATABASE_URL", "ERRAND_DB_URL"):
        monkeypatch.delenv(name, raising=False)
    # Set (to "unset") so that monkeypatch restores it after the sandbox writes it.
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", "")
    settings = Settings()
    root_sandbox(settings, tmp_path)
    assert (settings.db.data_dir, settings.assets_dir) == (tmp_path / "pgdata", tmp_path / "assets")
    catalog = example_catalog()
    assert catalog is not None
    assert catalog.name == "commands.toml"
    assert os.environ["ERRAND_COMMAND_CATALOG"] == str(catalog)


def test_the_heartbeat_interval_is_discords_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local Discord says 41250 ms in its HELLO, as Discord does, unless told otherwise; a
    value that is not a positive number of milliseconds stops the sandbox with the reason."""
    monkeypatch.delenv(HEARTBEAT_ENV, raising=False)
    assert heartbeat_interval_ms() == 41250
    monkeypatch.setenv(HEARTBEAT_ENV, "11000")
    assert heartbeat_interval_ms() == 11000
    for bad in ("0", "-5", "fast", "1.5"):
        monkeypatch.setenv(HEARTBEAT_ENV, bad)
        with pytest.raises(SandboxError, match=HEARTBEAT_ENV):
            heartbeat_interval_ms()


def test_one_data_directory_runs_one_sandbox(tmp_path: Path) -> None:
    """A second sandbox on the same data directory is refused while the first holds it."""
    refused = pytest.raises(SandboxError, match="another errand sandbox")
    with exclusive(tmp_path), refused, exclusive(tmp_path):
        pass
    with exclusive(tmp_path):
        pass


async def test_threads_archive_after_their_auto_archive_duration() -> None:
    """The sandbox archives a thread once it has been idle for its auto-archive duration (the
    emulator archives only when its clock moves; the sandbox moves it with the wall clock)."""
    emu = Emulator()
    world = build_world(emu)
    general = next(c for c in emu.state.channels.values() if c.name == "general")
    idle = emu.actions.create_thread(general, world.viewers[0].id, "idle", auto_archive_duration=60)
    busy = emu.actions.create_thread(general, world.viewers[0].id, "busy", auto_archive_duration=60)
    idle.last_activity -= 61 * 60
    stop = asyncio.Event()
    stop.set()  # one sweep, then return
    await archive_threads(emu, stop)
    assert idle.thread is not None
    assert busy.thread is not None
    assert (idle.thread.archived, busy.thread.archived) == (True, False)
