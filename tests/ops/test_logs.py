"""One log format: every line a real ``errand run`` writes to a non-TTY stderr is a JSON object,
discord.py's and aiohttp's own lines included, with the configured secrets redacted by value."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Awaitable, Callable

from discord_emulator import Emulator
from discord_emulator.testing import World
from tests.support.cli import WorkerProc, discord_env
from tests.support.http import http_get
from tests.support.polling import poll

API_KEY = "sk-errand-test-0123456789abcdef"


async def test_every_stderr_line_of_errand_run_is_json_with_library_lines_and_no_secrets(
    emu: Emulator, world: World, spawn_errand: Callable[..., Awaitable[WorkerProc]]
) -> None:
    """Drive a job through ``errand run`` while the emulator rate-limits the start of its thread
    (discord.py logs a warning per 429) and drops its gateway once, then stop it with SIGTERM:
    every stderr
    line parses as one JSON object, discord.py's lines among them (with their logger name), and
    neither the bot token nor the model API key appears anywhere."""
    env = discord_env(emu)
    proc = await spawn_errand("run", **env, ERRAND_AGENT_API_KEY=API_KEY, ERRAND_LOG_FORMAT="auto")

    async def ready() -> bool:
        return (await http_get(proc.port, "/readyz"))[0] == 200

    await poll(ready, within=30)
    emu.faults.ratelimit_next(2, path_contains="/threads", method="POST")
    handle = await emu.invoke_slash(
        world.alice,
        world.channel,
        "summon",
        {"task": "count", "kind": "demo", "params": "steps=3 step_seconds=0.2"},
    )
    await handle.wait_original(timeout=10)
    await emu.wait_until(lambda: [m for _, _, m in emu.faults.triggered].count(429) == 2, 20)
    emu.drop_gateway()
    await poll(ready, within=30)
    proc.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.proc.wait(), 30) == 0

    text = proc.log.read_text()
    lines = text.splitlines()
    entries = []
    for line in lines:
        entry = json.loads(line)  # raises on any line that is not JSON
        assert isinstance(entry, dict)
        entries.append(entry)
    assert len(entries) >= 5
    assert all({"event", "level", "timestamp"} <= set(e) for e in entries)
    loggers = {e.get("logger") for e in entries}
    assert any(str(name).startswith("discord.") for name in loggers), loggers
    assert any("rate limited" in str(e["event"]) for e in entries)
    assert any(e.get("component") == "health" for e in entries)  # structlog's own lines too
    assert env["DISCORD_TOKEN"] not in text
    assert API_KEY not in text
