"""The Discord transport's own metrics, on the engine's registry so one ``/metrics`` serves both.

Counted where the thing happens: :func:`discord_rate_limited` and :func:`discord_retry` by
``bot/trace.py`` (discord.py's HTTP answers, 429s and 5xx, seen through its ``http_trace``) and by
delivery (network failures); :func:`notice_delivered` and :func:`notice_dead_lettered` by
delivery. Sum them over replicas in Prometheus.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from jobs.transport import METRICS

_LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, float("inf"))

DISCORD_RATE_LIMITS = Counter(
    "errand_discord_rate_limits",
    "HTTP 429 answers from Discord, by scope (bucket, global, shared).",
    ["scope"],
    registry=METRICS,
)
DISCORD_RETRIES = Counter(
    "errand_discord_retries",
    "Discord requests retried by the transport, by reason (rate_limit, server_error, network).",
    ["reason"],
    registry=METRICS,
)
NOTICES_DELIVERED = Counter(
    "errand_notices_delivered",
    "Outbox notices this process delivered, by topic.",
    ["topic"],
    registry=METRICS,
)
NOTICE_DELIVERY_LAG = Histogram(
    "errand_notice_delivery_lag_seconds",
    "From an outbox notice's creation to its delivery.",
    buckets=_LAG_BUCKETS,
    registry=METRICS,
)
NOTICES_DEAD_LETTERED = Counter(
    "errand_notices_dead_lettered",
    "Outbox notices this process gave up on (dead-lettered), by topic.",
    ["topic"],
    registry=METRICS,
)


def discord_rate_limited(scope: str = "bucket") -> None:
    """Discord answered 429. ``scope``: ``bucket``, ``global`` or ``shared``."""
    DISCORD_RATE_LIMITS.labels(scope).inc()


def discord_retry(reason: str) -> None:
    """The transport retries a Discord request (``rate_limit``, ``server_error``, ``network``)."""
    DISCORD_RETRIES.labels(reason).inc()


def notice_delivered(topic: str, lag_seconds: float) -> None:
    """An outbox notice was delivered ``lag_seconds`` after it was created."""
    NOTICES_DELIVERED.labels(topic).inc()
    NOTICE_DELIVERY_LAG.observe(max(0.0, lag_seconds))


def notice_dead_lettered(topic: str) -> None:
    """An outbox notice was dead-lettered (delivery gave up; ``errand outbox retry`` revives)."""
    NOTICES_DEAD_LETTERED.labels(topic).inc()
