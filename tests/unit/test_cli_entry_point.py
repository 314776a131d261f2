"""The ``errand`` entry point composes the engine's CLI and the bot's without changing either."""

from __future__ import annotations

import pytest
import typer
from typer.core import TyperGroup


def _commands(app: typer.Typer) -> set[str]:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return set(group.commands)


def test_errand_has_the_engine_commands_and_the_bot_commands_side_by_side() -> None:
    """`errand --help` lists every engine command, `bot`, `run`, `sandbox` and `dashboard`; the
    engine's own app keeps only its commands (the bot and the dashboard add to the root, not to
    it)."""
    from bot.cli import app, bot_app
    from dashboard.cli import dashboard_app
    from jobs.ops.cli import app as engine_app

    engine = _commands(engine_app)
    assert {"migrate", "worker", "prune", "job", "outbox"} <= engine
    assert _commands(bot_app) == {"bot", "run", "sandbox"}
    assert [c.name for c in dashboard_app.registered_commands] == ["dashboard"]
    assert engine.isdisjoint({"bot", "run", "sandbox", "dashboard"})
    assert _commands(app) == engine | {"bot", "run", "sandbox", "dashboard"}


def test_a_console_script_ends_through_system_exit_unless_an_entry_point_asks_for_the_fast_exit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``build_cli`` is public: a caller composing its own entry point runs it and keeps its
    cleanup (``finally``, ``pytest.raises``); only ``run(fast_exit=True)`` (``errand``'s own
    ``main``) ends the process without the interpreter's teardown."""
    from jobs.transport import build_cli

    app = typer.Typer()

    @app.command()
    def hello() -> None:
        typer.echo("hello")

    monkeypatch.setattr("sys.argv", ["mine", "hello"])
    with pytest.raises(SystemExit) as ended:
        build_cli(app, help="Mine.").run()
    assert ended.value.code == 0
    assert capsys.readouterr().out == "hello\n"
