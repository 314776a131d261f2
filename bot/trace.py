"""Discord's HTTP answers, counted for ``/metrics``, where discord.py reports them.

discord.py handles 429s and 5xx answers inside ``HTTPClient.request`` (it sleeps and retries) and
only logs them; the one public hook on that path is the aiohttp ``TraceConfig`` the client takes
as ``http_trace``. Its ``on_request_end`` sees every answer of every try, so:

- a 429 counts one ``errand_discord_rate_limits_total`` by its ``X-RateLimit-Scope`` (``user``
  is a per-route bucket: ``bucket``; ``global``; ``shared``) and one
  ``errand_discord_retries_total{reason="rate_limit"}`` (discord.py sleeps ``retry_after`` and
  sends again; we never set ``max_ratelimit_timeout``, the only thing that would stop it);
- a 5xx counts one ``errand_discord_retries_total{reason="server_error"}``: discord.py retries
  500, 502, 504 and 524 up to four times, and what still fails reaches delivery, which releases
  the notice to be tried again (docs/runbook.md).
"""

from __future__ import annotations

from types import SimpleNamespace

import aiohttp

from bot.metrics import discord_rate_limited, discord_retry

_SCOPES = {"user": "bucket", "global": "global", "shared": "shared"}


async def _on_request_end(
    _session: aiohttp.ClientSession, _ctx: SimpleNamespace, params: aiohttp.TraceRequestEndParams
) -> None:
    status = params.response.status
    if status == 429:
        scope = params.response.headers.get("X-RateLimit-Scope", "user").lower()
        discord_rate_limited(_SCOPES.get(scope, "bucket"))
        discord_retry("rate_limit")
    elif status >= 500:
        discord_retry("server_error")


def discord_http_trace() -> aiohttp.TraceConfig:
    """A trace config for ``discord.Client(http_trace=...)`` feeding the Discord metrics."""
    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(_on_request_end)
    return trace
