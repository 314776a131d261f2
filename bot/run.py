"""The bot's processes: ``errand bot`` (gateway, commands, delivery) and ``errand run`` (the bot
and a worker in one process, the default for small installs); ``errand sandbox`` runs the same
bot against its local Discord (``bot/sandbox.py``).

Each is a :class:`~jobs.transport.Process`, the engine's one assembly of a long-running process,
with the bot as its part (:func:`bot_part`): the engine opens the database, runs the worker and
the health endpoint, and stops everything on SIGTERM; the bot adds its client and its
``gateway`` readiness check.

A missing or refused ``DISCORD_TOKEN`` ends the process with one clear line and exit code 2; the
token itself is never printed or logged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import discord
import discord.gateway
import discord.http
import yarl
from pydantic import SecretStr

from bot.client import ErrandBot
from bot.errors import BadToken, CannotStart
from bot.settings import BotSettings
from jobs.transport import Process


def point_discord_at(api_base: str | None, gateway_url: str | None) -> None:
    """Use another Discord (an emulator or sandbox): what ``discord_emulator.patched`` does."""
    if api_base:
        discord.http.Route.BASE = api_base.rstrip("/")
    if gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


def token_of(bot_settings: BotSettings) -> str:
    """The token, or BadToken with a line that says what to do (never the token)."""
    if bot_settings.token is None or not bot_settings.token.get_secret_value().strip():
        raise BadToken(
            "DISCORD_TOKEN is not set; create a bot token in the Discord developer "
            "portal and set DISCORD_TOKEN"
        )
    token = bot_settings.token.get_secret_value().strip()
    if any(c.isspace() for c in token):
        raise BadToken("DISCORD_TOKEN is not a valid token (it contains spaces)")
    return token


def bot_part(bot_settings: BotSettings, token: str) -> Callable[[Process], Awaitable[None]]:
    """The bot as a part of a process: made on the process's engine once it is open, with its
    ``gateway`` readiness check, and closed when the process stops."""

    def start(process: Process) -> Awaitable[None]:
        point_discord_at(bot_settings.api_base, bot_settings.gateway_url)
        engine = process.engine
        bot = ErrandBot(
            store=engine.store, dsn=engine.dsn, settings=bot_settings, registry=engine.registry
        )
        process.add_check("gateway", bot.gateway_check)
        # The dashboard's overview shows each bot process with the shards it runs.
        process.detail["shards"] = bot_settings.shard_ids
        process.detail["shard_count"] = bot_settings.shard_count
        process.on_stop(bot.close)
        return bot.start(token)

    return start


def serve(
    bot_settings: BotSettings,
    *,
    with_worker: bool,
    parts: dict[str, Callable[[Process], Awaitable[None]]] | None = None,
    secrets: Iterable[str | SecretStr | None] = (),
) -> int:
    """Run the bot (and a worker, and other ``parts``: the dashboard, with its ``secrets``)
    until SIGTERM/SIGINT; the exit code.

    Raises:
        BadToken: the token is missing or refused.
        CannotStart: Discord cannot be reached.
    """
    token = token_of(bot_settings)  # before anything starts: a missing token is said at once
    process = Process(
        worker=with_worker,
        parts={"bot": bot_part(bot_settings, token), **(parts or {})},
        secrets=[token, *secrets],  # masked by value in every text the process writes
    )
    try:
        return process.run()
    except discord.LoginFailure:
        raise BadToken("DISCORD_TOKEN was refused by Discord (401); check the token") from None
    except OSError as exc:  # PostgreSQL or Discord unreachable: one line, not a traceback
        raise CannotStart(f"cannot connect: {exc}") from None
