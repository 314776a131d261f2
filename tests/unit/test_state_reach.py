"""Every place a job state must reach covers every state: add one to ``State`` and each place
that does not know it yet fails here, by name.

The places (docs/architecture.md, "A new state", lists the same ones):

1. the transition table, ``jobs/engine/state.py`` (every (state, actor) pair has an entry);
2. every module-level mapping keyed by state in ``jobs/`` and ``bot/`` (found by looking, not
   listed: ``bot/render.py``'s ``ICONS`` and ``ANSWER_STATE`` today);
3. the ``job_state`` enum of the migrated database (checked in
   tests/integration/test_state_enum.py);
4. the emulator page's icons: it draws the icon the bot posts, so it has one for each of the
   bot's state icons;
5. the bot's renderings (progress message, notice, answer, status page, list line) and the
   CLI's ``job status`` text, for a job in each state.
"""

from __future__ import annotations

import importlib
import itertools
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import render
from jobs.engine.notices import Notice
from jobs.engine.state import TRANSITIONS, Actor, State
from jobs.engine.views import JobStatus, JobView
from tests.unit.test_architecture import ROOT, project_modules

T0 = datetime(2026, 8, 20, 12, 0, tzinfo=UTC)
PAGE = ROOT / "discord_emulator" / "web" / "static" / "page.js"


def job(state: State) -> JobView:
    return JobView(
        id=1,
        public_id="k7m2x9qa",
        kind="demo",
        params={"seconds": 1},
        requester="discord:1",
        origin={"transport": "discord", "user_id": "42", "task": "count"},
        origin_group="9",
        state=state,
        reason="because",
        result=None,
        error=None,
        attempts=1,
        max_attempts=3,
        current_attempt_id=None,
        run_at=T0,
        deadline_at=None,
        cancel_requested_at=None,
        cancel_requested_by=None,
        cancel_reason=None,
        progress={"done": 1, "total": 2, "note": "counting"},
        usage={},
        created_at=T0,
        updated_at=T0,
        started_at=T0 + timedelta(seconds=1),
        finished_at=T0 + timedelta(seconds=5),
    )


def test_the_transition_table_has_an_entry_for_every_state_and_actor() -> None:
    assert set(TRANSITIONS) == set(itertools.product(State, Actor))


def state_mappings() -> dict[str, Mapping[Any, Any]]:
    """Every module-level mapping in jobs/ and bot/ whose keys include a State (alone or as
    the first item of a tuple)."""
    found: dict[str, Mapping[Any, Any]] = {}
    for name in project_modules():
        if name.split(".")[0] not in {"jobs", "bot"}:
            continue
        for attr, value in vars(importlib.import_module(name)).items():
            if not isinstance(value, Mapping) or not value:
                continue
            keys = [k[0] if isinstance(k, tuple) and k else k for k in value]
            if any(isinstance(k, State) for k in keys):
                found[f"{name}.{attr}"] = value
    return found


def test_the_search_for_state_mappings_finds_the_known_ones() -> None:
    """Not blind: the render tables and the transition table are found."""
    assert {
        "bot.render.ICONS",
        "bot.render.ANSWER_STATE",
        "jobs.engine.state.TRANSITIONS",
    } <= set(state_mappings())


@pytest.mark.parametrize("where", sorted(state_mappings()))
def test_every_mapping_keyed_by_state_covers_every_state(where: str) -> None:
    mapping = state_mappings()[where]
    keys = {k[0] if isinstance(k, tuple) else k for k in mapping}
    assert set(State) - keys == set(), f"{where} misses a state"


def page_icons() -> set[str]:
    """The emoji the emulator page draws as inline icons (its ``ICONS`` table)."""
    return {m for m in re.findall(r'^\s*"([^"]+)": svg\(', PAGE.read_text(), re.M)}


def test_the_page_draws_an_icon_for_every_state_icon_the_bot_posts() -> None:
    drawn = {icon.replace("\ufe0f", "") for icon in page_icons()}
    assert drawn, "the page's icon table was not found"
    missing = {
        s.value for s, icon in render.ICONS.items() if icon.replace("\ufe0f", "") not in drawn
    }
    assert missing == set()


def test_the_state_icons_are_distinct() -> None:
    """Each state reads as itself on Discord and on the page."""
    assert len(set(render.ICONS.values())) == len(State)


@pytest.mark.parametrize("state", list(State))
def test_the_bot_renders_every_state(state: State) -> None:
    """The progress message, the notice, the /summon answer, the status page and the list line
    each say the state, for a job in it."""
    j = job(state)
    status = JobStatus(j)
    progress = render.progress(j, task="count", may_resolve=True)
    assert progress.state is state
    assert state.value in progress.content
    row = Notice(
        id=1,
        job_id=1,
        from_state=State.RUNNING,
        to_state=state,
        actor=Actor.WORKER,
        reason=None,
        at=T0,
        attempts=0,
        delivered_at=None,
        dead_at=None,
        error=None,
        external_id=None,
    )
    assert state.value in render.notice(j, row, 42)
    assert render.ANSWER_STATE[state] in render.answer(j.public_id, j.kind, state, 0)
    assert render.ICONS[state] in render.job_line(j, "count")
    assert state.value in render.status_page(status, task="count", thread_id=None, deliveries=[])


@pytest.mark.parametrize("state", list(State))
def test_the_cli_renders_every_state(state: State) -> None:
    from jobs.ops.cli import status_text

    assert state.value in status_text(JobStatus(job(state)))


def test_the_architecture_doc_names_every_place_this_test_checks() -> None:
    """docs/architecture.md's "A new state" list matches this test's list of places."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc[doc.index("**A new state.**") :]
    section = section[: section.index("\n- **", 5)]
    for place in (
        "jobs/engine/state.py",
        "TRANSITIONS",
        "job_state",
        "bot/render.py",
        "ICONS",
        "ANSWER_STATE",
        "page.js",
        "status_text",
        "tests/unit/test_state_reach.py",
        "tests/unit/test_state_table.py",
        "docs/state-machine.md",
        "jobs/engine/policy.py",
    ):
        assert place in section, place
    assert Path(__file__).name == "test_state_reach.py"
