"""Message payload limits, reported the way Discord does: 400 / 50035 with a nested ``errors`` body.

Limits from https://discord.com/developers/docs/resources/message#create-message (content 2000),
https://discord.com/developers/docs/resources/message#embed-object-embed-limits (title 256,
description 4096, 25 fields, field name 256 / value 1024, footer 2048, author 256, 10 embeds,
6000 characters in total), autocomplete choices and upload sizes (each function cites its
page); a message's components are checked by :mod:`discord_emulator.component_limits`. Empty
messages: 400 / 50006; files over the limit: 413 / 40005.
"""

from __future__ import annotations

from typing import Any

from .component_limits import IS_COMPONENTS_V2, component_errors, max_length, required
from .errors import (
    empty_message,
    field_error,
    invalid_form_body,
    merge_errors,
    request_entity_too_large,
)
from .mentions import validate_allowed_mentions

MAX_CONTENT = 2000
MAX_EMBEDS = 10
MAX_EMBED_TOTAL = 6000
MAX_NONCE = 25


def _embed_errors(embeds: list[Any], prefix: list[str | int]) -> dict[str, Any]:
    errors: dict[str, Any] = {}

    def add(err: dict[str, Any] | None) -> None:
        if err:
            merge_errors(errors, err)

    if len(embeds) > MAX_EMBEDS:
        add(
            field_error(
                [*prefix, "embeds"],
                "BASE_TYPE_MAX_LENGTH",
                f"Must be {MAX_EMBEDS} or fewer in length.",
            )
        )
        return errors
    total = 0
    for i, embed in enumerate(embeds):
        if not isinstance(embed, dict):
            add(
                field_error(
                    [*prefix, "embeds", i],
                    "DICT_TYPE_CONVERT",
                    "Only dictionaries may be used in a DictType",
                )
            )
            continue
        p: list[str | int] = [*prefix, "embeds", i]
        add(max_length([*p, "title"], embed.get("title"), 256))
        add(max_length([*p, "description"], embed.get("description"), 4096))
        footer = embed.get("footer") or {}
        author = embed.get("author") or {}
        add(max_length([*p, "footer", "text"], footer.get("text"), 2048))
        add(max_length([*p, "author", "name"], author.get("name"), 256))
        fields = embed.get("fields") or []
        if len(fields) > 25:
            add(
                field_error(
                    [*p, "fields"], "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
            )
        for j, fld in enumerate(fields[:25]):
            for key, limit in (("name", 256), ("value", 1024)):
                # Embed Field Structure: name and value are required (an empty string is
                # refused like a missing one).
                if not fld.get(key):
                    add(required([*p, "fields", j, key]))
                add(max_length([*p, "fields", j, key], fld.get(key), limit))
        for text in (
            embed.get("title"),
            embed.get("description"),
            footer.get("text"),
            author.get("name"),
            *[f.get("name") for f in fields],
            *[f.get("value") for f in fields],
        ):
            if isinstance(text, str):
                total += len(text)
    if total > MAX_EMBED_TOTAL and not errors:
        add(
            field_error(
                [*prefix, "embeds"],
                "MAX_EMBED_SIZE_EXCEEDED",
                f"Embed size exceeds maximum size of {MAX_EMBED_TOTAL}",
            )
        )
    return errors


def validate_choices(choices: list[Any]) -> None:
    """Autocomplete result (response type 8): at most 25 choices, each name 1-100 characters and
    a string value of at most 100
    (https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-option-choice-structure)."""
    if len(choices) > 25:
        raise invalid_form_body(
            field_error(
                ["data", "choices"], "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
            )
        )
    errors: dict[str, Any] = {}
    for i, choice in enumerate(choices):
        p: list[str | int] = ["data", "choices", i]
        name = choice.get("name") if isinstance(choice, dict) else None
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            merge_errors(
                errors,
                field_error(
                    [*p, "name"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                ),
            )
        value = choice.get("value") if isinstance(choice, dict) else None
        err = max_length([*p, "value"], value, 100)
        if err:
            merge_errors(errors, err)
    if errors:
        raise invalid_form_body(errors)


# Uploads: 10 MiB per file without boosts (https://discord.com/developers/docs/reference#uploading-files;
# the interaction payload's attachment_size_limit says the same). Larger: 413 / 40005.
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
# "The maximum request size when sending a message is 25 MiB"
# (https://discord.com/developers/docs/resources/message#create-message, Limitations).
MAX_REQUEST_BYTES = 25 * 1024 * 1024


def validate_upload_sizes(sizes: list[int]) -> None:
    if any(size > MAX_UPLOAD_BYTES for size in sizes) or sum(sizes) > MAX_REQUEST_BYTES:
        raise request_entity_too_large()


def validate_message(
    payload: dict[str, Any],
    *,
    prefix: list[str | int] | None = None,
    require_content: bool = True,
    has_files: bool = False,
    components_v2: bool = False,
) -> None:
    """Raise 50035 for limit violations, then 50006 for an empty message (create only).
    ``components_v2``: the message being edited already has IS_COMPONENTS_V2."""
    pre = prefix or []
    errors: dict[str, Any] = {}
    v2 = components_v2 or bool(int(payload.get("flags") or 0) & IS_COMPONENTS_V2)
    if v2:
        # "When the flag IS_COMPONENTS_V2 is set, the message can only contain components.
        # Providing content, embeds, sticker_ids, poll ... will fail with a 400"
        # (https://discord.com/developers/docs/resources/message#create-message); the inner
        # code is observed.
        for key in ("content", "embeds", "sticker_ids", "poll"):
            if payload.get(key):
                merge_errors(
                    errors,
                    field_error(
                        [*pre, key],
                        "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
                        f"The '{key}' field cannot be used when using "
                        "MessageFlags.IS_COMPONENTS_V2",
                    ),
                )
    err = max_length([*pre, "content"], payload.get("content"), MAX_CONTENT)
    if err:
        merge_errors(errors, err)
    nonce = payload.get("nonce")
    if nonce is not None and len(str(nonce)) > MAX_NONCE:
        # Create Message: "nonce ... (up to 25 characters)"
        # (https://discord.com/developers/docs/resources/message#create-message).
        merge_errors(
            errors,
            field_error(
                [*pre, "nonce"], "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_NONCE} or fewer in length."
            ),
        )
    embeds = payload.get("embeds")
    if isinstance(embeds, list):
        merge_errors(errors, _embed_errors(embeds, pre))
    components = payload.get("components")
    if isinstance(components, list):
        merge_errors(errors, component_errors(components, pre, v2=v2))
    if errors:
        raise invalid_form_body(errors)
    validate_allowed_mentions(payload.get("allowed_mentions"), pre)
    if require_content and not (
        payload.get("content")
        or payload.get("embeds")
        or payload.get("components")
        or payload.get("sticker_ids")
        or payload.get("poll")
        or has_files
    ):
        raise empty_message()
