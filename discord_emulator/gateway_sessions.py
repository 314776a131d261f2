"""A gateway session and the socket it is connected through, and which shard hears a guild.

A session outlives its socket: it keeps its sequence number and a buffer of its last
``REPLAY_BUFFER`` dispatches to replay on RESUME, as Discord does
(https://discord.com/developers/docs/events/gateway#resuming; #sharding).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

REPLAY_BUFFER = 2000


@dataclass(eq=False)
class Connection:
    ws: web.WebSocketResponse
    request: web.Request
    outbox: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    session: GatewaySession | None = None
    # Monotonic times of the frames received in the current rate-limit window.
    received: deque[float] = field(default_factory=deque)


@dataclass(eq=False)
class GatewaySession:
    session_id: str
    application_id: int
    bot_user_id: int
    token: str
    intents: int
    seq: int = 0
    buffer: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=REPLAY_BUFFER))
    connection: Connection | None = None
    resumable: bool = True
    # [shard_id, num_shards] from IDENTIFY; an unsharded session is shard 0 of 1.
    shard: tuple[int, int] = (0, 1)

    def owns_guild(self, guild_id: int | None) -> bool:
        """Whether this session's shard receives a guild's events: ``(guild_id >> 22) %
        num_shards``; events outside any guild (DMs) go to shard 0 only
        (https://discord.com/developers/docs/events/gateway#sharding)."""
        shard_id, num_shards = self.shard
        if guild_id is None:
            return shard_id == 0
        return shard_id_of(guild_id, num_shards) == shard_id


def shard_id_of(guild_id: int, num_shards: int) -> int:
    """The shard that receives a guild's events, by Discord's formula."""
    return (guild_id >> 22) % num_shards


def parse_shard(value: Any) -> tuple[int, int] | None:
    """``[shard_id, num_shards]`` if valid, else None (close code 4010, Invalid shard)."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    shard_id, num_shards = value
    if not isinstance(shard_id, int) or not isinstance(num_shards, int):
        return None
    if num_shards < 1 or not 0 <= shard_id < num_shards:
        return None
    return shard_id, num_shards
