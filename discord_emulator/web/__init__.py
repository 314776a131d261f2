"""A chat page that looks and behaves like a Discord channel, served by the emulator itself.

``serve_page(emu, PageConfig(viewers=[alice.id, bob.id]))`` before ``await emu.start()`` adds
``/`` (plain HTML, CSS and JavaScript; no build step, no external assets) and the page's data
routes under ``/_emulator/page/``. The page lists channels, threads and DMs, draws messages with
embeds and buttons, updates live from ``/_emulator/events``, runs slash commands typed in its
composer (with completion from the registered commands) and lets you act as any viewer.
"""

from __future__ import annotations

from discord_emulator.hub import Hub

from .page import PageConfig, add_page_routes


def serve_page(emu: Hub, config: PageConfig) -> None:
    """Serve the chat page from ``emu`` (call before ``start``; survives ``restart``)."""
    emu.app_setup.append(lambda app: add_page_routes(app, config))


__all__ = ["PageConfig", "add_page_routes", "serve_page"]
