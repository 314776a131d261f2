"""The test control API: build a world, act as users, read what the bot did, inject faults.

:class:`Control` is mixed into :class:`~discord_emulator.server.Emulator`, so tests call
``emu.create_guild(...)``, ``await emu.invoke_slash(...)``, ``emu.history(channel)`` and so on.
The same operations are served as JSON under ``/_emulator/`` (and a WebSocket event stream at
``/_emulator/events``) for the sandbox and a browser view.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import WSMsgType, web

from . import permissions as P
from .events import EmulatorEvent, EventHub, Subscription
from .state import (
    DM,
    FLAG_LOADING,
    FORUM,
    TEXT,
    Application,
    Channel,
    Guild,
    Interaction,
    Member,
    Message,
    Overwrite,
    Role,
    State,
    User,
    make_token,
)

if TYPE_CHECKING:
    from .actions import Actions
    from .clock import VirtualClock
    from .faults import Faults
    from .gateway import Gateway
    from .server import Emulator, EmulatorConfig

T = TypeVar("T")
Ref = int | User | Member | Role | Channel | Guild | Message | Application

# A bot invited with the usual scopes: read/send/thread/manage its own threads and messages.
DEFAULT_BOT_PERMISSIONS = (
    P.VIEW_CHANNEL
    | P.SEND_MESSAGES
    | P.EMBED_LINKS
    | P.ATTACH_FILES
    | P.READ_MESSAGE_HISTORY
    | P.ADD_REACTIONS
    | P.CREATE_PUBLIC_THREADS
    | P.CREATE_PRIVATE_THREADS
    | P.SEND_MESSAGES_IN_THREADS
    | P.MANAGE_THREADS
    | P.MANAGE_MESSAGES
    | P.USE_APPLICATION_COMMANDS
)
# https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-option-type
SUB_COMMAND, SUB_COMMAND_GROUP = 1, 2
STRING, INTEGER, BOOLEAN, USER, CHANNEL, ROLE, MENTIONABLE, NUMBER = 3, 4, 5, 6, 7, 8, 9, 10


def ref_id(value: Ref) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, Member):
        return value.user_id
    return value.id


class InteractionHandle:
    """What a test holds after invoking a command or clicking a component."""

    def __init__(self, emu: Emulator, interaction: Interaction) -> None:
        self.emu = emu
        self.interaction = interaction

    @property
    def id(self) -> int:
        return self.interaction.id

    @property
    def token(self) -> str:
        return self.interaction.token

    @property
    def response_type(self) -> int | None:
        return self.interaction.response_type

    @property
    def original(self) -> Message | None:
        mid = self.interaction.original_message_id
        return self.emu.state.messages.get(mid) if mid is not None else None

    @property
    def followups(self) -> list[Message]:
        return [self.emu.state.messages[m] for m in self.interaction.followup_ids]

    @property
    def choices(self) -> list[dict[str, Any]] | None:
        return self.interaction.autocomplete_choices

    async def wait_response(self, timeout: float = 5.0) -> InteractionHandle:  # noqa: ASYNC109
        """Wait for the initial response (any type)."""
        await self.emu.wait_until(lambda: self.interaction.response_type is not None, timeout)
        return self

    async def wait_original(
        self,
        predicate: Callable[[Message], bool] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> Message:
        """Wait until the original response message exists, is not loading and matches."""

        def check() -> Message | None:
            msg = self.original
            if msg is None or msg.flags & FLAG_LOADING:
                return None
            return msg if predicate is None or predicate(msg) else None

        return await self.emu.wait_until(check, timeout)

    async def wait_followups(self, count: int = 1, timeout: float = 5.0) -> list[Message]:  # noqa: ASYNC109
        await self.emu.wait_until(lambda: len(self.interaction.followup_ids) >= count, timeout)
        return self.followups

    async def wait_choices(self, timeout: float = 5.0) -> list[dict[str, Any]]:  # noqa: ASYNC109
        return await self.emu.wait_until(lambda: self.interaction.autocomplete_choices, timeout)


class Control:
    if TYPE_CHECKING:
        state: State
        clock: VirtualClock
        events: EventHub
        gateway: Gateway
        actions: Actions
        faults: Faults
        config: EmulatorConfig

        def dm_channel(self, bot_id: int, user_id: int) -> Channel: ...
        def permissions(self, channel: Channel, user_id: int) -> int: ...
        async def restart(self) -> None: ...

    def __init__(self) -> None:
        self.application: Application | None = None

    @property
    def _emu(self) -> Emulator:
        return self  # type: ignore[return-value]

    # ----- building the world ------------------------------------------------------------
    def create_user(
        self, username: str, *, bot: bool = False, global_name: str | None = None
    ) -> User:
        user = User(id=self.state.new_id(), username=username, bot=bot, global_name=global_name)
        self.state.users[user.id] = user
        return user

    def create_application(
        self, name: str = "Errand", *, token: str | None = None, privileged_intents: bool = True
    ) -> Application:
        """A bot application (bot user, owner, token); the first is ``emu.application``."""
        owner = self.create_user(f"{name.lower()}-owner")
        bot = self.create_user(name, bot=True)
        app = Application(
            id=self.state.new_id(),
            name=name,
            bot_user_id=bot.id,
            owner_id=owner.id,
            token=token or make_token(bot.id),
            privileged_intents=privileged_intents,
        )
        self.state.applications[app.id] = app
        if self.application is None:
            self.application = app
        return app

    def _app(self) -> Application:
        if self.application is None:
            self.create_application()
        assert self.application is not None
        return self.application

    @property
    def bot_user(self) -> User:
        return self.state.users[self._app().bot_user_id]

    def create_guild(
        self,
        name: str = "Test Guild",
        *,
        owner: Ref | None = None,
        everyone_permissions: int = P.DEFAULT_EVERYONE,
        bot_permissions: int | None = DEFAULT_BOT_PERMISSIONS,
    ) -> Guild:
        """A guild with an @everyone role; the bot joins with a managed role unless
        ``bot_permissions`` is None."""
        owner_id = ref_id(owner) if owner is not None else self.create_user(f"{name}-owner").id
        guild = Guild(id=self.state.new_id(), name=name, owner_id=owner_id)
        guild.roles[guild.id] = Role(guild.id, guild.id, "@everyone", everyone_permissions)
        self.state.guilds[guild.id] = guild
        self.add_member(guild, owner_id)
        if bot_permissions is not None:
            app = self._app()
            role = self.create_role(guild, app.name, bot_permissions, managed=True)
            self.add_member(guild, app.bot_user_id, roles=[role])
        return guild

    def create_role(
        self,
        guild: Ref,
        name: str,
        permissions: int = 0,
        *,
        members: Iterable[Ref] = (),
        managed: bool = False,
    ) -> Role:
        g = self.state.guilds[ref_id(guild)]
        role = Role(
            self.state.new_id(), g.id, name, permissions, position=len(g.roles), managed=managed
        )
        g.roles[role.id] = role
        for m in members:
            member = g.members.get(ref_id(m))
            if member is not None:
                member.roles.append(role.id)
        self._guild_changed(g, "GUILD_ROLE_CREATE", {"guild_id": str(g.id), "role": role.payload()})
        return role

    def add_member(self, guild: Ref, user: Ref, *, roles: Iterable[Ref] = ()) -> Member:
        g = self.state.guilds[ref_id(guild)]
        member = Member(ref_id(user), g.id, [ref_id(r) for r in roles], self.clock.time())
        g.members[member.user_id] = member
        if member.user_id != self._app().bot_user_id:
            data = self.state.member_payload(member)
            data["guild_id"] = str(g.id)
            self._guild_changed(g, "GUILD_MEMBER_ADD", data)
        return member

    def create_channel(
        self,
        guild: Ref,
        name: str,
        *,
        type: int = TEXT,
        overwrites: Iterable[Overwrite] = (),
        parent: Ref | None = None,
        topic: str | None = None,
    ) -> Channel:
        g = self.state.guilds[ref_id(guild)]
        channel = Channel(
            id=self.state.new_id(),
            type=type,
            guild_id=g.id,
            name=name,
            position=len(g.channel_ids),
            overwrites=list(overwrites),
            parent_id=ref_id(parent) if parent is not None else None,
            topic=topic,
        )
        self.state.channels[channel.id] = channel
        g.channel_ids.append(channel.id)
        self._guild_changed(g, "CHANNEL_CREATE", self.state.channel_payload(channel))
        return channel

    def create_forum(self, guild: Ref, name: str, **kwargs: Any) -> Channel:
        return self.create_channel(guild, name, type=FORUM, **kwargs)

    def create_dm(self, user: Ref) -> Channel:
        """The DM channel between the bot and ``user``."""
        return self.dm_channel(self._app().bot_user_id, ref_id(user))

    def set_overwrite(
        self, channel: Ref, target: Ref, *, allow: int = 0, deny: int = 0
    ) -> Overwrite:
        """Set a role (Role or the guild id for @everyone) or member overwrite on a channel."""
        ch = self.state.channels[ref_id(channel)]
        tid = ref_id(target)
        is_role = (
            isinstance(target, Role | Guild)
            or tid == ch.guild_id
            or (ch.guild_id is not None and tid in self.state.guilds[ch.guild_id].roles)
        )
        ow_type = 0 if is_role else 1
        ch.overwrites = [o for o in ch.overwrites if not (o.id == tid and o.type == ow_type)]
        ow = Overwrite(tid, ow_type, allow, deny)
        ch.overwrites.append(ow)
        if ch.guild_id is not None:
            self._guild_changed(
                self.state.guilds[ch.guild_id], "CHANNEL_UPDATE", self.state.channel_payload(ch)
            )
        return ow

    def _guild_changed(self, guild: Guild, event: str, data: dict[str, Any]) -> None:
        self.gateway.dispatch(event, data, guild_id=guild.id)
        self.actions.publish(event.lower(), data, guild_id=guild.id)

    # ----- acting as users ---------------------------------------------------------------
    def send_message(self, user: Ref, channel: Ref, content: str = "", **payload: Any) -> Message:
        """A user posts a message (dispatched to the bot as MESSAGE_CREATE)."""
        ch = self.state.channels[ref_id(channel)]
        body = dict(payload)
        body["content"] = content
        if ch.thread is not None:
            self.actions.ensure_writable_thread(ch, can_manage=False)
        return self.actions.create_message(ch, ref_id(user), body)

    def edit_thread(self, thread: Ref, **changes: Any) -> Channel:
        """Change a thread as a moderator would (``archived``, ``locked``, ``name``,
        ``auto_archive_duration``); the bot receives THREAD_UPDATE."""
        ch = self.state.channels[ref_id(thread)]
        return self.actions.update_channel(ch, changes)

    def _find_command(self, guild_id: int | None, name: str, ctype: int) -> dict[str, Any]:
        app = self._app()
        candidates = list(app.guild_commands.get(guild_id, [])) if guild_id else []
        candidates += app.global_commands
        for cmd in candidates:
            if cmd["name"] == name and cmd["type"] == ctype:
                return cmd
        raise LookupError(f"command {name!r} is not registered (did the bot sync its tree?)")

    def _build_options(
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
            inner, resolved = self._build_options(sub, path[1:], values, guild_id, focused)
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
                self._resolve(resolved, vid, guild_id)
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
            out.append(entry)
        return out, resolved

    def _resolve(self, resolved: dict[str, Any], vid: int, guild_id: int | None) -> None:
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
            data["permissions"] = str(self.permissions(ch, self._app().bot_user_id))
            resolved.setdefault("channels", {})[str(vid)] = data
        elif guild_id and vid in self.state.guilds[guild_id].roles:
            resolved.setdefault("roles", {})[str(vid)] = (
                self.state.guilds[guild_id].roles[vid].payload()
            )

    def _interaction_payload(self, inter: Interaction, message: Message | None) -> dict[str, Any]:
        app = self._app()
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
            "app_permissions": str(self.permissions(channel, app.bot_user_id)),
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        if inter.guild_id is not None:
            member = self.state.member(inter.guild_id, inter.user_id)
            if member is None:
                raise LookupError("the user is not a member of the channel's guild")
            mdata = self.state.member_payload(member)
            mdata["permissions"] = str(self.permissions(channel, inter.user_id))
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
                authorizing_integration_owners={"0": str(inter.user_id)},
                context=1,
            )
        if message is not None:
            payload["message"] = self.state.message_payload(message)
        return payload

    def _dispatch_interaction(
        self,
        itype: int,
        user: Ref,
        channel: Ref,
        data: dict[str, Any],
        message: Message | None = None,
    ) -> InteractionHandle:
        app = self._app()
        ch = self.state.channels[ref_id(channel)]
        guild_id = ch.guild_id
        inter = Interaction(
            id=self.state.new_id(),
            token="aW50ZXJhY3Rpb24" + secrets.token_urlsafe(48),
            application_id=app.id,
            type=itype,
            data=data,
            guild_id=guild_id,
            channel_id=ch.id,
            user_id=ref_id(user),
            created_at=self.clock.time(),
            message_id=message.id if message is not None else None,
        )
        payload = self._interaction_payload(inter, message)
        self.state.interactions[inter.id] = inter
        self.state.interactions_by_token[inter.token] = inter
        self.gateway.dispatch("INTERACTION_CREATE", payload, application_id=app.id)
        self.actions.publish("interaction_create", payload, interaction_id=inter.id)
        return InteractionHandle(self._emu, inter)

    def _command_data(
        self, command: str, options: dict[str, Any] | None, channel: Channel, focused: str | None
    ) -> dict[str, Any]:
        parts = command.strip().lstrip("/").split()
        cmd = self._find_command(channel.guild_id, parts[0], 1)
        built, resolved = self._build_options(
            cmd, parts[1:], options or {}, channel.guild_id, focused
        )
        data: dict[str, Any] = {"id": cmd["id"], "name": cmd["name"], "type": 1, "options": built}
        if resolved:
            data["resolved"] = resolved
        if "guild_id" in cmd:
            data["guild_id"] = cmd["guild_id"]
        return data

    def _check_command_permission(self, user_id: int, channel: Channel, cmd_name: str) -> None:
        cmd = self._find_command(channel.guild_id, cmd_name, 1)
        needed = cmd.get("default_member_permissions")
        if (
            needed is not None
            and channel.guild_id is not None
            and not P.has(self.permissions(channel, user_id), int(needed))
        ):
            raise PermissionError(f"the user may not use /{cmd_name} (default_member_permissions)")

    async def invoke_slash(
        self, user: Ref, channel: Ref, command: str, options: dict[str, Any] | None = None
    ) -> InteractionHandle:
        """Run ``/command sub ... opt:value`` as ``user`` in ``channel``, e.g.
        ``await emu.invoke_slash(alice, chan, "job status", {"id": "X"})``."""
        ch = self.state.channels[ref_id(channel)]
        self._check_command_permission(ref_id(user), ch, command.strip().lstrip("/").split()[0])
        data = self._command_data(command, options, ch, None)
        return self._dispatch_interaction(2, user, ch, data)

    async def autocomplete(
        self, user: Ref, channel: Ref, command: str, options: dict[str, Any], focused: str
    ) -> InteractionHandle:
        """Autocomplete (interaction type 4) with ``focused`` being typed; ``await
        handle.wait_choices()`` returns the bot's choices."""
        ch = self.state.channels[ref_id(channel)]
        data = self._command_data(command, options, ch, focused)
        return self._dispatch_interaction(4, user, ch, data)

    async def click(
        self, user: Ref, message: Ref, custom_id: str, *, values: list[str] | None = None
    ) -> InteractionHandle:
        """Click a button (or choose ``values`` in a select menu) on a message."""
        msg = self.state.messages[ref_id(message)]
        component = _find_component(msg.components, custom_id)
        if component is None:
            raise LookupError(f"no component with custom_id {custom_id!r} on message {msg.id}")
        if component.get("disabled"):
            raise ValueError(f"component {custom_id!r} is disabled")
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component["type"]}
        if values is not None or component["type"] != 2:
            data["values"] = list(values or [])
        return self._dispatch_interaction(3, user, msg.channel_id, data, message=msg)

    async def submit_modal(
        self, user: Ref, handle: InteractionHandle, values: dict[str, Any]
    ) -> InteractionHandle:
        """Submit the modal the bot opened (response type 9) with ``{custom_id: value}``;
        text inputs take strings, selects take lists."""
        modal = handle.interaction.modal
        if modal is None:
            raise LookupError("the bot did not answer this interaction with a modal")
        unknown = set(values) - set(_modal_inputs(modal.get("components") or []))
        if unknown:
            raise LookupError(f"no inputs {sorted(unknown)} in modal {modal.get('custom_id')!r}")
        data = {
            "custom_id": modal.get("custom_id"),
            "components": _modal_submission(modal.get("components") or [], values),
        }
        parent = handle.interaction
        message = self.state.messages.get(parent.message_id) if parent.message_id else None
        return self._dispatch_interaction(5, user, parent.channel_id, data, message=message)

    # ----- reading -----------------------------------------------------------------------
    def message(self, message_id: Ref) -> Message:
        return self.state.messages[ref_id(message_id)]

    def history(
        self, channel: Ref, *, include_deleted: bool = True, include_ephemeral: bool = True
    ) -> list[Message]:
        """Every message ever posted in the channel, oldest first, each with ``.versions``."""
        msgs = [
            self.state.messages[m] for m in self.state.channel_messages.get(ref_id(channel), [])
        ]
        return [
            m
            for m in msgs
            if (include_deleted or not m.deleted) and (include_ephemeral or not m.ephemeral)
        ]

    def channel(self, channel_id: Ref) -> Channel:
        return self.state.channels[ref_id(channel_id)]

    def threads(self, parent: Ref) -> list[Channel]:
        pid = ref_id(parent)
        return [c for c in self.state.channels.values() if c.parent_id == pid and c.is_thread]

    def thread_of(self, message: Ref) -> Channel | None:
        msg = self.state.messages[ref_id(message)]
        return self.state.channels.get(msg.thread_id) if msg.thread_id else None

    # ----- waiting -----------------------------------------------------------------------
    async def wait_until(self, condition: Callable[[], T | None], timeout: float = 5.0) -> T:  # noqa: ASYNC109
        """Re-check ``condition`` after every state change until it returns a truthy value."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = condition()
            if value:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"condition not met within {timeout}s")
            # Wake on any state change, and poll as well so conditions on the test's own
            # objects (not emulator state) are noticed promptly too.
            with contextlib.suppress(TimeoutError):
                await self.events.wait_for(lambda _ev: True, timeout=min(remaining, 0.02))

    async def wait_for(
        self,
        predicate: Callable[[EmulatorEvent], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> EmulatorEvent:
        """The next event (published after this call) matching ``predicate``."""
        return await self.events.wait_for(predicate, timeout)

    async def wait_for_message(
        self,
        channel: Ref,
        predicate: Callable[[Message], bool] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> Message:
        """The first live message in ``channel`` (already there or yet to come) matching."""
        cid = ref_id(channel)

        def check() -> Message | None:
            for mid in self.state.channel_messages.get(cid, []):
                msg = self.state.messages[mid]
                if not msg.deleted and (predicate is None or predicate(msg)):
                    return msg
            return None

        return await self.wait_until(check, timeout)

    def subscribe(self, maxsize: int = 10000) -> Subscription:
        """An async iterator of every state-change event from now on (close() it when done)."""
        return self.events.subscribe(maxsize)

    # ----- time and faults ---------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Move the virtual clock (token expiry, message age, thread auto-archive)."""
        self.clock.advance(seconds)

    def drop_gateway(self) -> int:
        """Cut every gateway socket; clients reconnect and RESUME with replay."""
        return self.gateway.drop_connections()

    def send_reconnect(self) -> None:
        self.gateway.send_reconnect()

    def invalidate_sessions(self, resumable: bool = False) -> None:
        self.gateway.invalidate_sessions(resumable)

    def snapshot(self) -> dict[str, Any]:
        """A JSON summary of the world (for the HTTP control API and debugging)."""
        s = self.state
        return {
            "application": None
            if self.application is None
            else {
                "id": str(self.application.id),
                "bot_user_id": str(self.application.bot_user_id),
                "name": self.application.name,
            },
            "users": [u.payload() for u in s.users.values()],
            "guilds": [s.guild_create_payload(g) for g in s.guilds.values()],
            "dms": [s.channel_payload(c) for c in s.channels.values() if c.type == DM],
        }

    def history_payload(self, channel: Ref) -> list[dict[str, Any]]:
        out = []
        for msg in self.history(channel):
            data = self.state.message_payload(msg)
            data["deleted"] = msg.deleted
            data["versions"] = [
                {
                    "at": self.clock.iso(v.at),
                    "content": v.content,
                    "embeds": v.embeds,
                    "components": v.components,
                    "flags": v.flags,
                }
                for v in msg.versions
            ]
            out.append(data)
        return out


def _modal_inputs(components: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for comp in components:
        if comp.get("custom_id"):
            found.append(comp["custom_id"])
        found += _modal_inputs(comp.get("components") or [])
        if isinstance(comp.get("component"), dict):
            found += _modal_inputs([comp["component"]])
    return found


def _modal_submission(
    components: list[dict[str, Any]], values: dict[str, Any]
) -> list[dict[str, Any]]:
    """Mirror the modal's layout (action rows or labels) with the submitted values."""
    out: list[dict[str, Any]] = []
    for comp in components:
        ctype = comp.get("type")
        if ctype == 1:
            out.append(
                {"type": 1, "components": _modal_submission(comp.get("components") or [], values)}
            )
        elif ctype == 18 and isinstance(comp.get("component"), dict):
            inner = _modal_submission([comp["component"]], values)
            if inner:
                out.append({"type": 18, "id": comp.get("id", 0), "component": inner[0]})
        elif comp.get("custom_id"):
            cid = comp["custom_id"]
            entry: dict[str, Any] = {"type": ctype, "custom_id": cid, "id": comp.get("id", 0)}
            if ctype == 4:
                entry["value"] = str(values.get(cid, comp.get("value") or ""))
            else:
                entry["values"] = [str(v) for v in values.get(cid, [])]
            out.append(entry)
    return out


def _find_component(components: list[dict[str, Any]], custom_id: str) -> dict[str, Any] | None:
    for comp in components:
        if comp.get("custom_id") == custom_id:
            return comp
        found = _find_component(comp.get("components") or [], custom_id)
        if found is not None:
            return found
        accessory = comp.get("accessory")
        if isinstance(accessory, dict) and accessory.get("custom_id") == custom_id:
            return accessory
    return None


# ----- HTTP control API ------------------------------------------------------------------


def _emu(request: web.Request) -> Emulator:
    from .rest.common import EMU_KEY

    return request.app[EMU_KEY]


async def _json(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    data = await request.json()
    return data if isinstance(data, dict) else {}


async def http_state(request: web.Request) -> web.Response:
    return web.json_response(_emu(request).snapshot())


async def http_create_user(request: web.Request) -> web.Response:
    body = await _json(request)
    user = _emu(request).create_user(body.get("username", "user"))
    return web.json_response(user.payload())


async def http_create_guild(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    guild = emu.create_guild(body.get("name", "Guild"))
    return web.json_response(emu.state.guild_create_payload(guild))


async def http_create_channel(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    channel = emu.create_channel(
        int(body["guild_id"]), body.get("name", "general"), type=int(body.get("type", TEXT))
    )
    return web.json_response(emu.state.channel_payload(channel))


async def http_add_member(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    member = emu.add_member(
        int(request.match_info["guild_id"]),
        int(body["user_id"]),
        roles=[int(r) for r in body.get("roles", [])],
    )
    return web.json_response(emu.state.member_payload(member))


async def http_send_message(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    msg = emu.send_message(
        int(body["user_id"]), int(request.match_info["channel_id"]), body.get("content", "")
    )
    return web.json_response(emu.state.message_payload(msg))


async def http_history(request: web.Request) -> web.Response:
    emu = _emu(request)
    return web.json_response(emu.history_payload(int(request.match_info["channel_id"])))


async def http_invoke(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    try:
        handle = await emu.invoke_slash(
            int(body["user_id"]),
            int(body["channel_id"]),
            str(body["command"]),
            body.get("options") or {},
        )
    except (LookupError, ValueError, PermissionError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"interaction_id": str(handle.id)})


async def http_click(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    try:
        handle = await emu.click(
            int(body["user_id"]),
            int(body["message_id"]),
            str(body["custom_id"]),
            values=body.get("values"),
        )
    except (LookupError, ValueError, KeyError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"interaction_id": str(handle.id)})


async def http_interaction(request: web.Request) -> web.Response:
    emu = _emu(request)
    inter = emu.state.interactions.get(int(request.match_info["interaction_id"]))
    if inter is None:
        return web.json_response({"error": "unknown interaction"}, status=404)
    handle = InteractionHandle(emu, inter)
    original = handle.original
    return web.json_response(
        {
            "id": str(inter.id),
            "response_type": inter.response_type,
            "original": emu.state.message_payload(original) if original else None,
            "followups": [emu.state.message_payload(m) for m in handle.followups],
            "choices": inter.autocomplete_choices,
        }
    )


async def http_advance(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    emu.advance(float(body.get("seconds", 0)))
    return web.json_response({"now": emu.clock.iso()})


async def http_faults(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await _json(request)
    kind = body.get("kind")
    if kind == "latency":
        emu.faults.add_latency(float(body.get("seconds", 0)), body.get("path_contains"))
    elif kind == "status":
        emu.faults.fail_next(
            int(body.get("status", 500)),
            int(body.get("count", 1)),
            path_contains=body.get("path_contains"),
            method=body.get("method"),
        )
    elif kind == "ratelimit":
        emu.faults.ratelimit_next(
            int(body.get("count", 1)),
            retry_after=float(body.get("retry_after", 0.05)),
            path_contains=body.get("path_contains"),
            method=body.get("method"),
            is_global=bool(body.get("global", False)),
        )
    elif kind == "drop_gateway":
        emu.drop_gateway()
    elif kind == "restart":
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(emu.restart()))
    elif kind == "clear":
        emu.faults.clear()
    else:
        return web.json_response({"error": f"unknown fault kind {kind!r}"}, status=400)
    return web.json_response({"ok": True})


async def http_events(request: web.Request) -> web.WebSocketResponse:
    """A WebSocket streaming every state-change event as JSON (for a live browser view)."""
    emu = _emu(request)
    ws = web.WebSocketResponse(heartbeat=30)
    await ws.prepare(request)
    sub = emu.subscribe(maxsize=1000)

    async def pump() -> None:
        async for ev in sub:
            await ws.send_json(
                {
                    "kind": ev.kind,
                    "at": ev.at,
                    "data": ev.data,
                    "extra": {k: str(v) for k, v in ev.extra.items()},
                }
            )

    task = asyncio.create_task(pump())
    try:
        async for msg in ws:
            if msg.type == WSMsgType.ERROR:
                break
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        sub.close()
    return ws


def add_control_routes(app: web.Application) -> None:
    r = app.router
    r.add_get("/_emulator/state", http_state)
    r.add_post("/_emulator/users", http_create_user)
    r.add_post("/_emulator/guilds", http_create_guild)
    r.add_post("/_emulator/guilds/{guild_id}/members", http_add_member)
    r.add_post("/_emulator/channels", http_create_channel)
    r.add_post("/_emulator/channels/{channel_id}/messages", http_send_message)
    r.add_get("/_emulator/channels/{channel_id}/history", http_history)
    r.add_post("/_emulator/interactions", http_invoke)
    r.add_post("/_emulator/clicks", http_click)
    r.add_get("/_emulator/interactions/{interaction_id}", http_interaction)
    r.add_post("/_emulator/clock/advance", http_advance)
    r.add_post("/_emulator/faults", http_faults)
    r.add_get("/_emulator/events", http_events)
