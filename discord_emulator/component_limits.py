"""What Discord accepts as components, in a message and in a modal: 400 / 50035 with the failing
field, the way :mod:`discord_emulator.validation` reports a message's other limits.

Limits from https://discord.com/developers/docs/components/reference: 5 action rows of up to 5
buttons or a single select (40 components in all with IS_COMPONENTS_V2), custom_id 1-100 and
unique in a message, button labels 80; a link button has a ``url`` (at most 512) and no
``custom_id``, any other button a ``custom_id`` and no ``url``; select menus' options and
counts; in a modal, a label 45 (a Label's, or a legacy text input's own) and its description
100, a text input's custom_id 1-100, pre-filled ``value`` 4000, placeholder 100, min_length
0-4000 and max_length 1-4000, a file upload's min_values 0-10 and max_values 1-10; and a
modal's title 1-45, custom_id 1-100 and 1-5 components
(https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-modal).
Inner codes are Discord's generic ones (BASE_TYPE_*, NUMBER_TYPE_*) unless a check says it is
observed or assumed.
"""

from __future__ import annotations

from typing import Any

from .errors import field_error, invalid_form_body, merge_errors

IS_COMPONENTS_V2 = 1 << 15

# https://discord.com/developers/docs/components/reference#component-object-component-types
ACTION_ROW, BUTTON, STRING_SELECT, TEXT_INPUT, LABEL, FILE_UPLOAD = 1, 2, 3, 4, 18, 19
SELECT_TYPES = (3, 5, 6, 7, 8)
# Button styles 5 (link) and 6 (premium) carry a url / sku_id instead of a custom_id.
LINK_STYLE, PREMIUM_STYLE = 5, 6
MAX_URL = 512
# "Messages allow up to 40 total components" with IS_COMPONENTS_V2, instead of 5 action rows;
# the inner code is assumed.
MAX_V2_COMPONENTS = 40
MAX_TEXT_INPUT = 4000

Problems = dict[str, Any]
Path = list[str | int]


def max_length(path: Path, value: Any, limit: int) -> Problems | None:
    if isinstance(value, str) and len(value) > limit:
        return field_error(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
    return None


def required(path: Path) -> Problems:
    return field_error(path, "BASE_TYPE_REQUIRED", "This field is required")


def _bad_length(path: Path, low: int, high: int) -> Problems:
    return field_error(path, "BASE_TYPE_BAD_LENGTH", f"Must be between {low} and {high} in length.")


def _in_range(path: Path, value: Any, low: int, high: int) -> Problems | None:
    """An integer field between ``low`` and ``high`` (NUMBER_TYPE_MIN / NUMBER_TYPE_MAX)."""
    if not isinstance(value, int) or low <= value <= high:
        return None
    if value > high:
        return field_error(
            path, "NUMBER_TYPE_MAX", f"int value should be less than or equal to {high}."
        )
    return field_error(
        path, "NUMBER_TYPE_MIN", f"int value should be greater than or equal to {low}."
    )


class _Collect:
    """Gathers the problems found, merged into one nested ``errors`` body."""

    def __init__(self) -> None:
        self.errors: Problems = {}

    def add(self, err: Problems | None) -> None:
        if err:
            merge_errors(self.errors, err)


def walk(components: list[Any], path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every component with its path, in order (rows, v2 containers, sections' accessories and
    labels' inner component)."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for i, comp in enumerate(components):
        if not isinstance(comp, dict):
            continue
        here: Path = [*path, i]
        found.append((here, comp))
        children = comp.get("components")
        if isinstance(children, list):
            found += walk(children, [*here, "components"])
        for key in ("accessory", "component"):
            inner = comp.get(key)
            if isinstance(inner, dict):
                found.append(([*here, key], inner))
    return found


def _custom_id_errors(components: list[Any], prefix: Path) -> Problems:
    """Interactive components need a custom_id (link and premium buttons must not have one),
    and "multiple components on the same message must not share the same custom_id"
    (#anatomy-of-a-component-custom-id; Button: "Non-link and non-premium buttons must have a
    custom_id"). Discord reports a duplicate at its second use with
    COMPONENT_CUSTOM_ID_DUPLICATED (observed)."""
    found = _Collect()
    seen: set[str] = set()
    for path, comp in walk(components, [*prefix, "components"]):
        ctype = comp.get("type")
        custom_id = comp.get("custom_id")
        if ctype == BUTTON and comp.get("style") in (LINK_STYLE, PREMIUM_STYLE):
            continue
        interactive = ctype == BUTTON or ctype in SELECT_TYPES
        if interactive and (not isinstance(custom_id, str) or not custom_id):
            found.add(required([*path, "custom_id"]))
            continue
        if not isinstance(custom_id, str):
            continue
        if custom_id in seen:
            found.add(
                field_error(
                    [*path, "custom_id"],
                    "COMPONENT_CUSTOM_ID_DUPLICATED",
                    "Component custom id cannot be duplicated",
                )
            )
        seen.add(custom_id)
    return found.errors


def _button_errors(button: dict[str, Any], path: Path) -> Problems:
    """ "Link buttons must have a url, and cannot have a custom_id"; "non-link and non-premium
    buttons ... cannot have a url"; a url is at most 512 characters (Button). The codes for a
    url and a custom_id together, and for a url on another style, are assumed."""
    found = _Collect()
    style, url = button.get("style"), button.get("url")
    if style == LINK_STYLE:
        if not url:
            found.add(required([*path, "url"]))
        found.add(max_length([*path, "url"], url, MAX_URL))
        if button.get("custom_id") is not None:
            found.add(
                field_error(
                    [*path, "custom_id"],
                    "BUTTON_COMPONENT_CUSTOM_ID_URL_MUTUALLY_EXCLUSIVE",
                    "A custom id and url cannot both be specified",
                )
            )
    elif style != PREMIUM_STYLE and url is not None:
        found.add(
            field_error(
                [*path, "url"],
                "BUTTON_COMPONENT_URL_REQUIRES_LINK_STYLE",
                "A url can only be specified for link buttons",
            )
        )
    return found.errors


def _select_errors(select: dict[str, Any], p: Path) -> Problems:
    """https://discord.com/developers/docs/components/reference#string-select: 1-25 options
    (string select only), option label/value/description 100, placeholder 150, min_values 0-25,
    max_values 1-25."""
    found = _Collect()
    found.add(max_length([*p, "placeholder"], select.get("placeholder"), 150))
    if select.get("type") == STRING_SELECT:
        options = select.get("options") or []
        if not 1 <= len(options) <= 25:
            found.add(_bad_length([*p, "options"], 1, 25))
        for k, option in enumerate(options[:25]):
            for key in ("label", "value", "description"):
                found.add(max_length([*p, "options", k, key], option.get(key), 100))
    for key, low in (("min_values", 0), ("max_values", 1)):
        value = select.get(key)
        if isinstance(value, int) and not low <= value <= 25:
            code = "NUMBER_TYPE_MAX" if value > 25 else "NUMBER_TYPE_MIN"
            found.add(field_error([*p, key], code, f"int value should be between {low} and 25."))
    return found.errors


def _row_errors(row: dict[str, Any], p: Path) -> Problems:
    """An action row holds 1-5 buttons or a single select; a select beside anything else is
    COMPONENT_LAYOUT_WIDTH_EXCEEDED (observed code)."""
    found = _Collect()
    children = row.get("components") or []
    if not 1 <= len(children) <= 5:
        return _bad_length(p, 1, 5)
    selects = [
        j for j, c in enumerate(children) if isinstance(c, dict) and c.get("type") in SELECT_TYPES
    ]
    if selects and len(children) > 1:
        found.add(
            field_error(
                [*p, selects[0]],
                "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
                "The specified component exceeds the maximum width",
            )
        )
    for j, child in enumerate(children):
        if not isinstance(child, dict):
            continue
        found.add(max_length([*p, j, "custom_id"], child.get("custom_id"), 100))
        found.add(max_length([*p, j, "label"], child.get("label"), 80))
        if child.get("type") in SELECT_TYPES:
            found.add(_select_errors(child, [*p, j]))
    return found.errors


def component_errors(components: list[Any], prefix: Path, *, v2: bool = False) -> Problems:
    """The problems of a message's ``components`` (``v2``: the IS_COMPONENTS_V2 layout)."""
    found = _Collect()
    if v2:
        if len(walk(components, [])) > MAX_V2_COMPONENTS:
            return field_error(
                [*prefix, "components"],
                "BASE_TYPE_MAX_LENGTH",
                f"Must be {MAX_V2_COMPONENTS} or fewer in length.",
            )
    elif len(components) > 5:
        return _bad_length([*prefix, "components"], 1, 5)
    found.add(_custom_id_errors(components, prefix))
    for path, comp in walk(components, [*prefix, "components"]):
        if comp.get("type") == BUTTON:
            found.add(_button_errors(comp, path))
    for i, row in enumerate(components):
        if isinstance(row, dict) and row.get("type") == ACTION_ROW:
            # components v2 layouts other than rows are accepted unchecked
            found.add(_row_errors(row, [*prefix, "components", i, "components"]))
    return found.errors


def _modal_input_errors(comp: dict[str, Any], path: Path) -> Problems:
    """A text input's or file upload's own limits (Text Input; File Upload)."""
    found = _Collect()
    custom_id = comp.get("custom_id")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        found.add(_bad_length([*path, "custom_id"], 1, 100))
    if comp.get("type") == TEXT_INPUT:
        # The deprecated label of a text input in an action row is the modal's label.
        found.add(max_length([*path, "label"], comp.get("label"), 45))
        found.add(max_length([*path, "value"], comp.get("value"), MAX_TEXT_INPUT))
        found.add(max_length([*path, "placeholder"], comp.get("placeholder"), 100))
        found.add(_in_range([*path, "min_length"], comp.get("min_length"), 0, MAX_TEXT_INPUT))
        found.add(_in_range([*path, "max_length"], comp.get("max_length"), 1, MAX_TEXT_INPUT))
    elif comp.get("type") == FILE_UPLOAD:
        found.add(_in_range([*path, "min_values"], comp.get("min_values"), 0, 10))
        found.add(_in_range([*path, "max_values"], comp.get("max_values"), 1, 10))
    return found.errors


def validate_modal(data: dict[str, Any]) -> None:
    """Modal response (type 9): title 1-45, custom_id 1-100, 1-5 components, and the limits of
    each label, text input and file upload in it."""
    found = _Collect()
    for key, limit in (("title", 45), ("custom_id", 100)):
        value = data.get(key)
        if not isinstance(value, str) or not 1 <= len(value) <= limit:
            found.add(_bad_length(["data", key], 1, limit))
    components = data.get("components") or []
    if not 1 <= len(components) <= 5:
        found.add(_bad_length(["data", "components"], 1, 5))
    for path, comp in walk(components, ["data", "components"]):
        if comp.get("type") == LABEL:
            label = comp.get("label")
            if not isinstance(label, str) or not label:
                found.add(required([*path, "label"]))
            found.add(max_length([*path, "label"], label, 45))
            found.add(max_length([*path, "description"], comp.get("description"), 100))
        elif comp.get("type") in (TEXT_INPUT, FILE_UPLOAD):
            found.add(_modal_input_errors(comp, path))
    if found.errors:
        raise invalid_form_body(found.errors)
