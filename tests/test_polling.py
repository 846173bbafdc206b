"""The suite's one way to wait (tests/support/polling.py)."""

from __future__ import annotations

import itertools

import pytest

from tests.support.polling import poll_until, wait_for


def test_wait_for_gives_the_first_truthy_value() -> None:
    values = iter([None, 0, "", "ready", "later"])
    assert wait_for(lambda: next(values), "the value", timeout=5, every=0.001) == "ready"


def test_wait_for_fails_naming_what_and_the_last_value_seen() -> None:
    counter = itertools.count()
    with pytest.raises(pytest.fail.Exception, match=r"the server to answer: not within 0.05 s \(last seen: False\)"):
        wait_for(lambda: next(counter) < 0, "the server to answer", timeout=0.05, every=0.001)


def test_poll_until_gives_the_last_value_when_time_runs_out() -> None:
    counter = itertools.count()
    last = poll_until(lambda: next(counter), lambda n: n < 0, timeout=0.05, every=0.001)
    assert last > 0  # polled more than once, and nothing failed
    assert poll_until(lambda: 3, lambda n: n == 3, timeout=5) == 3
