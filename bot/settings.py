"""Settings of the Discord transport: ``DISCORD_TOKEN``, ``ERRAND_DEV_GUILD`` and ``ERRAND_BOT_*``.

The token is a ``SecretStr``: a settings object can be printed or logged without leaking it.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class BotSettings(BaseSettings):
    """How the bot reaches Discord, who may do what, and how it paces its messages."""

    model_config = SettingsConfigDict(
        env_prefix="ERRAND_BOT_", env_file=".env", extra="ignore", populate_by_name=True
    )

    token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DISCORD_TOKEN", "ERRAND_BOT_TOKEN")
    )
    # Commands sync to this guild (instant) when set, else globally (can take an hour).
    dev_guild: int | None = Field(
        default=None, validation_alias=AliasChoices("ERRAND_DEV_GUILD", "ERRAND_BOT_DEV_GUILD")
    )
    # Members with this role (name or id) are operators: they may cancel any job in the guild
    # and resolve unknown outcomes. Manage Threads also allows cancelling.
    admin_role: str | None = None
    # The kind /summon runs when none is chosen; unset: agent when a model is configured, else
    # demo.
    default_kind: str | None = None
    # Point discord.py at another Discord (the emulator, a sandbox): REST base and gateway URL.
    api_base: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ERRAND_DISCORD_API_BASE", "ERRAND_BOT_API_BASE"),
    )
    gateway_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ERRAND_DISCORD_GATEWAY_URL", "ERRAND_BOT_GATEWAY_URL"),
    )
    # Progress edits per message: at most one per interval (Discord allows 5 per 5 s per
    # channel, and 3 per 6 s for messages older than an hour). Edits coalesce to the latest.
    edit_interval_seconds: float = Field(default=1.0, ge=0)
    old_message_edit_interval_seconds: float = Field(default=2.0, ge=0)
    # The bot's own pace for delivery requests (Discord allows 50 per second per bot token in
    # all, across every process; interaction answers are exempt and bypass this). A process
    # running k of n shards paces at k/n of it (request_rate()).
    requests_per_second: float = Field(default=45.0, gt=0)
    # Outbox delivery: polling is the fallback for a missed NOTIFY.
    delivery_poll_seconds: float = Field(default=2.0, gt=0)
    delivery_lease_seconds: float = Field(default=30.0, gt=0)
    delivery_max_attempts: int = Field(default=6, ge=1)
    delivery_retry_base_seconds: float = Field(default=2.0, gt=0)
    # A notice still rate limited after discord.py's own retries is handed back uncounted and
    # tried again this long after (Discord said "later", not "no"; never a dead letter).
    delivery_rate_limited_seconds: float = Field(default=5.0, gt=0)
    # On shutdown nothing new is sent; requests Discord has not answered yet get this long to
    # be answered and recorded: one cut off before its record is sent again by the next process.
    delivery_drain_seconds: float = Field(default=5.0, ge=0)
    # How long to wait for the /summon answer's message id before threading from a new message.
    anchor_wait_seconds: float = Field(default=10.0, ge=0)
    # /summon answers at once; if the submit takes longer than this (a slow database), it
    # acknowledges first (Discord allows 3 s) and answers when the job exists. The /job
    # commands and the Cancel button do the same (ephemeral) when their queries are slow.
    defer_after_seconds: float = Field(default=2.0, gt=0, lt=3)
    # discord.py waits this long after the last GUILD_CREATE before it is ready.
    guild_ready_timeout: float = Field(default=2.0, ge=0)
    # Sharding (docs/deploy.md): the total number of shards (None: as many as Discord
    # recommends) and the shards this process runs (None: all of them). A process that runs
    # some shards delivers only the jobs of their guilds.
    shard_count: int | None = Field(default=None, ge=1)
    # Discord allows one IDENTIFY per 5 s per max_concurrency bucket; a process starting several
    # shards waits this long between them (tests shorten it, with the emulator's window).
    identify_interval_seconds: float = Field(default=5.0, ge=0)
    shard_ids: list[int] | None = None

    @model_validator(mode="after")
    def _shards_fit(self) -> BotSettings:
        if self.shard_ids is not None:
            if self.shard_count is None:
                raise ValueError("shard ids need a shard count (--shard-count)")
            if not self.shard_ids or len(set(self.shard_ids)) != len(self.shard_ids):
                raise ValueError("shard ids must be distinct and at least one")
            bad = [i for i in self.shard_ids if not 0 <= i < self.shard_count]
            if bad:
                raise ValueError(
                    f"shard ids {bad} are outside 0..{self.shard_count - 1} (--shard-count)"
                )
        return self

    def request_rate(self) -> float:
        """This process's share of the bot's global request budget: Discord's 50 requests/s
        are per bot token, shared by every process that runs some of its shards, so a process
        running k of n shards paces itself at ``requests_per_second * k / n``."""
        if self.shard_ids is None or self.shard_count is None:
            return self.requests_per_second
        return self.requests_per_second * len(self.shard_ids) / self.shard_count

    def partition(self) -> tuple[int, list[int]] | None:
        """The outbox partition this process delivers: None for every job."""
        if self.shard_ids is None or self.shard_count is None:
            return None
        if sorted(self.shard_ids) == list(range(self.shard_count)):
            return None
        return self.shard_count, sorted(self.shard_ids)

    def resolved_default_kind(self) -> str:
        """The kind /summon uses when the user names none."""
        if self.default_kind:
            return self.default_kind
        return "agent" if agent_configured() else "demo"


def agent_configured() -> bool:
    """Whether the agent kind has a model: its settings, from the environment or ``.env``."""
    from jobs.transport import Settings

    return bool(Settings().agent.configured)
