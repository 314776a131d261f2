"""The ``errand`` entry point composes the engine's CLI and the bot's without changing either."""

from __future__ import annotations

import typer
from typer.core import TyperGroup


def _commands(app: typer.Typer) -> set[str]:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return set(group.commands)


def test_errand_has_the_engine_commands_and_the_bot_commands_side_by_side() -> None:
    """`errand --help` lists every engine command and `bot`, `run`, `sandbox`; the engine's own
    app keeps only its commands (the bot adds to the root, not to it)."""
    from bot.cli import app, bot_app
    from jobs import cli_app

    engine = _commands(cli_app)
    assert {"migrate", "worker", "prune", "job", "outbox"} <= engine
    assert _commands(bot_app) == {"bot", "run", "sandbox"}
    assert engine.isdisjoint({"bot", "run", "sandbox"})
    assert _commands(app) == engine | {"bot", "run", "sandbox"}
