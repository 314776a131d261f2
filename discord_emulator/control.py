"""The Python control API for tests: build a world, act as users, read what the bot did,
wait for it, move the clock and inject faults.

:class:`Control` is mixed into :class:`~discord_emulator.server.Emulator`, so tests call
``emu.create_guild(...)``, ``await emu.invoke_slash(...)``, ``emu.history(channel)`` and so on;
:class:`InteractionHandle` is what a test holds after acting as a user. Interaction payloads are
built by :mod:`discord_emulator.interaction_builder`; the same operations are served over HTTP by
:mod:`discord_emulator.control_http`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from aiohttp import web

from . import errors
from . import permissions as P
from .component_input import modal_inputs, modal_submission, pick
from .events import EmulatorEvent, Subscription
from .hub import Hub
from .interaction_builder import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    MESSAGE_COMMAND,
    MESSAGE_COMPONENT,
    MODAL_SUBMIT,
    USER_COMMAND,
    InteractionBuilder,
    InteractionRefused,
    Ref,
    find_component,
    ref_id,
)
from .state import (
    DM,
    FLAG_LOADING,
    FORUM,
    MSG_USER_JOIN,
    SUPPRESS_JOIN_NOTIFICATIONS,
    TEXT,
    Application,
    Channel,
    Guild,
    Interaction,
    Member,
    Message,
    Overwrite,
    Role,
    User,
    make_token,
)

T = TypeVar("T")


class Unset:
    """The type of :data:`UNSET`: an argument not given, where None means something."""


UNSET = Unset()

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
    # Discord gave Pin Messages to every role with Manage Messages when it split them.
    | P.PIN_MESSAGES
    | P.USE_APPLICATION_COMMANDS
)


class InteractionHandle:
    """What a test holds after invoking a command or clicking a component."""

    def __init__(self, emu: Control, interaction: Interaction) -> None:
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


class Control(Hub):
    """The control operations, written against :class:`~discord_emulator.hub.Hub` (the state,
    clock, gateway, actions and faults the emulator that mixes this class in provides)."""

    def __init__(self) -> None:
        self.application: Application | None = None

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
        shard: tuple[int, int] | None = None,
    ) -> Guild:
        """A guild with an @everyone role; the bot joins with a managed role unless
        ``bot_permissions`` is None. ``shard=(shard_id, num_shards)`` picks an id whose events
        go to that shard (``(guild_id >> 22) % num_shards``)."""
        owner_id = ref_id(owner) if owner is not None else self.create_user(f"{name}-owner").id
        guild_id = self.state.new_id()
        if shard is not None:
            shard_id, num_shards = shard
            ms = guild_id >> 22
            ms += (shard_id - ms) % num_shards
            guild_id = (ms << 22) | (guild_id & ((1 << 22) - 1))
        guild = Guild(id=guild_id, name=name, owner_id=owner_id)
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
        joiner = next(
            (a for a in self.state.applications.values() if a.bot_user_id == member.user_id), None
        )
        if joiner is not None:
            # A bot joining a guild gets GUILD_CREATE with the whole guild
            # (https://discord.com/developers/docs/events/gateway-events#guild-create: "when
            # the current user joins a new Guild").
            # A join carries no "unavailable" key (that is for guilds coming back from an
            # outage); discord.py tells on_guild_join from on_guild_available by it.
            payload = self.state.guild_create_payload(g, member.user_id)
            payload.pop("unavailable", None)
            self.gateway.dispatch(
                "GUILD_CREATE",
                payload,
                application_id=joiner.id,
                guild_id=g.id,
            )
        else:
            data = self.state.member_payload(member)
            data["guild_id"] = str(g.id)
            self._guild_changed(g, "GUILD_MEMBER_ADD", data)
        self._announce_join(g, member.user_id)
        return member

    def _announce_join(self, guild: Guild, user_id: int) -> None:
        # Discord posts a USER_JOIN (type 7) message by the newcomer in the system channel,
        # unless SUPPRESS_JOIN_NOTIFICATIONS is set
        # (https://discord.com/developers/docs/resources/guild#guild-object-system-channel-flags).
        channel = self.state.channels.get(guild.system_channel_id or 0)
        if channel is None or guild.system_channel_flags & SUPPRESS_JOIN_NOTIFICATIONS:
            return
        self.actions.create_message(channel, user_id, {}, msg_type=MSG_USER_JOIN)

    def edit_guild(
        self,
        guild: Ref,
        *,
        name: str | None = None,
        system_channel: Ref | Unset | None = UNSET,
        system_channel_flags: int | None = None,
    ) -> Guild:
        """Change a guild as its owner would in the server settings (the name, the system
        channel, where join notices go, or None for none; its flags); the bot receives
        GUILD_UPDATE."""
        g = self.state.guilds[ref_id(guild)]
        if name is not None:
            g.name = name
        if not isinstance(system_channel, Unset):
            g.system_channel_id = ref_id(system_channel) if system_channel is not None else None
        if system_channel_flags is not None:
            g.system_channel_flags = system_channel_flags
        self._guild_changed(g, "GUILD_UPDATE", self.state.guild_payload(g))
        return g

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
        self.actions.add_channel(g, channel)
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

    def edit_message(self, user: Ref, message: Ref, content: str, **payload: Any) -> Message:
        """``user`` edits their own message (MESSAGE_UPDATE); Discord's client offers editing
        only to the author, and not in an archived thread (50083)."""
        msg = self.state.messages[ref_id(message)]
        if msg.author_id != ref_id(user) or msg.deleted:
            raise PermissionError(f"user {ref_id(user)} cannot edit message {msg.id}")
        meta = self.state.channels[msg.channel_id].thread
        if meta is not None and meta.archived:
            raise errors.thread_archived()
        return self.actions.edit_message(msg, {**payload, "content": content})

    def delete_message(self, user: Ref, message: Ref) -> None:
        """``user`` deletes a message (MESSAGE_DELETE): their own, or in a guild channel where
        they have Manage Messages (Message resource: Delete Message)."""
        msg = self.state.messages[ref_id(message)]
        uid = ref_id(user)
        if msg.deleted:
            raise LookupError(f"message {msg.id} is already deleted")
        channel = self.state.channels[msg.channel_id]
        may_manage = channel.guild_id is not None and P.has(
            P.channel_permissions(self.state, channel, uid), P.MANAGE_MESSAGES
        )
        if msg.author_id != uid and not may_manage:
            raise PermissionError(f"user {uid} cannot delete message {msg.id}")
        self.actions.delete_message(msg)

    def set_accepts_dms(self, user: Ref, accepts: bool) -> None:
        """The user's "Allow direct messages from server members" setting; when off the bot's
        messages to their DM fail with 50007."""
        self.state.users[ref_id(user)].accepts_dms = accepts

    def react(self, user: Ref, message: Ref, emoji: str) -> None:
        """``user`` reacts to a message with a Unicode emoji (MESSAGE_REACTION_ADD)."""
        self.actions.add_reaction(self.state.messages[ref_id(message)], ref_id(user), emoji)

    def unreact(self, user: Ref, message: Ref, emoji: str) -> None:
        """``user`` takes a reaction back (MESSAGE_REACTION_REMOVE)."""
        self.actions.remove_reaction(self.state.messages[ref_id(message)], ref_id(user), emoji)

    def delete_channel(self, channel: Ref) -> Channel:
        """Delete a channel (and its threads) or a thread as a moderator would; the bot
        receives CHANNEL_DELETE or THREAD_DELETE. ``emu.channel(id)`` still reads it."""
        ch = self.state.channels[ref_id(channel)]
        self.actions.delete_channel(ch)
        return ch

    def join_thread(self, user: Ref, thread: Ref) -> None:
        """``user`` joins a thread (THREAD_MEMBERS_UPDATE); refused if archived (50083)."""
        self.actions.add_thread_member(self.state.channels[ref_id(thread)], ref_id(user))

    def edit_thread(self, thread: Ref, **changes: Any) -> Channel:
        """Change a thread as a moderator would (``archived``, ``locked``, ``name``,
        ``auto_archive_duration``); the bot receives THREAD_UPDATE."""
        ch = self.state.channels[ref_id(thread)]
        return self.actions.update_channel(ch, changes)

    def _builder(self) -> InteractionBuilder:
        return InteractionBuilder(self.state, self._app())

    def _dispatch_interaction(
        self,
        itype: int,
        user: Ref,
        channel: Ref,
        data: dict[str, Any],
        message: Message | None = None,
    ) -> InteractionHandle:
        """Store a new interaction and send INTERACTION_CREATE to the bot."""
        builder = self._builder()
        ch = self.state.channels[ref_id(channel)]
        inter = builder.new_interaction(
            itype, ref_id(user), ch, data, now=self.clock.time(), message=message
        )
        payload = builder.payload(inter, message)
        self.state.interactions[inter.id] = inter
        self.state.interactions_by_token[inter.token] = inter
        self.gateway.dispatch("INTERACTION_CREATE", payload, application_id=builder.app.id)
        self.actions.publish("interaction_create", payload, interaction_id=inter.id)
        return InteractionHandle(self, inter)

    async def invoke_slash(
        self, user: Ref, channel: Ref, command: str, options: dict[str, Any] | None = None
    ) -> InteractionHandle:
        """Run ``/command sub ... opt:value`` as ``user`` in ``channel``, e.g.
        ``await emu.invoke_slash(alice, chan, "job status", {"id": "X"})``."""
        ch = self.state.channels[ref_id(channel)]
        _refuse_in_archived_thread(ch)
        builder = self._builder()
        builder.check_command_permission(ref_id(user), ch, command.strip().lstrip("/").split()[0])
        data = builder.command_data(command, options, ch, None)
        return self._dispatch_interaction(APPLICATION_COMMAND, user, ch, data)

    async def invoke_user_command(
        self, user: Ref, channel: Ref, command: str, target: Ref
    ) -> InteractionHandle:
        """Run the user command (context menu: Apps) ``command`` on ``target`` as ``user``,
        e.g. ``await emu.invoke_user_command(alice, chan, "Show Join Date", bob)``."""
        ch = self.state.channels[ref_id(channel)]
        _refuse_in_archived_thread(ch)
        uid = ref_id(user)
        builder = self._builder()
        builder.check_command_permission(uid, ch, command, USER_COMMAND)
        needed = P.SEND_MESSAGES_IN_THREADS if ch.is_thread else P.SEND_MESSAGES
        if ch.guild_id is not None and not P.has(
            P.channel_permissions(self.state, ch, uid), needed
        ):
            # "A user must have permission to send text messages in the channel they invoke a
            # user command in" (Application Commands: User Commands); the client says
            # Permission Denied and sends nothing.
            raise InteractionRefused(f"the user may not send messages in {ch.id}")
        target_user = self.state.users[ref_id(target)]
        data = builder.context_menu_data(command, USER_COMMAND, target_user, ch)
        return self._dispatch_interaction(APPLICATION_COMMAND, uid, ch, data)

    async def invoke_message_command(
        self, user: Ref, message: Ref, command: str
    ) -> InteractionHandle:
        """Run the message command (context menu: Apps) ``command`` on ``message`` as
        ``user``, in the message's channel."""
        msg = self.state.messages[ref_id(message)]
        if msg.deleted or msg.ephemeral:
            raise LookupError(f"message {msg.id} is not in its channel for {ref_id(user)}")
        ch = self.state.channels[msg.channel_id]
        _refuse_in_archived_thread(ch)
        builder = self._builder()
        builder.check_command_permission(ref_id(user), ch, command, MESSAGE_COMMAND)
        data = builder.context_menu_data(command, MESSAGE_COMMAND, msg, ch)
        return self._dispatch_interaction(APPLICATION_COMMAND, user, ch, data)

    async def autocomplete(
        self, user: Ref, channel: Ref, command: str, options: dict[str, Any], focused: str
    ) -> InteractionHandle:
        """Autocomplete (interaction type 4) with ``focused`` being typed; ``await
        handle.wait_choices()`` returns the bot's choices."""
        ch = self.state.channels[ref_id(channel)]
        _refuse_in_archived_thread(ch)
        data = self._builder().command_data(command, options, ch, focused)
        return self._dispatch_interaction(AUTOCOMPLETE, user, ch, data)

    async def click(
        self, user: Ref, message: Ref, custom_id: str, *, values: list[Any] | None = None
    ) -> InteractionHandle:
        """Click a button, or choose ``values`` in a select menu on a message: option values
        for a string select, users, roles or channels (or their ids) for the others. Choices
        the menu would not offer raise :class:`InteractionRefused`."""
        msg = self.state.messages[ref_id(message)]
        component = find_component(msg.components, custom_id)
        if component is None:
            raise LookupError(f"no component with custom_id {custom_id!r} on message {msg.id}")
        if component.get("disabled"):
            raise ValueError(f"component {custom_id!r} is disabled")
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component["type"]}
        if values is not None or component["type"] != 2:
            channel = self.state.channels[msg.channel_id]
            data["values"], resolved = pick(self._builder(), component, list(values or []), channel)
            if resolved:
                data["resolved"] = resolved
        return self._dispatch_interaction(
            MESSAGE_COMPONENT, user, msg.channel_id, data, message=msg
        )

    async def submit_modal(
        self, user: Ref, handle: InteractionHandle, values: dict[str, Any]
    ) -> InteractionHandle:
        """Submit the modal the bot opened (response type 9) with ``{custom_id: value}``:
        text inputs take strings, selects lists (as :meth:`click`), file uploads lists of
        :class:`~discord_emulator.component_input.Upload`. What Discord's client would not
        let through (a required input left empty, text over ``max_length``...) raises
        :class:`InteractionRefused`."""
        modal = handle.interaction.modal
        if modal is None:
            raise LookupError("the bot did not answer this interaction with a modal")
        unknown = set(values) - set(modal_inputs(modal.get("components") or []))
        if unknown:
            raise LookupError(f"no inputs {sorted(unknown)} in modal {modal.get('custom_id')!r}")
        parent = handle.interaction
        components, resolved = modal_submission(
            self._builder(),
            modal.get("components") or [],
            values,
            self.state.channels[parent.channel_id],
            self.actions.store_attachment,
        )
        data: dict[str, Any] = {"custom_id": modal.get("custom_id"), "components": components}
        if resolved:
            data["resolved"] = resolved
        message = self.state.messages.get(parent.message_id) if parent.message_id else None
        return self._dispatch_interaction(
            MODAL_SUBMIT, user, parent.channel_id, data, message=message
        )

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
        """A channel or thread, including deleted ones."""
        cid = ref_id(channel_id)
        return self.state.channels.get(cid) or self.state.deleted_channels[cid]

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


def _refuse_in_archived_thread(channel: Channel) -> None:
    # Discord's client offers no application commands in an archived thread: a user must
    # unarchive it (by sending a message) first
    # (https://discord.com/developers/docs/topics/threads#archiving-and-unarchiving-threads).
    if channel.thread is not None and channel.thread.archived:
        raise InteractionRefused(f"thread {channel.id} is archived")


# The emulator on its aiohttp app, for routes that use the control operations (the HTTP control
# API, the chat page); REST handlers read it through ``rest.common.EMU_KEY`` as a Hub.
CONTROL_KEY: web.AppKey[Control] = web.AppKey("discord_emulator.control")
