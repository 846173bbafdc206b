"""Polling, the suite's one way to wait for something to happen.

``wait_for``: a wait that must succeed (the test fails naming what did not happen and the last value
seen). ``poll_until``: one that may not (its last value when time runs out; the caller judges it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 90.0, every: float = 0.2) -> T:
    """``probe``'s first truthy value; fails saying ``what`` did not happen within ``timeout`` seconds.
    The default bound is generous: a suite on two busy cores runs everything slower, and a ready probe
    returns at once."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not within {timeout:g} s (last seen: {value!r})", pytrace=False)
        time.sleep(every)


def poll_until(probe: Callable[[], T], enough: Callable[[T], bool], timeout: float, every: float = 0.2) -> T:
    """``probe``'s value once ``enough`` holds, or its last value when ``timeout`` runs out first."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not enough(value) and time.monotonic() < deadline:
        time.sleep(every)
        value = probe()
    return value
