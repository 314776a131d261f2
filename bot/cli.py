"""The ``errand`` console script: the engine's commands, the bot's and the dashboard's, composed
in one root app.

The bot's own commands (``sandbox``, ``run``, ``bot``, listed in ``--help`` in that order) live
in :data:`bot_app`, the dashboard's (``dashboard``) in ``dashboard.cli``; ``build_cli`` (the
engine's) puts them before the engine's commands, side by side at the top level: ``errand bot``,
``errand dashboard``, ``errand worker``, and :func:`main` runs the result. The engine's app is
never changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dashboard.cli import dashboard_app
from jobs.transport import build_cli

bot_app = typer.Typer(add_completion=False)
"""The Discord transport's commands."""


@bot_app.command()
def sandbox(
    data_dir: Annotated[
        Path | None, typer.Option(help="Where jobs and the local Discord live.")
    ] = None,
    host: Annotated[str, typer.Option(help="Address of the page.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port of the page.")] = 8765,
) -> None:
    """Try Errand in a browser: the bot, a worker and a local Discord, no setup needed."""
    # Imported on use: `errand --help` and the engine's commands need no Discord code.
    from bot.sandbox import main as run_sandbox

    raise typer.Exit(run_sandbox(data_dir, host, port))


ShardsOpt = Annotated[
    int | None,
    typer.Option("--shards", min=1, help="Run this many shards in this process (all of them)."),
]
ShardIdsOpt = Annotated[
    str | None,
    typer.Option(
        "--shard-ids",
        help="Run only these shards, e.g. 0,1 (with --shard-count); one process per range.",
    ),
]
ShardCountOpt = Annotated[
    int | None, typer.Option("--shard-count", min=1, help="The total number of shards.")
]


def _bot_settings(shards: int | None, shard_ids: str | None, shard_count: int | None) -> Any:
    """The bot's settings with the command line's sharding on top.

    Raises:
        CannotStart: the sharding options do not fit together.
    """
    from pydantic import ValidationError

    from bot.errors import CannotStart
    from bot.settings import BotSettings

    overrides: dict[str, Any] = {}
    if shards is not None:
        if shard_ids is not None or (shard_count is not None and shard_count != shards):
            raise CannotStart("use --shards N alone, or --shard-ids with --shard-count")
        overrides["shard_count"] = shards
    if shard_count is not None:
        overrides["shard_count"] = shard_count
    if shard_ids is not None:
        try:
            overrides["shard_ids"] = [int(s) for s in shard_ids.split(",") if s.strip()]
        except ValueError:
            raise CannotStart(
                f"--shard-ids must be numbers separated by commas, not {shard_ids[:40]!r}"
            ) from None
    try:
        return BotSettings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise CannotStart(str(first["msg"]).removeprefix("Value error, ")) from None


def _serve(with_worker: bool, bot_settings: Any, *, dashboard: bool = False) -> None:
    from bot.run import serve

    parts = {}
    secrets = []
    if dashboard:
        from dashboard.run import checked_settings, dashboard_part

        settings = checked_settings()
        parts["dashboard"] = dashboard_part(settings)
        secrets.append(settings.token)  # masked by the process, as `errand dashboard` does
    raise typer.Exit(serve(bot_settings, with_worker=with_worker, parts=parts, secrets=secrets))


@bot_app.command("run")
def run_command(
    shards: ShardsOpt = None,
    shard_ids: ShardIdsOpt = None,
    shard_count: ShardCountOpt = None,
    dashboard: Annotated[
        bool, typer.Option(help="Serve the operators' dashboard too (errand dashboard).")
    ] = False,
) -> None:
    """Run the Discord bot and a worker in one process (small installs)."""
    settings = _bot_settings(shards, shard_ids, shard_count)
    _serve(with_worker=True, bot_settings=settings, dashboard=dashboard)


@bot_app.command("bot")
def bot_command(
    shards: ShardsOpt = None, shard_ids: ShardIdsOpt = None, shard_count: ShardCountOpt = None
) -> None:
    """Run the Discord bot: commands, threads, progress messages and notices."""
    _serve(with_worker=False, bot_settings=_bot_settings(shards, shard_ids, shard_count))


app = build_cli(
    bot_app,
    dashboard_app,
    help="Errand: a Discord bot with durable jobs. Try it with [bold]errand sandbox[/bold].",
)
"""The root app of ``errand``: the bot's commands, then the engine's."""


def main() -> None:
    """Run the ``errand`` CLI."""
    app.run(fast_exit=True)
