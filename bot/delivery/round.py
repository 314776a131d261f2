"""One delivery round of one job: take its render lease, claim its notices with the job as it is
now, then show them, each message by its owner.

A round reads the job once, in the statement that leases its notices (a
:class:`~jobs.engine.notices.NoticeRound`), and at most once more when news came while it waited to
edit (:mod:`bot.delivery.progress`). It makes sure the job's thread exists, shows the current
state on the progress message, posts one notice per notice-worthy transition and marks each
notice delivered with what Discord made of it; a question's notice shows the question
(:mod:`bot.delivery.questions`). What happens to the round's notices when
something fails is decided here: handed back uncounted when Discord or the database is only
away (or the bot stops), counted and later dead-lettered when Discord refuses.
"""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import discord

from bot import render
from bot.delivery.answer import Answers
from bot.delivery.bindings import Bindings
from bot.delivery.discord_io import NO_ANSWER, describe
from bot.delivery.followed import Followed
from bot.delivery.notices import Notices
from bot.delivery.progress import ProgressMessage
from bot.delivery.questions import QuestionMessages
from bot.delivery.thread import Threads, waits_for_anchor
from bot.errors import BindingPending, Stopping
from bot.metrics import discord_retry, notice_dead_lettered, notice_delivered
from bot.settings import BotSettings
from jobs.transport import UNAVAILABLE, Notice, Outbox, State, get_logger, tracing

log = get_logger("bot.delivery")

# Errors after which a round is simply tried again: the database unavailable (the one list,
# jobs.engine.db.UNAVAILABLE) or refusing a statement, Discord not answering or failing.
TRANSIENT: tuple[type[BaseException], ...] = (
    *UNAVAILABLE,
    asyncpg.PostgresError,
    *NO_ANSWER,
    discord.DiscordServerError,
)


def _age(at: datetime) -> float:
    return (datetime.now(UTC) - at).total_seconds()


class Round:
    """Runs the rounds of every job this process delivers."""

    def __init__(
        self,
        *,
        outbox: Outbox,
        bindings: Bindings,
        threads: Threads,
        progress: ProgressMessage,
        notices: Notices,
        questions: QuestionMessages,
        answers: Answers,
        settings: BotSettings,
        stats: dict[str, int],
    ) -> None:
        self.outbox = outbox
        self.bindings = bindings
        self.threads = threads
        self.progress = progress
        self.notices = notices
        self.questions = questions
        self.answers = answers
        self.settings = settings
        self.stats = stats

    async def run(self, followed: Followed) -> bool:
        """One round; True when the job is finished and fully delivered (or another process
        renders it).

        Raises:
            BindingPending: the job's /summon answer may not be recorded yet.
            UnknownJob: the job is gone.
            Stopping: the bot is stopping (the round's notices are handed back).
        """
        # Take the job's render lease first: only its owner claims the job's notices, so two
        # bot processes never race for them.
        binding = await self.bindings.take(
            followed.job_id, self.outbox.owner, self.settings.delivery_lease_seconds
        )
        if binding is None:  # another bot process renders this job; its notices wait for it
            return True
        if waits_for_anchor(binding, self.settings.anchor_wait_seconds):
            raise BindingPending
        shown = await self.outbox.claim(followed.job_id)
        job = shown.job
        pending = list(shown.notices)
        asked: dict[int, str] = {}  # question messages this round posted, by question id
        try:
            binding = await self.threads.ensure(job, binding)
            binding = await self.progress.show(followed, job, shown.assets, binding)
            while pending:
                notice = pending[0]
                # Each notice's delivery joins the job's trace (its submitter's span).
                with tracing.span(
                    "errand.notice",
                    parent=job.traceparent,
                    job=job.public_id,
                    notice=notice.id,
                    topic=notice.topic,
                    state=notice.to_state.value,
                ):
                    external = binding.progress_message_id
                    if notice.is_question:
                        external = await self.questions.show(job, notice, binding, asked)
                    elif notice.to_state in render.NOTICE_STATES:
                        external = await self.notices.post(job, notice, binding)
                    delivered = await self.outbox.done(notice, external)
                if not delivered:
                    # Another process took these notices over (we stalled past the lease); it
                    # delivers them, and the nonce makes our send and its send one message.
                    log.warning("delivery.lease_lost", job_id=job.public_id, outbox_id=notice.id)
                    return True
                notice_delivered(notice.topic, _age(notice.at))
                pending.pop(0)
        except Stopping:
            # The bot is stopping before these were sent: due again at once, for the next bot.
            await self.outbox.release(pending, 0.0)
            raise
        except TRANSIENT as exc:
            # Transient (Discord 5xx, network, database): try again soon, no attempt counted.
            await self.outbox.release(pending, 1.0)
            if isinstance(exc, NO_ANSWER):  # 5xx answers are counted where they arrive (trace)
                discord_retry("network")
            raise
        except discord.HTTPException as exc:
            if exc.status != 429:
                return await self._refused(followed, pending, exc, ended=job.state.terminal)
            # Still rate limited after discord.py's own retries: Discord is saying "later",
            # not "no". Hand the notices back uncounted (never a dead letter); try again later.
            await self.outbox.release(pending, self.settings.delivery_rate_limited_seconds)
            log.warning("delivery.rate_limited", job_id=job.public_id)
            return False
        except Exception as exc:  # a bug: retry with backoff, then dead-letter
            return await self._refused(followed, pending, exc, ended=job.state.terminal)
        if job.state in render.NOTICE_STATES and binding.progress_state is job.state:
            # The progress message shows how it ended (unknown included): so does the answer.
            await self.answers.settle(job, binding)
        # A waiting job changes only through a notice (an answer, a timer, a cancel), which the
        # poll finds: once its wait is shown, its actor may end.
        waits = job.state is State.WAITING and binding.progress_state is State.WAITING
        return waits or (job.state.terminal and binding.shows_end)

    async def _refused(
        self, followed: Followed, pending: list[Notice], exc: Exception, *, ended: bool
    ) -> bool:
        """A refusal (403/404/400) or a bug: count the attempt; retry with backoff, then
        dead-letter. True when nothing is left for this job's actor to do."""
        self.stats["failures"] += 1
        error = describe(exc) if isinstance(exc, discord.HTTPException) else repr(exc)
        log.warning(
            "delivery.failed",
            job_id=followed.public_id,
            error=error,
            exc_info=not isinstance(exc, discord.HTTPException),
        )
        for notice in pending:
            if await self.outbox.failed(notice, error):
                notice_dead_lettered(notice.topic)
                log.warning(
                    "delivery.dead_lettered", job_id=followed.public_id, outbox_id=notice.id
                )
        return not pending or ended  # the poll loop retries when due
