"""Errand settings: one pydantic-settings class per section, read from ERRAND_* env vars and .env.

Secrets are ``SecretStr`` so that a settings object can be logged or printed without leaking them.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import AliasChoices, Field, SecretStr
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
    data_dir: Path = Field(default_factory=lambda: default_data_dir() / "pgdata")
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
    # Time running jobs get to stop on SIGTERM before their leases are released.
    shutdown_grace_seconds: float = Field(default=10.0, gt=0)
    reaper_seconds: float = Field(default=1.0, gt=0)


class Settings(BaseSettings):
    """Top-level settings shared by every Errand process."""

    model_config = SettingsConfigDict(env_prefix="ERRAND_", env_file=".env", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    log_level: str = "info"
    # "auto": JSON when stderr is not a TTY, coloured console when it is.
    log_format: str = Field(default="auto", pattern="^(auto|json|console)$")
    db: DatabaseSettings = Field(default_factory=DatabaseSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
