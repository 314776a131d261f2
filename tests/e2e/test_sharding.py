"""Errand sharded: two ``errand bot`` processes of two shards each, with guilds on every shard.
Each process delivers the jobs of its own shards; every job gets one thread, one progress
message and one notice per terminal state, even when a process is killed mid-delivery and
started again."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from discord_emulator import Channel
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import Errand
from .test_process import ENTRY, bot_env

SHARDS = 4


@asynccontextmanager
async def shard_process(
    errand: Errand, tmp_path: Path, shard_ids: list[int]
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``errand bot --shard-ids … --shard-count 4``, until all its shards are connected."""
    assert errand.emu.application is not None
    env = bot_env(errand, tmp_path, errand.emu.application.token)
    env["ERRAND_BOT_IDENTIFY_INTERVAL_SECONDS"] = "0.1"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ENTRY,
        "bot",
        "--shard-ids",
        ",".join(map(str, shard_ids)),
        "--shard-count",
        str(SHARDS),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    want = {(s, SHARDS) for s in shard_ids}
    try:
        await poll(
            lambda: want <= {s.shard for s in errand.emu.gateway.sessions.values()}, within=30
        )
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 15)


async def summon_in(errand: Errand, channel: Channel, n: int, params: str) -> str:
    """Summon as alice in ``channel``; the job id from the answer."""
    for _ in range(100):
        try:
            handle = await errand.emu.invoke_slash(
                errand.world.alice, channel, "summon", {"task": f"job {n}", "params": params}
            )
            break
        except LookupError:  # commands not synced yet
            await asyncio.sleep(0.1)
    answer = await handle.wait_original(timeout=10)
    return answer.content.split("`")[1]


async def all_delivered(errand: Errand, ids: list[str]) -> bool:
    pending = await errand.pool.fetchval(
        "SELECT count(*) FROM outbox o JOIN job j ON j.id = o.job_id "
        "WHERE j.public_id = ANY($1) AND (o.delivered_at IS NULL OR j.state <> 'succeeded')",
        ids,
    )
    return pending == 0


def assert_one_of_each(errand: Errand, channels: list[Channel], ids: list[str]) -> None:
    emu = errand.emu
    for public_id in ids:
        threads = [t for ch in channels for t in emu.threads(ch) if t.name.startswith(public_id)]
        assert len(threads) == 1, (public_id, [t.name for t in threads])
        messages = [m for m in emu.history(threads[0]) if not m.deleted]
        notices = errand.notices(threads[0].id)
        # Type 0 leaves out Discord's THREAD_STARTER_MESSAGE (type 21) that opens the thread.
        progress = [m for m in messages if m not in notices and m.type == 0]
        assert len(progress) == 1, (public_id, [m.content[:60] for m in messages])
        assert len(notices) == 1, (public_id, [m.content[:60] for m in notices])
        assert "succeeded" in notices[0].content


async def test_two_processes_of_two_shards_deliver_each_job_once_across_a_sigkill(
    errand: Errand, worker: Worker, tmp_path: Path
) -> None:
    emu = errand.emu
    channels = []
    for s in range(SHARDS):
        guild = emu.create_guild(f"shard {s}", shard=(s, SHARDS))
        channels.append(emu.create_channel(guild, "general"))
        emu.add_member(guild, errand.world.alice)
    async with (
        shard_process(errand, tmp_path / "a", [0, 1]) as first,
        shard_process(errand, tmp_path / "b", [2, 3]),
    ):
        ids = [
            await summon_in(errand, ch, n, "steps=2 step_seconds=0.2")
            for n, ch in enumerate(channels * 2)
        ]
        await poll(lambda: all_delivered(errand, ids), within=60)
        assert_one_of_each(errand, channels, ids)

        # Mid-delivery: the jobs of shards 0 and 1 run and edit their progress messages when
        # their process is killed; they end while it is down, and its successor delivers them.
        late = [
            await summon_in(errand, ch, 10 + n, "steps=3 step_seconds=0.4")
            for n, ch in enumerate(channels)
        ]
        await errand.wait_progress_state(late[0], "running", timeout=20)
        first.kill()
        await first.wait()
        await poll(
            lambda: errand.pool.fetchval(
                "SELECT bool_and(state = 'succeeded') FROM job WHERE public_id = ANY($1)", late
            ),
            within=30,
        )
        # Shards 2 and 3 delivered theirs; nobody delivers the dead process's shards meanwhile.
        await poll(lambda: all_delivered(errand, late[2:]), within=30)
        await asyncio.sleep(1.5)
        assert not await all_delivered(errand, late[:1])
        assert not await all_delivered(errand, late[1:2])
        async with shard_process(errand, tmp_path / "c", [0, 1]):
            await poll(lambda: all_delivered(errand, late), within=60)
            await asyncio.sleep(1.5)  # longer than a delivery lease: a duplicate would show
            assert_one_of_each(errand, channels, ids + late)
