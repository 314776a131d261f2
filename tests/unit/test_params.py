"""What a person types for a job's parameters, read the same at every edge (jobs/params.py)."""

from __future__ import annotations

import pytest

from bot.commands.summon import summon_params
from jobs.limits import MAX_DEPTH, InvalidInput
from jobs.params import parse_params


def test_values_are_json_where_they_parse_and_text_elsewhere() -> None:
    assert parse_params(["steps=3", "note=two words", 'tags=["a"]', "flag=true", "empty="]) == {
        "steps": 3,
        "note": "two words",
        "tags": ["a"],
        "flag": True,
        "empty": "",
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("steps", "bad --param 'steps': expected key=value"),
        ("=1", "bad --param '=1': expected key=value"),
        ("x=NaN", "bad --param x: numbers must be finite, not NaN"),
        ("x=" + "[" * 5000 + "]" * 5000, f"bad --param x: nested deeper than {MAX_DEPTH} levels"),
        ("x=a\x00b", "--param: contains a NUL character"),
        ('x="a\\ud800b"', "params: contains \\ud800, a lone surrogate, which is not text"),
        ("x=a\udcffb", "--param: contains \\udcff, a lone surrogate, which is not text"),
    ],
)
def test_a_pair_that_is_not_a_parameter_is_one_line_naming_it(pair: str, message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_params([pair])
    assert str(refused.value) == message


def test_the_bot_reads_its_option_as_the_cli_reads_its_pairs() -> None:
    """``/summon params:`` splits its text like a shell, then reads the pairs as ``--param``
    does: the same values, and the same refusals named after the option."""
    typed = 'steps=3 note="two words" flag=true'
    assert summon_params(typed) == parse_params(["steps=3", "note=two words", "flag=true"])
    with pytest.raises(InvalidInput) as refused:
        summon_params("x=Infinity")
    assert str(refused.value) == "bad params x: numbers must be finite, not Infinity"


def test_a_parameter_given_twice_is_refused_not_overwritten() -> None:
    """``-p steps=3 -p steps=4`` (or ``params:steps=3 steps=4``) would keep one silently."""
    with pytest.raises(InvalidInput) as refused:
        parse_params(["steps=3", "steps=4"])
    assert str(refused.value) == "bad --param steps: given twice; give it once"
    with pytest.raises(InvalidInput) as refused:
        summon_params("steps=3 note=x steps=4")
    assert str(refused.value) == "bad params steps: given twice; give it once"
