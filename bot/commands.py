"""The slash commands: ``/summon`` and ``/job status|cancel|list|resolve``.

Each command is defined once: ``/summon`` as a command function, the ``/job`` commands as the
methods of :class:`JobGroup` (an :class:`app_commands.Group`, as in discord.py's examples).
They reach the bot through ``interaction.client`` (see :class:`Host`), so the Cancel button runs
the same :func:`cancel_job` as ``/job cancel``.

Every answer about a job is ephemeral except the ``/summon`` answer (a thread is started from
it). Nothing slow happens before an answer: ``/summon`` validates, submits (one short
transaction) and answers; the thread and the progress message follow through the outbox. Jobs
are visible only where they were made (the guild, or the requester's DM); anywhere else the
answer is "no such job", the same as for an id that never existed.

The options declare the limits the bot enforces (``task`` and ``params`` lengths, ``note``
length), so Discord refuses longer values before the bot sees them; the bot checks them again,
for a Discord that does not. Answers never ping anyone (``allowed_mentions`` none): a task text
with ``@everyone`` or a role mention stays inert.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

import asyncpg
import discord
from discord import app_commands

from bot import authz, render
from bot.queries import sql
from bot.render import NO_PINGS
from bot.settings import BotSettings, agent_configured
from jobs import ErrandError
from jobs.transport import (
    ID_PATTERN,
    Actor,
    JobStore,
    JobView,
    NotAllowed,
    Outbox,
    Refused,
    Registry,
    UnknownJob,
    get_logger,
    normalize_id,
)

log = get_logger("bot.commands")

TRANSPORT = "discord"
MAX_TASK = 1500
MAX_PARAMS = 1000
MAX_NOTE = 500
# Parameters a /summon task fills, in order of preference, when the kind has one.
TASK_FIELDS = ("prompt", "task", "text")

NO_SUCH_JOB = "No such job."
NO_JOB_HERE = "Give a job id, or ask inside a job's thread."
# Kinds that need a model endpoint (ERRAND_AGENT_*): not suggested when this process has
# none. Still accepted when typed: workers elsewhere may hold the model settings, and a worker
# without them fails the job at once saying what to set.
NEEDS_MODEL = frozenset({"agent"})

T = TypeVar("T")


class Wakes(Protocol):
    """Delivery, as the commands see it: told when a job changed, and of each new answer."""

    def poke(self, job_id: int, public_id: str) -> None: ...

    def remember_answer(
        self,
        job_id: int,
        public_id: str,
        interaction: discord.Interaction[Any],
        channel_type: int,
    ) -> None: ...


class Host(Protocol):
    """What the commands use of the bot (``bot.client.ErrandBot`` provides it)."""

    settings: BotSettings
    registry: Registry
    store: JobStore
    pool: asyncpg.Pool
    outbox: Outbox

    @property
    def delivery(self) -> Wakes: ...


def host_of(interaction: discord.Interaction[Any]) -> Host:
    """The bot that received the interaction."""
    host: Host = interaction.client
    return host


def requester_of(user: discord.abc.User) -> str:
    """How a Discord user is recorded as a requester."""
    return f"{TRANSPORT}:{user.id}"


def group_of(interaction: discord.Interaction[Any]) -> str:
    """Where jobs are visible: the guild, or the user's DMs."""
    if interaction.guild_id is not None:
        return str(interaction.guild_id)
    return f"dm:{interaction.user.id}"


def parse_params(text: str) -> dict[str, Any]:
    """``key=value`` pairs separated by spaces (quotes allowed); JSON values where they parse.

    Raises:
        ValueError: one short line saying what is wrong.
    """
    if len(text) > MAX_PARAMS:
        raise ValueError(f"params are too long (at most {MAX_PARAMS} characters)")
    try:
        parts = shlex.split(text)
    except ValueError:
        raise ValueError("params: unbalanced quotes") from None
    params: dict[str, Any] = {}
    for part in parts:
        key, sep, raw = part.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError('params must look like `steps=3 note="two words"`')
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    return params


# -- shared by every command -------------------------------------------------------------


async def reply(interaction: discord.Interaction[Any], text: str) -> None:
    """A short ephemeral answer (the only kind of error users see)."""
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
    else:
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)


async def in_time(
    interaction: discord.Interaction[Any], work: Awaitable[T], *, ephemeral: bool = True
) -> T:
    """Await ``work`` (database reads and writes); should it outlast ``defer_after_seconds`` (a
    slow database, a job row locked by a worker), acknowledge first with a deferred answer
    (``ephemeral`` or not): Discord drops answers later than 3 s. The answer then goes out as
    the first follow-up (``interaction.response.is_done()`` tells which)."""
    task = asyncio.ensure_future(work)
    timeout = host_of(interaction).settings.defer_after_seconds
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done and not interaction.response.is_done():
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
    return await task


async def visible(interaction: discord.Interaction[Any], raw: str | None) -> JobView | None:
    """The job ``raw`` names if the caller may see it here; inside a job's thread, the thread's
    job when ``raw`` is empty."""
    host = host_of(interaction)
    if not raw:
        if interaction.channel_id is None:
            return None
        raw = await sql.fetchval(
            host.pool, "binding_job_by_thread", thread_id=str(interaction.channel_id)
        )
        if raw is None:
            return None
    public_id = normalize_id(raw)
    if not ID_PATTERN.match(public_id):
        return None
    try:
        job = await host.store.get(public_id)
    except UnknownJob:
        return None
    if job.origin.get("transport") != TRANSPORT or job.origin_group != group_of(interaction):
        return None
    if not await authz.may_view(interaction, job, requester_of(interaction.user)):
        return None  # the same answer as an unknown id: a private channel's jobs stay hidden
    return job


def is_operator(interaction: discord.Interaction[Any]) -> bool:
    """Members with the configured admin role (or Administrator) are operators."""
    user = interaction.user
    if not isinstance(user, discord.Member):
        return False
    if user.guild_permissions.administrator:
        return True
    role = host_of(interaction).settings.admin_role
    return role is not None and any(role in (r.name, str(r.id)) for r in user.roles)


async def may_moderate(interaction: discord.Interaction[Any], job: JobView) -> bool:
    """Manage Threads in the job's channel (not where the command was typed) or operator
    rights."""
    return await authz.may_moderate(interaction, job, operator=is_operator(interaction))


# -- /summon -----------------------------------------------------------------------------


@app_commands.command(name="summon", description="Start a job; you get its id at once")
@app_commands.describe(
    task="What to do",
    kind="Which kind of job (default: the server's)",
    params="Extra parameters, e.g. steps=3",
)
async def summon(
    interaction: discord.Interaction[Any],
    task: app_commands.Range[str, None, MAX_TASK],
    kind: str | None = None,
    params: app_commands.Range[str, None, MAX_PARAMS] | None = None,
) -> None:
    """Validate, submit with the interaction id as idempotency key, answer with the id."""
    host = host_of(interaction)
    task = task.strip()
    kind_name = (kind or "").strip() or host.settings.resolved_default_kind()
    if not task:
        await reply(interaction, "Say what to do: `/summon task:...`.")
        return
    if len(task) > MAX_TASK:
        await reply(interaction, f"The task is too long (at most {MAX_TASK} characters).")
        return
    if "\x00" in task or "\x00" in (params or ""):
        await reply(interaction, "The task or params contain a NUL character; remove it.")
        return
    refusal = authz.summon_refusal(interaction)
    if refusal is not None:
        await reply(interaction, refusal)
        return
    if kind_name not in host.registry:
        known = ", ".join(offered_kinds(host.registry))
        await reply(interaction, f"Unknown kind `{render.code(kind_name, 40)}`. Kinds: {known}.")
        return
    try:
        values = parse_params(params or "")
    except ValueError as exc:
        await reply(interaction, str(exc))
        return
    spec = host.registry.get(kind_name)
    field = next((f for f in TASK_FIELDS if f in spec.params.model_fields), None)
    if field is not None:
        values.setdefault(field, task)
    channel = interaction.channel
    channel_type = channel.type.value if channel is not None else 0
    origin = {
        "transport": TRANSPORT,
        "guild_id": str(interaction.guild_id) if interaction.guild_id else None,
        "channel_id": str(interaction.channel_id),
        "channel_type": channel_type,
        "user_id": str(interaction.user.id),
        "interaction_id": str(interaction.id),
        "task": task,
    }
    if interaction.guild_id:
        # Which process delivers this job's messages: the one whose shards hold the guild
        # (shard = (guild_id >> 22) % shard count; see jobs.engine.notices, partition).
        origin["partition"] = interaction.guild_id >> 22
    # The submit is one short transaction; should the database be slow, the answer is deferred
    # (public: the thread starts from it) and sent when the submit is done.
    submit = host.store.submit(
        kind_name,
        values,
        requester=requester_of(interaction.user),
        origin=origin,
        origin_group=group_of(interaction),
        idempotency_key=f"{TRANSPORT}:{interaction.id}",
    )
    try:
        job, _created = await in_time(interaction, submit, ephemeral=False)
    except Refused as exc:
        await reply(interaction, render.code(str(exc), 400))
        return
    deferred = interaction.response.is_done()
    answer = render.answer(job.public_id, job.kind, job.state, channel_type)
    anchor: int | None
    if deferred:
        # The first follow-up of a deferred answer becomes the answer message.
        sent = await interaction.followup.send(answer, wait=True, allowed_mentions=NO_PINGS)
        anchor = sent.id
    else:
        response = await interaction.response.send_message(answer, allowed_mentions=NO_PINGS)
        anchor = response.message_id if response is not None else None
    log.info(
        "job.summoned",
        job_id=job.public_id,
        kind=job.kind,
        guild=origin["guild_id"],
        deferred=deferred,
    )
    # After the answer: remember the message to start the thread from, then wake delivery.
    await sql.execute(
        host.pool,
        "binding_insert",
        job_id=job.id,
        anchor_message_id=str(anchor) if anchor else None,
    )
    # The answer shows the job's state from now on, edited through this interaction's token:
    # Discord does not count those edits against the bot's global limit.
    if not deferred:  # a deferred answer is a follow-up: delivery's fallback edits it
        host.delivery.remember_answer(job.id, job.public_id, interaction, channel_type)
    host.delivery.poke(job.id, job.public_id)


def offered_kinds(registry: Registry) -> list[str]:
    """Registered kinds a user can run here (the agent only when a model is configured)."""
    model = agent_configured()
    return [n for n in registry.names() if model or n not in NEEDS_MODEL]


@summon.autocomplete("kind")
async def kind_choices(
    interaction: discord.Interaction[Any], current: str
) -> list[app_commands.Choice[str]]:
    """Registered kinds matching what was typed, with their descriptions."""
    registry = host_of(interaction).registry
    out = []
    for name in offered_kinds(registry):
        spec = registry.get(name)
        if current.lower() in name.lower():
            label = f"{name} — {spec.description}" if spec.description else name
            out.append(app_commands.Choice(name=label[:100], value=name))
    return out[:25]


@summon.autocomplete("params")
async def param_choices(
    interaction: discord.Interaction[Any], current: str
) -> list[app_commands.Choice[str]]:
    """The chosen kind's parameters not yet given, as ``name=`` suggestions."""
    host = host_of(interaction)
    kind = getattr(interaction.namespace, "kind", None) or host.settings.resolved_default_kind()
    if kind not in host.registry:
        return []
    fields = host.registry.get(kind).params.model_fields
    head, _, last = current.rpartition(" ")
    given = {p.partition("=")[0] for p in current.split()}
    out = []
    for name, info in fields.items():
        if name in TASK_FIELDS or (name in given and not current.endswith(name)):
            continue
        if last and not name.startswith(last.partition("=")[0]):
            continue
        value = f"{head} {name}=".strip()
        label = f"{name}=  {info.description or ''}".strip()
        out.append(app_commands.Choice(name=label[:100], value=value[:100]))
    return out[:25]


# -- /job ... ----------------------------------------------------------------------------

ID_OR_THREAD = "The job id (optional inside a job's thread)"


class JobGroup(app_commands.Group, name="job", description="Follow, cancel and resolve jobs"):
    """``/job status|cancel|list|resolve``: one method per command."""

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
        lines = [render.job_line(j, str(j.origin.get("task") or "")) for j in jobs]
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
    status = await host.store.status(job.public_id)
    binding = await sql.fetchrow(host.pool, "binding_get", job_id=job.id)
    deliveries = await host.outbox.notices(job.id)
    return render.status_page(
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
        return (f"Only the requester or a moderator can cancel job `{job.public_id}`.", None)
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


def install(tree: app_commands.CommandTree[Any]) -> None:
    """Add ``/summon`` and ``/job`` to the tree."""
    tree.add_command(summon)
    tree.add_command(JobGroup())
