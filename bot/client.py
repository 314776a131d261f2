"""The Discord client: commands, the persistent Cancel button and question components, follow-ups
(a mention in a job's thread) and outbox delivery, on one engine.

The bot needs no worker in its process: workers anywhere write to PostgreSQL and the bot
delivers what they did. Commands sync only when their payload changed since the last sync (a
hash kept in the database), to ``ERRAND_DEV_GUILD`` when set (instant), else globally.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Any

import asyncpg
import discord
from discord import app_commands

from bot.cancel import CancelButton
from bot.commands import Host, install
from bot.delivery.loop import Delivery
from bot.followups import on_mention
from bot.queries import sql
from bot.questions import DYNAMIC_ITEMS
from bot.settings import BotSettings
from bot.trace import discord_http_trace
from jobs.transport import JobStore, Outbox, Registry, get_logger

log = get_logger("bot")


class ErrandBot(discord.AutoShardedClient):
    """Errand on Discord: all shards (as many as Discord recommends) in one process, or the
    shards ``settings.shard_ids`` of ``settings.shard_count``."""

    def __init__(
        self,
        *,
        store: JobStore,
        dsn: str,
        settings: BotSettings,
        registry: Registry,
    ) -> None:
        # Slash commands, buttons and threads need no privileged intent (no message content);
        # follow-ups arrive as MESSAGE_CREATE (the guild messages intent, not privileged), and a
        # message that mentions the bot carries its content without the content intent.
        intents = discord.Intents.default()
        intents.message_content = False
        super().__init__(
            intents=intents,
            guild_ready_timeout=settings.guild_ready_timeout,
            # Nothing the bot posts pings anyone unless a notice names its requester.
            allowed_mentions=discord.AllowedMentions.none(),
            shard_count=settings.shard_count,
            # None (every shard) is discord.py's own default; its TypedDict only admits a list.
            shard_ids=settings.shard_ids,  # type: ignore[arg-type]
            # Where discord.py's 429s and 5xx answers become metrics (see bot/trace.py).
            http_trace=discord_http_trace(),
        )
        self.store = store
        self.pool: asyncpg.Pool = store.pool
        self.dsn = dsn
        self.registry = registry
        self.settings = settings
        self.outbox = Outbox(
            self.pool,
            "discord",
            lease_seconds=settings.delivery_lease_seconds,
            max_attempts=settings.delivery_max_attempts,
            retry_base_seconds=settings.delivery_retry_base_seconds,
            partition=settings.partition(),
        )
        self.tree: app_commands.CommandTree[ErrandBot] = app_commands.CommandTree(self)
        self.tree.on_error = self._on_command_error  # type: ignore[method-assign]
        install(self.tree)
        self.delivery = Delivery(
            self,
            store=store,
            outbox=self.outbox,
            registry=self.registry,
            settings=settings,
            dsn=dsn,
        )
        self.synced: bool | None = None
        """Whether the last start synced commands (False: the payload was unchanged)."""
        self.shards_up: dict[int, bool] = {}
        """Per shard, whether its gateway session is live: set on READY and RESUMED, cleared
        on every disconnect (discord.py keeps ``is_ready()`` true across reconnects)."""

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        # discord.py's own hook sleeps 5 s; this one waits the configured interval.
        if not initial:
            await asyncio.sleep(self.settings.identify_interval_seconds)

    async def setup_hook(self) -> None:
        self.add_dynamic_items(CancelButton, *DYNAMIC_ITEMS)
        self.synced = await sync_commands(self)
        self.delivery.start()

    async def close(self) -> None:
        self.shards_up.clear()
        await self.delivery.stop()
        await super().close()

    async def on_message(self, message: discord.Message) -> None:
        if self.user is not None:
            await on_mention(message, me=self.user, store=self.store, pool=self.pool)

    async def on_shard_ready(self, shard_id: int) -> None:
        self.shards_up[shard_id] = True

    async def on_shard_resumed(self, shard_id: int) -> None:
        self.shards_up[shard_id] = True

    async def on_shard_disconnect(self, shard_id: int) -> None:
        self.shards_up[shard_id] = False

    async def gateway_check(self) -> str | None:
        """Readiness of the Discord connection (the ``gateway`` check of ``/readyz``): every
        shard of this process connected, identified or resumed."""
        if not self.is_ready():
            return "not connected to the Discord gateway yet"
        down = sorted(
            i for i, shard in self.shards.items() if not self.shards_up.get(i) or shard.is_closed()
        )
        if down or not self.shards_up:
            shards = ", ".join(str(i) for i in down)
            return f"disconnected from the Discord gateway (shard {shards}); reconnecting"
        return None

    async def _on_command_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        log.error(
            "command.failed",
            command=interaction.command and interaction.command.name,
            error=type(error).__name__,
        )
        text = "Something went wrong; nothing was changed. Try again in a moment."
        try:
            if interaction.response.is_done():
                await interaction.followup.send(text, ephemeral=True)
            else:
                await interaction.response.send_message(text, ephemeral=True)
        except discord.HTTPException:
            pass


if TYPE_CHECKING:
    # The commands reach the bot through interaction.client as a Host: mypy checks it is one.
    _host: type[Host] = ErrandBot


def command_payload(tree: app_commands.CommandTree[Any], guild: discord.Object | None) -> str:
    """The JSON Discord would receive for this scope, canonical (sorted) for hashing."""
    payload = [c.to_dict(tree) for c in tree.get_commands(guild=guild)]
    return json.dumps(sorted(payload, key=lambda c: str(c.get("name"))), sort_keys=True)


async def sync_commands(bot: ErrandBot) -> bool:
    """Sync application commands when they changed; returns whether a sync happened."""
    guild = discord.Object(bot.settings.dev_guild) if bot.settings.dev_guild else None
    if guild is not None:
        bot.tree.copy_global_to(guild=guild)
    digest = hashlib.sha256(command_payload(bot.tree, guild).encode()).hexdigest()
    scope = f"{bot.application_id}:{guild.id if guild else 'global'}"
    if await sql.fetchval(bot.pool, "command_sync_get", scope=scope) == digest:
        log.info("commands.unchanged", scope=scope)
        return False
    await bot.tree.sync(guild=guild)
    await sql.execute(bot.pool, "command_sync_set", scope=scope, hash=digest)
    log.info("commands.synced", scope=scope)
    return True
