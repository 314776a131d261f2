"""The bot's settings: sharding flags, the request budget each process takes, and the kind
/summon runs by default, which follows the agent's settings wherever they are set (``.env`` too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.settings import BotSettings


def settings(**values: object) -> BotSettings:
    return BotSettings(_env_file=None, token=None, **values)  # type: ignore[call-arg]


def test_processes_running_some_shards_share_the_tokens_global_budget() -> None:
    assert settings().request_rate() == 45.0
    assert settings(shard_count=4).request_rate() == 45.0
    two_of_four = settings(shard_count=4, shard_ids=[0, 1])
    assert two_of_four.request_rate() == 22.5
    assert two_of_four.partition() == (4, [0, 1])
    assert settings(shard_count=3, shard_ids=[2]).request_rate() == 15.0
    # all the shards in one process: the whole budget, every job
    everything = settings(shard_count=2, shard_ids=[1, 0])
    assert everything.request_rate() == 45.0
    assert everything.partition() is None


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"shard_ids": [0]}, "need a shard count"),
        ({"shard_ids": [0, 4], "shard_count": 4}, "outside 0..3"),
        ({"shard_ids": [1, 1], "shard_count": 4}, "distinct"),
        ({"shard_ids": [], "shard_count": 4}, "at least one"),
    ],
)
def test_bad_shard_settings_are_refused(values: dict[str, object], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        settings(**values)


@pytest.fixture
def no_agent_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("ERRAND_AGENT_BASE_URL", "ERRAND_AGENT_API_KEY", "ERRAND_BOT_DEFAULT_KIND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # .env is read from the working directory
    return tmp_path


def test_the_default_kind_is_the_agent_when_dotenv_configures_a_model(no_agent_env: Path) -> None:
    assert BotSettings().resolved_default_kind() == "demo"
    (no_agent_env / ".env").write_text("ERRAND_AGENT_BASE_URL=http://localhost:11434/v1\n")
    assert BotSettings().resolved_default_kind() == "agent"
    assert BotSettings(default_kind="sleep").resolved_default_kind() == "sleep"
