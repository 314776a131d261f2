"""The ``errand`` console script: the engine's CLI, plus the transport's processes as they land."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jobs.ops.cli import app, run


@app.command()
def sandbox(
    data_dir: Annotated[
        Path | None, typer.Option(help="Where jobs and the local Discord live.")
    ] = None,
    host: Annotated[str, typer.Option(help="Address of the page.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the page.")] = 8765,
) -> None:
    """Try Errand in a browser: the bot, a worker and a local Discord, no setup needed."""
    from bot.sandbox import main as run_sandbox

    run_sandbox(data_dir, host, port)


def _serve(with_worker: bool) -> None:
    import asyncio

    from bot.run import BadToken, serve
    from bot.settings import BotSettings
    from jobs.ops.cli import fail, load_settings

    settings = load_settings()
    try:
        asyncio.run(serve(settings, BotSettings(), with_worker=with_worker))
    except BadToken as exc:
        fail(str(exc))
    except OSError as exc:  # PostgreSQL or Discord unreachable: one line, not a traceback
        fail(f"cannot connect: {exc}")


@app.command("bot")
def bot_command() -> None:
    """Run the Discord bot: commands, threads, progress messages and notices."""
    _serve(with_worker=False)


@app.command("run")
def run_command() -> None:
    """Run the Discord bot and a worker in one process (small installs)."""
    _serve(with_worker=True)


def main() -> None:
    """Run the ``errand`` CLI."""
    run(app)
