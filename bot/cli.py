"""The ``errand`` console script: the engine's CLI, plus the transport's processes as they land."""

from __future__ import annotations

from jobs.cli import app


def main() -> None:
    """Run the ``errand`` CLI."""
    app()
