"""Building the world around the bot as its people would: guilds, roles, members, channels,
permission overwrites and moderators' changes to threads; and the world's clock and faults."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from discord_emulator import permissions as P
from discord_emulator.interaction_builder import Ref, ref_id
from discord_emulator.models import (
    FORUM,
    MSG_USER_JOIN,
    SUPPRESS_JOIN_NOTIFICATIONS,
    TEXT,
    Channel,
    Guild,
    Member,
    Overwrite,
    Role,
)

from .base import ControlBase


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


class WorldControl(ControlBase):
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

    def delete_channel(self, channel: Ref) -> Channel:
        """Delete a channel (and its threads) or a thread as a moderator would; the bot
        receives CHANNEL_DELETE or THREAD_DELETE. ``emu.channel(id)`` still reads it."""
        ch = self.state.channels[ref_id(channel)]
        self.actions.delete_channel(ch)
        return ch

    def edit_thread(self, thread: Ref, **changes: Any) -> Channel:
        """Change a thread as a moderator would (``archived``, ``locked``, ``name``,
        ``auto_archive_duration``); the bot receives THREAD_UPDATE."""
        ch = self.state.channels[ref_id(thread)]
        return self.actions.update_channel(ch, changes)

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
