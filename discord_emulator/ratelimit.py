"""Rate limits: per-route buckets, the global limit and the old-message edit sub-limit.

Behaviour from https://discord.com/developers/docs/topics/rate-limits: every response carries
``X-RateLimit-Limit/Remaining/Reset/Reset-After/Bucket``; a 429 has a JSON body with ``message``,
``retry_after`` (float seconds) and ``global``, headers ``Retry-After`` and ``X-RateLimit-Scope``
(user / global / shared); bots may make 50 requests per second globally, interaction endpoints
excepted. Discord's 429s pass through Google's load balancer and carry ``Via: 1.1 google``;
discord.py treats a 429 without ``Via`` as a Cloudflare ban, so the emulator always sends it.
Every window is multiplied by ``time_scale`` so tests can run with millisecond windows.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from .errors import DiscordError, old_message_edit_limit


@dataclass(frozen=True)
class Limit:
    limit: int
    per: float  # seconds


def _default_routes() -> dict[str, Limit]:
    # Observed Discord limits for the hot message routes (per channel).
    return {
        "POST /channels/{channel_id}/messages": Limit(5, 5.0),
        "PATCH /channels/{channel_id}/messages/{message_id}": Limit(5, 5.0),
        "DELETE /channels/{channel_id}/messages/{message_id}": Limit(5, 1.0),
        # Reactions: one per 0.25 s per channel (observed; discord.py learns it from headers).
        "PUT /channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me": Limit(1, 0.25),
        "POST /channels/{channel_id}/messages/{message_id}/threads": Limit(10, 10.0),
        "POST /channels/{channel_id}/threads": Limit(10, 10.0),
        "PATCH /channels/{channel_id}": Limit(10, 10.0),
        "PATCH /webhooks/{application_id}/{token}/messages/{message_id}": Limit(5, 5.0),
        "POST /webhooks/{application_id}/{token}": Limit(5, 5.0),
    }


@dataclass
class RateLimitConfig:
    enabled: bool = True
    time_scale: float = 1.0
    global_limit: Limit = field(default_factory=lambda: Limit(50, 1.0))
    default: Limit = field(default_factory=lambda: Limit(50, 1.0))
    routes: dict[str, Limit] = field(default_factory=_default_routes)
    # Edits of messages older than one hour: a stricter per-channel sub-limit (code 30046).
    old_message_edit: Limit = field(default_factory=lambda: Limit(3, 6.0))

    def set_message_edit_limit(self, limit: int, per: float) -> None:
        self.routes["PATCH /channels/{channel_id}/messages/{message_id}"] = Limit(limit, per)


@dataclass
class _Window:
    start: float
    count: int = 0


def bucket_hash(route: str) -> str:
    return hashlib.sha1(route.encode()).hexdigest()[:32]


def retry_after_header(seconds: float) -> str:
    """The Retry-After header: a whole number of seconds, rounded up (HTTP's delay-seconds);
    the JSON body's ``retry_after`` carries the precise float
    (https://discord.com/developers/docs/topics/rate-limits#exceeding-a-rate-limit)."""
    return str(max(1, math.ceil(seconds)))


def too_many(
    retry_after: float,
    *,
    scope: str,
    is_global: bool = False,
    headers: dict[str, str] | None = None,
) -> DiscordError:
    hdrs = dict(headers or {})
    hdrs["Retry-After"] = retry_after_header(retry_after)
    hdrs["X-RateLimit-Scope"] = scope
    if is_global:
        hdrs["X-RateLimit-Global"] = "true"
    return DiscordError(
        429,
        0,
        "You are being rate limited.",
        headers=hdrs,
        extra={"retry_after": round(retry_after, 3), "global": is_global},
    )


class RateLimiter:
    def __init__(self, config: RateLimitConfig) -> None:
        self.config = config
        self._windows: dict[tuple[str, str], _Window] = {}

    def _hit(self, key: tuple[str, str], lim: Limit, now: float) -> tuple[bool, int, float]:
        """Count one request in a fixed window; returns (allowed, remaining, reset_at)."""
        per = lim.per * self.config.time_scale
        win = self._windows.get(key)
        if win is None or now >= win.start + per:
            win = _Window(start=now)
            self._windows[key] = win
        reset_at = win.start + per
        if win.count >= lim.limit:
            return False, 0, reset_at
        win.count += 1
        return True, lim.limit - win.count, reset_at

    def check_global(self, token: str, now: float) -> None:
        if not self.config.enabled:
            return
        ok, _, reset_at = self._hit(("global", token), self.config.global_limit, now)
        if not ok:
            raise too_many(reset_at - now, scope="global", is_global=True)

    def check_route(self, route: str, major: str, now: float) -> dict[str, str]:
        """Count a request on its bucket; returns the X-RateLimit-* headers or raises 429."""
        if not self.config.enabled:
            return {}
        lim = self.config.routes.get(route, self.config.default)
        ok, remaining, reset_at = self._hit((route, major), lim, now)
        headers = {
            "X-RateLimit-Limit": str(lim.limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": f"{reset_at:.3f}",
            "X-RateLimit-Reset-After": f"{max(0.0, reset_at - now):.3f}",
            "X-RateLimit-Bucket": bucket_hash(route),
        }
        if not ok:
            raise too_many(reset_at - now, scope="user", headers=headers)
        return headers

    def check_old_message_edit(self, channel_id: int, now: float) -> None:
        if not self.config.enabled:
            return
        ok, _, reset_at = self._hit(
            ("old-edit", str(channel_id)), self.config.old_message_edit, now
        )
        if not ok:
            err = old_message_edit_limit(reset_at - now)
            err.headers.update(
                {"Retry-After": retry_after_header(reset_at - now), "X-RateLimit-Scope": "user"}
            )
            raise err

    def reset(self) -> None:
        self._windows.clear()
