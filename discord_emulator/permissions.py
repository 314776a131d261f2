"""Permission computation, following the algorithm on Discord's Permissions docs page.

https://discord.com/developers/docs/topics/permissions#permission-overwrites:
base = @everyone | member roles; ADMINISTRATOR or owner -> everything; then channel overwrites
in order @everyone, roles (deny then allow, aggregated), member. Threads use their parent's
overwrites. Without VIEW_CHANNEL a member has no channel permission at all (implicit deny).
"""

from __future__ import annotations

from .models import DM, Channel
from .state import State

# https://discord.com/developers/docs/topics/permissions#permissions-bitwise-permission-flags
CREATE_INSTANT_INVITE = 1 << 0
ADMINISTRATOR = 1 << 3
MANAGE_CHANNELS = 1 << 4
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_MESSAGES = 1 << 13
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
READ_MESSAGE_HISTORY = 1 << 16
MENTION_EVERYONE = 1 << 17
USE_EXTERNAL_EMOJIS = 1 << 18
CHANGE_NICKNAME = 1 << 26
MANAGE_NICKNAMES = 1 << 27
MANAGE_ROLES = 1 << 28
USE_APPLICATION_COMMANDS = 1 << 31
MANAGE_THREADS = 1 << 34
CREATE_PUBLIC_THREADS = 1 << 35
CREATE_PRIVATE_THREADS = 1 << 36
SEND_MESSAGES_IN_THREADS = 1 << 38
MODERATE_MEMBERS = 1 << 40
PIN_MESSAGES = 1 << 51

# Every flag up to BYPASS_SLOWMODE (1 << 52), the highest documented bit.
ALL = (1 << 53) - 1

# A typical @everyone role in a new server (what the tests and the sandbox start from).
DEFAULT_EVERYONE = (
    CREATE_INSTANT_INVITE
    | ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | MENTION_EVERYONE
    | USE_EXTERNAL_EMOJIS
    | CHANGE_NICKNAME
    | USE_APPLICATION_COMMANDS
    | CREATE_PUBLIC_THREADS
    | CREATE_PRIVATE_THREADS
    | SEND_MESSAGES_IN_THREADS
)

# DMs: everything a user can do in a DM (no guild, no overwrites).
DM_PERMISSIONS = (
    VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | ADD_REACTIONS
    | USE_EXTERNAL_EMOJIS
)


# "Timed out members will temporarily lose all permissions except VIEW_CHANNEL and
# READ_MESSAGE_HISTORY. Owners and admin users with ADMINISTRATOR permissions are exempt."
# (https://discord.com/developers/docs/topics/permissions#permissions-for-timed-out-members)
TIMED_OUT_KEEPS = VIEW_CHANNEL | READ_MESSAGE_HISTORY


def base_permissions(state: State, guild_id: int, user_id: int) -> int:
    guild = state.guilds[guild_id]
    if guild.owner_id == user_id:
        return ALL
    member = guild.members.get(user_id)
    everyone = guild.roles.get(guild.id)
    perms = everyone.permissions if everyone else 0
    if member is not None:
        for role_id in member.roles:
            role = guild.roles.get(role_id)
            if role is not None:
                perms |= role.permissions
    if perms & ADMINISTRATOR:
        return ALL
    if member is not None and member.timed_out(state.clock.time()):
        return perms & TIMED_OUT_KEEPS
    return perms


def channel_permissions(state: State, channel: Channel, user_id: int) -> int:
    """Effective permissions of ``user_id`` in ``channel`` (threads inherit from parent)."""
    if channel.type == DM or channel.guild_id is None:
        return DM_PERMISSIONS if user_id in channel.recipient_ids else 0
    target = channel
    if channel.is_thread and channel.parent_id is not None:
        target = state.channels[channel.parent_id]
    guild = state.guilds[channel.guild_id]
    perms = base_permissions(state, guild.id, user_id)
    if perms & ADMINISTRATOR or perms == ALL:
        return ALL
    member = guild.members.get(user_id)
    overwrites = {(o.type, o.id): o for o in target.overwrites}
    everyone = overwrites.get((0, guild.id))
    if everyone is not None:
        perms &= ~everyone.deny
        perms |= everyone.allow
    allow = deny = 0
    for role_id in member.roles if member else []:
        ow = overwrites.get((0, role_id))
        if ow is not None:
            allow |= ow.allow
            deny |= ow.deny
    perms &= ~deny
    perms |= allow
    member_ow = overwrites.get((1, user_id))
    if member_ow is not None:
        perms &= ~member_ow.deny
        perms |= member_ow.allow
    # Implicit permissions: no View Channel means nothing else applies in that channel.
    if not perms & VIEW_CHANNEL:
        return 0
    if member is not None and member.timed_out(state.clock.time()):
        # Overwrites give a timed-out member nothing back.
        return perms & TIMED_OUT_KEEPS
    return perms


def highest_role_position(state: State, guild_id: int, user_id: int) -> int:
    """The position of a member's highest role (@everyone is 0); the owner outranks everyone
    (https://discord.com/developers/docs/topics/permissions#permission-hierarchy)."""
    guild = state.guilds[guild_id]
    if guild.owner_id == user_id:
        return 1 << 30
    member = guild.members.get(user_id)
    positions = [
        guild.roles[r].position for r in (member.roles if member else []) if r in guild.roles
    ]
    return max(positions, default=0)


def has(perms: int, needed: int) -> bool:
    return perms & needed == needed
