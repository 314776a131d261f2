"""Who may read a message's content: the message content intent.

"Apps without the intent will receive empty values in fields that contain user-inputted content"
(``content``, ``embeds``, ``attachments``, ``components`` and ``poll``) in gateway events and in
REST answers alike, except in messages the app sent, in DMs with the app and in messages that
mention it (https://discord.com/developers/docs/events/gateway#message-content-intent). On the
gateway the session's IDENTIFY intents decide; over REST the application's portal setting does,
"unaffected by which intents your app passes" (#http-restrictions).
"""

from __future__ import annotations

from typing import Any


def content_visible(payload: dict[str, Any], viewer_id: int, *, in_dm: bool) -> bool:
    """Whether an app without the intent still sees this message's content."""
    author = payload.get("author") or {}
    return (
        in_dm
        or author.get("id") == str(viewer_id)
        or any(m.get("id") == str(viewer_id) for m in payload.get("mentions") or [])
    )


def redact(
    payload: dict[str, Any], viewer_id: int, *, has_intent: bool, in_dm: bool
) -> dict[str, Any]:
    """A message payload as ``viewer_id``'s app receives it: without the intent, the content
    fields of a message it may not read are empty (and so are those of the message it replies
    to, by the same rule)."""
    if has_intent:
        return payload
    out = dict(payload)
    if "content" in out and not content_visible(payload, viewer_id, in_dm=in_dm):
        out.update(content="", embeds=[], attachments=[], components=[])
        out.pop("poll", None)
    nested = payload.get("referenced_message")
    if isinstance(nested, dict):
        out["referenced_message"] = redact(nested, viewer_id, has_intent=False, in_dm=in_dm)
    return out
