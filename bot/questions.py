"""A job's question on Discord: its buttons, select menu and "Answer" modal, and what a click
does.

Every component is a :class:`discord.ui.DynamicItem` carrying the job's id and the question's
id in its ``custom_id``; the classes are registered in ``setup_hook``, so a question asked days
ago still takes its answer after the bot restarted. Up to five short choices are buttons, more
(or longer ones) a select menu; an "Answer" button opens a modal for words of one's own.

Only the job's requester, or an operator of its channel (docs/discord.md, the ``/job cancel``
rule), may answer; anyone else gets an ephemeral refusal. The store decides the rest
(:meth:`jobs.transport.JobStore.answer`): the first valid answer wins and the question's message
is edited at once to show it, without components; a later click gets "already answered by", a
click on a closed question "closed". The interaction's id is the answer's transport id, so a
resent interaction is recorded once.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import discord

from bot import question_text, render
from bot.commands.shared import (
    NO_SUCH_JOB,
    host_of,
    in_time,
    may_moderate,
    reply,
    requester_of,
    visible,
)
from jobs import ErrandError
from jobs.transport import UNAVAILABLE, Actor, JobView

BUTTON_CHOICES = 5
"""Choices shown as buttons at most (one row); more become a select menu."""
BUTTON_LABEL = 80
"""Discord's longest button label; a longer choice makes the question a select menu."""
ANSWER_LENGTH = 1000
"""Characters the "Answer" modal takes."""
ANSWER_TRIES = 3
"""Tries of an answer through a database that went away (a restart drops pooled connections)."""

APPROVING = {"Approve": discord.ButtonStyle.success, "Deny": discord.ButtonStyle.danger}
"""Choices drawn in their own colour (the agent's approvals)."""


def question_view(public_id: str, asked: question_text.Asked) -> discord.ui.View | None:
    """The components of an open question (None once it is answered or closed)."""
    if asked.status != "open":
        return None
    view = discord.ui.View(timeout=None)
    choices = asked.choices
    if len(choices) <= BUTTON_CHOICES and all(len(c) <= BUTTON_LABEL for c in choices):
        for index, choice in enumerate(choices):
            view.add_item(ChoiceButton(public_id, asked.id, index, choice))
    elif choices:
        view.add_item(ChoiceSelect(public_id, asked.id, choices))
    if asked.allow_text:
        view.add_item(AnswerButton(public_id, asked.id))
    return view


class ChoiceButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"errand:q:(?P<job>[a-z0-9]+):(?P<question>\d+):(?P<choice>\d+)",
):
    """One choice of a question, as a button."""

    def __init__(self, public_id: str, question_id: int, choice: int, label: str = "?") -> None:
        super().__init__(
            discord.ui.Button(
                label=label[:BUTTON_LABEL],
                style=APPROVING.get(label, discord.ButtonStyle.secondary),
                custom_id=f"errand:q:{public_id}:{question_id}:{choice}",
                row=0,
            )
        )
        self.public_id, self.question_id, self.choice = public_id, question_id, choice

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> ChoiceButton:
        return cls(match["job"], int(match["question"]), int(match["choice"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await answer(interaction, self.public_id, self.question_id, choice=self.choice)


class ChoiceSelect(
    discord.ui.DynamicItem[discord.ui.Select[Any]],
    template=r"errand:qs:(?P<job>[a-z0-9]+):(?P<question>\d+)",
):
    """The choices of a question with many (or long) ones, as a select menu."""

    def __init__(self, public_id: str, question_id: int, choices: tuple[str, ...] = ()) -> None:
        options = [
            discord.SelectOption(label=choice[:100], value=str(index))
            for index, choice in enumerate(choices)
        ]
        super().__init__(
            discord.ui.Select(
                custom_id=f"errand:qs:{public_id}:{question_id}",
                placeholder="Choose an answer",
                options=options or [discord.SelectOption(label="?", value="0")],
                row=0,
            )
        )
        self.public_id, self.question_id = public_id, question_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> ChoiceSelect:
        return cls(match["job"], int(match["question"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        values = self.item.values  # what the menu chose, as Discord sent it
        chosen = values[0] if values else ""
        if not chosen.isdigit():
            await reply(interaction, "Choose one of the answers offered.")
            return
        await answer(interaction, self.public_id, self.question_id, choice=int(chosen))


class AnswerButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"errand:qt:(?P<job>[a-z0-9]+):(?P<question>\d+)",
):
    """Opens a modal for an answer in one's own words."""

    def __init__(self, public_id: str, question_id: int) -> None:
        super().__init__(
            discord.ui.Button(
                label="Answer",
                style=discord.ButtonStyle.primary,
                custom_id=f"errand:qt:{public_id}:{question_id}",
                row=1,
            )
        )
        self.public_id, self.question_id = public_id, question_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> AnswerButton:
        return cls(match["job"], int(match["question"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        # A modal must be the first answer: who may answer is checked now, and again on submit.
        job = await visible(interaction, self.public_id)
        if job is None:
            await reply(interaction, NO_SUCH_JOB)
            return
        if await answerer(interaction, job) is None:
            await reply(interaction, refusal(job))
            return
        await interaction.response.send_modal(AnswerModal(self.public_id, self.question_id))


class AnswerModal(discord.ui.Modal):
    """The words of an answer."""

    def __init__(self, public_id: str, question_id: int) -> None:
        super().__init__(
            title=f"Answer job {public_id}"[:45],
            custom_id=f"errand:qm:{public_id}:{question_id}",
            timeout=900,
        )
        self.public_id, self.question_id = public_id, question_id
        self.words: discord.ui.TextInput[AnswerModal] = discord.ui.TextInput(
            label="Your answer",
            style=discord.TextStyle.paragraph,
            max_length=ANSWER_LENGTH,
            custom_id="answer",
        )
        self.add_item(self.words)

    async def on_submit(self, interaction: discord.Interaction[Any]) -> None:
        await answer(interaction, self.public_id, self.question_id, text=self.words.value)


async def answerer(interaction: discord.Interaction[Any], job: JobView) -> Actor | None:
    """Who answers: the requester, an operator of the job's channel, or nobody."""
    if job.requester == requester_of(interaction.user):
        return Actor.REQUESTER
    if await may_moderate(interaction, job):
        return Actor.OPERATOR
    return None


def refusal(job: JobView) -> str:
    return f"Only {render.requester(job)} or an operator can answer job `{job.public_id}`."


async def answer(
    interaction: discord.Interaction[Any],
    public_id: str,
    question_id: int,
    *,
    choice: int | None = None,
    text: str | None = None,
) -> None:
    """Answer a job's question from a click or a modal, and say what happened."""
    host = host_of(interaction)

    async def record(job: JobView, actor: Actor) -> Any:
        # The interaction's id makes a retry a replay: a first try that committed but whose
        # reply was lost (a database restart) is not recorded twice.
        for tries in range(1, ANSWER_TRIES + 1):
            try:
                return await host.store.answer(
                    job.public_id,
                    text,
                    choice=choice,
                    question_id=question_id,
                    actor=actor,
                    by=requester_of(interaction.user),
                    transport_id=f"discord:{interaction.id}",
                )
            except UNAVAILABLE:
                if tries == ANSWER_TRIES:
                    raise
                await asyncio.sleep(0.2 * tries)
        raise AssertionError("unreachable")

    async def decide() -> tuple[JobView | None, str | None, Any]:
        # One deadline for the whole of it (the lookup, who answers, the record): Discord's 3 s
        # run from the click, not from each step.
        job = await visible(interaction, public_id)
        if job is None:
            return None, NO_SUCH_JOB, None
        actor = await answerer(interaction, job)
        if actor is None:
            return job, refusal(job), None
        return job, None, await record(job, actor)

    try:
        job, refused, outcome = await in_time(interaction, decide())
    except ErrandError as exc:  # not one of its choices, no words: nothing was recorded
        await reply(interaction, render.code(str(exc), 300))
        return
    if job is None or refused is not None:
        await reply(interaction, refused or NO_SUCH_JOB)
        return
    host.delivery.poke(job.id, job.public_id)
    if outcome.why is not None:
        await reply(
            interaction, question_text.answer_refused(outcome.result, outcome.why, outcome.question)
        )
        return
    shown = question_text.question(job.public_id, outcome.question, None)
    if interaction.response.is_done() or interaction.message is None:
        # Answered late (deferred): the delivery edits the question's message; say so here.
        await reply(
            interaction, f"Answered: **{render.clean(outcome.question.answer or '', 200)}**."
        )
        return
    await interaction.response.edit_message(
        content=shown, view=None, allowed_mentions=render.NO_PINGS
    )


DYNAMIC_ITEMS = (ChoiceButton, ChoiceSelect, AnswerButton)
"""What ``setup_hook`` registers, so questions asked before a restart keep working."""
