"""REST API v10 handlers, grouped by the resource they serve; :func:`add_routes` mounts them
under ``/api/v10``."""

from __future__ import annotations

from aiohttp import web

from . import (
    channels,
    commands,
    guilds,
    identity,
    interactions,
    members,
    messages,
    pins,
    reactions,
    threads,
)

API_PREFIX = "/api/v10"

# pins before messages: /messages/pins and /messages/bulk-delete are not message ids.
MODULES = (
    identity,
    commands,
    guilds,
    members,
    pins,
    messages,
    channels,
    threads,
    reactions,
    interactions,
)


def add_routes(app: web.Application) -> None:
    for module in MODULES:
        for method, path, handler in module.ROUTES:
            app.router.add_route(method, API_PREFIX + path, handler)
