"""The warm pool's bookkeeping, fast and without Docker: sandboxes whose guests are local HTTP servers.

A full pool hands out a ready sandbox and refills behind it; an empty one makes the claim wait for
the filler (and the claim says so); keys never mix; a failed start goes to a waiting claim and is not
tried again and again; a sandbox that fails its check at the claim (screen down, claimed before) is
destroyed and the next one taken; closing shrinks the pool to zero, a start under way included.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from pytest_osworld.sandbox import SandboxError
from pytest_osworld.sandbox.pool import PoolClosed, PoolEmpty, WarmPool
from pytest_osworld.sandbox.pooled import CLAIM_MARK, POOL_TASK, ClaimCheck, PooledProvider, PooledSandbox, PoolKey
from tests.sandbox.pool_support import GuestProvider, GuestSandbox
from tests.support.polling import wait_for

KEY = PoolKey("desktop")


# The pool's own threads answer in milliseconds: poll often, fail soon.
soon = partial(wait_for, timeout=10.0, every=0.01)


@pytest.fixture
def guests() -> Iterator[GuestProvider]:
    provider = GuestProvider()
    yield provider
    provider.close()


@pytest.fixture
def pooled(guests: GuestProvider) -> Iterator[PooledProvider]:
    provider = PooledProvider(guests, 2, sandbox="desktop")
    yield provider
    provider.close()


def test_a_full_pool_hands_out_a_checked_sandbox_and_refills_behind_it(
    pooled: PooledProvider, guests: GuestProvider
) -> None:
    assert pooled.pool.wait_full(KEY, timeout=10)
    assert len(guests.started) == 2
    assert all(s.labels == {"io.pytest-osworld.pool": "desktop"} for s in guests.started)  # the sweep knows them

    sandbox = pooled.start(task_key="os/task-1")

    assert isinstance(sandbox, PooledSandbox) and sandbox.task_key == "os/task-1"
    placement = sandbox.placement
    assert placement.pooled and placement.warm and placement.provider == "desktop"
    assert placement.node_address == "local-guests"
    assert placement.pool_wait_seconds < placement.claim_seconds
    assert sandbox.ready_seconds == placement.claim_seconds  # what the task waited for
    assert sandbox.describe()["placement"]["warm"] is True
    inner = sandbox.inner
    assert isinstance(inner, GuestSandbox)
    assert CLAIM_MARK in inner.guest.made  # marked as had by a task
    soon(
        lambda: pooled.pool.ready_count(KEY) == 2, "pooled.pool.ready_count(KEY) == 2"
    )  # a refill started behind the claim
    assert len(guests.started) == 3
    sandbox.stop()
    assert inner.stopped  # destroyed after its task, never back in the pool
    assert pooled.pool.ready_count(KEY) == 2


def test_a_claim_on_an_empty_pool_waits_for_the_filler_and_says_so(guests: GuestProvider) -> None:
    guests.gate = threading.Event()
    pooled = PooledProvider(guests, 1, sandbox="desktop")
    try:
        got: list[PooledSandbox] = []
        claimer = threading.Thread(target=lambda: got.append(pooled.start(task_key="t")))  # type: ignore[arg-type]
        claimer.start()
        soon(lambda: pooled.pool.counts()["waiting"] == 1, "one claim waiting")
        guests.gate.set()
        claimer.join(10)
        [sandbox] = got
        assert sandbox.placement.warm is False
        assert sandbox.placement.pool_wait_seconds > 0
        assert sandbox.inner is guests.started[0]  # the claim took the start it waited for
    finally:
        pooled.close()


def guest_of(sandbox: object) -> GuestSandbox:
    assert isinstance(sandbox, PooledSandbox) and isinstance(sandbox.inner, GuestSandbox)
    return sandbox.inner


def test_once_the_provider_is_prepared_the_pool_starts_several_at_once(guests: GuestProvider) -> None:
    guests.preparing = threading.Event()
    guests.gate = threading.Event()
    pooled = PooledProvider(guests, 3, sandbox="desktop")
    try:
        time.sleep(0.2)  # while the provider prepares, nothing starts
        assert guests.concurrent == 0 and guests.prepared == 0
        guests.preparing.set()
        soon(lambda: guests.concurrent == 3, "guests.concurrent == 3")  # then the three of the pool start at once
        guests.gate.set()
        assert pooled.pool.wait_full(KEY, timeout=10)
        guests.gate.clear()
        taken = [pooled.start(task_key=f"t{i}") for i in range(3)]
        soon(lambda: guests.concurrent == 3, "guests.concurrent == 3")  # and the refills behind three claims
        guests.gate.set()
        assert pooled.pool.wait_full(KEY, timeout=10)
        assert guests.prepared == 1 and guests.most_concurrent == 3
        for sandbox in taken:
            sandbox.stop()
    finally:
        guests.preparing.set()
        guests.gate.set()
        pooled.close()


def test_keys_never_mix(pooled: PooledProvider, guests: GuestProvider) -> None:
    plain = guest_of(pooled.start(task_key="a"))
    on_network = guest_of(pooled.start_on_network(task_key="b", network="run-net"))
    assert on_network.network == "run-net" and plain.network is None
    assert on_network.labels == {"io.pytest-osworld.pool": "desktop@run-net"}
    assert guest_of(pooled.start_on_network(task_key="c", network="other-net")).network == "other-net"
    # A task's own labels cannot go on a sandbox started ahead: such a start is its own.
    own = pooled.start(task_key="d", labels={"team": "x"})
    assert isinstance(own, GuestSandbox) and own.labels == {"team": "x"}


def test_a_failed_start_goes_to_the_waiting_claim_and_is_not_retried_in_a_loop(guests: GuestProvider) -> None:
    guests.fail_next = "the engine refused to start a desktop sandbox: no space left"
    pooled = PooledProvider(guests, 2, sandbox="desktop")
    try:
        with pytest.raises(SandboxError, match="no space left"):
            pooled.start(task_key="t")
        soon(lambda: pooled.pool.counts()["starting"] == 0, "no start under way")
        attempts = guests.concurrent + len(guests.started)
        time.sleep(0.3)  # the filler stays idle: nothing asks for that key until the next claim
        assert pooled.pool.counts()["starting"] == 0 and guests.concurrent + len(guests.started) == attempts
        guests.fail_next = None
        assert isinstance(pooled.start(task_key="t2"), PooledSandbox)  # the next claim asks again
    finally:
        pooled.close()


def test_a_sandbox_failing_its_check_is_destroyed_and_the_next_taken(
    pooled: PooledProvider, guests: GuestProvider
) -> None:
    assert pooled.pool.wait_full(KEY, timeout=10)
    bad = list(guests.started)
    for sandbox in bad:
        sandbox.guest.made.add(CLAIM_MARK)  # a task had it before (the pool never does that: this is the guard)
    # The replacements' starts are held until both bad ones were turned down: the claim waits for a start.
    guests.gate = threading.Event()
    claimed: list[Any] = []
    claim = threading.Thread(target=lambda: claimed.append(pooled.start(task_key="t")))
    claim.start()
    soon(lambda: all(s.stopped for s in bad), "all(s.stopped for s in bad)")
    guests.gate.set()
    claim.join(10)
    (got,) = claimed
    assert isinstance(got, PooledSandbox) and got.inner not in bad
    # Two were ready when the claim came (warm), both failed their check and were discarded.
    assert got.placement.warm is True and got.placement.rejected == 2


def test_a_check_tells_screen_down_and_claimed_before() -> None:
    sandbox = GuestSandbox(1, None, {})
    check = ClaimCheck()
    try:
        sandbox.guest.screen = None
        assert "screen_size" in (check.problem(sandbox.api_url) or "")
        sandbox.guest.screen = (1280, 720)
        assert check.problem(sandbox.api_url) is None
        assert "a task had it before" in (check.problem(sandbox.api_url) or "")
        sandbox.stop()
        assert "did not answer" in (check.problem(sandbox.api_url) or "")
    finally:
        check.close()


def test_three_bad_sandboxes_in_a_row_end_the_claim(guests: GuestProvider) -> None:
    pool: WarmPool[str, GuestSandbox] = WarmPool(
        1, start=lambda key: guests.start(task_key=POOL_TASK), discard=lambda s: s.stop(), verify=lambda s: "bad"
    )
    try:
        with pytest.raises(SandboxError, match="3 ready sandboxes in a row failed"):
            pool.claim("k", timeout=10)
    finally:
        pool.close()


def test_a_claim_that_does_not_wait_asks_for_no_start(guests: GuestProvider) -> None:
    guests.gate = threading.Event()
    pool: WarmPool[str, GuestSandbox] = WarmPool(
        1, start=lambda key: guests.start(task_key=POOL_TASK), discard=lambda s: s.stop(), verify=lambda s: None
    )
    try:
        for _ in range(5):
            with pytest.raises(PoolEmpty):
                pool.claim("k", timeout=0)
        guests.gate.set()
        assert pool.wait_full("k", timeout=10)
        assert len(guests.started) == 1  # the key is kept at its size, not one per empty claim
        assert pool.claim("k", timeout=0).warm
    finally:
        pool.close()


def test_closing_shrinks_to_zero_with_a_start_under_way(guests: GuestProvider) -> None:
    pooled = PooledProvider(guests, 2, sandbox="desktop")
    assert pooled.pool.wait_full(KEY, timeout=10)
    guests.gate = threading.Event()
    taken = guest_of(pooled.start(task_key="t"))  # a refill starts and is held at the gate
    soon(lambda: guests.concurrent == 1, "guests.concurrent == 1")
    waiting: list[BaseException] = []

    def claim_twice() -> None:
        try:
            pooled.start(task_key="u").stop()  # the last ready one
            pooled.start(task_key="v")  # waits for the start under way
        except SandboxError as exc:
            waiting.append(exc)

    claimer = threading.Thread(target=claim_twice)
    claimer.start()
    soon(lambda: pooled.pool.counts()["waiting"] == 1, "one claim waiting")
    ending = threading.Thread(target=pooled.sweep, args=("run",))  # the run's end: the pool closes
    ending.start()
    claimer.join(10)
    assert [type(e) for e in waiting] == [PoolClosed]  # the waiting claim is told at once
    guests.gate.set()  # the start under way ends: what it made is destroyed
    ending.join(10)
    assert not ending.is_alive()
    assert len(guests.started) == 4  # two filled, a refill behind each of the two claims
    assert all(s.stopped for s in guests.started if s is not taken)
    assert pooled.pool.counts()["ready"] == 0
    taken.stop()
    pooled.close()
