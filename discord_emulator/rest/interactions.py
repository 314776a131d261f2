"""Interaction callbacks and the interaction webhook (follow-ups, ``@original``).

Rules from https://discord.com/developers/docs/interactions/receiving-and-responding:
the initial response must come within 3 seconds (else 404 / 10062 Unknown interaction), only
once (400 / 40060), and the token stays valid for follow-ups and ``@original`` for 15 minutes
(after that Discord answers 401 / 50027 Invalid Webhook Token). The first follow-up after a
deferred (type 5) response edits the loading message. Ephemeral messages live only here:
channel endpoints answer 10008 for them.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator.component_limits import IS_COMPONENTS_V2, validate_modal
from discord_emulator.models import (
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    MSG_CHAT_INPUT_COMMAND,
    MSG_DEFAULT,
    Interaction,
    Message,
)
from discord_emulator.validation import validate_choices, validate_message

from .common import emu_of, json_response, no_content, read_body, snowflake
from .messages import ensure_not_emptied

PONG, CHANNEL_MESSAGE, DEFERRED_CHANNEL_MESSAGE, DEFERRED_UPDATE, UPDATE_MESSAGE = 1, 4, 5, 6, 7
AUTOCOMPLETE_RESULT, MODAL = 8, 9
APPLICATION_COMMAND, MESSAGE_COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT = 2, 3, 4, 5


def _by_id(request: web.Request) -> Interaction:
    emu = emu_of(request)
    inter = emu.state.interactions.get(snowflake(request, "interaction_id"))
    if inter is None:
        raise errors.unknown_interaction()
    if inter.token != request.match_info["token"]:
        raise errors.invalid_webhook_token()
    return inter


def _by_token(request: web.Request) -> Interaction:
    emu = emu_of(request)
    inter = emu.state.interactions_by_token.get(request.match_info["token"])
    if inter is None or inter.application_id != snowflake(request, "application_id"):
        raise errors.unknown_webhook()
    if emu.clock.time() > inter.created_at + emu.config.interaction_token_ttl:
        raise errors.invalid_webhook_token()
    return inter


def _metadata(emu: Any, inter: Interaction) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(inter.id),
        "type": inter.type,
        "user": emu.state.users[inter.user_id].payload(),
        # The app is guild-installed: the guild's id, or "0" in a DM with the bot.
        "authorizing_integration_owners": {"0": str(inter.guild_id or 0)},
    }
    if inter.type == APPLICATION_COMMAND:
        data["name"] = inter.data.get("name")
        data["command_type"] = inter.data.get("type", 1)
    if inter.message_id is not None:
        data["interacted_message_id"] = str(inter.message_id)
    return data


def _new_message(
    emu: Any, inter: Interaction, payload: dict[str, Any], files: list[Any], extra_flags: int
) -> Message:
    channel = emu.state.channels[inter.channel_id]
    msg_type = MSG_CHAT_INPUT_COMMAND if inter.type == APPLICATION_COMMAND else MSG_DEFAULT
    app = emu.state.applications[inter.application_id]
    msg: Message = emu.actions.create_message(
        channel,
        app.bot_user_id,
        payload,
        files,
        msg_type=msg_type,
        extra_flags=extra_flags,
        webhook_id=app.id,
        application_id=app.id,
        interaction_metadata=_metadata(emu, inter),
        interaction_id=inter.id,
    )
    return msg


async def callback(request: web.Request) -> web.Response:
    emu = emu_of(request)
    inter = _by_id(request)
    body, files = await read_body(request)
    now = emu.clock.time()
    if inter.response_type is not None:
        raise errors.interaction_already_acknowledged()
    if now > inter.created_at + emu.config.interaction_ack_deadline:
        raise errors.unknown_interaction()
    rtype = body.get("type")
    data = body.get("data") or {}
    allowed = {
        APPLICATION_COMMAND: {CHANNEL_MESSAGE, DEFERRED_CHANNEL_MESSAGE, MODAL},
        MESSAGE_COMPONENT: {
            CHANNEL_MESSAGE,
            DEFERRED_CHANNEL_MESSAGE,
            DEFERRED_UPDATE,
            UPDATE_MESSAGE,
            MODAL,
        },
        AUTOCOMPLETE: {AUTOCOMPLETE_RESULT},
        MODAL_SUBMIT: {CHANNEL_MESSAGE, DEFERRED_CHANNEL_MESSAGE, DEFERRED_UPDATE, UPDATE_MESSAGE},
    }[inter.type]
    if rtype not in allowed:
        raise errors.invalid_form_body(
            errors.field_error(
                ["type"],
                "INTERACTION_RESPONSE_TYPE_INVALID",
                "Interaction response type is invalid",
            )
        )
    message: Message | None = None
    ephemeral = bool(int(data.get("flags") or 0) & FLAG_EPHEMERAL)
    if rtype == CHANNEL_MESSAGE:
        validate_message(data, prefix=["data"], has_files=bool(files))
        message = _new_message(emu, inter, data, files, FLAG_EPHEMERAL if ephemeral else 0)
        inter.original_message_id = message.id
    elif rtype == DEFERRED_CHANNEL_MESSAGE:
        flags = FLAG_LOADING | (FLAG_EPHEMERAL if ephemeral else 0)
        message = _new_message(emu, inter, {}, [], flags)
        inter.original_message_id = message.id
    elif rtype in (DEFERRED_UPDATE, UPDATE_MESSAGE):
        if inter.message_id is None:
            raise errors.unknown_message()
        inter.original_message_id = inter.message_id
        message = emu.state.messages[inter.message_id]
        if rtype == UPDATE_MESSAGE:
            validate_message(
                data,
                prefix=["data"],
                require_content=False,
                components_v2=bool(message.flags & IS_COMPONENTS_V2),
            )
            emu.actions.edit_message(message, data, files)
    elif rtype == AUTOCOMPLETE_RESULT:
        choices = data.get("choices") or []
        validate_choices(choices)
        inter.autocomplete_choices = list(choices)
    elif rtype == MODAL:
        validate_modal(data)
        inter.modal = dict(data)
    inter.response_type = int(rtype)
    inter.responded_at = now
    emu.actions.publish(
        "interaction_response", {"type": rtype, "data": data}, interaction_id=inter.id
    )
    if request.query.get("with_response") not in ("1", "true", "True"):
        return no_content()
    info: dict[str, Any] = {"id": str(inter.id), "type": inter.type}
    resource: dict[str, Any] = {"type": rtype}
    if message is not None:
        info.update(
            response_message_id=str(message.id),
            response_message_loading=bool(message.flags & FLAG_LOADING),
            response_message_ephemeral=message.ephemeral,
        )
        resource["message"] = emu.state.message_payload(message)
    return json_response({"interaction": info, "resource": resource})


def _original(emu: Any, inter: Interaction) -> Message:
    if inter.original_message_id is None:
        raise errors.unknown_message()
    msg: Message | None = emu.state.messages.get(inter.original_message_id)
    if msg is None or msg.deleted:
        raise errors.unknown_message()
    return msg


def _webhook_message(emu: Any, inter: Interaction, raw_id: str) -> Message:
    if raw_id == "@original":
        return _original(emu, inter)
    if not raw_id.isdigit():
        raise errors.unknown_message()
    mid = int(raw_id)
    msg: Message | None = emu.state.messages.get(mid)
    if (
        msg is None
        or msg.deleted
        or (msg.interaction_id != inter.id and mid != inter.original_message_id)
    ):
        raise errors.unknown_message()
    return msg


async def followup(request: web.Request) -> web.Response:
    emu = emu_of(request)
    inter = _by_token(request)
    if inter.response_type is None:
        # No initial response yet: the interaction webhook does not exist.
        raise errors.unknown_webhook()
    payload, files = await read_body(request)
    validate_message(payload, has_files=bool(files))
    original = emu.state.messages.get(inter.original_message_id or 0)
    if (
        original is not None
        and original.flags & FLAG_LOADING
        and not inter.followup_ids
        and inter.response_type == DEFERRED_CHANNEL_MESSAGE
    ):
        # The first follow-up after a deferred response replaces the loading message.
        emu.actions.edit_message(original, payload, files, clear_flags=FLAG_LOADING)
        msg = original
    else:
        ephemeral = bool(int(payload.get("flags") or 0) & FLAG_EPHEMERAL)
        msg = _new_message(emu, inter, payload, files, FLAG_EPHEMERAL if ephemeral else 0)
    inter.followup_ids.append(msg.id)
    # Create Followup Message: "Functions the same as Execute Webhook, but wait is always
    # true" (https://discord.com/developers/docs/interactions/receiving-and-responding#create-followup-message).
    return json_response(emu.state.message_payload(msg))


async def get_webhook_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    inter = _by_token(request)
    msg = _webhook_message(emu, inter, request.match_info["message_id"])
    return json_response(emu.state.message_payload(msg))


async def edit_webhook_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    inter = _by_token(request)
    msg = _webhook_message(emu, inter, request.match_info["message_id"])
    payload, files = await read_body(request)
    channel = emu.state.channels[msg.channel_id]
    if channel.thread is not None and channel.thread.archived:
        raise errors.thread_archived()
    validate_message(
        payload, require_content=False, components_v2=bool(msg.flags & IS_COMPONENTS_V2)
    )
    if not msg.flags & FLAG_LOADING:
        ensure_not_emptied(msg, payload, bool(files))
    emu.actions.edit_message(msg, payload, files, clear_flags=FLAG_LOADING)
    return json_response(emu.state.message_payload(msg))


async def delete_webhook_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    inter = _by_token(request)
    msg = _webhook_message(emu, inter, request.match_info["message_id"])
    emu.actions.delete_message(msg)
    return no_content()


ROUTES = [
    ("POST", "/interactions/{interaction_id}/{token}/callback", callback),
    ("POST", "/webhooks/{application_id}/{token}", followup),
    ("GET", "/webhooks/{application_id}/{token}/messages/{message_id}", get_webhook_message),
    ("PATCH", "/webhooks/{application_id}/{token}/messages/{message_id}", edit_webhook_message),
    ("DELETE", "/webhooks/{application_id}/{token}/messages/{message_id}", delete_webhook_message),
]
