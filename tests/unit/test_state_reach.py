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
   CLI's ``job status`` text, for a job in each state;
6. the SQL (``jobs/engine/sql``, ``bot/sql``): a set of states is written ``{set}`` and comes
   from ``SQL_SETS`` in ``jobs/engine/policy.py``, never as a list in the text; a single state
   named in SQL must be a ``State`` and is one of :data:`SINGLE_STATES`, each with its reason.
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

from bot import render, status_page
from jobs.engine.notices import Notice
from jobs.engine.policy import SQL_SETS
from jobs.engine.queries import engine_queries, query_texts
from jobs.engine.state import TRANSITIONS, Actor, State
from jobs.engine.views import JobStatus, JobView
from tests.unit.test_architecture import ROOT, project_modules

T0 = datetime(2026, 8, 20, 12, 0, tzinfo=UTC)
PAGE = ROOT / "discord_emulator" / "web" / "static" / "page.js"
SQL_DIRS = [ROOT / "jobs/engine/sql", ROOT / "bot/sql"]


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
    assert render.ICONS[state] in status_page.job_line(j, "count")
    assert state.value in status_page.status_page(
        status, task="count", thread_id=None, deliveries=[]
    )


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
        "SQL_SETS",
        "SINGLE_STATES",
    ):
        assert place in section, place
    assert Path(__file__).name == "test_state_reach.py"


# -- the SQL ---------------------------------------------------------------------------------

SINGLE_STATES: dict[tuple[str, str], str] = {
    ("job_insert", "queued"): "every job starts queued",
    ("job_insert_many", "queued"): "every job starts queued",
    ("job_retry", "queued"): "every job starts queued, an operator's retry too",
    ("job_claim", "running"): "the claim's one move ends in running (checked in transition.claim)",
    ("job_claim_lone", "running"): "job_claim's move, when one lane holds the queue",
    ("job_transition", "cancelling"): "a job now cancelling has its attempt told (NOTIFY)",
    ("attempt_heartbeat", "cancelling"): "the heartbeat tells an attempt its job is cancelling",
    ("reaper_due", "cancelling"): "the cancel grace is the time a cancelling job's attempt has",
    ("job_cancel_overdue", "cancelling"): "the cancel grace, as in reaper_due",
    ("event_resolved_retry_since", "unknown"): "the edge of a resolve as retry: unknown -> queued",
    ("event_resolved_retry_since", "queued"): "the edge of a resolve as retry: unknown -> queued",
}
"""Each place SQL names one state, and why one state and not a set: a new place must be added
here, and a new state decides, for each, whether it belongs there too."""

_COMMENT = re.compile(r"--[^\n]*")
_LITERAL = r"'((?:[^']|'')*)'"
_COMPARED = re.compile(
    rf"\b(\w*state)\s*(?:=|<>|!=)\s*{_LITERAL}|{_LITERAL}\s*(?:=|<>|!=)\s*(\w*state)\b", re.I
)
_CAST = re.compile(rf"{_LITERAL}::job_state\b(?!\[)", re.I)
_LISTS = (
    re.compile(r"\b\w*state\s+(?:NOT\s+)?IN\s*\(\s*'", re.I),  # state IN ('a', ...)
    re.compile(r"'\{[^}']+\}'(?:::\w+)?::job_state\[\]", re.I),  # '{a,b}'::job_state[]
    re.compile(r"\bARRAY\s*\[\s*'[^\]]*\]\s*::\s*job_state\[\]", re.I),  # ARRAY['a']::job_state[]
    re.compile(r"\b\w*state\s*(?:=|<>|!=)\s*(?:ANY|ALL)\s*\(\s*'", re.I),  # state = ANY('{a}')
    re.compile(rf"\b(\w*state)\s*=\s*{_LITERAL}\s+OR\s+\1\s*=", re.I),  # state = 'a' OR state =
)
_INSERT = re.compile(
    r"INSERT\s+INTO\s+\w+\s*\(([^)]*)\)\s*(?:OVERRIDING\s+SYSTEM\s+VALUE\s*)?"
    r"(?:SELECT\b|VALUES\s*\()",
    re.I,
)


def sql_queries(directory: Path) -> dict[str, str]:
    """The named queries of one SQL folder, as its loader reads them (fragments written in),
    their text without comments."""
    return {name: _COMMENT.sub("", text) for name, text in query_texts(directory).items()}


def _items(text: str) -> list[str]:
    """The comma-separated items at the top level of a select or values list, up to its end."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return [*items, text[start:i]]
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
        elif depth == 0 and re.match(r"\s(FROM|WHERE|RETURNING|ON)\b", text[i : i + 12], re.I):
            return [*items, text[start:i]]
    return [*items, text[start:]]


def state_literals(sql: str) -> list[str]:
    """The string literals ``sql`` uses as one job state: compared with a column named
    ``*state``, cast to ``job_state``, or inserted into such a column."""
    found = [a or b for _, a, b, _ in _COMPARED.findall(sql)]
    found += _CAST.findall(sql)
    for insert in _INSERT.finditer(sql):
        columns = [c.strip() for c in insert[1].split(",")]
        values = _items(sql[insert.end() :])
        for column, value in zip(columns, values, strict=False):
            literal = re.fullmatch(rf"\s*{_LITERAL}\s*", value)
            if column.endswith("state") and literal:
                found.append(literal[1])
    return found


def state_lists(sql: str) -> list[str]:
    """The places ``sql`` writes a list of states out instead of a ``{set}``."""
    return [m[0] for pattern in _LISTS for m in pattern.finditer(sql)]


def sql_state_references() -> dict[tuple[str, str], int]:
    """(query, state literal) -> how often, over every SQL file."""
    found: dict[tuple[str, str], int] = {}
    for directory in SQL_DIRS:
        for name, sql in sql_queries(directory).items():
            for literal in state_literals(sql):
                found[(name, literal)] = found.get((name, literal), 0) + 1
    return found


def test_the_sql_scan_is_not_blind() -> None:
    """It finds a state in each form SQL can name one, and each form of a written-out list."""
    assert state_literals("UPDATE job SET state = 'running' WHERE j.state <> 'queud'") == [
        "running",
        "queud",
    ]
    assert state_literals("SELECT 'cancelled'::job_state, 'x' = from_state") == ["x", "cancelled"]
    insert = (
        "INSERT INTO event (job_id, from_state, to_state, reason) "
        "SELECT id, NULL, 'queued', 'submitted' FROM ins"
    )
    assert state_literals(insert) == ["queued"]
    assert state_literals("INSERT INTO event (to_state, data) VALUES ('runing', '{}')") == [
        "runing"
    ]
    for written_out in (
        "WHERE state IN ('queued', 'running')",
        "WHERE j.state NOT IN ('queued')",
        "WHERE state = ANY('{queued,running}'::job_state[])",
        "WHERE state = ANY(ARRAY['queued', 'running']::job_state[])",
        "WHERE state <> ALL('{succeeded}')",
        "WHERE state = 'queued' OR state = 'running'",
    ):
        assert state_lists(written_out) != [], written_out
    assert state_lists("WHERE state = ANY({live}::job_state[]) AND origin <> '{}'::jsonb") == []
    assert {("job_claim", "running"), ("job_insert", "queued")} <= set(sql_state_references())


def test_every_state_the_sql_names_is_a_state() -> None:
    unknown = {ref for ref in sql_state_references() if ref[1] not in set(State)}
    assert unknown == set(), "SQL names a state that State does not have"


def test_the_sql_writes_no_list_of_states() -> None:
    """A set of states comes from SQL_SETS as ``{set}``: a new state then reaches every query
    that uses the set, with no SQL to change."""
    lists = {
        (directory.name, name, text)
        for directory in SQL_DIRS
        for name, sql in sql_queries(directory).items()
        for text in state_lists(sql)
    }
    assert lists == set()


def test_each_single_state_in_the_sql_is_one_on_purpose() -> None:
    """Each place SQL names one state is listed in SINGLE_STATES with its reason (a new one
    is a choice: one state, or a set from SQL_SETS?), and each listed place still exists."""
    assert set(sql_state_references()) == set(SINGLE_STATES)


def test_every_state_set_the_sql_names_exists() -> None:
    """``{set}`` names resolve when the engine's queries load (an unknown one raises there)."""
    named = {
        m[1]
        for directory in SQL_DIRS
        for sql in sql_queries(directory).values()
        for m in re.finditer(r"\{([a-z_]+)\}", sql)
    }
    assert named <= set(SQL_SETS)
    assert len(engine_queries()) > 0


def test_waiting_belongs_to_the_sets_of_a_job_that_runs_nothing_but_is_not_over() -> None:
    """``waiting`` (issue 30) reached each set it belongs to: not terminal and counted against
    quotas (``active``), holding no lease (not ``live``), ended by a deadline, and the sources
    of its own wake-up (``waiting``, the timer's index); a worker never claims it directly."""
    from jobs.engine.state import ACTIVE, LIVE, TERMINAL

    assert State.WAITING in ACTIVE
    assert State.WAITING not in LIVE | TERMINAL
    assert State.WAITING in SQL_SETS["deadline"]
    assert SQL_SETS["waiting"] == {State.WAITING}
    assert State.WAITING not in SQL_SETS["claimable"]
    assert State.WAITING in render.CANCELLABLE  # its progress message keeps its Cancel button
