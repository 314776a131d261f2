"""supervise(): a process's tasks run until it is told to stop or one of them ends; the
process name every lease holder uses; and the transport's secrets a process masks."""

from __future__ import annotations

import asyncio
import os
import re
import socket

import pytest

from jobs.engine.ids import incarnation
from jobs.tasks import supervise


async def _forever() -> None:
    await asyncio.Event().wait()


async def _fail_after(seconds: float) -> None:
    await asyncio.sleep(seconds)
    raise RuntimeError("loop died")


async def test_the_first_task_to_fail_raises_its_error_and_the_others_keep_running() -> None:
    alive = asyncio.create_task(_forever())
    dying = asyncio.create_task(_fail_after(0.01))
    with pytest.raises(RuntimeError, match="loop died"):
        await asyncio.wait_for(supervise([alive, dying], asyncio.Event()), 5)
    assert not alive.done()  # the caller stops the rest its own way
    alive.cancel()


async def test_a_stop_returns_at_once_and_leaves_the_tasks_running() -> None:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_forever()) for _ in range(3)]
    asyncio.get_running_loop().call_later(0.01, stop.set)
    await asyncio.wait_for(supervise(tasks, stop), 5)
    assert [t.done() for t in tasks] == [False, False, False]
    for t in tasks:
        t.cancel()


async def test_a_task_that_ends_without_error_ends_the_supervision() -> None:
    alive = asyncio.create_task(_forever())
    quick = asyncio.create_task(asyncio.sleep(0.01))
    await asyncio.wait_for(supervise([alive, quick], asyncio.Event()), 5)
    assert quick.done()
    assert not alive.done()
    alive.cancel()


def test_a_process_name_is_host_pid_and_a_fresh_random_part() -> None:
    first, second = incarnation(), incarnation()
    pattern = rf"^{re.escape(socket.gethostname())}:{os.getpid()}:[0-9a-f]{{6}}$"
    assert re.match(pattern, first)
    assert re.match(pattern, second)
    assert first != second


async def test_a_process_masks_the_secrets_it_is_given_before_it_starts_anything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A transport hands its tokens to its Process (``secrets=``, or ``process.secrets`` for a
    part made later, as the sandbox's bot): they are masked by value from the moment it starts
    serving, before signals, the engine or any part."""
    from jobs.ops import process as module
    from jobs.secrets import scrub
    from jobs.settings import Settings

    token, later = "Yq7-process-token-of-no-shape", "Wp3-added-later-token-of-no-shape"
    monkeypatch.setattr(module, "load_settings", lambda quiet=False: Settings())
    seen: list[str] = []

    def first_step(announce: object) -> None:
        seen.append(scrub(f"{token} {later}", patterns=False))
        raise RuntimeError("stopped before anything started")

    monkeypatch.setattr(module, "stop_on_signals", first_step)
    process = module.Process(secrets=[token, None])
    process.secrets.append(later)
    with pytest.raises(RuntimeError, match="stopped before"):
        await process.serve()
    assert seen == ["*** ***"]
