"""``[HOST:]PORT``: where the live page listens. A bare port listens on loopback only."""

from __future__ import annotations

import re
from dataclasses import dataclass

LOOPBACK = "127.0.0.1"
_ADDRESS = re.compile(r"^(?:(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):)?(?P<port>\d{1,5})$")


@dataclass(frozen=True)
class LiveAddress:
    host: str  # an IPv6 address without its brackets
    port: int  # 0: a free port, chosen when the server starts

    @classmethod
    def parse(cls, text: str) -> LiveAddress:
        found = _ADDRESS.match(text.strip())
        if not found:
            raise ValueError(f"expected [HOST:]PORT such as 8765 or 0.0.0.0:8765, got {text!r}")
        port = int(found["port"])
        if port > 65535:
            raise ValueError(f"the port must be between 0 and 65535, got {text!r}")
        host = (found["host"] or LOOPBACK).strip("[]")
        return cls(host, port)

    @property
    def loopback_only(self) -> bool:
        return self.host in ("127.0.0.1", "localhost", "::1") or self.host.startswith("127.")

    def with_port(self, port: int) -> LiveAddress:
        return LiveAddress(self.host, port)

    @property
    def url(self) -> str:
        """The page's address for a browser (a wildcard host shows as this machine's loopback)."""
        host = {"0.0.0.0": LOOPBACK, "::": "::1"}.get(self.host, self.host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}/"

    def __str__(self) -> str:
        return f"{f'[{self.host}]' if ':' in self.host else self.host}:{self.port}"
