"""Which supervised processes of the session restarted, and when (``GET /pytest-osworld/restarts``).

The session's supervisor (runit, see the image's ``bin/supervised/``) writes one JSON line each
time a service's process starts and each time it ends, as root, to ``SUPERVISED_LOG``. Every
start of a service after its first is a restart; the end before it says how the process ended.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SUPERVISED_LOG = Path("/run/pytest-osworld/supervised.jsonl")
SUPERVISED_LOG_ENV = "GUEST_SUPERVISED_LOG"  # another log to read (tests)


def log_path() -> Path:
    return Path(os.environ.get(SUPERVISED_LOG_ENV) or SUPERVISED_LOG)


def read_events(path: Path) -> list[dict[str, Any]]:
    """The log's events in order; a torn or foreign line is left out."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(event, dict)
            and isinstance(event.get("service"), str)
            and isinstance(event.get("at"), int | float)
        ):
            events.append(event)
    return events


def restarts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each start of a service after its first: ``process``, ``at`` (ISO 8601, UTC), how the process
    before it ended (``exit_code`` or ``signal``) and ``down_seconds`` (from that end to this start)."""
    started: set[str] = set()
    last_end: dict[str, dict[str, Any]] = {}
    found = []
    for event in events:
        service = event["service"]
        if event.get("event") == "exit":
            last_end[service] = event
        elif event.get("event") == "start":
            if service in started:
                end = last_end.pop(service, None)
                found.append(
                    {
                        "process": service,
                        "at": _iso(event["at"]),
                        "exit_code": _int_or_none(end, "exit_code"),
                        "signal": _int_or_none(end, "signal"),
                        "down_seconds": round(max(0.0, event["at"] - end["at"]), 3) if end else None,
                    }
                )
            started.add(service)
    return found


def supervised(events: list[dict[str, Any]]) -> list[str]:
    """The services that started at least once, in the order they first did."""
    return list(dict.fromkeys(e["service"] for e in events if e.get("event") == "start"))


def report() -> dict[str, Any]:
    """The endpoint's answer: ``supervised`` (the services), ``restarts`` (above)."""
    events = read_events(log_path())
    return {"supervised": supervised(events), "restarts": restarts(events)}


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def _int_or_none(event: dict[str, Any] | None, key: str) -> int | None:
    value = (event or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
