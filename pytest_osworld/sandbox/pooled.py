"""A local provider behind a warm pool of its process (``--osworld-warm-pool N``).

The registry puts every provider that keeps no pool of its own (all but ``ray``) behind a
:class:`PooledProvider` when ``warm_pool`` is set: ``N`` sandboxes are started ahead in this pytest
process (under xdist, in each worker: a worker's sandboxes are reached only from its own process),
one pool per key (the sandbox profile, and the services' network a task needs; once the provider is
prepared, up to N starts at once), labelled
``io.pytest-osworld.pool`` so the leftover sweep knows them. A task claims one (checked by
:class:`ClaimCheck`), uses it alone and destroys it after; a replacement starts behind the claim.

:class:`ClaimCheck` is the check of a ready sandbox at its claim, shared with the ray provider's node
agents: the guest answers and its screen is up (``/screen_size``), and no task had it: a claim mark
is made in the guest with ``mkdir``, which fails when the mark is already there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import httpx

from pytest_osworld.errors import SandboxLost
from pytest_osworld.record import Placement
from pytest_osworld.sandbox.base import API_PORT, Progress, Sandbox, SandboxConfigError, SandboxProvider
from pytest_osworld.sandbox.labels import LABEL_POOL
from pytest_osworld.sandbox.pool import WarmPool

if TYPE_CHECKING:
    from pytest_osworld.sandbox.labels import Owner
    from pytest_osworld.settings import Settings

CLAIM_MARK = "/tmp/.pytest-osworld-claimed"  # made in the guest at the claim: a second claim finds it
POOL_TASK = "(warm pool)"  # the task label of a sandbox started ahead: no task is known yet
CLAIM_TIMEOUT = 900.0  # a claim waits this long at most for the filler (each start has its own deadline)
_CHECK_TIMEOUT = httpx.Timeout(10.0, connect=3.0)


@dataclass(frozen=True)
class PoolKey:
    """What a pooled sandbox must match to go to a task: its sandbox (profile and image) and its network."""

    sandbox: str
    network: str | None = None

    @property
    def label(self) -> str:
        return self.sandbox if self.network is None else f"{self.sandbox}@{self.network}"


class ClaimCheck:
    """The check of a ready sandbox at its claim; one HTTP client for every check of a pool."""

    def __init__(self) -> None:
        self._http = httpx.Client(trust_env=False, timeout=_CHECK_TIMEOUT)

    def prime(self, api_url: str) -> None:
        """Ask a just started guest what the claim's check will ask, once: its server loads what those
        calls need now, ahead, not during a claim."""
        try:
            self._http.post(api_url + "/screen_size")
            self._http.post(api_url + "/execute", json={"command": ["true"], "shell": False})
        except httpx.HTTPError:
            pass  # the check at the claim judges it

    def problem(self, api_url: str) -> str | None:
        """None when the guest at ``api_url`` answers, its screen is up and no task had it; else why not."""
        try:
            size = self._http.post(api_url + "/screen_size")
            if size.status_code != 200:
                return f"the guest answered {size.status_code} to /screen_size"
            screen = size.json()
            if not (isinstance(screen, dict) and int(screen.get("width") or 0) > 0 < int(screen.get("height") or 0)):
                return f"the screen is not up (/screen_size answered {size.text[:80]!r})"
            mark = self._http.post(api_url + "/execute", json={"command": ["mkdir", CLAIM_MARK], "shell": False})
        except (httpx.HTTPError, ValueError) as exc:
            return f"the guest did not answer ({type(exc).__name__})"
        try:
            answer = mark.json()
            returncode = int(answer.get("returncode"))
        except (ValueError, TypeError, AttributeError):
            return f"the guest answered {mark.status_code} to the claim mark: {mark.text[:80]!r}"
        if returncode != 0:
            return f"a task had it before (its claim mark {CLAIM_MARK} exists)"
        return None

    def close(self) -> None:
        self._http.close()


class PooledSandbox(Sandbox):
    """A sandbox claimed from a warm pool: the provider's own sandbox, with its placement recorded.

    ``ready_seconds`` is what the task waited for it (the claim), ``describe()`` the provider's own
    description with ``placement``; any other attribute is the provider's sandbox's (``container_id``).
    """

    def __init__(self, inner: Sandbox, placement: Placement, *, task_key: str) -> None:
        self.inner = inner
        self.placement = placement
        self.task_key = task_key
        self.ready_seconds = placement.claim_seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        return self.inner.name

    def url(self, guest_port: int = API_PORT) -> str:
        return self.inner.url(guest_port)

    def alive(self) -> bool:
        return self.inner.alive()

    def logs(self, tail: int = 50) -> str:
        return self.inner.logs(tail)

    def lost(self, what: str) -> SandboxLost:
        return self.inner.lost(what)

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "placement": self.placement.model_dump(mode="json")}

    def stop(self) -> None:
        self.inner.stop()  # never back into the pool: one task per sandbox

    def mark_kept(self, mark: str) -> str:
        return self.inner.mark_kept(mark)  # a kept sandbox never goes back into the pool either


def _stop(sandbox: Sandbox) -> None:
    sandbox.stop()


class PooledProvider(SandboxProvider):
    """``inner``'s sandboxes, ``size`` of them started ahead per key in this process."""

    def __init__(self, inner: SandboxProvider, size: int, *, sandbox: str, progress: Progress | None = None) -> None:
        self.inner = inner
        self.sandbox = sandbox
        self.size = size
        self._check = ClaimCheck()
        self._pid = os.getpid()
        self._prepare_lock = threading.Lock()
        self._prepared = False
        self.pool: WarmPool[PoolKey, Sandbox] = WarmPool(
            size,
            start=self._start_ahead,
            discard=_stop,
            verify=lambda sb: self._check.problem(sb.url(API_PORT)),
            name=f"warm pool of {sandbox}",
        )
        self.pool.want(PoolKey(sandbox))  # the plain sandboxes' pool fills from now

    # --- not a registry entry: the registry builds it around a provider (make_provider)
    @classmethod
    def from_settings(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> Self:
        raise SandboxConfigError("a pooled provider is made by the registry around a provider (make_provider)")

    @classmethod
    def check(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
        raise SandboxConfigError("a pooled provider is checked through the provider it holds (check_pool)")

    @classmethod
    def describe_pool(cls, settings: Settings, owner: Owner) -> dict[str, Any]:
        raise SandboxConfigError("a pooled provider is described through the provider it holds (describe_pool)")

    # --- sandboxes
    def _prepare_once(self) -> None:
        """Prepare the provider (its image, its checks) before the pool's starts may overlap: a
        provider prepares itself on its first start, which must not run twice at once."""
        with self._prepare_lock:
            if self._prepared:
                return
            prepare = getattr(self.inner, "prepare", None)
            if callable(prepare):
                prepare()
            self._prepared = True
        self.pool.allow_parallel_starts(self.size)

    def _start_ahead(self, key: PoolKey) -> Sandbox:
        self._prepare_once()
        labels = {LABEL_POOL: key.label}
        if key.network is None:
            sandbox = self.inner.start(task_key=POOL_TASK, labels=labels)
        else:
            sandbox = self.inner.start_on_network(task_key=POOL_TASK, network=key.network, labels=labels)
        self._check.prime(sandbox.url(API_PORT))
        return sandbox

    def start(self, *, task_key: str, labels: Mapping[str, str] | None = None) -> Sandbox:
        if labels:  # labels of the task's own cannot be put on a sandbox started ahead
            return self.inner.start(task_key=task_key, labels=labels)
        return self._claim(PoolKey(self.sandbox), task_key)

    def start_on_network(self, *, task_key: str, network: str, labels: Mapping[str, str] | None = None) -> Sandbox:
        if labels:
            return self.inner.start_on_network(task_key=task_key, network=network, labels=labels)
        return self._claim(PoolKey(self.sandbox, network), task_key)

    def _claim(self, key: PoolKey, task_key: str) -> PooledSandbox:
        claim = self.pool.claim(key, timeout=CLAIM_TIMEOUT)
        sandbox = claim.item
        placement = Placement(
            provider=self.sandbox,
            node_address=_host_of(sandbox),
            pooled=True,
            warm=claim.warm,
            pool_wait_seconds=claim.pool_wait_seconds,
            claim_seconds=claim.claim_seconds,
            verify_seconds=claim.verify_seconds,
            rejected=claim.rejected,
            claimed_at=claim.claimed_at,
        )
        return PooledSandbox(sandbox, placement, task_key=task_key)

    # --- identity and the end
    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "warm_pool": self.size}

    def sweep(self, run_id: str, *, pid: int | None = None) -> int:
        removed = self.pool.close() if pid in (None, self._pid) else 0
        return removed + self.inner.sweep(run_id, pid=pid)

    def close(self) -> None:
        self.pool.close()
        self._check.close()
        self.inner.close()


def _host_of(sandbox: Sandbox) -> str | None:
    """The environment host a local sandbox runs on (its description says)."""
    host = sandbox.describe().get("host")
    return str(host) if host is not None else None
