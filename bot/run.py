"""The bot's processes: ``errand bot`` (gateway, commands, delivery) and ``errand run`` (the bot
and a worker in one process, the default for small installs).

A missing or refused ``DISCORD_TOKEN`` ends the process with one clear line and exit code 2; the
token itself is never printed or logged.
"""

from __future__ import annotations

import asyncio
import contextlib

import discord
import discord.gateway
import discord.http
import yarl

from bot.client import ErrandBot
from bot.errors import BadToken
from bot.settings import BotSettings
from jobs.transport import (
    Engine,
    HealthCheck,
    HealthServer,
    Settings,
    Worker,
    exit_now,
    get_logger,
    open_engine,
    register_secret,
    start_health,
    stop_on_signals,
    supervise,
    worker_check,
)

log = get_logger("bot.run")


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
    register_secret(token)  # masked by value in every text Errand writes from now on
    if any(c.isspace() for c in token):
        raise BadToken("DISCORD_TOKEN is not a valid token (it contains spaces)")
    return token


async def serve(settings: Settings, bot_settings: BotSettings, *, with_worker: bool) -> None:
    """Run the bot (and a worker) until SIGTERM/SIGINT.

    Raises:
        BadToken: the token is missing or refused.
    """
    token = token_of(bot_settings)
    point_discord_at(bot_settings.api_base, bot_settings.gateway_url)
    stop, hard = stop_on_signals()
    async with open_engine(settings, pool_max=settings.db.pool_max) as engine:
        bot = ErrandBot(
            store=engine.store, dsn=engine.dsn, settings=bot_settings, registry=engine.registry
        )
        checks: dict[str, HealthCheck] = {"gateway": bot.gateway_check}
        tasks: dict[str, asyncio.Task[None]] = {
            "bot": asyncio.create_task(bot.start(token), name="bot"),
        }
        if with_worker:
            worker = Worker(
                engine.store,
                engine.registry,
                settings.worker,
                dsn=engine.dsn,
                budget=settings.budget.budget(),
                assets_dir=settings.assets_dir,
            )
            tasks["worker"] = asyncio.create_task(worker.run(stop, hard), name="worker")
            checks["worker"] = worker_check(worker, stop)
        health = await start_health(
            settings.health, engine.pool, kinds=engine.registry.names(), checks=checks
        )
        try:
            await supervise(tasks.values(), stop)
        except discord.LoginFailure:
            raise BadToken("DISCORD_TOKEN was refused by Discord (401); check the token") from None
        finally:
            stop.set()
            await bot.close()
            for name, task in tasks.items():
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    if name == "worker":
                        # No timeout: the worker waits for jobs that have not stopped (they keep
                        # their leases) and ends on its own at a second signal.
                        await task
                    else:
                        await asyncio.wait_for(task, settings.worker.shutdown_grace_seconds + 5)
            if health is not None:
                await health.stop()
            if with_worker and worker.left_running:  # their threads die with the process
                exit_now(1 if worker.left_to_reaper else 0)


async def run_bot(
    bot_settings: BotSettings,
    stop: asyncio.Event,
    *,
    engine: Engine,
    health: HealthServer | None = None,
) -> None:
    """Run the bot on ``engine`` until ``stop`` is set (its ``gateway`` check on ``health``).

    For embedding (the sandbox): the API base and gateway settings are applied first.
    """
    token = token_of(bot_settings)
    point_discord_at(bot_settings.api_base, bot_settings.gateway_url)
    bot = ErrandBot(
        store=engine.store, dsn=engine.dsn, settings=bot_settings, registry=engine.registry
    )
    if health is not None:
        health.add_check("gateway", bot.gateway_check)
    task = asyncio.create_task(bot.start(token), name="errand-bot")
    try:
        await supervise([task], stop)
    finally:
        await bot.close()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, 5.0)
