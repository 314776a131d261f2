"""Words users read: a cancel's notice says who cancelled and why in one sentence, and the kind
/summon runs by default follows the agent's settings wherever they are set (``.env`` too)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot import render
from bot.settings import BotSettings
from jobs.engine.model import JobStatus
from jobs.engine.state import State
from tests.unit.test_bot_render import T0, job, row


def test_a_cancel_notice_names_who_cancelled_and_why_in_one_sentence() -> None:
    done = job(State.CANCELLED, finished_at=T0 + timedelta(seconds=28.4))
    text = render.notice(done, row("cancelled", "cancelled by requester: Cancel button"), 42)
    assert text == (
        "<@42> ⛔ Job `k7m2x9qa` **cancelled** by the requester after 27.4 s (Cancel button)"
    )
    text = render.notice(done, row("cancelled", "cancelled by operator"), None)
    assert text == "⛔ Job `k7m2x9qa` **cancelled** by the operator after 27.4 s"


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


def test_the_status_of_an_unknown_job_says_how_to_settle_it() -> None:
    page = render.status_page(
        JobStatus(job(State.UNKNOWN, reason="effect in doubt")),
        task="charge",
        thread_id=None,
        deliveries=[],
    )
    assert "`/job resolve id:k7m2x9qa outcome:... note:...`" in page
    assert "operator" in page
