"""The page's composer language: ``/job status id:01J...`` parsed against the registered commands.

Discord's client turns what a user types into a command path and typed options using the
application's synced command schema; this module does the same for the chat page, and offers
completions (command paths, then the options still missing, then an option's declared choices).
A leading bare value fills the first option (``/job status 01J...``), a convenience the real
client does not have.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

# https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-option-type
SUB_COMMAND, SUB_COMMAND_GROUP = 1, 2
STRING = 3
BOOLEAN, USER, CHANNEL, MENTIONABLE = 5, 6, 7, 9
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


class CommandLineError(ValueError):
    """What the user typed does not match a registered command (shown under the composer)."""


@dataclass
class Invocation:
    """A parsed slash command: the path (``job status``) and option values."""

    path: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Suggestion:
    """One completion: ``text`` replaces the composer's content."""

    text: str
    label: str
    description: str = ""


def _chat_commands(commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in commands if int(c.get("type", 1)) == 1]


def _subs(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        o for o in node.get("options") or [] if o.get("type") in (SUB_COMMAND, SUB_COMMAND_GROUP)
    ]


def _leaves(commands: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every invocable path (``summon``, ``job status``...) with its schema node."""
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(prefix: str, node: dict[str, Any]) -> None:
        subs = _subs(node)
        if not subs:
            out.append((prefix, node))
        for sub in subs:
            walk(f"{prefix} {sub['name']}", sub)

    for cmd in _chat_commands(commands):
        walk(cmd["name"], cmd)
    return out


def _signature(node: dict[str, Any]) -> str:
    parts = []
    for opt in node.get("options") or []:
        parts.append(f"{opt['name']}:" if opt.get("required") else f"[{opt['name']}:]")
    return " ".join(parts)


def _split_path(text: str, commands: list[dict[str, Any]]) -> tuple[str, dict[str, Any], str]:
    """``/job status id:X`` -> (``job status``, schema node, ``id:X``)."""
    body = text.strip().removeprefix("/")
    words = body.split(None, 1)
    if not words:
        raise CommandLineError("type a command after /")
    node = next((c for c in _chat_commands(commands) if c["name"] == words[0]), None)
    if node is None:
        raise CommandLineError(f"unknown command /{words[0]}")
    path = [words[0]]
    rest = words[1] if len(words) > 1 else ""
    while _subs(node):
        parts = rest.split(None, 1)
        sub = next((s for s in _subs(node) if parts and s["name"] == parts[0]), None)
        if sub is None:
            names = ", ".join(s["name"] for s in _subs(node))
            raise CommandLineError(f"/{' '.join(path)} needs one of: {names}")
        node, rest = sub, parts[1] if len(parts) > 1 else ""
        path.append(sub["name"])
    return " ".join(path), node, rest


def _option_spans(rest: str, names: list[str]) -> list[tuple[str | None, str]]:
    """Split ``a:1 b:two words`` into (name, raw value) pairs; text before the first known
    ``name:`` comes back with name None."""
    if not names:
        return [(None, rest.strip())] if rest.strip() else []
    pattern = re.compile(r"(?:^|(?<=\s))(" + "|".join(map(re.escape, names)) + r"):")
    spans: list[tuple[str | None, str]] = []
    matches = list(pattern.finditer(rest))
    head = rest[: matches[0].start()] if matches else rest
    if head.strip():
        spans.append((None, head.strip()))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(rest)
        spans.append((m.group(1), rest[m.end() : end].strip()))
    return spans


def _unquote(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        try:
            return " ".join(shlex.split(raw))
        except ValueError:
            return raw
    return raw


def parse(
    text: str,
    commands: list[dict[str, Any]],
    *,
    lookup: dict[str, int] | None = None,
) -> Invocation:
    """Parse ``/path opt:value ...`` against ``commands`` (the registered schema).

    Args:
        text: what the user typed, starting with ``/``.
        commands: registered application commands (global and the guild's).
        lookup: names (``alice``, ``#general``) to ids, for user and channel options.

    Raises:
        CommandLineError: unknown command, subcommand or option, a repeated option, a missing
            (or empty) required option, a string outside its declared length (Discord's client
            refuses it before sending) or a value that is not a boolean where one is expected.
    """
    path, node, rest = _split_path(text, commands)
    schema = {o["name"]: o for o in node.get("options") or []}
    options: dict[str, Any] = {}
    for name, raw in _option_spans(rest, list(schema)):
        if name is None:
            free = [n for n in schema if n not in options]
            if not free:
                raise CommandLineError(f"unexpected text {raw!r}")
            name = free[0]
        if name in options:
            raise CommandLineError(f"option {name}: given twice")
        value = _unquote(raw)
        if not value.strip():
            # Discord's client sends no empty value: a required option stays missing (below),
            # an optional one is simply not given.
            continue
        options[name] = _convert(schema[name], value, lookup or {})
        _check_length(schema[name], options[name])
    missing = [n for n, o in schema.items() if o.get("required") and n not in options]
    if missing:
        raise CommandLineError(f"/{path} needs {', '.join(m + ':' for m in missing)}")
    return Invocation(path, options)


def leaf_options(commands: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every invocable path with its options, as Discord's client lays out option fields."""
    return {path: list(node.get("options") or []) for path, node in _leaves(commands)}


def parse_fields(
    path: str,
    values: dict[str, str],
    commands: list[dict[str, Any]],
    *,
    lookup: dict[str, int] | None = None,
) -> Invocation:
    """Options typed into separate fields (``{"task": "count", "kind": "demo"}``), checked as
    :func:`parse` checks a typed line; empty fields are options not given.

    Raises:
        CommandLineError: as :func:`parse`.
    """
    schema = {o["name"]: o for o in leaf_options(commands).get(path, [])}
    if path not in leaf_options(commands):
        raise CommandLineError(f"unknown command /{path}")
    options: dict[str, Any] = {}
    for name, raw in values.items():
        if name not in schema:
            raise CommandLineError(f"/{path} has no option {name}")
        if str(raw).strip():
            options[name] = _convert(schema[name], str(raw).strip(), lookup or {})
            _check_length(schema[name], options[name])
    missing = [n for n, o in schema.items() if o.get("required") and n not in options]
    if missing:
        raise CommandLineError(f"/{path} needs {', '.join(m + ':' for m in missing)}")
    return Invocation(path, options)


def _check_length(opt: dict[str, Any], value: Any) -> None:
    """A string option's ``min_length``/``max_length``, as Discord's client enforces them."""
    if opt.get("type") != STRING or not isinstance(value, str):
        return
    most = opt.get("max_length")
    least = opt.get("min_length")
    if most is not None and len(value) > int(most):
        raise CommandLineError(
            f"option {opt['name']}: at most {most} characters (this is {len(value):,})"
        )
    if least is not None and len(value) < int(least):
        raise CommandLineError(f"option {opt['name']}: at least {least} characters")


def _convert(opt: dict[str, Any], raw: str, lookup: dict[str, int]) -> Any:
    otype = opt.get("type")
    if otype == BOOLEAN:
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise CommandLineError(f"option {opt['name']}: expected true or false, got {raw!r}")
    if otype in (USER, CHANNEL, MENTIONABLE):
        key = raw.strip("<>@#!")
        if key.isdigit():
            return int(key)
        found = lookup.get(raw.lstrip("@").lower()) or lookup.get(raw.lower())
        if found is None:
            raise CommandLineError(f"option {opt['name']}: unknown {raw!r}")
        return found
    for choice in opt.get("choices") or []:
        if raw in (str(choice.get("name")), str(choice.get("value"))):
            return choice["value"]
    return raw


@dataclass
class Focus:
    """The user is typing the value of an option the bot autocompletes."""

    path: str
    options: dict[str, Any]
    name: str
    value: str
    base: str  # the text before the value; a choice's value is appended to it


def focus(
    text: str, commands: list[dict[str, Any]], *, lookup: dict[str, int] | None = None
) -> Focus | None:
    """The autocompleted option being typed at the end of ``text``, if any (Discord sends
    an autocomplete interaction for it with the options given so far)."""
    if not text.startswith("/"):
        return None
    try:
        path, node, rest = _split_path(text, commands)
    except CommandLineError:
        return None
    schema = {o["name"]: o for o in node.get("options") or []}
    spans = _option_spans(rest, list(schema))
    if not spans or spans[-1][0] is None or not schema[spans[-1][0]].get("autocomplete"):
        return None
    name = spans[-1][0]
    options: dict[str, Any] = {}
    for key, raw in spans[:-1]:
        if key is not None:
            with contextlib.suppress(CommandLineError):
                options[key] = _convert(schema[key], _unquote(raw), lookup or {})
    start = text.rfind(f"{name}:") + len(name) + 1
    return Focus(path, options, name, text[start:], text[:start])


def suggest(text: str, commands: list[dict[str, Any]], limit: int = 10) -> list[Suggestion]:
    """Completions for a partly typed command line (empty when ``text`` is not a command)."""
    if not text.startswith("/"):
        return []
    typed = text[1:]
    leaves = _leaves(commands)
    # Still typing the path: offer every path that extends it.
    matching = [(p, n) for p, n in leaves if p.startswith(typed.rstrip()) or p.startswith(typed)]
    exact = next(((p, n) for p, n in leaves if typed == p or typed.startswith(p + " ")), None)
    if exact is None:
        return [
            Suggestion(f"/{p} ", f"/{p} {_signature(n)}".rstrip(), n.get("description", ""))
            for p, n in matching[:limit]
        ]
    path, node = exact
    rest = typed[len(path) :]
    schema = node.get("options") or []
    spans = _option_spans(rest, [o["name"] for o in schema])
    given = {name for name, _ in spans if name is not None}
    out: list[Suggestion] = []
    # Typing a value for an option with declared choices: offer the choices.
    last = spans[-1][0] if spans else None
    opt = next((o for o in schema if o["name"] == last), None)
    if opt is not None and opt.get("choices") and not rest.endswith(" "):
        value = spans[-1][1]
        base = text[: len(text) - len(value)] if value else text
        for choice in opt.get("choices") or []:
            label = str(choice.get("name"))
            if label.lower().startswith(value.lower()) and label != value:
                out.append(
                    Suggestion(f"{base}{choice['value']} ", label, opt.get("description", ""))
                )
        return out[:limit]
    # Otherwise: the options not given yet, required ones first; a half-typed name filters.
    words = rest.split()
    partial = words[-1] if words and not rest.endswith(" ") and ":" not in words[-1] else ""
    base = text[: len(text) - len(partial)] if partial else text
    if not base.endswith(" "):
        base += " "
    remaining = [o for o in schema if o["name"] not in given and o["name"].startswith(partial)]
    remaining.sort(key=lambda o: not o.get("required"))
    for opt in remaining:
        tag = "" if opt.get("required") else " (optional)"
        out.append(
            Suggestion(f"{base}{opt['name']}:", f"{opt['name']}:{tag}", opt.get("description", ""))
        )
    return out[:limit]


__all__ = [
    "CommandLineError",
    "Focus",
    "Invocation",
    "Suggestion",
    "focus",
    "leaf_options",
    "parse",
    "parse_fields",
    "suggest",
]
