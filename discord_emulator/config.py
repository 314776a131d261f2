"""The emulator's settings (:class:`EmulatorConfig`) and its record of answered REST requests
(:class:`RequestRecord`): plain data, kept low so every part can read them without importing
:mod:`discord_emulator.server`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .ratelimit import RateLimitConfig


@dataclass
class EmulatorConfig:
    host: str = "127.0.0.1"
    port: int = 0
    # Discord's HELLO interval is 41250 ms; tests may shrink it.
    heartbeat_interval_ms: int = 41250
    # A connection is closed if no heartbeat arrives within interval * grace.
    heartbeat_grace: float = 1.5
    # The heartbeat ACK comes back after a network round trip (see Gateway._ack_heartbeat).
    heartbeat_ack_delay_ms: int = 50
    # Initial interaction response deadline (3 s) and token lifetime (15 min), virtual time.
    interaction_ack_deadline: float = 3.0
    interaction_token_ttl: float = 900.0
    # Messages older than this get the stricter edit sub-limit (code 30046).
    old_message_age: float = 3600.0
    # A public thread started from a message older than this (seconds) gets a THREAD_CREATED
    # notice in the channel: "older is still TBD, but is currently set to a very small value"
    # (https://discord.com/developers/docs/topics/threads#new-message-types).
    thread_created_notice_age: float = 10.0
    # Sharding (https://discord.com/developers/docs/events/gateway#sharding): a shard may hold
    # at most 2500 guilds; /gateway/bot recommends one shard per 1000; IDENTIFY is paced to
    # one per ``identify_interval`` seconds per max_concurrency bucket.
    max_guilds_per_shard: int = 2500
    guilds_per_recommended_shard: int = 1000
    max_concurrency: int = 1
    identify_interval: float = 5.0
    session_start_total: int = 1000
    # "Apps can send 120 gateway events per connection every 60 seconds"; past it the
    # connection is closed with 4008 (https://discord.com/developers/docs/events/gateway#rate-limiting).
    gateway_send_limit: int = 120
    gateway_send_window: float = 60.0
    ratelimits: RateLimitConfig = field(default_factory=RateLimitConfig)


@dataclass
class RequestRecord:
    """One REST request as the emulator answered it (for assertions on retries and 429s)."""

    method: str
    path: str
    route: str | None
    status: int
    code: int | None
    at: float
    body: Any = None
