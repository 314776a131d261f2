"""Errand settings: one pydantic-settings class per section, read from ERRAND_* env vars and .env.

Secrets are ``SecretStr`` so that a settings object can be logged or printed without leaking them.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    """Where Errand keeps the embedded database and large assets unless told otherwise."""
    return Path(platformdirs.user_data_dir("errand", appauthor=False))


class DatabaseSettings(BaseSettings):
    """How to reach PostgreSQL: ``DATABASE_URL`` when set, else an embedded server."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_DB_", env_file=".env", extra="ignore")

    # DATABASE_URL is the conventional name every platform sets; ERRAND_DB_URL also works.
    url: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "ERRAND_DB_URL")
    )
    # The embedded server's directory; unset: ``<ERRAND_DATA_DIR>/pgdata``.
    data_dir: Path | None = None
    pool_min: int = 1
    pool_max: int = 10


class WorkerSettings(BaseSettings):
    """How a worker claims and runs jobs."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_WORKER_", env_file=".env", extra="ignore")

    concurrency: int = Field(default=100, ge=1)
    # A lease is renewed every heartbeat; it expires after lease_seconds without one.
    lease_seconds: float = Field(default=30.0, gt=0)
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    # Polling is the fallback when a NOTIFY is missed (e.g. the listener reconnected).
    poll_seconds: float = Field(default=1.0, gt=0)
    claim_batch: int = Field(default=100, ge=1)
    # Time a running job has to acknowledge a cancel before its lease is revoked.
    cancel_grace_seconds: float = Field(default=10.0, gt=0)
    # Time running jobs get on SIGTERM to end on their own before they are asked to stop.
    shutdown_grace_seconds: float = Field(default=10.0, gt=0)
    reaper_seconds: float = Field(default=1.0, gt=0)
    # Retries wait base * 2**(attempt-1) seconds with full jitter, at most retry_cap_seconds.
    retry_base_seconds: float = Field(default=1.0, ge=0)
    retry_cap_seconds: float = Field(default=300.0, ge=0)
    # The claim's fair share (docs/state-machine.md, "The claim's order"), the same on every
    # worker: how many jobs one requester may have running across the fleet (unset: no cap),
    # and whether origin groups (Discord servers) share the slots before their requesters do.
    running_per_requester: int | None = Field(default=None, ge=1)
    fair_by_group: bool = True
    # How long a handler waits for an answer or a message in its worker before it parks (the job
    # waits without a worker slot); a sleep longer than this parks at once. 0: park at once.
    park_after_seconds: float = Field(default=30.0, ge=0)


class BudgetSettings(BaseSettings):
    """Global bounds every job runs inside; kinds and job params may only tighten them."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_BUDGET_", env_file=".env", extra="ignore")

    step_tokens: int | None = Field(default=100_000, ge=0)
    step_tool_calls: int | None = Field(default=16, ge=0)
    step_seconds: float | None = Field(default=3600.0, gt=0)
    job_steps: int | None = Field(default=200, ge=0)
    job_tokens: int | None = Field(default=1_000_000, ge=0)
    # Wall time of one attempt; the kind's deadline bounds the whole job from submit.
    job_seconds: float | None = Field(default=None, gt=0)


class QuotaSettings(BaseSettings):
    """Limits on queued and live jobs; unset means unlimited."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_QUOTA_", env_file=".env", extra="ignore")

    per_requester: int | None = Field(default=None, ge=0)
    # Per origin group, e.g. a Discord guild.
    per_group: int | None = Field(default=None, ge=0)


class CommandSettings(BaseSettings):
    """The operator's command catalog (``command`` kind and agent tools)."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_COMMAND_", env_file=".env", extra="ignore")

    # A TOML file; unset: examples/commands.toml from the checkout.
    catalog: Path | None = None
    # Time a stopped command gets between SIGTERM and SIGKILL.
    kill_grace_seconds: float = Field(default=5.0, gt=0)


class AgentSettings(BaseSettings):
    """The OpenAI-compatible chat-completions endpoint of the ``agent`` kind."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_AGENT_", env_file=".env", extra="ignore")

    # OpenAI, or any compatible server: Ollama (http://localhost:11434/v1), vLLM, llama.cpp.
    # Nothing set: no model is configured and the agent kind is not offered (a job of it fails
    # at once saying what to set). A key alone means OpenAI.
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    timeout_seconds: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    # The provider's limits, shared by every worker through PostgreSQL (unset: none): a job
    # that would exceed one waits for it, visibly, without failing or using up an attempt.
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)
    # The length of those "minutes" in seconds (a provider counting otherwise; tests).
    rate_window_seconds: float = Field(default=60.0, gt=0)

    OPENAI_URL: ClassVar[str] = "https://api.openai.com/v1"

    @property
    def configured(self) -> bool:
        """Whether a model endpoint is configured (``ERRAND_AGENT_BASE_URL`` or a key)."""
        return bool(self.base_url or self.api_key)

    @property
    def endpoint(self) -> str:
        """The base URL to call: the configured one, else OpenAI's (a key alone)."""
        return self.base_url or self.OPENAI_URL


class HealthSettings(BaseSettings):
    """The HTTP endpoint of every long-running process: /healthz, /readyz and /metrics."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_HEALTH_", env_file=".env", extra="ignore")

    # Unset: no endpoint (two processes on one laptop never fight over a port); 0: any free
    # port (logged as health.listening); the container image sets 8080.
    port: int | None = Field(default=None, ge=0, le=65535)
    # Loopback unless told otherwise; the image listens on all interfaces for the scraper.
    host: str = "127.0.0.1"


class Settings(BaseSettings):
    """Top-level settings shared by every Errand process."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_", env_file=".env", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    log_level: str = "info"
    # "auto": JSON when stderr is not a TTY, coloured console when it is.
    log_format: str = Field(default="auto", pattern="^(auto|json|console)$")
    db: DatabaseSettings = Field(default_factory=DatabaseSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    quota: QuotaSettings = Field(default_factory=QuotaSettings)
    command: CommandSettings = Field(default_factory=CommandSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    health: HealthSettings = Field(default_factory=HealthSettings)
    # Modules imported for their @kind decorators (comma-separated; e.g. a test's kinds).
    extra_kinds: str = ""

    @model_validator(mode="after")
    def _place_embedded_db(self) -> Settings:
        # One knob moves everything: the embedded database follows ERRAND_DATA_DIR unless
        # ERRAND_DB_DATA_DIR says otherwise.
        if self.db.data_dir is None:
            self.db.data_dir = self.data_dir / "pgdata"
        return self

    @property
    def assets_dir(self) -> Path:
        """Where large assets are kept."""
        return self.data_dir / "assets"
