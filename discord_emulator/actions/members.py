"""Guild members: role, nickname and timeout changes reach the bot as GUILD_MEMBER_UPDATE."""

from __future__ import annotations

from discord_emulator.models import Member

from .base import ActionsBase


class MemberActions(ActionsBase):
    def set_member_roles(self, guild_id: int, user_id: int, roles: list[int]) -> None:
        """Change a member's roles: GUILD_MEMBER_UPDATE (GUILD_MEMBERS intent) with the member
        and ``guild_id`` (https://discord.com/developers/docs/events/gateway-events#guild-member-update)."""
        member = self.state.guilds[guild_id].members[user_id]
        if member.roles == roles:
            return
        member.roles = roles
        self.member_updated(member)

    def member_updated(self, member: Member) -> None:
        """GUILD_MEMBER_UPDATE (GUILD_MEMBERS intent) with the whole member and ``guild_id``."""
        data = self.state.member_payload(member)
        data["guild_id"] = str(member.guild_id)
        self.emu.gateway.dispatch("GUILD_MEMBER_UPDATE", data, guild_id=member.guild_id)
        self.publish("guild_member_update", data, guild_id=member.guild_id)
