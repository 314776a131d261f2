"""REST API v10 handlers, grouped by area; :func:`add_routes` mounts them under ``/api/v10``."""

from __future__ import annotations

from aiohttp import web

from . import channels, core, guilds, interactions, pins, reactions, threads

API_PREFIX = "/api/v10"


def add_routes(app: web.Application) -> None:
    # pins before channels: /messages/pins and /messages/bulk-delete are not message ids.
    for module in (core, guilds, pins, channels, threads, reactions, interactions):
        for method, path, handler in module.ROUTES:
            app.router.add_route(method, API_PREFIX + path, handler)
            if API_PREFIX != "/api":
                # Unversioned /api/... is served by Discord as the default version.
                pass
