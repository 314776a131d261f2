"""The ``errand`` console script: the engine's commands and the bot's, composed in one root app.

The engine's typer app (``jobs.cli_app``) is added to the root as it is, never changed; the
bot's own commands (``bot``, ``run``, ``sandbox``) live in :data:`bot_app`. Both are added
without a name, so their commands sit side by side at the top level: ``errand worker``,
``errand bot``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jobs import cli_app, cli_fail, load_settings, run_cli

bot_app = typer.Typer(add_completion=False)
"""The Discord transport's commands."""


@bot_app.command()
def sandbox(
    data_dir: Annotated[
        Path | None, typer.Option(help="Where jobs and the local Discord live.")
    ] = None,
    host: Annotated[str, typer.Option(help="Address of the page.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the page.")] = 8765,
) -> None:
    """Try Errand in a browser: the bot, a worker and a local Discord, no setup needed."""
    # Imported on use: `errand --help` and the engine's commands need no Discord code.
    from bot.sandbox import main as run_sandbox

    run_sandbox(data_dir, host, port)


def _serve(with_worker: bool) -> None:
    import asyncio

    from bot.run import BadToken, serve
    from bot.settings import BotSettings

    settings = load_settings()
    try:
        asyncio.run(serve(settings, BotSettings(), with_worker=with_worker))
    except BadToken as exc:
        cli_fail(str(exc))
    except OSError as exc:  # PostgreSQL or Discord unreachable: one line, not a traceback
        cli_fail(f"cannot connect: {exc}")


@bot_app.command("bot")
def bot_command() -> None:
    """Run the Discord bot: commands, threads, progress messages and notices."""
    _serve(with_worker=False)


@bot_app.command("run")
def run_command() -> None:
    """Run the Discord bot and a worker in one process (small installs)."""
    _serve(with_worker=True)


def build_app() -> typer.Typer:
    """The root app of ``errand``: the engine's commands, then the bot's."""
    root = typer.Typer(no_args_is_help=True, add_completion=False, help="Errand: durable jobs.")
    root.add_typer(cli_app)
    root.add_typer(bot_app)
    return root


app = build_app()


def main() -> None:
    """Run the ``errand`` CLI."""
    run_cli(app)
