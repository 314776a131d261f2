r"""What Discord accepts as application command definitions on a bulk overwrite.

https://discord.com/developers/docs/interactions/application-commands#application-command-object:
CHAT_INPUT names and option names match ``^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$`` and
use lowercase where a letter has one; descriptions are 1-100 characters; at most 25 options
(and subcommands) per level, required options before optional ones, at most 25 choices with
names 1-100 and string values up to 100, min_length 0-6000 and max_length 1-6000, and at most
8000 characters of names, descriptions and values in one slash command (#slash-commands).
Discord answers 400 / 50035 with the failing field; the inner codes
APPLICATION_COMMAND_INVALID_NAME and APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID are observed,
APPLICATION_COMMAND_TOO_LARGE is assumed. A scope holds at most 100 slash, 15 user and 15
message commands (#registering-a-command; else 30032). Nothing is stored when one definition
is refused.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from . import errors

CHAT_INPUT, USER, MESSAGE = 1, 2, 3
SUB_COMMAND, SUB_COMMAND_GROUP, STRING_OPTION = 1, 2, 3
# Commands of each type one scope (global, or one guild) may hold.
MAX_COMMANDS = {CHAT_INPUT: 100, USER: 15, MESSAGE: 15}
MAX_COMMAND_SIZE = 8000


def _valid_name(name: Any) -> bool:
    # Python's re has no \p{L}: letters and digits are str.isalnum(); the combining marks of
    # Devanagari and Thai (category M*) are allowed too.
    return (
        isinstance(name, str)
        and 1 <= len(name) <= 32
        and name == name.lower()
        and all(
            ch in "-_'" or ch.isalnum() or unicodedata.category(ch).startswith("M") for ch in name
        )
    )


def _bad_length(path: list[str | int], low: int, high: int) -> dict[str, Any]:
    return errors.field_error(
        path, "BASE_TYPE_BAD_LENGTH", f"Must be between {low} and {high} in length."
    )


def _name_and_description_errors(item: dict[str, Any], path: list[str | int]) -> dict[str, Any]:
    """A slash command's or option's name (lowercase, the allowed characters, 1-32) and its
    description (1-100)."""
    problems: dict[str, Any] = {}
    if not _valid_name(item.get("name")):
        errors.merge_errors(
            problems,
            errors.field_error(
                [*path, "name"], "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
            ),
        )
    description = item.get("description")
    if not isinstance(description, str) or not 1 <= len(description) <= 100:
        errors.merge_errors(problems, _bad_length([*path, "description"], 1, 100))
    return problems


def _options_errors(options: Any, path: list[str | int]) -> dict[str, Any]:
    problems: dict[str, Any] = {}
    if not isinstance(options, list):
        return problems
    if len(options) > 25:
        errors.merge_errors(
            problems,
            errors.field_error(path, "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."),
        )
    optional_seen = False
    for j, opt in enumerate(options):
        if not isinstance(opt, dict):
            continue
        here: list[str | int] = [*path, j]
        errors.merge_errors(problems, _name_and_description_errors(opt, here))
        otype = opt.get("type")
        if otype in (SUB_COMMAND, SUB_COMMAND_GROUP):
            errors.merge_errors(problems, _options_errors(opt.get("options"), [*here, "options"]))
            continue
        if opt.get("required"):
            if optional_seen:
                errors.merge_errors(
                    problems,
                    errors.field_error(
                        here,
                        "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                        "Required options must be placed before non-required options",
                    ),
                )
        else:
            optional_seen = True
        choices = opt.get("choices") or []
        if len(choices) > 25:
            errors.merge_errors(
                problems,
                errors.field_error(
                    [*here, "choices"], "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                ),
            )
        for k, choice in enumerate(choices):
            name = choice.get("name") if isinstance(choice, dict) else None
            if not isinstance(name, str) or not 1 <= len(name) <= 100:
                errors.merge_errors(problems, _bad_length([*here, "choices", k, "name"], 1, 100))
            value = choice.get("value") if isinstance(choice, dict) else None
            if isinstance(value, str) and len(value) > 100:
                errors.merge_errors(
                    problems,
                    errors.field_error(
                        [*here, "choices", k, "value"],
                        "BASE_TYPE_MAX_LENGTH",
                        "Must be 100 or fewer in length.",
                    ),
                )
        for key, low in (("min_length", 0), ("max_length", 1)):
            value = opt.get(key)
            if otype == STRING_OPTION and isinstance(value, int) and not low <= value <= 6000:
                code, text = (
                    ("NUMBER_TYPE_MAX", "int value should be less than or equal to 6000.")
                    if value > 6000
                    else ("NUMBER_TYPE_MIN", f"int value should be greater than or equal to {low}.")
                )
                errors.merge_errors(problems, errors.field_error([*here, key], code, text))
    return problems


def _longest(item: dict[str, Any], key: str) -> int:
    """A field's length for the size limit: of a localized field only its longest version
    (the default value included) counts."""
    versions = [item.get(key), *(item.get(f"{key}_localizations") or {}).values()]
    return max((len(str(v)) for v in versions if v is not None), default=0)


def command_size(item: dict[str, Any]) -> int:
    """The characters of a slash command (or option) that count towards the 8000 limit: its
    name and description, its options' (subcommands and groups included) and its choices'
    names and values."""
    size = _longest(item, "name") + _longest(item, "description")
    for option in item.get("options") or []:
        if isinstance(option, dict):
            size += command_size(option)
    for choice in item.get("choices") or []:
        if isinstance(choice, dict):
            size += _longest(choice, "name") + len(str(choice.get("value", "")))
    return size


def _command_errors(cmd: dict[str, Any], path: list[str | int]) -> dict[str, Any]:
    problems: dict[str, Any] = {}
    if int(cmd.get("type", CHAT_INPUT)) != CHAT_INPUT:
        return problems  # USER / MESSAGE commands: any 1-32 name, empty description
    if command_size(cmd) > MAX_COMMAND_SIZE:
        errors.merge_errors(
            problems,
            errors.field_error(
                path,
                "APPLICATION_COMMAND_TOO_LARGE",
                f"Command exceeds maximum size ({MAX_COMMAND_SIZE})",
            ),
        )
    errors.merge_errors(problems, _name_and_description_errors(cmd, path))
    errors.merge_errors(problems, _options_errors(cmd.get("options"), [*path, "options"]))
    return problems


def validate_commands(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, list):
        raise errors.invalid_form_body(
            errors.field_error([], "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType")
        )
    for ctype, most in MAX_COMMANDS.items():
        if sum(1 for c in body if isinstance(c, dict) and int(c.get("type", 1)) == ctype) > most:
            raise errors.DiscordError(400, 30032, "Maximum number of application commands reached")
    seen: set[tuple[str, int]] = set()
    problems: dict[str, Any] = {}
    for i, cmd in enumerate(body):
        if isinstance(cmd, dict):
            errors.merge_errors(problems, _command_errors(cmd, [i]))
    if problems:
        raise errors.invalid_form_body(problems)
    for i, cmd in enumerate(body):
        key = (str(cmd.get("name")), int(cmd.get("type", 1)))
        if key in seen:
            raise errors.invalid_form_body(
                errors.field_error(
                    [i],
                    "APPLICATION_COMMANDS_DUPLICATE_NAME",
                    f"Application command names must be unique: {key[0]}",
                )
            )
        seen.add(key)
    return body
