"""The Cancel button on every progress message.

A :class:`discord.ui.DynamicItem`: the job id lives in the ``custom_id``, and the class is
registered in ``setup_hook``, so a button on a days-old message still works after a restart.
Who may cancel is checked on each click (the same rule as ``/job cancel``).
"""

from __future__ import annotations

import re
from typing import Any

import discord

from bot.commands import cancel_job


class CancelButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"errand:cancel:(?P<job_id>[a-z0-9]+)",
):
    """Cancel the job this progress message follows."""

    def __init__(self, job_id: str) -> None:
        super().__init__(
            discord.ui.Button(
                label="Cancel",
                style=discord.ButtonStyle.danger,
                custom_id=f"errand:cancel:{job_id}",
            )
        )
        self.job_id = job_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> CancelButton:
        return cls(match["job_id"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await cancel_job(interaction, self.job_id, reason="Cancel button")


def cancel_view(job_id: str) -> discord.ui.View:
    """A view holding only the Cancel button (fully dynamic: nothing is kept per message)."""
    view = discord.ui.View(timeout=None)
    view.add_item(CancelButton(job_id))
    return view
