"""The composer refuses what Discord's client refuses before sending (a string over its declared
``max_length``), the same for a typed line and for option fields; fields name a command path
and its options as the registered schema declares them."""

from __future__ import annotations

from typing import Any

import pytest

from discord_emulator.web.commandline import CommandLineError, leaf_options, parse, parse_fields

COMMANDS: list[dict[str, Any]] = [
    {
        "name": "summon",
        "type": 1,
        "description": "Start a job",
        "options": [
            {"name": "task", "type": 3, "required": True, "max_length": 10, "description": ""},
            {"name": "note", "type": 3, "min_length": 2, "description": ""},
            {"name": "steps", "type": 4, "description": ""},
            {"name": "loud", "type": 5, "description": ""},
        ],
    },
    {
        "name": "job",
        "type": 1,
        "description": "Jobs",
        "options": [
            {
                "name": "status",
                "type": 1,
                "description": "",
                "options": [{"name": "id", "type": 3, "description": ""}],
            }
        ],
    },
]


def test_a_string_longer_than_its_max_length_is_refused_typed_or_in_fields() -> None:
    assert parse("/summon task:0123456789", COMMANDS).options == {"task": "0123456789"}
    with pytest.raises(CommandLineError, match=r"task: at most 10 characters \(this is 11\)"):
        parse("/summon task:0123456789x", COMMANDS)
    with pytest.raises(CommandLineError, match="task: at most 10 characters"):
        parse_fields("summon", {"task": "x" * 5000}, COMMANDS)
    with pytest.raises(CommandLineError, match="note: at least 2 characters"):
        parse("/summon task:a note:b", COMMANDS)


def test_fields_convert_like_a_typed_line_and_leave_empty_ones_out() -> None:
    inv = parse_fields("summon", {"task": "go", "note": "", "loud": "yes"}, COMMANDS)
    assert (inv.path, inv.options) == ("summon", {"task": "go", "loud": True})
    assert parse_fields("job status", {"id": "abc"}, COMMANDS).options == {"id": "abc"}
    with pytest.raises(CommandLineError, match="needs task:"):
        parse_fields("summon", {"task": "  "}, COMMANDS)
    with pytest.raises(CommandLineError, match="has no option"):
        parse_fields("summon", {"task": "go", "nope": "1"}, COMMANDS)
    with pytest.raises(CommandLineError, match="unknown command"):
        parse_fields("job", {}, COMMANDS)


def test_leaf_options_are_the_invocable_paths() -> None:
    found = leaf_options(COMMANDS)
    assert list(found) == ["summon", "job status"]
    assert [o["name"] for o in found["summon"]] == ["task", "note", "steps", "loud"]
