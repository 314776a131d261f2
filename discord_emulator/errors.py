"""Discord's JSON error codes and messages, in one place.

Every REST rule the emulator enforces raises :class:`DiscordError`; the server turns it into
the body Discord sends: ``{"message": ..., "code": ...}`` (plus ``errors`` for 50035).
Codes and messages come from https://discord.com/developers/docs/topics/opcodes-and-status-codes
("JSON Error Codes"); the HTTP status for each is the one Discord answers with.
"""

from __future__ import annotations

from typing import Any


class DiscordError(Exception):
    """A REST failure answered with Discord's status, JSON error code and message."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        *,
        errors: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status = status
        self.code = code
        self.message = message
        self.errors = errors
        self.headers = headers or {}
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors is not None:
            body["errors"] = self.errors
        body.update(self.extra)
        return body


# Generic HTTP errors: Discord answers unknown routes / bad auth with code 0.
def unauthorized() -> DiscordError:
    return DiscordError(401, 0, "401: Unauthorized")


def not_found_route() -> DiscordError:
    return DiscordError(404, 0, "404: Not Found")


def method_not_allowed() -> DiscordError:
    return DiscordError(405, 0, "405: Method Not Allowed")


# 10xxx: unknown entities (404).
def unknown_channel() -> DiscordError:
    return DiscordError(404, 10003, "Unknown Channel")


def unknown_guild() -> DiscordError:
    return DiscordError(404, 10004, "Unknown Guild")


def unknown_member() -> DiscordError:
    return DiscordError(404, 10007, "Unknown Member")


def unknown_message() -> DiscordError:
    return DiscordError(404, 10008, "Unknown Message")


def unknown_role() -> DiscordError:
    return DiscordError(404, 10011, "Unknown Role")


def unknown_user() -> DiscordError:
    return DiscordError(404, 10013, "Unknown User")


def unknown_webhook() -> DiscordError:
    return DiscordError(404, 10015, "Unknown Webhook")


def unknown_application() -> DiscordError:
    return DiscordError(404, 10002, "Unknown Application")


def unknown_application_command() -> DiscordError:
    return DiscordError(404, 10063, "Unknown application command")


def unknown_emoji() -> DiscordError:
    # A reaction emoji that is not URL-encoded Unicode or an emoji the bot can use.
    return DiscordError(400, 10014, "Unknown Emoji")


def unknown_interaction() -> DiscordError:
    # Interaction not answered within 3 s (or never existed): 404 / 10062.
    return DiscordError(404, 10062, "Unknown interaction")


# 30xxx: maximums reached.
def old_message_edit_limit(retry_after: float) -> DiscordError:
    # Observed behaviour: a 429 whose body carries code 30046 and a retry_after.
    return DiscordError(
        429,
        30046,
        "Maximum number of edits to messages older than 1 hour reached. Try again later.",
        extra={"retry_after": round(retry_after, 3), "global": False},
    )


def max_pins() -> DiscordError:
    return DiscordError(400, 30003, "Maximum number of pins reached for the channel (250)")


def max_reactions() -> DiscordError:
    return DiscordError(400, 30010, "Maximum number of reactions reached (20)")


# 4xxxx / 5xxxx: request errors.
def request_entity_too_large() -> DiscordError:
    # An upload over the size limit: 413 with code 40005 (JSON Error Codes).
    return DiscordError(413, 40005, "Request entity too large")


def interaction_already_acknowledged() -> DiscordError:
    return DiscordError(400, 40060, "Interaction has already been acknowledged.")


def missing_access() -> DiscordError:
    # Discord answers 50001 (not 50013) when the bot cannot View Channel at all.
    return DiscordError(403, 50001, "Missing Access")


def cannot_dm_channel() -> DiscordError:
    return DiscordError(400, 50003, "Cannot execute action on a DM channel")


def cannot_edit_other_users_message() -> DiscordError:
    return DiscordError(403, 50005, "Cannot edit a message authored by another user")


def bulk_delete_count() -> DiscordError:
    return DiscordError(
        400,
        50016,
        "Provided too few or too many messages to delete. Must provide at least 2 and fewer "
        "than 100 messages to delete",
    )


def bulk_delete_too_old() -> DiscordError:
    return DiscordError(400, 50034, "A message provided was too old to bulk delete")


def cannot_message_user() -> DiscordError:
    return DiscordError(403, 50007, "Cannot send messages to this user")


def empty_message() -> DiscordError:
    return DiscordError(400, 50006, "Cannot send an empty message")


def missing_permissions() -> DiscordError:
    return DiscordError(403, 50013, "Missing Permissions")


def invalid_webhook_token() -> DiscordError:
    # Interaction tokens are webhook tokens; after 15 minutes they are refused with 50027.
    return DiscordError(401, 50027, "Invalid Webhook Token")


def invalid_form_body(errors: dict[str, Any]) -> DiscordError:
    return DiscordError(400, 50035, "Invalid Form Body", errors=errors)


def thread_archived() -> DiscordError:
    return DiscordError(400, 50083, "Thread is archived")


def cannot_send_in_voice() -> DiscordError:
    return DiscordError(400, 50008, "Cannot send messages in a non-text channel")


def thread_already_created() -> DiscordError:
    return DiscordError(400, 160004, "A thread has already been created for this message")


def thread_locked() -> DiscordError:
    return DiscordError(403, 160005, "Thread is locked")


def field_error(path: list[str | int], code: str, message: str) -> dict[str, Any]:
    """Build Discord's nested ``errors`` object for one failing field.

    ``["embeds", 0, "title"]`` becomes ``{"embeds": {"0": {"title": {"_errors": [...]}}}}``.
    """
    leaf: dict[str, Any] = {"_errors": [{"code": code, "message": message}]}
    for part in reversed(path):
        leaf = {str(part): leaf}
    return leaf


def merge_errors(into: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge two ``errors`` trees (Discord reports every failing field at once)."""
    for key, value in other.items():
        if key == "_errors":
            into.setdefault("_errors", []).extend(value)
        elif key in into and isinstance(into[key], dict):
            merge_errors(into[key], value)
        else:
            into[key] = value
    return into
