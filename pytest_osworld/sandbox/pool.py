"""A warm pool: sandboxes started ahead, handed out one per task, refilled behind each claim.

``WarmPool`` keeps ``size`` ready items per key (a key is what a sandbox must match to be handed
to a task: its sandbox profile and the network it joins), started by a filler thread, at most
``max_starts`` at a time (one until the caller allows more: a provider prepares itself on its first
start, which must not run twice at once). A claim takes the oldest ready item of its key, checks it
(``verify``: the guest answers, the screen is up, no task had it) and hands it over; the filler
starts a replacement behind it. When none is ready the claim waits for the filler, which then starts
for the waiting claims first. An item is never given back: whoever claimed it destroys it after its
task.

A start that fails is handed to one waiting claim (its task is masked with that error); with no
claim waiting, the key stops being filled until the next claim asks for it, so an engine that
refuses every start is not asked again and again. ``close`` shrinks the pool to zero.

Used by ``sandbox.pooled`` (a local provider's pool, per pytest process) and by the ``ray``
provider's node agents (a pool per node).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pytest_osworld.errors import SandboxError
from pytest_osworld.record import now_iso

log = logging.getLogger("pytest_osworld.sandbox.pool")

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

MAX_VERIFY_FAILURES = 3  # items in a row that fail their check before the claim gives up


class PoolClosed(SandboxError):
    """The pool was closed (the run is ending) while a claim waited."""


class PoolEmpty(SandboxError):
    """No item of the key got ready within the claim's time (at once, for a claim that does not wait)."""


@dataclass(frozen=True)
class Claim(Generic[T]):
    """An item handed to one task, and how it was had."""

    item: T
    warm: bool  # a ready item was there when the claim came (a replacement for one that failed its check aside)
    rejected: int  # ready items that failed their check first (each destroyed, the next one taken)
    pool_wait_seconds: float  # waited for an item to get ready
    claim_seconds: float  # from the request until handed over, the check included
    verify_seconds: float  # of which the check of the item handed over
    claimed_at: str


@dataclass
class _Key(Generic[T]):
    ready: deque[tuple[T, float]] = field(default_factory=deque)
    waiting: int = 0  # claims waiting for an item of this key
    errors: deque[SandboxError] = field(default_factory=deque)  # start failures for waiting claims
    paused: bool = False  # a start failed with no claim waiting: keep it warm again at the next claim
    starting: int = 0  # starts under way for this key


class WarmPool(Generic[K, T]):
    """``size`` ready items per key, started by ``start(key)``, checked by ``verify(item)`` (None: good,
    else why not) when claimed, destroyed by ``discard(item)`` when not handed out."""

    def __init__(
        self,
        size: int,
        *,
        start: Callable[[K], T],
        discard: Callable[[T], None],
        verify: Callable[[T], str | None],
        name: str = "warm pool",
    ) -> None:
        if size < 1:
            raise ValueError("a warm pool holds at least one item")
        self.size = size
        self.name = name
        self._start = start
        self._discard = discard
        self._verify = verify
        self._keys: dict[K, _Key[T]] = {}
        self._closed = False
        self._cond = threading.Condition()
        self._filler: threading.Thread | None = None
        self._max_starts = 1
        self._in_flight = 0
        self._starters: set[threading.Thread] = set()

    # --- asking for items
    def allow_parallel_starts(self, count: int) -> None:
        """Let the filler run up to ``count`` starts at once from now on (the provider is prepared)."""
        with self._cond:
            self._max_starts = max(1, count)
            self._cond.notify_all()

    def want(self, key: K) -> None:
        """Keep ``key`` warm from now on (a claim of it does the same)."""
        with self._cond:
            self._key(key).paused = False
            self._ensure_filler()
            self._cond.notify_all()

    def claim(self, key: K, *, timeout: float) -> Claim[T]:
        """A checked item of ``key``; :class:`SandboxError` when its start failed, :class:`PoolEmpty` when
        none got ready in time. ``timeout`` 0 takes a ready item or none, and asks for no start."""
        begun = time.monotonic()
        deadline = begun + timeout
        warm: bool | None = None
        failures: list[str] = []
        while True:
            item, was_ready = self._take(key, deadline)
            if warm is None:  # whether one was ready when the claim came, whatever its check found
                warm = was_ready
            waited = time.monotonic() - begun
            checked = time.monotonic()
            try:
                problem = self._verify(item)
            except Exception as exc:  # noqa: BLE001 - a check that crashes is a failed check
                problem = f"{type(exc).__name__}: {exc}"
            if problem is None:
                now = time.monotonic()
                return Claim(
                    item=item,
                    warm=warm,
                    rejected=len(failures),
                    pool_wait_seconds=round(waited, 4),
                    claim_seconds=round(now - begun, 4),
                    verify_seconds=round(now - checked, 4),
                    claimed_at=now_iso(),
                )
            failures.append(problem)
            log.warning("%s: a ready sandbox failed its check at the claim (%s); discarded", self.name, problem)
            self._discard_later(item)
            if len(failures) >= MAX_VERIFY_FAILURES:
                raise SandboxError(
                    f"{self.name}: {len(failures)} ready sandboxes in a row failed their check at the claim "
                    f"(last: {failures[-1]})"
                )

    def _take(self, key: K, deadline: float) -> tuple[T, bool]:
        with self._cond:
            slot = self._key(key)
            slot.paused = False
            was_ready = bool(slot.ready)
            if deadline <= time.monotonic():  # a claim that does not wait: no start is asked for it
                self._ensure_filler()
                self._cond.notify_all()
                if self._closed:
                    raise PoolClosed(f"{self.name} is closed (the run is ending)")
                if not slot.ready:
                    raise PoolEmpty(f"{self.name}: no sandbox is ready")
                item, _ = slot.ready.popleft()
                return item, True
            slot.waiting += 1
            self._ensure_filler()
            self._cond.notify_all()
            try:
                while True:
                    if self._closed:
                        raise PoolClosed(f"{self.name} was closed while a claim waited (the run is ending)")
                    if slot.ready:
                        item, _ = slot.ready.popleft()
                        return item, was_ready
                    if slot.errors:
                        raise slot.errors.popleft()
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise PoolEmpty(f"{self.name}: no sandbox got ready for a claim within the time allowed")
                    self._cond.wait(remaining)
            finally:
                slot.waiting -= 1
                self._cond.notify_all()  # the filler refills behind the claim

    # --- what is in it
    def ready_count(self, key: K) -> int:
        with self._cond:
            slot = self._keys.get(key)
            return len(slot.ready) if slot else 0

    def wait_full(self, key: K, *, timeout: float) -> bool:
        """Wait until ``key`` holds ``size`` ready items (a benchmark measures claims only then)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self.want(key)
            while len(self._key(key).ready) < self.size:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    return False
                self._cond.wait(remaining)
            return True

    def counts(self) -> dict[str, int]:
        with self._cond:
            return {
                "ready": sum(len(s.ready) for s in self._keys.values()),
                "starting": self._in_flight,
                "keys": len(self._keys),
                "waiting": sum(s.waiting for s in self._keys.values()),
            }

    # --- the end
    def close(self, *, wait: float = 10.0) -> int:
        """Shrink to zero: destroy every ready item, stop the filler (a start under way is destroyed
        when it ends; ``wait`` bounds how long this call waits for it). Returns how many were destroyed."""
        with self._cond:
            self._closed = True
            items = [item for slot in self._keys.values() for item, _ in slot.ready]
            for slot in self._keys.values():
                slot.ready.clear()
            self._cond.notify_all()
            threads = [t for t in (self._filler, *self._starters) if t is not None]
        for item in items:
            self._discard_quietly(item)
        deadline = time.monotonic() + wait
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        return len(items)

    # --- the filler
    def _key(self, key: K) -> _Key[T]:
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = _Key()
        return found

    def _ensure_filler(self) -> None:
        if self._filler is None and not self._closed:
            self._filler = threading.Thread(target=self._fill, name=f"{self.name} filler", daemon=True)
            self._filler.start()

    def _next(self) -> K | None:
        """The key to start an item for: claims that wait first, then keys below ``size`` (starts under
        way count as items to come)."""
        for key, slot in self._keys.items():
            if slot.waiting - len(slot.errors) > len(slot.ready) + slot.starting:
                return key
        for key, slot in self._keys.items():
            if not slot.paused and len(slot.ready) + slot.starting < self.size:
                return key
        return None

    def _fill(self) -> None:
        """Hand starts to starter threads, at most ``max_starts`` at once."""
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    key = self._next() if self._in_flight < self._max_starts else None
                    if key is not None:
                        break
                    self._cond.wait()
                self._key(key).starting += 1
                self._in_flight += 1
                starter = threading.Thread(target=self._start_one, args=(key,), name=f"{self.name} start", daemon=True)
                self._starters.add(starter)
            starter.start()

    def _start_one(self, key: K) -> None:
        item: T | None = None
        error: SandboxError | None = None
        try:
            item = self._start(key)
        except SandboxError as exc:
            error = exc
        except Exception as exc:  # noqa: BLE001 - a crashed start is a failed start, never a dead filler
            error = SandboxError(f"{self.name}: starting a sandbox failed: {type(exc).__name__}: {exc}")
        late: T | None = None
        with self._cond:
            self._starters.discard(threading.current_thread())
            self._in_flight -= 1
            slot = self._key(key)
            slot.starting -= 1
            if error is not None:
                if slot.waiting > len(slot.errors):
                    slot.errors.append(error)
                else:
                    slot.paused = True
                    log.warning("%s: a start failed with no claim waiting: %s", self.name, error)
            elif self._closed:
                late = item
            else:
                assert item is not None
                slot.ready.append((item, time.monotonic()))
            self._cond.notify_all()
        if late is not None:
            self._discard_quietly(late)

    def _discard_quietly(self, item: T) -> None:
        with contextlib.suppress(Exception):
            self._discard(item)

    def _discard_later(self, item: T) -> None:
        """Destroy an item in the background: the claim goes on meanwhile."""
        threading.Thread(target=self._discard_quietly, args=(item,), name=f"{self.name} discard", daemon=True).start()
