"""The transition table in jobs/engine/state.py against an independent one written here by hand."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from jobs.engine.state import (
    LIVE,
    TERMINAL,
    TRANSITIONS,
    Actor,
    State,
    allowed,
    check_moves,
    sources,
)

# Written independently from the rules, not copied from the code: (state, actor) -> next.
EXPECTED: dict[tuple[str, str], set[str]] = {
    ("queued", "requester"): {"cancelled"},
    ("queued", "operator"): {"cancelled"},
    ("queued", "worker"): {"running"},
    ("queued", "system"): {"cancelled"},
    ("running", "requester"): {"cancelling"},
    ("running", "operator"): {"cancelling", "cancelled"},
    ("running", "worker"): {"succeeded", "failed", "queued", "waiting", "unknown"},
    ("running", "system"): {"queued", "failed", "unknown", "cancelling"},
    ("cancelling", "requester"): set(),
    ("cancelling", "operator"): {"cancelled"},
    ("cancelling", "worker"): {"cancelled", "succeeded"},
    ("cancelling", "system"): {"cancelled"},
    # waiting: nothing runs; an answer, a message or a timer queues it, a cancel ends it at once.
    ("waiting", "requester"): {"queued", "cancelled"},
    ("waiting", "operator"): {"queued", "cancelled"},
    ("waiting", "worker"): set(),
    ("waiting", "system"): {"queued", "cancelled"},
    ("unknown", "requester"): {"succeeded", "failed", "queued"},
    ("unknown", "operator"): {"succeeded", "failed", "queued", "cancelled"},
    ("unknown", "worker"): set(),
    ("unknown", "system"): set(),
}
for terminal in ("succeeded", "failed", "cancelled"):
    for actor in ("requester", "operator", "worker", "system"):
        EXPECTED[(terminal, actor)] = set()


@pytest.mark.parametrize(("state", "actor", "target"), list(itertools.product(State, Actor, State)))
def test_every_state_actor_target_matches_the_independent_table(
    state: State, actor: Actor, target: State
) -> None:
    """Each (state, actor, target) is allowed in the code exactly when it is allowed here."""
    expected = target.value in EXPECTED[(state.value, actor.value)]
    assert expected == (target in TRANSITIONS[(state, actor)])


def test_the_state_list_is_complete() -> None:
    """Exactly the eight documented states exist, each with a docstring saying who moves it."""
    assert {s.value for s in State} == {
        "queued",
        "running",
        "cancelling",
        "succeeded",
        "failed",
        "cancelled",
        "waiting",
        "unknown",
    }
    source = Path("jobs/engine/state.py").read_text()
    for state in State:
        assert re.search(rf'{state.name} = "{state.value}"\n    """', source), state


def test_terminal_states_have_no_way_out_and_cancelled_never_becomes_succeeded() -> None:
    """No actor moves a terminal job; nothing leads from cancelled to succeeded."""
    for state, actor in itertools.product(TERMINAL, Actor):
        assert allowed(state, actor) == frozenset()
    assert State.UNKNOWN not in TERMINAL
    assert {State.RUNNING, State.CANCELLING} == LIVE


def test_sources_is_the_inverse_of_the_table() -> None:
    """The CAS WHERE clause for (actor, target) lists exactly the states allowing it."""
    assert sources(Actor.WORKER, State.RUNNING) == {State.QUEUED}
    assert sources(Actor.WORKER, State.SUCCEEDED) == {State.RUNNING, State.CANCELLING}
    assert sources(Actor.REQUESTER, State.CANCELLED) == {State.QUEUED, State.WAITING}
    assert sources(Actor.SYSTEM, State.QUEUED) == {State.RUNNING, State.WAITING}


def test_check_moves_refuses_a_move_not_in_the_table() -> None:
    """A planned move outside the table is a programming error, caught before any SQL."""
    with pytest.raises(ValueError, match="not in the table"):
        check_moves(Actor.WORKER, {State.CANCELLED: State.SUCCEEDED})
    check_moves(Actor.WORKER, {State.CANCELLING: State.SUCCEEDED})


def test_the_mermaid_diagram_in_the_docs_draws_exactly_the_table() -> None:
    """docs/state-machine.md has one labelled edge per (source, target), actors listed."""
    text = Path("docs/state-machine.md").read_text()
    block = re.search(r"```mermaid\n(.*?)```", text, re.S)
    assert block, "no mermaid block"
    drawn: dict[tuple[str, str], set[str]] = {}
    for src, dst, label in re.findall(r"^\s*(\w+|\[\*\]) --> (\w+) ?: ?(.*)$", block[1], re.M):
        if src == "[*]":
            continue
        drawn[(src, dst)] = {a.strip() for a in label.split(",")}
    table: dict[tuple[str, str], set[str]] = {}
    for (state, actor), targets in TRANSITIONS.items():
        for target in targets:
            table.setdefault((state.value, target.value), set()).add(actor.value)
    assert table == drawn
