"""``/job status|cancel|list|resolve|tell``: one method of :class:`JobGroup` per command (an
``app_commands.Group``, as in discord.py's examples). The Cancel button runs the same
:func:`cancel_job` as ``/job cancel``. Every answer is ephemeral.
"""

from __future__ import annotations

from typing import Any

import discord
from discord import app_commands

from bot import render, status_page
from bot.commands.shared import (
    MAX_NOTE,
    NO_JOB_HERE,
    NO_SUCH_JOB,
    group_of,
    host_of,
    in_time,
    is_operator,
    may_moderate,
    reply,
    requester_of,
    visible,
)
from bot.queries import sql
from jobs import ErrandError
from jobs.transport import Actor, JobView, NotAllowed

ID_OR_THREAD = "The job id (optional inside a job's thread)"
MAX_TELL = 2000
"""Characters of a follow-up typed in ``/job tell`` (a Discord message's length)."""


class JobGroup(app_commands.Group, name="job", description="Follow, cancel, resolve and tell jobs"):
    """``/job status|cancel|list|resolve|tell``: one method per command."""

    @app_commands.command(name="status", description="Show a job's state, progress and last events")
    @app_commands.describe(id=ID_OR_THREAD)
    async def status(self, interaction: discord.Interaction[Any], id: str | None = None) -> None:
        await reply(interaction, await in_time(interaction, _status(interaction, id)))

    @app_commands.command(name="cancel", description="Stop a job you started")
    @app_commands.describe(id=ID_OR_THREAD, reason="Why")
    async def cancel(
        self,
        interaction: discord.Interaction[Any],
        id: str | None = None,
        reason: str | None = None,
    ) -> None:
        await cancel_job(interaction, id, reason)

    @app_commands.command(name="list", description="Your recent jobs here")
    async def list_(self, interaction: discord.Interaction[Any]) -> None:
        jobs = await in_time(
            interaction,
            host_of(interaction).store.list_jobs(
                requester=requester_of(interaction.user),
                origin_group=group_of(interaction),
                limit=10,
            ),
        )
        if not jobs:
            await reply(interaction, "You have no jobs here yet. Start one with `/summon`.")
            return
        lines = [status_page.job_line(j, str(j.origin.get("task") or "")) for j in jobs]
        await reply(interaction, "\n".join(lines)[: render.MAX_CONTENT])

    @app_commands.command(name="resolve", description="Settle a job whose outcome is unknown")
    @app_commands.describe(outcome="What really happened", note="What you found", id=ID_OR_THREAD)
    @app_commands.choices(
        outcome=[
            app_commands.Choice(name="it succeeded", value="succeeded"),
            app_commands.Choice(name="it failed", value="failed"),
            app_commands.Choice(name="run it again", value="retry"),
            app_commands.Choice(name="cancel it (operators)", value="cancelled"),
        ]
    )
    async def resolve(
        self,
        interaction: discord.Interaction[Any],
        outcome: str,
        note: app_commands.Range[str, None, MAX_NOTE],
        id: str | None = None,  # last: Discord lists required options before optional ones
    ) -> None:
        text, job = await in_time(interaction, _resolve(interaction, id, outcome, note))
        await reply(interaction, text)
        if job is not None:
            host_of(interaction).delivery.poke(job.id, job.public_id)

    @app_commands.command(name="tell", description="Tell a job something; it reads it soon")
    @app_commands.describe(text="What to tell it", id=ID_OR_THREAD)
    async def tell(
        self,
        interaction: discord.Interaction[Any],
        text: app_commands.Range[str, 1, MAX_TELL],
        id: str | None = None,
    ) -> None:
        await reply(interaction, await in_time(interaction, _tell(interaction, id, text)))


async def cancel_job(
    interaction: discord.Interaction[Any], job_id: str | None, reason: str | None
) -> None:
    """``/job cancel`` and the Cancel button: cancel if allowed; say exactly what happened."""
    text, job = await in_time(interaction, _cancel(interaction, job_id, reason))
    await reply(interaction, text)
    if job is not None:
        host_of(interaction).delivery.poke(job.id, job.public_id)


async def _status(interaction: discord.Interaction[Any], job_id: str | None) -> str:
    host = host_of(interaction)
    job = await visible(interaction, job_id)
    if job is None:
        return NO_SUCH_JOB if job_id else NO_JOB_HERE
    status = await host.store.status_in_line(job.public_id)
    binding = await sql.fetchrow(host.pool, "binding_get", job_id=job.id)
    deliveries = await host.outbox.notices(job.id)
    return status_page.status_page(
        status,
        task=str(job.origin.get("task") or ""),
        thread_id=binding["thread_id"] if binding else None,
        deliveries=deliveries,
    )


async def _cancel(
    interaction: discord.Interaction[Any], job_id: str | None, reason: str | None
) -> tuple[str, JobView | None]:
    """The answer, and the job when a cancel was asked of the store."""
    job = await visible(interaction, job_id)
    if job is None:
        return (NO_SUCH_JOB if job_id else NO_JOB_HERE), None
    if job.requester == requester_of(interaction.user):
        actor = Actor.REQUESTER
    elif await may_moderate(interaction, job):
        actor = Actor.OPERATOR
    else:
        return (render.NOT_YOURS.format(id=job.public_id), None)
    why = render.code(reason, 200) if reason and reason.strip() else None
    try:
        result = await host_of(interaction).store.cancel(
            job.public_id, actor=actor, by=requester_of(interaction.user), reason=why
        )
    except ErrandError as exc:
        return render.code(str(exc), 300), None
    pid = job.public_id
    answers = {
        "cancelled": f"Cancelled job `{pid}`.",
        # The progress message shows the stop (often before this answer arrives).
        "cancelling": f"Asked job `{pid}` to stop; its progress message shows when it has.",
        "already_cancelling": f"Job `{pid}` is already cancelling.",
        "too_late": f"Too late: job `{pid}` already {result.job.state.value}.",
    }
    return answers[result.outcome], job


async def _resolve(
    interaction: discord.Interaction[Any], job_id: str | None, outcome: str, note: str
) -> tuple[str, JobView | None]:
    """The answer, and the job when it was resolved."""
    job = await visible(interaction, job_id)
    if job is None:
        return (NO_SUCH_JOB if job_id else NO_JOB_HERE), None
    note = note.strip()
    if not note or len(note) > MAX_NOTE:
        return f"Say what you found in `note` (1 to {MAX_NOTE} characters).", None
    if is_operator(interaction):
        actor = Actor.OPERATOR
    elif job.requester == requester_of(interaction.user):
        actor = Actor.REQUESTER
    else:
        return (
            "Only the requester (where the kind allows it) or an operator can resolve this job."
        ), None
    try:
        done = await host_of(interaction).store.resolve(
            job.public_id,
            actor=actor,
            outcome=outcome,
            note=note,
            by=requester_of(interaction.user),
        )
    except NotAllowed as exc:
        return render.code(str(exc), 300), None
    except (ErrandError, ValueError):
        return (
            f"Job `{job.public_id}` is {job.state.value}; only an `unknown` job can be resolved."
        ), None
    return f"Resolved job `{done.public_id}`: now {done.state.value}.", job


async def _tell(interaction: discord.Interaction[Any], job_id: str | None, text: str) -> str:
    """``/job tell``: deliver a follow-up to the job's mailbox, as a mention in its thread does."""
    job = await visible(interaction, job_id)
    if job is None:
        return NO_SUCH_JOB if job_id else NO_JOB_HERE
    if job.requester == requester_of(interaction.user):
        actor = Actor.REQUESTER
    elif await may_moderate(interaction, job):
        actor = Actor.OPERATOR
    else:
        return f"Only the requester or an operator can tell job `{job.public_id}` something."
    try:
        told = await host_of(interaction).store.tell(
            job.public_id,
            text,
            actor=actor,
            by=requester_of(interaction.user),
            transport_id=f"discord:{interaction.id}",
        )
    except ErrandError as exc:  # it ended, or no words: nothing was recorded
        return render.code(str(exc), 300)
    host_of(interaction).delivery.poke(job.id, job.public_id)
    return (
        f"Told job `{job.public_id}` (message {told.message.seq}); "
        "it reads it at its next step, or now if it waits for one."
    )
