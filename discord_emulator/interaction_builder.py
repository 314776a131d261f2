"""Building the interactions a user's client would send: INTERACTION_CREATE payloads.

:class:`InteractionBuilder` turns "``/job status id:X`` typed by alice in #general" into the
``data`` Discord's client sends (options typed from the synced command schema, user/channel/role
options resolved) and the full interaction payload the bot receives. It only reads state: the
control API (:mod:`discord_emulator.control`) stores the interaction and dispatches it;
:func:`find_component` finds a clicked component (what a user enters in one is
:mod:`discord_emulator.component_input`).

Shapes from https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-object
and https://discord.com/developers/docs/interactions/application-commands.
"""

from __future__ import annotations

import secrets
from typing import Any

from . import permissions as P
from .models import Application, Channel, Guild, Interaction, Member, Message, Role, User
from .state import State
from .validation import MAX_UPLOAD_BYTES

Ref = int | User | Member | Role | Channel | Guild | Message | Application

# https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-option-type
SUB_COMMAND, SUB_COMMAND_GROUP = 1, 2
STRING, INTEGER, BOOLEAN, USER, CHANNEL, ROLE, MENTIONABLE, NUMBER = 3, 4, 5, 6, 7, 8, 9, 10

# https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-types
CHAT_INPUT, USER_COMMAND, MESSAGE_COMMAND = 1, 2, 3

# https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-object-interaction-type
APPLICATION_COMMAND, MESSAGE_COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT = 2, 3, 4, 5


class InteractionRefused(ValueError):
    """Discord's client would not send this interaction (an option value outside the command's
    declared limits, a command typed in an archived thread...): the bot never sees it."""


def ref_id(value: Ref) -> int:
    """The snowflake of a model object (a member's user id), or the int itself."""
    if isinstance(value, int):
        return value
    if isinstance(value, Member):
        return value.user_id
    return value.id


class InteractionBuilder:
    """Builds interaction payloads for one application from the current state."""

    def __init__(self, state: State, app: Application) -> None:
        self.state = state
        self.app = app

    def find_command(self, guild_id: int | None, name: str, ctype: int) -> dict[str, Any]:
        app = self.app
        candidates = list(app.guild_commands.get(guild_id, [])) if guild_id else []
        candidates += app.global_commands
        for cmd in candidates:
            if cmd["name"] == name and cmd["type"] == ctype:
                return cmd
        raise LookupError(f"command {name!r} is not registered (did the bot sync its tree?)")

    def check_command_permission(
        self, user_id: int, channel: Channel, cmd_name: str, ctype: int = CHAT_INPUT
    ) -> None:
        cmd = self.find_command(channel.guild_id, cmd_name, ctype)
        if not self.may_use(cmd, user_id, channel):
            raise PermissionError(f"the user may not use /{cmd_name} (default_member_permissions)")

    def may_use(self, cmd: dict[str, Any], user_id: int, channel: Channel) -> bool:
        """Whether Discord's client offers ``cmd`` to the user in ``channel``: in a guild the
        user needs every permission of its ``default_member_permissions``, and ``"0"`` leaves
        it to administrators (and the owner) alone
        (https://discord.com/developers/docs/interactions/application-commands#permissions)."""
        needed = cmd.get("default_member_permissions")
        if needed is None or channel.guild_id is None:
            return True
        if int(needed) == 0:
            return P.has(P.base_permissions(self.state, channel.guild_id, user_id), P.ADMINISTRATOR)
        return P.has(P.channel_permissions(self.state, channel, user_id), int(needed))

    def build_options(
        self,
        cmd: dict[str, Any],
        path: list[str],
        values: dict[str, Any],
        guild_id: int | None,
        focused: str | None,
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        schema: list[dict[str, Any]] = cmd.get("options") or []
        resolved: dict[str, Any] = {}
        if path:
            sub = next(
                (
                    o
                    for o in schema
                    if o["name"] == path[0] and o["type"] in (SUB_COMMAND, SUB_COMMAND_GROUP)
                ),
                None,
            )
            if sub is None:
                raise LookupError(f"no subcommand {path[0]!r} in {cmd['name']!r}")
            inner, resolved = self.build_options(sub, path[1:], values, guild_id, focused)
            return [{"name": sub["name"], "type": sub["type"], "options": inner}], resolved
        out: list[dict[str, Any]] = []
        known = {o["name"]: o for o in schema}
        for key in values:
            if key not in known:
                raise LookupError(f"unknown option {key!r}; options are {sorted(known)}")
        for opt in schema:
            if opt["name"] not in values:
                if opt.get("required") and focused is None:
                    raise ValueError(f"option {opt['name']!r} is required")
                continue
            value = values[opt["name"]]
            otype = opt["type"]
            entry: dict[str, Any] = {"name": opt["name"], "type": otype}
            if otype in (USER, CHANNEL, ROLE, MENTIONABLE):
                vid = ref_id(value)
                entry["value"] = str(vid)
                if otype == CHANNEL:
                    self.check_channel_type(opt, vid)
                self.resolve(resolved, vid, guild_id)
            elif otype == INTEGER and opt["name"] != focused:
                entry["value"] = int(value)
            elif otype == NUMBER and opt["name"] != focused:
                entry["value"] = float(value)
            elif otype == BOOLEAN:
                entry["value"] = bool(value)
            else:
                entry["value"] = value if opt["name"] == focused else str(value)
            if opt["name"] == focused:
                entry["focused"] = True
                entry["value"] = str(value)
            else:
                check_option_value(opt, entry["value"])
            out.append(entry)
        return out, resolved

    def check_channel_type(self, opt: dict[str, Any], channel_id: int) -> None:
        """A channel option lists only the ``channel_types`` it declares (Application Commands:
        Option Structure); Discord's client offers no other channel."""
        types = opt.get("channel_types")
        channel = self.state.channels.get(channel_id)
        if types and channel is not None and channel.type not in types:
            raise InteractionRefused(
                f"option {opt['name']!r} takes channel types {types}, "
                f"not channel {channel_id} (type {channel.type})"
            )

    def resolve(self, resolved: dict[str, Any], vid: int, guild_id: int | None) -> None:
        """Add a user/member, channel or role option's object to ``data.resolved``."""
        if vid in self.state.users:
            resolved.setdefault("users", {})[str(vid)] = self.state.users[vid].payload()
            member = self.state.member(guild_id, vid) if guild_id else None
            if member is not None:
                data = self.state.member_payload(member, with_user=False)
                data["permissions"] = str(P.base_permissions(self.state, member.guild_id, vid))
                resolved.setdefault("members", {})[str(vid)] = data
        elif vid in self.state.channels:
            ch = self.state.channels[vid]
            data = self.state.channel_payload(ch)
            data["permissions"] = str(P.channel_permissions(self.state, ch, self.app.bot_user_id))
            resolved.setdefault("channels", {})[str(vid)] = data
        elif guild_id and vid in self.state.guilds[guild_id].roles:
            resolved.setdefault("roles", {})[str(vid)] = (
                self.state.guilds[guild_id].roles[vid].payload()
            )

    def command_data(
        self, command: str, options: dict[str, Any] | None, channel: Channel, focused: str | None
    ) -> dict[str, Any]:
        """``data`` of a chat-input command (or autocomplete) interaction."""
        parts = command.strip().lstrip("/").split()
        cmd = self.find_command(channel.guild_id, parts[0], 1)
        check_context(cmd, channel)
        built, resolved = self.build_options(
            cmd, parts[1:], options or {}, channel.guild_id, focused
        )
        data: dict[str, Any] = {"id": cmd["id"], "name": cmd["name"], "type": 1, "options": built}
        if resolved:
            data["resolved"] = resolved
        if "guild_id" in cmd:
            data["guild_id"] = cmd["guild_id"]
        return data

    def context_menu_data(
        self, name: str, ctype: int, target: User | Message, channel: Channel
    ) -> dict[str, Any]:
        """``data`` of a user or message command run on ``target``: its ``target_id`` and the
        target in ``resolved`` (Application Commands: User Commands, Message Commands)."""
        cmd = self.find_command(channel.guild_id, name, ctype)
        check_context(cmd, channel)
        resolved: dict[str, Any] = {}
        if isinstance(target, Message):
            resolved["messages"] = {str(target.id): self.state.message_payload(target)}
        else:
            self.resolve(resolved, target.id, channel.guild_id)
        data: dict[str, Any] = {
            "id": cmd["id"],
            "name": cmd["name"],
            "type": ctype,
            "target_id": str(target.id),
            "resolved": resolved,
        }
        if "guild_id" in cmd:
            data["guild_id"] = cmd["guild_id"]
        return data

    def new_interaction(
        self,
        itype: int,
        user_id: int,
        channel: Channel,
        data: dict[str, Any],
        *,
        now: float,
        message: Message | None = None,
    ) -> Interaction:
        """A fresh interaction record (not yet stored) with an unguessable token."""
        return Interaction(
            id=self.state.new_id(),
            token="aW50ZXJhY3Rpb24" + secrets.token_urlsafe(48),
            application_id=self.app.id,
            type=itype,
            data=data,
            guild_id=channel.guild_id,
            channel_id=channel.id,
            user_id=user_id,
            created_at=now,
            message_id=message.id if message is not None else None,
        )

    def payload(self, inter: Interaction, message: Message | None) -> dict[str, Any]:
        """The INTERACTION_CREATE payload for ``inter``."""
        app = self.app
        channel = self.state.channels[inter.channel_id]
        channel_data = self.state.channel_payload(channel)
        payload: dict[str, Any] = {
            "id": str(inter.id),
            "application_id": str(app.id),
            "type": inter.type,
            "data": inter.data,
            "channel_id": str(channel.id),
            "channel": channel_data,
            "token": inter.token,
            "version": 1,
            "app_permissions": str(P.channel_permissions(self.state, channel, app.bot_user_id)),
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": MAX_UPLOAD_BYTES,
        }
        if inter.guild_id is not None:
            member = self.state.member(inter.guild_id, inter.user_id)
            if member is None:
                raise LookupError("the user is not a member of the channel's guild")
            mdata = self.state.member_payload(member)
            mdata["permissions"] = str(P.channel_permissions(self.state, channel, inter.user_id))
            payload.update(
                guild_id=str(inter.guild_id),
                guild={"id": str(inter.guild_id), "locale": "en-US", "features": []},
                guild_locale="en-US",
                member=mdata,
                authorizing_integration_owners={"0": str(inter.guild_id)},
                context=0,
            )
        else:
            payload.update(
                user=self.state.users[inter.user_id].payload(),
                # A guild-installed app in a DM with its bot: GUILD_INSTALL maps to "0"
                # (Receiving and Responding: Authorizing Integration Owners Object).
                authorizing_integration_owners={"0": "0"},
                context=1,
            )
        if message is not None:
            payload["message"] = self.state.message_payload(message)
        return payload


# https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-object-interaction-context-types
GUILD_CONTEXT, BOT_DM_CONTEXT = 0, 1


def check_context(cmd: dict[str, Any], channel: Channel) -> None:
    """Refuse a global command where its ``contexts`` (or the deprecated ``dm_permission``)
    do not offer it: Discord's client does not show it there
    (https://discord.com/developers/docs/interactions/application-commands#interaction-contexts)."""
    context = BOT_DM_CONTEXT if channel.guild_id is None else GUILD_CONTEXT
    contexts = cmd.get("contexts")
    if contexts is not None and context not in contexts:
        raise InteractionRefused(f"/{cmd['name']} is not available in this context ({context})")
    if context == BOT_DM_CONTEXT and cmd.get("dm_permission") is False:
        raise InteractionRefused(f"/{cmd['name']} is not available in DMs (dm_permission)")


def check_option_value(opt: dict[str, Any], value: Any) -> None:
    """Refuse a value outside the option's declared ``choices``, ``min_length``/``max_length``
    (strings) or ``min_value``/``max_value`` (numbers), as Discord's client does before sending
    (https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-option-structure)."""
    name = opt["name"]
    choices = opt.get("choices")
    if choices and value not in [c.get("value") for c in choices]:
        allowed = [c.get("value") for c in choices]
        raise InteractionRefused(f"option {name!r}: {value!r} is not one of {allowed}")
    if opt["type"] == STRING and isinstance(value, str):
        low, high = opt.get("min_length"), opt.get("max_length")
        if low is not None and len(value) < int(low):
            raise InteractionRefused(f"option {name!r} must be at least {low} characters")
        if high is not None and len(value) > int(high):
            raise InteractionRefused(f"option {name!r} must be at most {high} characters")
        if len(value) > 6000:
            # The documented ceiling for any string option (max_length is at most 6000).
            raise InteractionRefused(f"option {name!r} must be at most 6000 characters")
    if opt["type"] in (INTEGER, NUMBER) and isinstance(value, int | float):
        low, high = opt.get("min_value"), opt.get("max_value")
        if low is not None and value < low:
            raise InteractionRefused(f"option {name!r} must be at least {low}")
        if high is not None and value > high:
            raise InteractionRefused(f"option {name!r} must be at most {high}")


def find_component(components: list[dict[str, Any]], custom_id: str) -> dict[str, Any] | None:
    """The component with ``custom_id`` anywhere in a message's layout (rows, accessories)."""
    for comp in components:
        if comp.get("custom_id") == custom_id:
            return comp
        found = find_component(comp.get("components") or [], custom_id)
        if found is not None:
            return found
        accessory = comp.get("accessory")
        if isinstance(accessory, dict) and accessory.get("custom_id") == custom_id:
            return accessory
    return None
