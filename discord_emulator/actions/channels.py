"""Channels: created (CHANNEL_CREATE), changed (CHANNEL_UPDATE, or THREAD_UPDATE for a
thread) and deleted with their threads (CHANNEL_DELETE / THREAD_DELETE)
(https://discord.com/developers/docs/resources/channel#modify-channel, #deleteclose-channel)."""

from __future__ import annotations

from typing import Any

from discord_emulator.models import MSG_CHANNEL_NAME_CHANGE, Channel, Guild

from .threads import ThreadActions


class ChannelActions(ThreadActions):
    def add_channel(self, guild: Guild, channel: Channel) -> None:
        """A new guild channel: stored, then CHANNEL_CREATE (GUILDS intent)."""
        self.state.channels[channel.id] = channel
        guild.channel_ids.append(channel.id)
        payload = self.state.channel_payload(channel)
        self.emu.gateway.dispatch("CHANNEL_CREATE", payload, guild_id=guild.id)
        self.publish("channel_create", payload, guild_id=guild.id)

    def update_channel(
        self, channel: Channel, changes: dict[str, Any], *, by: int | None = None
    ) -> Channel:
        """Change a channel or thread (Modify Channel) as ``by``. A thread's new name is
        announced in it (CHANNEL_NAME_CHANGE, "sent when the thread's name is changed"); a
        thread's archive_timestamp moves "when creating, archiving, or unarchiving a thread,
        and when changing the auto_archive_duration field", which with unarchiving counts as
        activity (https://discord.com/developers/docs/topics/threads)."""
        meta = channel.thread
        now = self.clock.time()
        renamed = bool(changes.get("name")) and str(changes["name"]) != channel.name
        if changes.get("name"):
            channel.name = str(changes["name"])
        if "topic" in changes and not channel.is_thread:
            channel.topic = changes["topic"]
        if "rate_limit_per_user" in changes:
            channel.rate_limit_per_user = int(changes["rate_limit_per_user"] or 0)
        unarchived = False
        if meta is not None:
            if "archived" in changes and changes["archived"] is not None:
                archived = bool(changes["archived"])
                unarchived = meta.archived and not archived
                if archived != meta.archived:
                    meta.archived = archived
                    meta.archive_timestamp = now
                    if not archived:
                        channel.last_activity = now
            if "locked" in changes and changes["locked"] is not None:
                meta.locked = bool(changes["locked"])
            duration = changes.get("auto_archive_duration")
            if duration and int(duration) != meta.auto_archive_duration:
                meta.auto_archive_duration = int(duration)
                meta.archive_timestamp = now
                channel.last_activity = now
            if "invitable" in changes and changes["invitable"] is not None:
                meta.invitable = bool(changes["invitable"])
            self._thread_update(channel)
            if unarchived:
                self._unarchived(channel)
            if renamed:
                author = by if by is not None else self._moderator(channel)
                self.post_system_message(
                    channel, author, MSG_CHANNEL_NAME_CHANGE, content=channel.name or ""
                )
        else:
            payload = self.state.channel_payload(channel)
            self.emu.gateway.dispatch("CHANNEL_UPDATE", payload, guild_id=channel.guild_id)
            self.publish("channel_update", payload, channel_id=channel.id)
        return channel

    def _moderator(self, channel: Channel) -> int:
        """Who changes a channel when a test does not say: the guild's owner."""
        guild = self.state.guilds.get(channel.guild_id or 0)
        return guild.owner_id if guild is not None else channel.owner_id or 0

    def delete_channel(self, channel: Channel) -> None:
        """Delete a channel (with its threads) or a thread: CHANNEL_DELETE or THREAD_DELETE
        (https://discord.com/developers/docs/resources/channel#deleteclose-channel). Its
        messages are gone on Discord; here they stay in ``history`` marked deleted."""
        doomed = [channel] + [
            c for c in self.state.channels.values() if c.parent_id == channel.id and c.is_thread
        ]
        now = self.clock.time()
        for ch in doomed:
            self.state.channels.pop(ch.id, None)
            self.state.deleted_channels[ch.id] = ch
            for mid in self.state.channel_messages.get(ch.id, []):
                msg = self.state.messages[mid]
                if msg.deleted_at is None:
                    msg.deleted_at = now
            if ch.guild_id is not None:
                guild = self.state.guilds.get(ch.guild_id)
                if guild is not None and ch.id in guild.channel_ids:
                    guild.channel_ids.remove(ch.id)
        if channel.is_thread:
            data: dict[str, Any] = {
                "id": str(channel.id),
                "guild_id": str(channel.guild_id),
                "parent_id": str(channel.parent_id),
                "type": channel.type,
            }
            self.emu.gateway.dispatch("THREAD_DELETE", data, guild_id=channel.guild_id)
            self.publish("thread_delete", data, channel_id=channel.id)
        else:
            data = self.state.channel_payload(channel)
            self.emu.gateway.dispatch("CHANNEL_DELETE", data, guild_id=channel.guild_id)
            self.publish("channel_delete", data, channel_id=channel.id)
