"""Command catalogs the tests write for a worker (``ERRAND_COMMAND_CATALOG``)."""

from __future__ import annotations

MARK_CATALOG = """
[commands.mark]
description = "Write a mark in a file"
argv = ["sh", "-c", "echo ran >> \\"$1\\"", "mark", "{path}"]
retry_safe = false
agent_tool = true
approve = true
[commands.mark.params.path]
pattern = "/[A-Za-z0-9_./-]{1,200}"
"""
"""``mark``: an agent tool that needs an approval and appends ``ran`` to a file, once per run
(how a test sees whether, and how often, it ran)."""
