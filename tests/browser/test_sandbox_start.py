"""``errand sandbox`` on an idle machine starts and stops without a single warning: nothing
blocks its event loop, and discord.py's heartbeat latency reads right against the emulator (it
used to warn "Can't keep up, shard ID None websocket is 41.3s behind" at the first heartbeat)."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox import HEARTBEAT_ENV
from tests.support.ports import free_port

from .conftest import Sandbox

# The warning came with the first heartbeat's ACK, a whole interval after the connection
# (Discord's is 41.25 s). discord.py warns only when the latency it measures exceeds 10 s, and
# that bug measured the whole interval: 11 s still shows it, so the sandbox is told to use 11 s
# rather than this test idling for 44 s.
HEARTBEAT_INTERVAL_MS = 11_000
FIRST_HEARTBEAT_SECONDS = HEARTBEAT_INTERVAL_MS / 1000 + 3
WARNING = re.compile(r"WARNING|ERROR|CRITICAL|\[warning|\[error|\"level\": \"(warning|error)")


def get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        found: dict[str, Any] = json.load(resp)
        return found


def commands_synced(box: Sandbox) -> bool:
    world = get(f"{box.url}/_emulator/page/world")
    channel = next(c for c in world["channels"] if c["kind"] == "text")
    query = urllib.parse.urlencode({"channel_id": channel["id"], "text": "/"})
    return bool(get(f"{box.url}/_emulator/page/complete?{query}")["suggestions"])


@pytest.mark.slow
def test_an_idle_sandbox_prints_no_warning(tmp_path: Path, data_root: Path) -> None:
    box = Sandbox(
        data_root / "data",
        free_port(),
        tmp_path / "sandbox.log",
        env={
            "ERRAND_LOG_LEVEL": "warning",  # what a user gets by default
            HEARTBEAT_ENV: str(HEARTBEAT_INTERVAL_MS),
        },
    )
    box.start()
    try:
        deadline = time.monotonic() + 30
        while not commands_synced(box):
            assert time.monotonic() < deadline, box.log()
            time.sleep(0.2)
        time.sleep(FIRST_HEARTBEAT_SECONDS)
    finally:
        assert box.stop() == 0, box.log()
    lines = [line for line in box.log().splitlines() if WARNING.search(line)]
    assert lines == [], box.log()
