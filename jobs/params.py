"""What a person types for a job: ``NAME=VALUE`` parameters (``errand job submit --param``,
the bot's ``/summon params:``), and which parameter a free-text task fills.

Every edge that takes parameters from a person reads them here, so a value means the same
wherever it was typed: JSON where it parses as JSON, else text, within Errand's bounds
(:mod:`jobs.limits`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import jobs.limits as limits
from jobs.limits import InvalidInput

TASK_FIELDS = ("prompt", "task", "text")
"""The parameters a free-text task fills, in order of preference: ``/summon task:...`` fills the
first one the kind has (its :attr:`~jobs.runtime.registry.Kind.task_field`), and ``errand job
status`` shows the first one set as the job's task."""


def parse_params(pairs: Iterable[str], *, name: str = "--param") -> dict[str, Any]:
    """``NAME=VALUE`` pairs as a job's parameters; a value is JSON where it parses as JSON,
    else text.

    Args:
        pairs: one pair each, as typed.
        name: what the pairs are called where they were typed, for the messages.

    Raises:
        InvalidInput: a pair without a name or ``=``, a name given twice, a number that is
            not finite, nesting too deep, text that is not text (a NUL, a lone surrogate), or
            parameters over the bounds; one line naming the pair.
    """
    params: dict[str, Any] = {}
    for pair in pairs:
        limits.text(name, pair, limits.MAX_PARAMS_BYTES)
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"bad {name} {pair[:40]!r}: expected key=value")
        limits.text(f"{name} name", key)
        if key in params:  # the last one would win silently: say so instead
            raise InvalidInput(f"bad {name} {key}: given twice; give it once")
        try:
            params[key] = json.loads(raw, parse_constant=_refuse_constant)
        except json.JSONDecodeError:
            params[key] = raw
        except RecursionError:
            depth = f"nested deeper than {limits.MAX_DEPTH} levels"
            raise InvalidInput(f"bad {name} {key}: {depth}") from None
        except ValueError as exc:
            raise InvalidInput(f"bad {name} {key}: {exc}") from None
    limits.json_value("params", params)
    return params


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"numbers must be finite, not {name}")
