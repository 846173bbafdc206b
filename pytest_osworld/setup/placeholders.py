"""Placeholders of ``execute`` commands, and keeping the client password out of every message."""

from __future__ import annotations

from typing import TypeVar

from pytest_osworld.settings import Settings

PASSWORD = "{CLIENT_PASSWORD}"
REDACTED = "***"
C = TypeVar("C", str, list[str])


def values(settings: Settings) -> dict[str, str]:
    # The _HALF names come first: {SCREEN_WIDTH} is a prefix of {SCREEN_WIDTH_HALF}'s text.
    return {
        PASSWORD: settings.sandbox.client_password,
        "{SCREEN_WIDTH_HALF}": str(settings.sandbox.screen_width // 2),
        "{SCREEN_HEIGHT_HALF}": str(settings.sandbox.screen_height // 2),
        "{SCREEN_WIDTH}": str(settings.sandbox.screen_width),
        "{SCREEN_HEIGHT}": str(settings.sandbox.screen_height),
    }


def _substitute_one(text: str, table: dict[str, str]) -> str:
    for name, value in table.items():
        text = text.replace(name, value)
    return text


def substitute(command: C, settings: Settings) -> C:
    """``command`` (a string or a list of arguments) with every placeholder replaced."""
    table = values(settings)
    if isinstance(command, str):
        return _substitute_one(command, table)
    return [_substitute_one(arg, table) if isinstance(arg, str) else arg for arg in command]


def uses_password(command: str | list[str]) -> bool:
    parts = [command] if isinstance(command, str) else command
    return any(isinstance(p, str) and PASSWORD in p for p in parts)


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` masked; used on anything shown about a command that held the password."""
    if not secret or not text:
        return text
    return text.replace(secret, REDACTED)
