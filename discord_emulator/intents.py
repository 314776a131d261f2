"""Gateway intents (https://discord.com/developers/docs/events/gateway#list-of-intents): the bits a
session asks for in IDENTIFY, and the privileged ones an application enables in the developer
portal, which also decide what its REST requests may read (#http-restrictions)."""

from __future__ import annotations

GUILDS = 1 << 0
GUILD_MEMBERS = 1 << 1
GUILD_PRESENCES = 1 << 8
GUILD_MESSAGES = 1 << 9
GUILD_MESSAGE_REACTIONS = 1 << 10
DIRECT_MESSAGES = 1 << 12
DIRECT_MESSAGE_REACTIONS = 1 << 13
MESSAGE_CONTENT = 1 << 15
PRIVILEGED = GUILD_MEMBERS | GUILD_PRESENCES | MESSAGE_CONTENT
