"""A job's questions in its thread: one message per question, the only module that posts or
edits them in delivery (a click that answers edits its own message through its interaction).

A question's notice carries the question as it is now: open, it is posted with its components
(:func:`bot.questions.question_view`), mentioning the requester; answered, timed out or
closed, its message is edited to say so, without components (or posted so, if it was never
shown). Exactly once: the post's nonce is derived from its notice, as a notice's is.
"""

from __future__ import annotations

import discord

from bot import question_text, render
from bot.delivery.bindings import Binding
from bot.delivery.discord_io import UNKNOWN_MESSAGE, Turns
from bot.delivery.pacer import NOTICE
from bot.questions import question_view
from jobs.transport import JobView, Notice, get_logger

log = get_logger("bot.delivery")


class QuestionMessages:
    """Posts and edits every job's question messages."""

    def __init__(self, client: discord.Client, turns: Turns, stats: dict[str, int]) -> None:
        self.client = client
        self.turns = turns
        self.stats = stats

    async def show(
        self, job: JobView, notice: Notice, binding: Binding, shown: dict[int, str]
    ) -> str | None:
        """Show the question of ``notice`` as it is now; the id of its message. ``shown``:
        the messages this round posted so far, by question id (the notice that posted one may
        not be recorded yet)."""
        asked = notice.question
        assert asked is not None
        assert binding.thread_id is not None
        user_id = binding.origin.user_id
        channel = self.client.get_partial_messageable(int(binding.thread_id))
        message_id = shown.get(asked.id) or notice.question_shown_as
        content = question_text.question(job.public_id, asked, user_id)
        view = question_view(job.public_id, asked)
        await self.turns.wait(NOTICE)
        if message_id is not None:
            message = channel.get_partial_message(int(message_id))
            try:
                await message.edit(content=content, view=view, allowed_mentions=render.NO_PINGS)
            except discord.NotFound as exc:
                if exc.code != UNKNOWN_MESSAGE:
                    raise
                log.info("delivery.question_gone", job_id=job.public_id, question=asked.key)
            self.stats["edits"] += 1
            return message_id
        pings = asked.status == "open" and user_id is not None
        sent = await channel.send(
            content,
            view=view if view is not None else discord.utils.MISSING,
            nonce=f"q{notice.id}",
            allowed_mentions=discord.AllowedMentions(
                everyone=False,
                roles=False,
                users=[discord.Object(user_id)] if pings and user_id else False,
            ),
        )
        self.stats["posts"] += 1
        shown[asked.id] = str(sent.id)
        log.info("delivery.question", job_id=job.public_id, question=asked.key, status=asked.status)
        return str(sent.id)
