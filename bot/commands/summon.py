"""``/summon``: start a job; the user gets its id at once.

Nothing slow happens before the answer: ``/summon`` validates, submits (one short transaction)
and answers; the thread and the progress message follow through the outbox. The options declare
the limits the bot enforces (``task`` and ``params`` lengths), so Discord refuses longer values
before the bot sees them; the bot checks them again, for a Discord that does not.
"""

from __future__ import annotations

import shlex
from typing import Any

import discord
from discord import app_commands

from bot import authz, render
from bot.commands.shared import (
    MAX_PARAMS,
    MAX_TASK,
    group_of,
    host_of,
    in_time,
    is_operator,
    reply,
    requester_of,
)
from bot.queries import sql
from bot.render import NO_PINGS, TRANSPORT
from bot.settings import agent_configured
from jobs import ErrandError
from jobs.transport import Registry, get_logger, parse_params, tracing
from jobs.transport import when as parse_when

log = get_logger("bot.commands")

# Kinds that need a model endpoint (ERRAND_AGENT_*): not suggested when this process has
# none. Still accepted when typed: workers elsewhere may hold the model settings, and a worker
# without them fails the job at once saying what to set.
NEEDS_MODEL = frozenset({"agent"})

MAX_WHEN = 100
MAX_ZONE = 64


def is_text(value: str) -> bool:
    """Whether ``value`` can be stored and shown: no NUL, no lone surrogate (``\\ud800``, which
    a gateway payload's JSON can carry; no database or message can). The engine refuses both
    too (jobs.limits); checked here first to name the option."""
    return "\x00" not in value and not any("\ud800" <= c <= "\udfff" for c in value)


def summon_params(text: str) -> dict[str, Any]:
    """The ``params`` option: ``key=value`` pairs separated by spaces (quotes allowed), each
    key a name; read as every edge reads parameters (:func:`jobs.transport.parse_params`).

    Raises:
        ValueError: the text is not such pairs; one short line saying what is wrong.
        ErrandError: a value Errand refuses (a number that is not finite, nesting too deep).
    """
    if len(text) > MAX_PARAMS:
        raise ValueError(f"params are too long (at most {MAX_PARAMS} characters)")
    try:
        parts = shlex.split(text)
    except ValueError:
        raise ValueError("params: unbalanced quotes") from None
    for part in parts:
        key, sep, _ = part.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError('params must look like `steps=3 note="two words"`')
    return parse_params(parts, name="params")


@app_commands.command(name="summon", description="Start a job; you get its id at once")
@app_commands.describe(
    task="What to do",
    kind="Which kind of job (default: the server's)",
    params="Extra parameters, e.g. steps=3",
    when='Start later: "in 2h", "09:00" or a date and time like 2026-12-24T18:00',
    timezone="Read when in this timezone, e.g. Europe/Berlin (default UTC)",
    priority="Operators: run before (or after) others' jobs",
)
@app_commands.choices(
    priority=[
        app_commands.Choice(name="urgent", value=10),
        app_commands.Choice(name="high", value=5),
        app_commands.Choice(name="normal", value=0),
        app_commands.Choice(name="low", value=-5),
    ]
)
async def summon(
    interaction: discord.Interaction[Any],
    task: app_commands.Range[str, None, MAX_TASK],
    kind: str | None = None,
    params: app_commands.Range[str, None, MAX_PARAMS] | None = None,
    when: app_commands.Range[str, None, MAX_WHEN] | None = None,
    timezone: app_commands.Range[str, None, MAX_ZONE] | None = None,
    priority: int | None = None,
) -> None:
    """Validate, submit with the interaction id as idempotency key, answer with the id."""
    host = host_of(interaction)
    task = task.strip()
    kind_name = (kind or "").strip() or host.settings.resolved_default_kind()
    if not task:
        await reply(interaction, render.EMPTY_TASK)
        return
    if len(task) > MAX_TASK:
        await reply(interaction, f"The task is too long (at most {MAX_TASK} characters).")
        return
    if not is_text(task) or not is_text(params or ""):
        await reply(interaction, render.NOT_TEXT)
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
        values = summon_params(params or "")
    except (ValueError, ErrandError) as exc:
        await reply(interaction, str(exc))
        return
    if priority is not None and not is_operator(interaction):
        await reply(interaction, "Only operators can set a priority.")
        return
    run_at = None
    if when is not None or timezone is not None:
        try:
            run_at = parse_when(when or "", tz=timezone) if when else None
            if when is None:
                raise ValueError("timezone goes with when: say when to start")
        except ValueError as exc:
            await reply(interaction, render.code(str(exc), 300))
            return
    spec = host.registry.get(kind_name)
    foreign = [k for k in values if k not in spec.params.model_fields]
    owner = next((k for k in kinds_with(host.registry, foreign) if k != kind_name), None)
    if foreign and owner is not None:  # params meant for another kind, e.g. demo's steps
        await reply(interaction, render.params_of_another_kind(kind_name, foreign, owner))
        return
    if spec.task_field is not None:
        values.setdefault(spec.task_field, task)
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
    # One span from the submit to the answer; the job stores it, so the worker's and the
    # delivery's spans join it (jobs.transport.tracing: nothing without the otel extra).
    with tracing.span(
        "errand.summon",
        kind=kind_name,
        guild=origin["guild_id"],
        channel=origin["channel_id"],
        interaction=origin["interaction_id"],
    ):
        # The submit is one short transaction; should the database be slow, the answer is
        # deferred (public: the thread starts from it) and sent when the submit is done.
        submit = host.store.submit(
            kind_name,
            values,
            requester=requester_of(interaction.user),
            origin=origin,
            origin_group=group_of(interaction),
            idempotency_key=f"{TRANSPORT}:{interaction.id}",
            priority=priority,
            run_at=run_at,
            traceparent=tracing.traceparent(),  # the job's spans join this one
        )
        try:
            job, _created = await in_time(interaction, submit, ephemeral=False)
        except ErrandError as exc:  # a refusal (bad params, a quota): its message is for the user
            await reply(interaction, render.code(str(exc), 400))
            return
        deferred = interaction.response.is_done()
        due = job.run_at if run_at is not None else None
        answer = render.answer(job.public_id, job.kind, job.state, channel_type, due=due)
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


def kinds_with(registry: Registry, params: list[str]) -> list[str]:
    """The kinds offered here that take every one of ``params``."""
    return [
        name
        for name in offered_kinds(registry)
        if all(p in registry.get(name).params.model_fields for p in params)
    ]


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
    spec = host.registry.get(kind)
    task_field = spec.task_field  # derived from the kind's fields: once, not per field
    head, _, last = current.rpartition(" ")
    given = {p.partition("=")[0] for p in current.split()}
    out = []
    for name, info in spec.params.model_fields.items():
        if name == task_field or (name in given and not current.endswith(name)):
            continue
        if last and not name.startswith(last.partition("=")[0]):
            continue
        value = f"{head} {name}=".strip()
        label = f"{name}=  {info.description or ''}".strip()
        out.append(app_commands.Choice(name=label[:100], value=value[:100]))
    return out[:25]
