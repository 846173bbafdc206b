"""The forge's settings, read once at start from its environment, and its fixed values."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# root: the token's user, the administrator, and the identity of what the API writes.
ROOT: dict[str, Any] = {"id": 1, "username": "root", "name": "Administrator", "email": "admin@example.com"}
IMPORT_SCHEMES = ("http", "https", "git", "file")
IMPORT_TIMEOUT_S = 600
SEED_TIME = "2026-01-01T10:00:00.000Z"


@dataclass(frozen=True)
class Config:
    """``FORGE_TOKEN`` (required), ``FORGE_HOST`` (0.0.0.0), ``FORGE_PORT`` (80; 0 picks a free one),
    ``FORGE_DATA`` (where the repositories live)."""

    token: str
    data: str
    host: str = "0.0.0.0"
    port: int = 80

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Config:
        return cls(
            token=environ.get("FORGE_TOKEN", ""),
            data=environ.get("FORGE_DATA") or os.path.join(tempfile.gettempdir(), "forge"),
            host=environ.get("FORGE_HOST", "0.0.0.0"),
            port=int(environ.get("FORGE_PORT", "80")),
        )

    @property
    def repos(self) -> str:
        return os.path.join(self.data, "repos")

    @property
    def imports(self) -> str:
        """Clones under way, moved into ``repos`` when they finish."""
        return os.path.join(self.data, "imports")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
