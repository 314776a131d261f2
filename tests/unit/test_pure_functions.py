"""The pure functions under the engine and the operator CLI: duration parsing, budget
tightening, the backoff formula, the named-query loader and public ids."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.engine import ids
from jobs.engine.notices import retry_delay
from jobs.engine.queries import Queries, engine_queries, parse
from jobs.ops.inspect import parse_duration
from jobs.retry import backoff
from jobs.runtime.budget import BOUND_NAMES, Budget
from jobs.runtime.waits import _checked_question

# -- parse_duration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("45s", 45),
        ("90m", 5400),
        ("12h", 43200),
        ("30d", 2592000),
        ("2w", 1209600),
        ("120", 120),
        ("1.5h", 5400),
        (" 7 d ", 604800),
        ("0", 0),
    ],
)
def test_a_duration_is_a_number_with_an_optional_unit(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "d", "30x", "-5m", "5 minutes", "1h30m", "3e2s", "1,5h"])
def test_a_bad_duration_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match=r"bad duration .*e\.g\. 30d"):
        parse_duration(text)


# -- Budget.tighten --------------------------------------------------------------------------

bounds = st.one_of(st.none(), st.integers(min_value=0, max_value=10**6))
seconds = st.one_of(st.none(), st.floats(min_value=0.001, max_value=1e6, allow_nan=False))
budgets = st.builds(
    Budget,
    step_tokens=bounds,
    step_tool_calls=bounds,
    step_seconds=seconds,
    job_steps=bounds,
    job_tokens=bounds,
    job_seconds=seconds,
)


def test_tightening_takes_the_smaller_bound_and_keeps_a_bound_either_side_sets() -> None:
    operator = Budget(step_tokens=1000, job_steps=10, job_seconds=60.0)
    kind = Budget(step_tokens=4000, job_steps=5, step_seconds=5.0)
    assert operator.tighten(kind) == Budget(
        step_tokens=1000, job_steps=5, job_seconds=60.0, step_seconds=5.0
    )
    assert operator.tighten(None) == operator


@given(budgets, budgets)
def test_tightening_never_loosens_a_bound(first: Budget, second: Budget) -> None:
    """Whatever a later layer asks, no bound ends above either layer's, and an unset bound is
    set only from the other layer."""
    tight = first.tighten(second)
    for name in BOUND_NAMES:
        mine, theirs, got = getattr(first, name), getattr(second, name), getattr(tight, name)
        present = [v for v in (mine, theirs) if v is not None]
        assert got == (min(present) if present else None)
    assert tight == second.tighten(first)


# -- backoff ---------------------------------------------------------------------------------


def test_without_jitter_the_wait_doubles_from_the_base_up_to_the_cap() -> None:
    waits = [backoff(n, base=0.2, cap=5.0, jitter=False) for n in range(0, 8)]
    assert waits == pytest.approx([0.2, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0])


@given(
    attempt=st.integers(min_value=-3, max_value=80),
    base=st.floats(min_value=0.01, max_value=100),
    cap=st.floats(min_value=0.01, max_value=1000),
    floor=st.floats(min_value=0, max_value=50),
)
def test_with_jitter_the_wait_lies_between_the_floor_and_the_ceiling(
    attempt: int, base: float, cap: float, floor: float
) -> None:
    ceiling = min(cap, base * 2 ** max(0, attempt - 1))
    wait = backoff(attempt, base=base, cap=cap, floor=floor)
    assert min(floor, ceiling) <= wait <= ceiling


def test_full_jitter_spreads_retries_over_the_whole_window() -> None:
    """Clients that failed together do not retry together: the waits cover the window."""
    random.seed(10)
    waits = [backoff(4, base=1.0, cap=300.0) for _ in range(2000)]
    assert min(waits) < 0.5
    assert max(waits) > 7.5
    assert 3.5 < sum(waits) / len(waits) < 4.5  # uniform over [0, 8]


def test_an_outbox_retry_never_comes_sooner_than_half_the_base() -> None:
    random.seed(11)
    waits = [retry_delay(1, base=2.0) for _ in range(500)]
    assert min(waits) >= 1.0
    assert max(waits) <= 2.0
    assert retry_delay(30, base=2.0) <= 600.0


# -- named queries ---------------------------------------------------------------------------


def test_named_queries_are_read_from_every_sql_file_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.sql").write_text(
        "-- a file comment, not part of any query\n"
        "-- name: second_one\n-- What it does.\nSELECT 2;\n\n"
        "-- name: third\nSELECT 3\nFROM t;\n"
    )
    (tmp_path / "a.sql").write_text("-- name: first\nSELECT 1;\n")
    (tmp_path / "notes.txt").write_text("-- name: ignored\nSELECT 0;\n")
    assert {name: q.sql for name, q in Queries(tmp_path).items()} == {
        "first": "SELECT 1;",
        "second_one": "-- What it does.\nSELECT 2;",
        "third": "SELECT 3\nFROM t;",
    }


def test_a_query_name_defined_twice_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text("-- name: same\nSELECT 1;\n")
    (tmp_path / "b.sql").write_text("-- name: same\nSELECT 2;\n")
    with pytest.raises(ValueError, match=r"duplicate query name same in b\.sql"):
        Queries(tmp_path)


def test_a_fragment_is_written_in_where_it_stands_alone_on_a_line(tmp_path: Path) -> None:
    """Shared text (``-- fragment:``) is written into each query that names it on a line of its
    own, with its parameters becoming the query's; a mention inside a line or a comment is
    left alone, and a query naming no such fragment is refused."""
    (tmp_path / "a.sql").write_text(
        "-- fragment: part\nx = :x\n\n"
        "-- name: one\nSELECT :y WHERE\n    {part}\n-- not {part}\n\n"
        "-- name: two\nSELECT 1 WHERE\n{part}\nAND '{part}' = y\n"
    )
    queries = Queries(tmp_path)
    assert set(queries) == {"one", "two"}
    assert queries["one"].sql == "SELECT $1 WHERE\nx = $2\n-- not {part}"
    assert queries["one"].params == ("y", "x")
    assert queries["two"].sql == "SELECT 1 WHERE\nx = $1\nAND '{part}' = y"
    (tmp_path / "b.sql").write_text("-- name: three\nSELECT 1 WHERE\n{missing}\n")
    with pytest.raises(ValueError, match=r"no fragment \{missing\}"):
        Queries(tmp_path)


def test_named_parameters_become_positional_in_first_use_order() -> None:
    """``:name`` becomes ``$n`` (a repeated name keeps its number); casts, strings, quoted
    names and comments are left alone."""
    query = parse(
        "q",
        "SELECT :b::int, ':a', \"x:y\", :a -- not :c\nWHERE x = :b AND y = '{}'::jsonb",
        {},
    )
    assert (
        query.sql == "SELECT $1::int, ':a', \"x:y\", $2 -- not :c\nWHERE x = $1 AND y = '{}'::jsonb"
    )
    assert query.params == ("b", "a")
    assert query.args({"a": 1, "b": 2}) == [2, 1]


def test_a_missing_or_unknown_parameter_is_refused_before_anything_is_sent() -> None:
    query = parse("q", "SELECT :a, :b", {})
    with pytest.raises(TypeError, match=r"q: missing \['b'\], unknown \['c'\]"):
        query.args({"a": 1, "c": 3})


def test_a_set_of_states_is_written_in_as_a_constant_when_loaded() -> None:
    query = parse(
        "q", "WHERE state = ANY({live}::job_state[]) AND '{live}' = x", {"live": ["b", "a"]}
    )
    assert query.sql == "WHERE state = ANY('{a,b}'::job_state[]) AND '{live}' = x"
    with pytest.raises(ValueError, match=r"no state set \{nope\}"):
        parse("q", "WHERE {nope}", {})


def test_the_engine_queries_load_and_none_is_empty() -> None:
    loaded = engine_queries()
    assert {"job_transition", "step_start", "notice_counts"} <= set(loaded)
    assert [name for name, q in loaded.items() if not q.sql.strip()] == []


# -- public ids --------------------------------------------------------------------------------


def test_every_random_byte_value_kept_stands_for_one_character_as_often_as_any_other() -> None:
    """The bytes drawn for ids map evenly onto the alphabet (8 values per character) and the
    rest are dropped: every character, so every id, is equally likely."""
    kept = ids._CHARS[: ids._ACCEPTED]
    assert Counter(kept.decode()) == dict.fromkeys(ids.ALPHABET, 8)
    assert bytes(range(ids._ACCEPTED, 256)) == ids._DROPPED
    assert len(ids._DROPPED) == 256 - 8 * len(ids.ALPHABET)


@pytest.mark.parametrize("count", [0, 1, 7, 10_000])
def test_bulk_ids_are_as_many_as_asked_well_formed_and_distinct(count: int) -> None:
    made = ids.new_public_ids(count)
    assert len(made) == len(set(made)) == count
    assert all(ids.PATTERN.match(public_id) for public_id in made)
    assert ids.PATTERN.match(ids.new_public_id())


# -- a question's bounds (ctx.ask) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "question", "choices"),
    [
        ("k\x00", "Which?", None),
        ("k\ud800", "Which?", None),
        ("k", "Which \ud800?", None),
        ("k", "Which?", ["red", "gr\ud800en"]),
        ("k", "Which?", ["red", "red"]),
        ("", "Which?", None),
    ],
    ids=["nul-key", "surrogate-key", "surrogate-question", "surrogate-choice", "twice", "no-key"],
)
def test_a_question_that_cannot_be_stored_as_text_is_refused_before_it_is_asked(
    key: str, question: str, choices: list[str] | None
) -> None:
    """A key, question or choice with a NUL or a lone surrogate (which PostgreSQL cannot store
    as text) is refused with a ValueError before anything is written, as a bad length is."""
    with pytest.raises(ValueError, match=r"^a (question|choice)"):
        _checked_question(key, question, choices, None)
    assert _checked_question("k", "Which?", ["red", "green"], 30) == ("red", "green")
