"""The slash commands: ``/summon`` (``summon.py``) and ``/job status|cancel|list|resolve|tell``
(``job.py``), with what they share (``shared.py``).

Each command is defined once: ``/summon`` as a command function, the ``/job`` commands as the
methods of :class:`~bot.commands.job.JobGroup`. They reach the bot through
``interaction.client`` (see :class:`~bot.commands.shared.Host`), so the Cancel button runs the
same :func:`~bot.commands.job.cancel_job` as ``/job cancel``. Every answer about a job is
ephemeral except the ``/summon`` answer (a thread is started from it).
"""

from __future__ import annotations

from typing import Any

from discord import app_commands

from bot.commands.job import JobGroup, cancel_job
from bot.commands.shared import MAX_NOTE, MAX_PARAMS, MAX_TASK, Host
from bot.commands.summon import summon

__all__ = ["MAX_NOTE", "MAX_PARAMS", "MAX_TASK", "Host", "cancel_job", "install"]


def install(tree: app_commands.CommandTree[Any]) -> None:
    """Add ``/summon`` and ``/job`` to the tree."""
    tree.add_command(summon)
    tree.add_command(JobGroup())
