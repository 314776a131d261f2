"""The ``agent`` kind is suggested only where a model is configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.client import ErrandBot

from .conftest import Errand


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("ERRAND_AGENT_BASE_URL", "ERRAND_AGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env


async def test_without_a_model_the_agent_is_not_suggested_but_may_still_be_typed(
    no_model: None, errand: Errand, bot: ErrandBot
) -> None:
    """Suggestions follow this process's settings; a typed kind:agent is still submitted
    (workers elsewhere may hold the model settings; one without them fails the job at once
    saying what to set: tests/integration/test_builtin_kinds.py)."""
    emu, world = errand.emu, errand.world
    handle = await emu.autocomplete(
        world.alice, world.channel, "summon", {"task": "t", "kind": ""}, focused="kind"
    )
    offered = [c["value"] for c in await handle.wait_choices()]
    assert "demo" in offered
    assert "agent" not in offered

    handle = await emu.invoke_slash(
        world.alice, world.channel, "summon", {"task": "hello", "kind": "agent"}
    )
    answer = await handle.wait_original()
    assert not answer.ephemeral
    assert "(agent)" in answer.content
    assert await errand.pool.fetchval("SELECT kind FROM job") == "agent"


async def test_with_a_model_the_agent_is_offered(
    no_model: None, monkeypatch: pytest.MonkeyPatch, errand: Errand, bot: ErrandBot
) -> None:
    monkeypatch.setenv("ERRAND_AGENT_BASE_URL", "http://127.0.0.1:9/v1")
    handle = await errand.emu.autocomplete(
        errand.world.alice, errand.world.channel, "summon", {"task": "t", "kind": "ag"},
        focused="kind",
    )  # fmt: skip
    assert [c["value"] for c in await handle.wait_choices()] == ["agent"]
