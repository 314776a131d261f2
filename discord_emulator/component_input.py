"""What a user can enter in components, and the interaction ``data`` Discord's client sends.

Discord's client only lets a user submit what a component allows: between ``min_values`` and
``max_values`` choices, a string select's own options, a channel select's ``channel_types``, a
text input within ``required``/``min_length``/``max_length``, a file upload's count and
``file_types``. A bot never
sees anything else, so the control API refuses it with
:class:`~discord_emulator.interaction_builder.InteractionRefused`. Chosen users, roles and
channels and uploaded files travel with the ``resolved`` data Discord adds.

Limits and shapes: https://discord.com/developers/docs/components/reference (String, User,
Role, Mentionable and Channel Select; Text Input; File Upload; Label) and
https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-object-resolved-data-structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .component_limits import MAX_TEXT_INPUT
from .interaction_builder import InteractionBuilder, InteractionRefused, ref_id
from .models import Channel
from .validation import MAX_UPLOAD_BYTES

# https://discord.com/developers/docs/components/reference#component-object-component-types
ACTION_ROW, STRING_SELECT, TEXT_INPUT, USER_SELECT, ROLE_SELECT = 1, 3, 4, 5, 6
MENTIONABLE_SELECT, CHANNEL_SELECT, LABEL, FILE_UPLOAD = 7, 8, 18, 19
SELECTS = (STRING_SELECT, USER_SELECT, ROLE_SELECT, MENTIONABLE_SELECT, CHANNEL_SELECT)


class Upload(NamedTuple):
    """A file a user attaches to a modal's file upload."""

    filename: str
    data: bytes
    content_type: str | None = None


# Stores an uploaded file for a channel and returns its attachment object.
StoreFile = Callable[[int, str, bytes, str | None], dict[str, Any]]


def _check_count(component: dict[str, Any], count: int, *, in_modal: bool) -> None:
    """``min_values`` (default 1) to ``max_values`` (default 1) choices; in a modal an input
    with ``required: false`` may also be left empty."""
    what = f"component {component.get('custom_id')!r}"
    if in_modal and count == 0 and component.get("required") is False:
        return
    low = int(component["min_values"]) if component.get("min_values") is not None else 1
    high = int(component["max_values"]) if component.get("max_values") is not None else 1
    if count < low:
        raise InteractionRefused(f"{what} needs at least {low} choices, got {count}")
    if count > high:
        raise InteractionRefused(f"{what} takes at most {high} choices, got {count}")


def _snowflake(value: Any) -> int:
    return int(value) if isinstance(value, str) else ref_id(value)


def pick(
    builder: InteractionBuilder,
    component: dict[str, Any],
    values: list[Any],
    channel: Channel,
    *,
    in_modal: bool = False,
) -> tuple[list[str], dict[str, Any]]:
    """The ``values`` and ``resolved`` data of a select menu choice."""
    _check_count(component, len(values), in_modal=in_modal)
    ctype = component["type"]
    what = f"select {component.get('custom_id')!r}"
    if ctype == STRING_SELECT:
        offered = [str(o.get("value", o.get("label"))) for o in component.get("options") or []]
        chosen = [str(v) for v in values]
        for value in chosen:
            if value not in offered:
                raise InteractionRefused(f"{what} has no option {value!r}; it offers {offered}")
        return chosen, {}
    state = builder.state
    guild = state.guilds.get(channel.guild_id) if channel.guild_id is not None else None
    resolved: dict[str, Any] = {}
    ids = [_snowflake(v) for v in values]
    for vid in ids:
        is_user = vid in state.users and (guild is None or vid in guild.members)
        is_role = guild is not None and vid in guild.roles
        picked = state.channels.get(vid)
        is_channel = picked is not None and picked.guild_id == channel.guild_id
        allowed = {
            USER_SELECT: is_user,
            ROLE_SELECT: is_role,
            MENTIONABLE_SELECT: is_user or is_role,
            CHANNEL_SELECT: is_channel,
        }[ctype]
        if not allowed:
            raise InteractionRefused(f"{what} (type {ctype}) cannot offer {vid}")
        types = component.get("channel_types")
        if ctype == CHANNEL_SELECT and types and picked is not None and picked.type not in types:
            raise InteractionRefused(
                f"{what} offers channel types {types}, not channel {vid} (type {picked.type})"
            )
        builder.resolve(resolved, vid, channel.guild_id)
    return [str(v) for v in ids], resolved


def _text(component: dict[str, Any], raw: Any) -> str:
    """A text input's submitted value: ``required`` (default true), ``min_length`` and
    ``max_length`` (at most 4000) hold."""
    value = str(raw if raw is not None else component.get("value") or "")
    what = f"text input {component.get('custom_id')!r}"
    if not value:
        if component.get("required", True):
            raise InteractionRefused(f"{what} is required")
        return value
    low = int(component.get("min_length") or 0)
    high = int(component.get("max_length") or MAX_TEXT_INPUT)
    if len(value) < low:
        raise InteractionRefused(f"{what} needs at least {low} characters, got {len(value)}")
    if len(value) > min(high, MAX_TEXT_INPUT):
        raise InteractionRefused(f"{what} takes at most {high} characters, got {len(value)}")
    return value


# https://discord.com/developers/docs/reference#file-type-filtering: the groups a file upload's
# ``file_types`` may name; any other entry is a dot-prefixed extension. Only the file name's
# extension is checked, case-insensitively.
FILE_TYPE_GROUPS = {
    "image": (".png", ".gif", ".jpg", ".jpeg", ".jfif", ".webp", ".avif"),
    "video": (".mp4", ".mov", ".qt", ".webm"),
    "audio": (".mp3", ".m4a", ".wav", ".ogg", ".opus", ".flac"),
}


def accepts_file(file_types: list[str] | None, filename: str) -> bool:
    """Whether a file upload with ``file_types`` offers ``filename`` (no types: any file)."""
    if not file_types:
        return True
    allowed = {ext for t in file_types for ext in FILE_TYPE_GROUPS.get(t, (t.lower(),))}
    _, dot, ext = filename.rpartition(".")
    return bool(dot) and f".{ext.lower()}" in allowed


def _uploads(
    component: dict[str, Any], files: list[Any], channel: Channel, store: StoreFile
) -> tuple[list[str], dict[str, Any]]:
    """Files given to a file upload: its count limits, its ``file_types``, 10 MiB each; stored
    as ephemeral attachments listed in ``resolved.attachments``."""
    _check_count(component, len(files), in_modal=True)
    ids: list[str] = []
    attachments: dict[str, Any] = {}
    for raw in files:
        upload = raw if isinstance(raw, Upload) else Upload(*raw)
        if not accepts_file(component.get("file_types"), upload.filename):
            raise InteractionRefused(
                f"{upload.filename} is not one of the file types {component.get('file_types')}"
            )
        if len(upload.data) > MAX_UPLOAD_BYTES:
            raise InteractionRefused(f"{upload.filename} is larger than {MAX_UPLOAD_BYTES} bytes")
        att = store(channel.id, upload.filename, upload.data, upload.content_type)
        att["ephemeral"] = True
        ids.append(att["id"])
        attachments[att["id"]] = att
    return ids, attachments


def modal_inputs(components: list[dict[str, Any]]) -> list[str]:
    """The custom_ids of every input in a modal (inside action rows or labels)."""
    found: list[str] = []
    for comp in components:
        if comp.get("custom_id"):
            found.append(comp["custom_id"])
        found += modal_inputs(comp.get("components") or [])
        if isinstance(comp.get("component"), dict):
            found += modal_inputs([comp["component"]])
    return found


def modal_submission(
    builder: InteractionBuilder,
    components: list[dict[str, Any]],
    values: dict[str, Any],
    channel: Channel,
    store: StoreFile,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The modal's layout (action rows or labels) mirrored with the submitted values, and
    the ``resolved`` data of the chosen entities and uploaded files."""
    out: list[dict[str, Any]] = []
    resolved: dict[str, Any] = {}
    for comp in components:
        ctype = comp.get("type")
        if ctype == ACTION_ROW:
            inner, more = modal_submission(
                builder, comp.get("components") or [], values, channel, store
            )
            out.append({"type": ACTION_ROW, "components": inner})
        elif ctype == LABEL and isinstance(comp.get("component"), dict):
            inner, more = modal_submission(builder, [comp["component"]], values, channel, store)
            if inner:
                out.append({"type": LABEL, "id": comp.get("id", 0), "component": inner[0]})
        elif comp.get("custom_id"):
            cid = comp["custom_id"]
            entry: dict[str, Any] = {"type": ctype, "custom_id": cid, "id": comp.get("id", 0)}
            more = {}
            if ctype == TEXT_INPUT:
                entry["value"] = _text(comp, values.get(cid))
            elif ctype == FILE_UPLOAD:
                entry["values"], attachments = _uploads(comp, values.get(cid, []), channel, store)
                if attachments:
                    more = {"attachments": attachments}
            else:
                entry["values"], more = pick(
                    builder, comp, list(values.get(cid, [])), channel, in_modal=True
                )
            out.append(entry)
        else:
            continue
        for key, items in more.items():
            resolved.setdefault(key, {}).update(items)
    return out, resolved
