"""``errand dashboard``: the dashboard's command, put beside the bot's and the engine's by the
``errand`` console script (``bot/cli.py``). Light to import: the web server loads when the
command runs."""

from __future__ import annotations

from typing import Annotated

import typer

dashboard_app = typer.Typer(add_completion=False)
"""The dashboard's commands."""


@dashboard_app.command("dashboard")
def dashboard_command(
    host: Annotated[
        str | None, typer.Option(help="Interface to listen on (default 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(min=0, max=65535, help="Port (default 8790; 0: any free).")
    ] = None,
) -> None:
    """Serve the operators' web dashboard (needs ERRAND_DASHBOARD_TOKEN or a trusted proxy)."""
    from dashboard.run import checked_settings, serve

    raise typer.Exit(serve(checked_settings(host, port)))
