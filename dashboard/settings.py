"""Settings of the dashboard: ``ERRAND_DASHBOARD_*``.

The token is a ``SecretStr``: a settings object can be printed or logged without leaking it.
Either a token login or a trusted proxy (or both) must be configured: without one the
dashboard does not start (:meth:`DashboardSettings.login_problem`).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _split(value: object) -> object:
    """A comma-separated environment value as a list (a list passes through)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class DashboardSettings(BaseSettings):
    """Where the dashboard listens and who may use it."""

    model_config = SettingsConfigDict(
        env_prefix="ERRAND_DASHBOARD_", env_file=".env", extra="ignore"
    )

    host: str = "127.0.0.1"
    """The interface it listens on: this machine only unless set (behind a proxy, the proxy's
    side of it)."""
    port: int = Field(default=8790, ge=0, le=65535)
    """Its port (0 picks a free one, logged as ``dashboard.listening``)."""
    token: SecretStr | None = None
    """Token login: whoever gives this token (and a name) may act; unset: no token login."""
    proxy_header: str | None = None
    """Trusted-proxy mode: the header the proxy puts the signed-in user in (oauth2-proxy:
    ``X-Forwarded-Email`` or ``X-Forwarded-User``)."""
    trusted_proxies: Annotated[list[Network], NoDecode] = Field(default_factory=list)
    """The proxy's addresses (IPs or networks, comma-separated): the header is read only from
    these; from any other address it is ignored."""
    operators: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Trusted-proxy mode: the users (as the header names them, comma-separated) allowed in."""
    secure_cookie: bool | None = None
    """Mark the session cookie Secure; unset: when the request came over https (directly, or
    ``X-Forwarded-Proto: https`` from a trusted proxy)."""
    session_hours: float = Field(default=12.0, gt=0)
    """How long a token login lasts."""

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _networks(cls, value: object) -> object:
        found = _split(value)
        if isinstance(found, list):
            return [ipaddress.ip_network(str(v), strict=False) for v in found]
        return found

    @field_validator("operators", mode="before")
    @classmethod
    def _operators(cls, value: object) -> object:
        return _split(value)

    @property
    def proxied(self) -> bool:
        """Trusted-proxy mode is configured."""
        return bool(self.proxy_header)

    def login_problem(self) -> str | None:
        """Why the dashboard must not start as configured (None: it may)."""
        if self.token is not None and len(self.token.get_secret_value().strip()) < 16:
            return "ERRAND_DASHBOARD_TOKEN is too short; use at least 16 characters"
        if self.proxied:
            if not self.trusted_proxies:
                return (
                    "ERRAND_DASHBOARD_PROXY_HEADER is set but ERRAND_DASHBOARD_TRUSTED_PROXIES "
                    "is not; name the proxy's addresses"
                )
            if not self.operators:
                return (
                    "ERRAND_DASHBOARD_PROXY_HEADER is set but ERRAND_DASHBOARD_OPERATORS is "
                    "not; list the users allowed in"
                )
        elif self.token is None:
            return (
                "no login is configured; set ERRAND_DASHBOARD_TOKEN (token login) or "
                "ERRAND_DASHBOARD_PROXY_HEADER with ERRAND_DASHBOARD_TRUSTED_PROXIES and "
                "ERRAND_DASHBOARD_OPERATORS (behind a single-sign-on proxy)"
            )
        return None
