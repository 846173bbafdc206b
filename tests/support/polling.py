"""Polling that does not fail: a probe's value once it is enough, or its last value when time runs out
(the caller judges it). For a wait that must succeed, use ``wait_until`` or the browser's ``wait_for``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll_until(probe: Callable[[], T], enough: Callable[[T], bool], timeout: float, every: float = 0.2) -> T:
    """``probe``'s value once ``enough`` holds, or its last value when ``timeout`` runs out first."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not enough(value) and time.monotonic() < deadline:
        time.sleep(every)
        value = probe()
    return value
