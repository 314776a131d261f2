"""Message payload limits, reported the way Discord does: 400 / 50035 with a nested ``errors`` body.

Limits from https://discord.com/developers/docs/resources/message#create-message (content 2000),
https://discord.com/developers/docs/resources/message#embed-object-embed-limits (title 256,
description 4096, 25 fields, field name 256 / value 1024, footer 2048, author 256, 10 embeds,
6000 characters in total) and
https://discord.com/developers/docs/interactions/message-components (5 action rows, 5 buttons
per row, custom_id 100, label 80), select menus, modals, autocomplete choices and upload sizes
(each function cites its page). Empty messages: 400 / 50006; files over the limit: 413 / 40005.
"""

from __future__ import annotations

from typing import Any

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
IS_COMPONENTS_V2 = 1 << 15


def _max_len(path: list[str | int], value: Any, limit: int) -> dict[str, Any] | None:
    if isinstance(value, str) and len(value) > limit:
        return field_error(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
    return None


def _required(path: list[str | int]) -> dict[str, Any]:
    return field_error(path, "BASE_TYPE_REQUIRED", "This field is required")


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
            for key, limit in (("name", 256), ("value", 1024)):
                # Embed Field Structure: name and value are required (an empty string is
                # refused like a missing one).
                if not fld.get(key):
                    add(_required([*p, "fields", j, key]))
                add(_max_len([*p, "fields", j, key], fld.get(key), limit))
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


# https://discord.com/developers/docs/components/reference#button: type 2; styles 5 (link) and 6
# (premium) carry a url / sku_id instead of a custom_id.
BUTTON, LINK_STYLE, PREMIUM_STYLE = 2, 5, 6


def _walk_components(
    components: list[Any], path: list[str | int]
) -> list[tuple[list[str | int], dict[str, Any]]]:
    """Every component of a message with its path, in order (rows, v2 containers, sections'
    accessories and labels' inner component)."""
    found: list[tuple[list[str | int], dict[str, Any]]] = []
    for i, comp in enumerate(components):
        if not isinstance(comp, dict):
            continue
        here: list[str | int] = [*path, i]
        found.append((here, comp))
        children = comp.get("components")
        if isinstance(children, list):
            found += _walk_components(children, [*here, "components"])
        for key in ("accessory", "component"):
            inner = comp.get(key)
            if isinstance(inner, dict):
                found.append(([*here, key], inner))
    return found


def _custom_id_errors(components: list[Any], prefix: list[str | int]) -> dict[str, Any]:
    """Interactive components need a custom_id (link and premium buttons must not have one),
    and "multiple components on the same message must not share the same custom_id"
    (https://discord.com/developers/docs/components/reference#anatomy-of-a-component-custom-id;
    Button: "Non-link and non-premium buttons must have a custom_id"). Discord reports a
    duplicate at its second use with COMPONENT_CUSTOM_ID_DUPLICATED (observed)."""
    errors: dict[str, Any] = {}
    seen: set[str] = set()
    for path, comp in _walk_components(components, [*prefix, "components"]):
        ctype = comp.get("type")
        custom_id = comp.get("custom_id")
        if ctype == BUTTON and comp.get("style") in (LINK_STYLE, PREMIUM_STYLE):
            continue
        interactive = ctype == BUTTON or ctype in SELECT_TYPES
        if interactive and (not isinstance(custom_id, str) or not custom_id):
            merge_errors(errors, _required([*path, "custom_id"]))
            continue
        if not isinstance(custom_id, str):
            continue
        if custom_id in seen:
            merge_errors(
                errors,
                field_error(
                    [*path, "custom_id"],
                    "COMPONENT_CUSTOM_ID_DUPLICATED",
                    "Component custom id cannot be duplicated",
                ),
            )
        seen.add(custom_id)
    return errors


# "Messages allow up to 40 total components" with IS_COMPONENTS_V2, instead of 5 action rows
# (https://discord.com/developers/docs/components/reference); the inner code is assumed.
MAX_V2_COMPONENTS = 40


def _component_errors(
    components: list[Any], prefix: list[str | int], *, v2: bool = False
) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    if v2:
        if len(_walk_components(components, [])) > MAX_V2_COMPONENTS:
            return field_error(
                [*prefix, "components"],
                "BASE_TYPE_MAX_LENGTH",
                f"Must be {MAX_V2_COMPONENTS} or fewer in length.",
            )
    elif len(components) > 5:
        return field_error(
            [*prefix, "components"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length."
        )
    merge_errors(errors, _custom_id_errors(components, prefix))
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
            if isinstance(child, dict) and child.get("type") in SELECT_TYPES:
                merge_errors(errors, _select_errors(child, [*p, j]))
    return errors


# https://discord.com/developers/docs/components/reference#string-select: 1-25 options (string
# select only), option label/value/description 100, placeholder 150, min_values 0-25,
# max_values 1-25.
SELECT_TYPES = (3, 5, 6, 7, 8)
STRING_SELECT = 3


def _select_errors(select: dict[str, Any], p: list[str | int]) -> dict[str, Any]:
    errors: dict[str, Any] = {}

    def add(err: dict[str, Any] | None) -> None:
        if err:
            merge_errors(errors, err)

    add(_max_len([*p, "placeholder"], select.get("placeholder"), 150))
    if select.get("type") == STRING_SELECT:
        options = select.get("options") or []
        if not 1 <= len(options) <= 25:
            add(
                field_error(
                    [*p, "options"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 25 in length."
                )
            )
        for k, option in enumerate(options[:25]):
            for key in ("label", "value", "description"):
                add(_max_len([*p, "options", k, key], option.get(key), 100))
    for key, low in (("min_values", 0), ("max_values", 1)):
        value = select.get(key)
        if isinstance(value, int) and not low <= value <= 25:
            code = "NUMBER_TYPE_MAX" if value > 25 else "NUMBER_TYPE_MIN"
            add(field_error([*p, key], code, f"int value should be between {low} and 25."))
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
        err = _max_len([*p, "value"], value, 100)
        if err:
            merge_errors(errors, err)
    if errors:
        raise invalid_form_body(errors)


def validate_modal(data: dict[str, Any]) -> None:
    """Modal response (type 9): title 1-45 and custom_id 1-100 characters, 1-5 components
    (https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-modal)."""
    errors: dict[str, Any] = {}
    for key, limit in (("title", 45), ("custom_id", 100)):
        value = data.get(key)
        if not isinstance(value, str) or not 1 <= len(value) <= limit:
            merge_errors(
                errors,
                field_error(
                    ["data", key],
                    "BASE_TYPE_BAD_LENGTH",
                    f"Must be between 1 and {limit} in length.",
                ),
            )
    components = data.get("components") or []
    if not 1 <= len(components) <= 5:
        merge_errors(
            errors,
            field_error(
                ["data", "components"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length."
            ),
        )
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
    err = _max_len([*pre, "content"], payload.get("content"), MAX_CONTENT)
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
        merge_errors(errors, _component_errors(components, pre, v2=v2))
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
