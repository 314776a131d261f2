"""Save the emulated world to a JSON file and load it back, so a local Discord survives a restart.

A sandbox restarted on the same data directory shows the same guilds, channels, threads, users,
messages (with every version), interactions and registered commands, with the same ids and the
same bot token, so a bot's stored message ids stay valid. Gateway sessions, rate-limit buckets
and faults are not saved: after a restart clients IDENTIFY afresh, as after a Discord outage.

:class:`WorldFile` saves on state changes (debounced) and once more when the emulator stops.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .control import Control
from .models import (
    Application,
    Channel,
    Guild,
    Interaction,
    Member,
    Message,
    MessageVersion,
    Overwrite,
    Role,
    ThreadMeta,
    User,
)

log = logging.getLogger(__name__)

FORMAT_VERSION = 1


def dump_world(emu: Control) -> dict[str, Any]:
    """The whole world as JSON-ready data (ids as integers; dict keys rebuilt on load)."""
    s = emu.state
    return {
        "version": FORMAT_VERSION,
        "application_id": emu.application.id if emu.application is not None else None,
        "clock_offset": emu.clock._offset,
        "users": [asdict(u) for u in s.users.values()],
        "applications": [_dump_application(a) for a in s.applications.values()],
        "guilds": [
            {
                "id": g.id,
                "name": g.name,
                "owner_id": g.owner_id,
                "roles": [asdict(r) for r in g.roles.values()],
                "members": [asdict(m) for m in g.members.values()],
                "channel_ids": list(g.channel_ids),
                "system_channel_id": g.system_channel_id,
                "system_channel_flags": g.system_channel_flags,
            }
            for g in s.guilds.values()
        ],
        "channels": [_dump_channel(c) for c in s.channels.values()],
        "messages": [asdict(m) for m in s.messages.values()],
        "channel_messages": {str(k): list(v) for k, v in s.channel_messages.items()},
        "interactions": [asdict(i) for i in s.interactions.values()],
        "attachments": {
            str(k): base64.b64encode(v).decode() for k, v in s.attachment_bytes.items()
        },
    }


def _dump_application(app: Application) -> dict[str, Any]:
    data = asdict(app)
    data["guild_commands"] = {str(k): v for k, v in app.guild_commands.items()}
    return data


def _dump_channel(channel: Channel) -> dict[str, Any]:
    data = asdict(channel)
    data["thread_member_ids"] = sorted(channel.thread_member_ids)
    return data


def load_world(emu: Control, data: dict[str, Any]) -> None:
    """Replace the emulator's world with ``data`` from :func:`dump_world`.

    Raises:
        ValueError: the data was written by an unknown format version.
    """
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"unknown world file version {data.get('version')!r}")
    s = emu.state
    s.users = {u["id"]: User(**u) for u in data["users"]}
    s.applications = {}
    for raw in data["applications"]:
        app = Application(**raw)
        app.guild_commands = {int(k): v for k, v in raw["guild_commands"].items()}
        s.applications[app.id] = app
    s.guilds = {}
    for raw in data["guilds"]:
        guild = Guild(
            id=raw["id"],
            name=raw["name"],
            owner_id=raw["owner_id"],
            roles={r["id"]: Role(**r) for r in raw["roles"]},
            members={m["user_id"]: Member(**m) for m in raw["members"]},
            channel_ids=list(raw["channel_ids"]),
            # Absent from worlds saved before system channels were emulated.
            system_channel_id=raw.get("system_channel_id"),
            system_channel_flags=raw.get("system_channel_flags", 0),
        )
        s.guilds[guild.id] = guild
    s.channels = {}
    for raw in data["channels"]:
        fields = dict(raw)
        fields["overwrites"] = [Overwrite(**o) for o in raw["overwrites"]]
        fields["thread"] = ThreadMeta(**raw["thread"]) if raw["thread"] else None
        fields["thread_member_ids"] = set(raw["thread_member_ids"])
        channel = Channel(**fields)
        s.channels[channel.id] = channel
    s.messages = {}
    for raw in data["messages"]:
        fields = dict(raw)
        fields["versions"] = [MessageVersion(**v) for v in raw["versions"]]
        msg = Message(**fields)
        s.messages[msg.id] = msg
    s.channel_messages = {int(k): list(v) for k, v in data["channel_messages"].items()}
    s.interactions = {i["id"]: Interaction(**i) for i in data["interactions"]}
    s.interactions_by_token = {i.token: i for i in s.interactions.values()}
    s.attachment_bytes = {int(k): base64.b64decode(v) for k, v in data["attachments"].items()}
    s.nonces = {}
    app_id = data.get("application_id")
    emu.application = s.applications.get(app_id) if app_id is not None else None
    # Virtual time never runs backwards across a restart, and new ids stay above old ones.
    emu.clock._offset = max(emu.clock._offset, float(data.get("clock_offset", 0.0)))
    ids = [*s.users, *s.guilds, *s.channels, *s.messages, *s.interactions, *s.applications]
    if ids:
        s.snowflakes._last = max(s.snowflakes._last, *ids)


class WorldFile:
    """Keeps an emulator's world in ``path``: loads it if present, saves after changes.

    Use ``loaded = world_file.load()`` before building a default world, then
    ``await world_file.start()`` once the emulator runs, and ``await world_file.stop()`` after
    it stops (which saves a last time).
    """

    def __init__(self, emu: Control, path: Path, *, debounce: float = 0.5) -> None:
        self.emu = emu
        self.path = path
        self.debounce = debounce
        self._task: asyncio.Task[None] | None = None

    def load(self) -> bool:
        """Load the saved world; False when there is none yet."""
        if not self.path.exists():
            return False
        load_world(self.emu, json.loads(self.path.read_text(encoding="utf-8")))
        return True

    def save(self) -> None:
        """Write the world atomically (a crash mid-write leaves the previous file)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(dump_world(self.emu)), encoding="utf-8")
        os.replace(tmp, self.path)

    async def start(self) -> None:
        self.save()
        self._task = asyncio.create_task(self._autosave(), name="emulator-world-autosave")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.save()

    async def _autosave(self) -> None:
        sub = self.emu.subscribe(maxsize=100000)
        try:
            while True:
                await sub.get()
                # Coalesce a burst (a progress message edited many times) into one write.
                await asyncio.sleep(self.debounce)
                while not sub.queue.empty():
                    sub.queue.get_nowait()
                try:
                    self.save()
                except OSError:
                    log.exception("could not save the emulator world to %s", self.path)
        finally:
            sub.close()


__all__ = ["WorldFile", "dump_world", "load_world"]
