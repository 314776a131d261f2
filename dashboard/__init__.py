"""The operator's window: ``errand dashboard``, a web UI over the engine for a real deployment.

A transport-level package like ``bot/``: it reads and acts only through the engine's doors
(``jobs``, ``jobs.transport``) and never imports ``bot`` or the emulator. Its parts: settings
(:mod:`dashboard.settings`), who may enter and the CSRF check (:mod:`dashboard.access`), live
updates from PostgreSQL's NOTIFY fanned out to the browsers (:mod:`dashboard.live`), the pages
(:mod:`dashboard.pages`), the actions (:mod:`dashboard.actions`), what they share
(:mod:`dashboard.shared`), the aiohttp application (:mod:`dashboard.app`) and the process part
and command (:mod:`dashboard.run`, :mod:`dashboard.cli`).
"""
