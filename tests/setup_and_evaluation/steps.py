"""Setup steps as the setup and evaluation tests write them: raw dicts validated as a task file's are,
and the steps OSWorld's chrome tasks start the browser with."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from pytest_osworld.tasks.model import SetupStep

STEPS = TypeAdapter(list[SetupStep])


def steps(*raw: dict[str, Any]) -> list[Any]:
    return STEPS.validate_python(list(raw))


# How OSWorld's chrome tasks start the browser (their config's first steps).
START_CHROME = (
    {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
    {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
)
