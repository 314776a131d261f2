"""``errand``'s help as a person reads it: commands in reading order, what to type next to each
option (``--limit INTEGER``, never a Python type), and the registered kinds under ``job
submit``.

The installed typer writes each parameter's Python annotation in the help (``<str>``,
``<bool>``) and builds the parameters itself, with no class of ours to build them with. What it
does offer: a command class (``cls=``), and for an option the ``metavar`` it shows in place of
the type. So every command of ``errand`` is a :class:`Command` (or a :class:`Group`), which, as
its help is written, gives each option its word as ``metavar`` (flags: none) and shows an
argument's word through :class:`_WordArgument`.
"""

from __future__ import annotations

import json
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

COMMAND_ORDER = ("worker", "job", "kind", "schedule", "outbox", "migrate", "prune")
"""The engine's commands in reading order: running it, working with jobs, upkeep. A transport's
commands (the bot's) come before them, in the order the transport defines them."""

TYPE_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH"}
"""What to write instead of a Python type next to a parameter without its own metavar."""


def _type_word(param: TyperOption | TyperArgument, ctx: Any) -> str | None:
    """``--json`` (a flag) takes nothing; ``--limit INTEGER``; ``--state queued|running...``."""
    if isinstance(param, TyperOption) and param.is_flag:
        return None
    label = param.display_type(ctx).strip("<>")
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]  # a repeatable option: the help says so
    return TYPE_WORDS.get(label, label)


class _WordArgument(TyperArgument):
    """An argument whose help shows what to type (``TEXT``) rather than its annotation."""

    def display_type_rich(self, ctx: Any) -> str | None:
        # A metavar is the argument's name in the help, already shown in its own column.
        return None if self.metavar is not None else _type_word(self, ctx)


def _in_words(params: list[Any], ctx: Any) -> None:
    """Have ``params`` (a command's, its ``--help`` included) show words in the help."""
    for param in params:
        if isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = _type_word(param, ctx) or ""
        elif isinstance(param, TyperArgument) and not isinstance(param, _WordArgument):
            # typer made it; the subclass only changes how its type reads in the help.
            param.__class__ = _WordArgument


class Command(TyperCommand):
    """An ``errand`` command: its help says what to type, in words."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _in_words(self.get_params(ctx), ctx)
        super().format_help(ctx, formatter)


class Group(TyperGroup):
    """A group of ``errand`` commands: its help says what to type, in words, and lists the
    commands in reading order (:data:`COMMAND_ORDER` for the engine's, after any other in the
    order they were added)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _in_words(self.get_params(ctx), ctx)
        super().format_help(ctx, formatter)

    def list_commands(self, ctx: Any) -> list[str]:
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(super().list_commands(ctx), key=lambda name: rank.get(name, -1))


def kind_rows() -> list[tuple[str, str, list[tuple[str, str, str]], str]]:
    """Every registered kind: name, description, parameters (name, "type, default", help) and
    an example command line."""
    from jobs.kinds import default_registry
    from jobs.settings import Settings

    registry = default_registry(Settings().extra_kinds)
    rows = []
    for name in registry.names():
        spec = registry.get(name)
        params = []
        example = [f"errand job submit {name}"]
        for field, info in spec.params.model_fields.items():
            word = _field_type(info.annotation)
            if info.is_required():
                what = f"{word}, required"
                example.append(f"-p {field}={_placeholder(word)}")
            else:
                default = info.get_default(call_default_factory=True)
                what = f"{word}, default {json.dumps(default, default=str)}"
            params.append((field, what, info.description or ""))
        if len(example) == 1 and params:
            field, info = next(iter(spec.params.model_fields.items()))
            value = json.dumps(info.get_default(call_default_factory=True), default=str)
            example.append(f"-p {field}={value}")
        rows.append((name, spec.description, params, " ".join(example)))
    return rows


def kinds_help_text() -> str:
    """The kinds as plain text (``job submit --help`` without rich)."""
    lines = ["Kinds (each parameter is given as --param NAME=VALUE):"]
    for name, description, params, _ in kind_rows():
        lines.append(f"{name}: {description}")
        lines += [f"  {p} ({what}): {text}" for p, what, text in params] or ["  no parameters"]
    lines.append("Examples:")
    lines += [f"  {example}" for *_, example in kind_rows()]
    # typer joins single newlines into one paragraph; a blank line is a line break.
    return "\n\n".join(lines)


def _field_type(annotation: Any) -> str:
    """A parameter's type in the words a person types it: integer, number, text, true|false,
    a JSON list or object."""
    import types
    import typing

    from pydantic import BaseModel

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _field_type(args[0])
    if origin is typing.Literal:
        return "|".join(str(a) for a in typing.get_args(annotation))
    words = {int: "integer", float: "number", str: "text", bool: "true|false"}
    if annotation in words:
        return words[annotation]
    if annotation is list or origin is list:
        return "JSON list"
    if (
        annotation is dict
        or origin is dict
        or (isinstance(annotation, type) and issubclass(annotation, BaseModel))
    ):
        return "JSON object"
    return "JSON"


def _placeholder(word: str) -> str:
    return {"integer": "3", "number": "1.5", "true|false": "true", "text": '"..."'}.get(
        word, "'{...}'"
    )


class SubmitCommand(Command):
    """``job submit``: its help lists the registered kinds, read when the help is shown."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        try:
            from rich.console import Console, Group
            from rich.panel import Panel
            from rich.table import Table
            from rich.text import Text
        except ImportError:  # typer without rich: plain text after the options
            self.epilog = kinds_help_text()
            super().format_help(ctx, formatter)
            return
        super().format_help(ctx, formatter)
        rows = kind_rows()
        table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column(style="dim", no_wrap=True)
        table.add_column()
        for name, description, params, _ in rows:
            table.add_row(name, "", Text(description, style="bold"))
            for field, what, text in params or [("", "", "no parameters")]:
                table.add_row(f"  {field}", what, text)
        hint = Text("Each parameter is given as --param NAME=VALUE (JSON values are parsed).")
        console = Console()
        console.print(
            Panel(
                Group(hint, table),
                title="Kinds",
                title_align="left",
                border_style="dim",
            )
        )
        examples = Text("\n".join(example for *_, example in rows))
        examples.append("\nerrand job submit demo -p steps=3 -p step_seconds=0.5 --json")
        console.print(Panel(examples, title="Examples", title_align="left", border_style="dim"))
