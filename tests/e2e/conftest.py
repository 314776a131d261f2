"""End-to-end fixtures: the Discord emulator, a real PostgreSQL, a real worker and the real bot.

Every part is the production one: ``bot.client.ErrandBot`` (discord.py) connected to the
emulator, ``jobs.runtime.worker.Worker`` in-process with short leases, and a cloned test
database. Only
the timings are shortened (edit pacing, polling, leases), never the rules.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from bot.client import ErrandBot
from bot.settings import BotSettings
from discord_emulator import Channel, Emulator, InteractionHandle, Message, User
from discord_emulator.faults import Hold
from discord_emulator.testing import World, running_bot
from jobs.engine.state import State
from jobs.engine.store import JobStore
from jobs.engine.views import JobView
from jobs.runtime.registry import Registry
from jobs.runtime.worker import Worker
from tests.support.polling import poll
from tests.support.runtime import running_worker as shared_running_worker

STATE = re.compile(rf"\*\*({'|'.join(s.value for s in State)})\*\*")
JOB_ID = re.compile(r"Job `([a-z0-9]+)`")


def fast_bot_settings(**overrides: Any) -> BotSettings:
    """Bot settings for tests: Discord's rules, shorter waits."""
    values: dict[str, Any] = {
        "token": None,
        "dev_guild": None,
        "default_kind": "demo",
        "edit_interval_seconds": 0.1,
        "old_message_edit_interval_seconds": 0.2,
        "delivery_poll_seconds": 0.2,
        "delivery_lease_seconds": 1.0,
        "delivery_max_attempts": 3,
        "delivery_retry_base_seconds": 0.1,
        # A notice still rate limited after discord.py's retries comes back this soon (5 s in
        # production): a long 429 storm takes several such rounds.
        "delivery_rate_limited_seconds": 0.2,
        "anchor_wait_seconds": 1.0,
        "guild_ready_timeout": 0.05,
        # The emulator's fast config scales Discord's windows 100x down: 5,000 requests/s.
        "requests_per_second": 2000.0,
    }
    values.update(overrides)
    return BotSettings(_env_file=None, **values)  # type: ignore[call-arg]


def state_of(content: str) -> str | None:
    """The job state a progress rendering shows (its first bold word)."""
    match = STATE.search(content)
    return match[1] if match else None


@dataclass
class Errand:
    """The system under test and helpers to drive it."""

    emu: Emulator
    world: World
    store: JobStore
    pool: asyncpg.Pool
    dsn: str
    registry: Registry
    bot: ErrandBot | None = None

    def new_bot(self, **overrides: Any) -> ErrandBot:
        return ErrandBot(
            store=self.store,
            dsn=self.dsn,
            settings=fast_bot_settings(**overrides),
            registry=self.registry,
        )

    async def summon(
        self,
        task: str = "count to three",
        *,
        user: User | None = None,
        channel: Channel | None = None,
        **options: Any,
    ) -> tuple[InteractionHandle, str]:
        """Run /summon and return the handle and the job id from the answer."""
        opts = {"task": task, "kind": "demo", "params": "steps=2 step_seconds=0.1"} | options
        opts = {k: v for k, v in opts.items() if v is not None}
        handle = await self.emu.invoke_slash(
            user or self.world.alice, channel or self.world.channel, "summon", opts
        )
        answer = await handle.wait_original()
        match = JOB_ID.search(answer.content)
        assert match, answer.content
        return handle, match[1]

    async def job(self, public_id: str) -> JobView:
        return await self.store.get(public_id)

    async def thread_of(self, public_id: str) -> int:
        """The thread id bound to a job, once delivery made it."""

        async def bound() -> int | None:
            return await self.pool.fetchval(  # type: ignore[no-any-return]
                "SELECT b.thread_id::bigint FROM discord_binding b JOIN job j ON j.id = b.job_id "
                "WHERE j.public_id = $1 AND b.progress_message_id IS NOT NULL",
                public_id,
            )

        return await poll(bound)

    async def summon_and_hold_its_notice(self) -> tuple[str, int, Hold]:
        """Summon a 2 s job and, once its progress message is posted, hold back Discord's
        answer to the next message posted in its thread: its notice. Returns the job id, the
        thread id and the hold."""
        _, job_id = await self.summon(params="steps=4 step_seconds=0.5")
        thread_id = await self.thread_of(job_id)
        hold = self.emu.faults.hold_next(
            path_contains=f"/channels/{thread_id}/messages", method="POST"
        )
        assert self.notices(thread_id) == []  # the hold is in place before the job ends
        return job_id, thread_id, hold

    async def progress_message(self, public_id: str) -> Message:
        """The job's progress message (the latest one, should it have been re-posted)."""
        mid = await poll(
            lambda: self.pool.fetchval(
                "SELECT b.progress_message_id::bigint FROM discord_binding b JOIN job j "
                "ON j.id = b.job_id WHERE j.public_id = $1",
                public_id,
            )
        )
        return self.emu.message(mid)

    async def wait_progress_state(self, public_id: str, state: str, timeout: float = 10) -> Message:  # noqa: ASYNC109
        msg = await self.progress_message(public_id)
        return await self.emu.wait_until(
            lambda: msg if state_of(self.emu.message(msg.id).content) == state else None,
            timeout,
        )

    def notices(self, thread_id: int) -> list[Message]:
        """Messages in the thread that mention someone: the notices."""
        return [
            m for m in self.emu.history(thread_id) if m.content.startswith("<@") and not m.deleted
        ]


def running_worker(
    store: JobStore, registry: Registry, dsn: str
) -> contextlib.AbstractAsyncContextManager[Worker]:
    """An in-process worker with short leases, stopped (gracefully) on exit."""
    return shared_running_worker(store, registry, dsn, lease_seconds=2.0, cancel_grace_seconds=1.0)


@pytest.fixture
def errand(
    emu: Emulator,
    world: World,
    store: JobStore,
    pool: asyncpg.Pool,
    db_dsn: str,
    registry: Registry,
) -> Errand:
    """The parts, not yet running."""
    return Errand(emu, world, store, pool, db_dsn, registry)


@pytest.fixture
async def worker(errand: Errand) -> AsyncIterator[Worker]:
    async with running_worker(errand.store, errand.registry, errand.dsn) as w:
        yield w


@pytest.fixture
async def bot(errand: Errand) -> AsyncIterator[ErrandBot]:
    """The bot, connected to the emulator."""
    client = errand.new_bot()
    async with running_bot(errand.emu, client):
        errand.bot = client
        yield client
