"""Channels: created (CHANNEL_CREATE), changed (CHANNEL_UPDATE, or THREAD_UPDATE for a
thread) and deleted with their threads (CHANNEL_DELETE / THREAD_DELETE)
(https://discord.com/developers/docs/resources/channel#modify-channel, #deleteclose-channel)."""

from __future__ import annotations

from typing import Any

from discord_emulator.state import Channel, Guild

from .threads import ThreadActions


class ChannelActions(ThreadActions):
    def add_channel(self, guild: Guild, channel: Channel) -> None:
        """A new guild channel: stored, then CHANNEL_CREATE (GUILDS intent)."""
        self.state.channels[channel.id] = channel
        guild.channel_ids.append(channel.id)
        payload = self.state.channel_payload(channel)
        self.emu.gateway.dispatch("CHANNEL_CREATE", payload, guild_id=guild.id)
        self.publish("channel_create", payload, guild_id=guild.id)

    def update_channel(self, channel: Channel, changes: dict[str, Any]) -> Channel:
        meta = channel.thread
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
                    meta.archive_timestamp = self.clock.time()
                    if not archived:
                        channel.last_activity = self.clock.time()
            if "locked" in changes and changes["locked"] is not None:
                meta.locked = bool(changes["locked"])
            if changes.get("auto_archive_duration"):
                meta.auto_archive_duration = int(changes["auto_archive_duration"])
            if "invitable" in changes and changes["invitable"] is not None:
                meta.invitable = bool(changes["invitable"])
            self._thread_update(channel)
            if unarchived:
                self._unarchived(channel)
        else:
            payload = self.state.channel_payload(channel)
            self.emu.gateway.dispatch("CHANNEL_UPDATE", payload, guild_id=channel.guild_id)
            self.publish("channel_update", payload, channel_id=channel.id)
        return channel

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
