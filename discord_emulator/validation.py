"""Message payload limits, reported the way Discord does: 400 / 50035 with a nested ``errors`` body.

Limits from https://discord.com/developers/docs/resources/message#create-message (content 2000),
https://discord.com/developers/docs/resources/message#embed-object-embed-limits (title 256,
description 4096, 25 fields, field name 256 / value 1024, footer 2048, author 256, 10 embeds,
6000 characters in total) and
https://discord.com/developers/docs/interactions/message-components (5 action rows, 5 buttons
per row, custom_id 100, label 80). Empty messages: 400 / 50006.
"""

from __future__ import annotations

from typing import Any

from .errors import empty_message, field_error, invalid_form_body, merge_errors

MAX_CONTENT = 2000
MAX_EMBEDS = 10
MAX_EMBED_TOTAL = 6000


def _max_len(path: list[str | int], value: Any, limit: int) -> dict[str, Any] | None:
    if isinstance(value, str) and len(value) > limit:
        return field_error(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
    return None


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
        add(_max_len([*p, "title"], embed.get("title"), 256))
        add(_max_len([*p, "description"], embed.get("description"), 4096))
        footer = embed.get("footer") or {}
        author = embed.get("author") or {}
        add(_max_len([*p, "footer", "text"], footer.get("text"), 2048))
        add(_max_len([*p, "author", "name"], author.get("name"), 256))
        fields = embed.get("fields") or []
        if len(fields) > 25:
            add(
                field_error(
                    [*p, "fields"], "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
            )
        for j, fld in enumerate(fields[:25]):
            add(_max_len([*p, "fields", j, "name"], fld.get("name"), 256))
            add(_max_len([*p, "fields", j, "value"], fld.get("value"), 1024))
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


def _component_errors(components: list[Any], prefix: list[str | int]) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    if len(components) > 5:
        return field_error(
            [*prefix, "components"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length."
        )
    for i, row in enumerate(components):
        if not isinstance(row, dict) or row.get("type") != 1:
            continue  # components v2 layouts are accepted unchecked
        children = row.get("components") or []
        p: list[str | int] = [*prefix, "components", i, "components"]
        if not 1 <= len(children) <= 5:
            merge_errors(
                errors, field_error(p, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
            )
            continue
        for j, child in enumerate(children):
            for key, limit in (("custom_id", 100), ("label", 80)):
                err = _max_len([*p, j, key], child.get(key), limit)
                if err:
                    merge_errors(errors, err)
    return errors


def validate_message(
    payload: dict[str, Any],
    *,
    prefix: list[str | int] | None = None,
    require_content: bool = True,
    has_files: bool = False,
) -> None:
    """Raise 50035 for limit violations, then 50006 for an empty message (create only)."""
    pre = prefix or []
    errors: dict[str, Any] = {}
    err = _max_len([*pre, "content"], payload.get("content"), MAX_CONTENT)
    if err:
        merge_errors(errors, err)
    embeds = payload.get("embeds")
    if isinstance(embeds, list):
        merge_errors(errors, _embed_errors(embeds, pre))
    components = payload.get("components")
    if isinstance(components, list):
        merge_errors(errors, _component_errors(components, pre))
    if errors:
        raise invalid_form_body(errors)
    if require_content and not (
        payload.get("content")
        or payload.get("embeds")
        or payload.get("components")
        or payload.get("sticker_ids")
        or payload.get("poll")
        or has_files
    ):
        raise empty_message()
