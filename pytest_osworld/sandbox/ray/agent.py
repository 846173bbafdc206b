"""The node agent: one Ray actor per node and run, starting that node's sandboxes on its own engine.

Made by the run's owner (``cluster.RunCluster``) as a detached, named actor (``node-<node id>`` in the
run's namespace) pinned to its node and asking no resources. It holds what every sandbox of the node
shares: the inner provider (the ``ray_sandbox`` one: desktop, a container profile, osworld-vm, vm)
on the node's Docker engine (``DOCKER_HOST`` of the node's Ray processes, else its local socket),
prepared once; the forwarders of its sandboxes' guest ports (``forward``); the node's warm pool,
whose sandboxes each hold a placement group pinned to this node (a slot, CPUs, memory).

- ``preflight``: the inner provider's check on this node's engine; a node that fails it takes no
  sandbox (``start`` and the pool refuse, the owner fences its slots and says so).
- ``start`` (a sandbox for a driver whose placement group Ray put on this node), ``claim`` (one of
  the pool's), ``stop``, ``alive``, ``logs``: a sandbox by name, its guest ports relayed to the driver.
- a watchdog: without a heartbeat of the run's owner for ``heartbeat_timeout`` seconds (the run's
  process died) the agent removes everything of the run on its engine and ends; meanwhile it removes
  the run's containers that nodes Ray reports dead left on its engine (one engine shared by nodes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import requests.exceptions

from pytest_osworld.errors import SandboxError
from pytest_osworld.sandbox.base import GUEST_PORTS, Sandbox, SandboxConfigError, SandboxProvider
from pytest_osworld.sandbox.hosts import EngineHost
from pytest_osworld.sandbox.labels import LABEL_MANAGED, LABEL_NODE, LABEL_POOL, LABEL_RUN_ID, Owner
from pytest_osworld.sandbox.leftovers import list_managed, sweep_run
from pytest_osworld.sandbox.pool import PoolEmpty, WarmPool
from pytest_osworld.sandbox.pooled import POOL_TASK, ClaimCheck, PoolKey
from pytest_osworld.sandbox.ray.forward import Forwarder
from pytest_osworld.sandbox.registry import provider_class
from pytest_osworld.settings import Settings

log = logging.getLogger("pytest_osworld.sandbox.ray")

_WATCH_INTERVAL = 1.0
_REAP_INTERVAL = 5.0
_PIN_POLL = 1.0  # seconds between checks that the pool is still open while a pinned placement waits


@dataclass
class _Held:
    """A sandbox of this node and what relays to it."""

    sandbox: Sandbox
    forwarder: Forwarder
    placement_group: Any = None  # the pool's own, pinned to this node; a driver's stays the driver's
    task_key: str = POOL_TASK

    @property
    def local_api(self) -> str:
        return self.sandbox.api_url

    def close(self, ray: Any) -> None:
        self.forwarder.close()
        try:
            self.sandbox.stop()
        finally:
            if self.placement_group is not None:
                with contextlib.suppress(Exception):
                    ray.util.remove_placement_group(self.placement_group)


class NodeAgent:
    """The agent of one node for one run (a Ray actor class; see the module's docstring)."""

    def __init__(
        self,
        *,
        run_id: str,
        settings: dict[str, Any],
        bundle: dict[str, float],
        heartbeat_timeout: float,
    ) -> None:
        import ray

        self._ray = ray
        self.node_id = str(ray.get_runtime_context().get_node_id())
        self.address = str(ray.util.get_node_ip_address())
        self.settings = Settings.model_validate(settings)
        self.sandbox_name = self.settings.sandbox.name
        self.owner = Owner(run_id=run_id, worker_id=f"ray-{self.node_id[:8]}")
        self.bundle = bundle
        self.heartbeat_timeout = heartbeat_timeout
        self.key = PoolKey(self.sandbox_name)
        self._lock = threading.Lock()
        self._provider: SandboxProvider | None = None
        self._problem: str | None = None
        self._checked = False
        self._held: dict[str, _Held] = {}
        self._pool: WarmPool[PoolKey, _Held] | None = None
        self._check = ClaimCheck()
        self._last_beat = time.monotonic()
        self._ended = False
        threading.Thread(target=self._watch, name="node agent watchdog", daemon=True).start()

    # --- the node's engine
    def preflight(self) -> str | None:
        """None when this node can start the run's sandboxes, else why not (once; the answer is kept)."""
        with self._lock:
            if not self._checked:
                self._problem = self._preflight()
                self._checked = True
            return self._problem

    def _preflight(self) -> str | None:
        try:
            cls = provider_class(self.sandbox_name, self.settings)
            cls.check(self.settings, self.owner, progress=lambda line: log.info("%s", line))
            provider = cls.from_settings(self.settings, self.owner)
            prepare = getattr(provider, "prepare", None)
            if callable(prepare):
                prepare()  # once, here: the node's sandboxes then start in parallel without preparing again
            self._provider = provider
        except SandboxConfigError as exc:
            return f"it fails the preflight: {_problems(str(exc))}"
        except Exception as exc:  # noqa: BLE001 - anything that breaks the preflight keeps sandboxes off the node
            return f"its preflight failed: {type(exc).__name__}: {exc}"
        return None

    def _ready_provider(self) -> SandboxProvider:
        problem = self.preflight()
        if problem is not None or self._provider is None:
            raise _Refused(problem or "its preflight did not finish")
        return self._provider

    # --- sandboxes
    def start(self, task_key: str, allow: list[str]) -> dict[str, Any]:
        """A sandbox for the driver whose placement group Ray put on this node."""
        try:
            provider = self._ready_provider()
            sandbox = provider.start(task_key=task_key, labels={LABEL_NODE: self.node_id})
            held = self._hold(sandbox, task_key=task_key, allow=set(allow))
        except _Refused as exc:
            return {"ok": False, "kind": "refused", "message": str(exc)}
        except SandboxError as exc:
            return {"ok": False, "kind": "error", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001 - the driver masks the task with it, never a crash of the agent
            return {"ok": False, "kind": "error", "message": f"{type(exc).__name__}: {exc}"}
        with self._lock:
            self._held[sandbox.name] = held
        return {"ok": True, **self._info(held)}

    def start_pool(self, size: int) -> str | None:
        """Keep ``size`` sandboxes of this node warm from now on (when the preflight passes; else why not)."""
        problem = self.preflight()
        if problem is not None:
            return problem
        with self._lock:
            if self._pool is None and not self._ended:
                self._pool = WarmPool(
                    size,
                    start=self._start_ahead,
                    discard=self._discard,
                    verify=lambda held: self._check.problem(held.local_api),
                    name=f"warm pool of node {self.node_id[:12]}",
                )
                self._pool.allow_parallel_starts(size)  # the preflight prepared the provider
                self._pool.want(self.key)
        return None

    def claim(self, task_key: str, allow: list[str], wait: float) -> dict[str, Any]:
        """One of the pool's sandboxes (waiting up to ``wait`` seconds for one), its ports let through to ``allow``."""
        pool = self._pool
        if pool is None:
            return {"ok": False, "kind": "empty", "message": "this node keeps no warm pool"}
        try:
            claim = pool.claim(self.key, timeout=wait)
        except PoolEmpty as exc:
            return {"ok": False, "kind": "empty", "message": str(exc)}
        except SandboxError as exc:
            return {"ok": False, "kind": "error", "message": str(exc)}
        held = claim.item
        held.task_key = task_key
        held.forwarder.allow(set(allow))
        with self._lock:
            self._held[held.sandbox.name] = held
        return {
            "ok": True,
            **self._info(held),
            "claim": {
                "warm": claim.warm,
                "pool_wait_seconds": claim.pool_wait_seconds,
                "claim_seconds": claim.claim_seconds,
                "verify_seconds": claim.verify_seconds,
                "rejected": claim.rejected,
                "claimed_at": claim.claimed_at,
            },
        }

    def _start_ahead(self, key: PoolKey) -> _Held:
        provider = self._ready_provider()
        group = self._pinned_group()
        try:
            sandbox = provider.start(task_key=POOL_TASK, labels={LABEL_NODE: self.node_id, LABEL_POOL: key.label})
        except BaseException:
            self._ray.util.remove_placement_group(group)
            raise
        held = self._hold(sandbox, task_key=POOL_TASK, allow=set())
        held.placement_group = group
        self._check.prime(held.local_api)
        return held

    def _pinned_group(self) -> Any:
        """A placement group of one sandbox's bundle on this node, once Ray has a free slot for it here."""
        group = self._ray.util.placement_group(
            [self.bundle], strategy="STRICT_PACK", bundle_label_selector=[{"ray.io/node-id": self.node_id}]
        )
        while not group.wait(timeout_seconds=_PIN_POLL):
            if self._ended:
                self._ray.util.remove_placement_group(group)
                raise SandboxError("the node agent ended while a warm sandbox waited for a slot")
        return group

    def _hold(self, sandbox: Sandbox, *, task_key: str, allow: set[str]) -> _Held:
        targets: dict[int, tuple[str, int]] = {}
        for port in GUEST_PORTS:
            try:
                url = urllib.parse.urlsplit(sandbox.url(port))
            except SandboxError:
                continue  # a port the profile does not publish
            targets[port] = (url.hostname or "127.0.0.1", int(url.port or 80))
        try:
            forwarder = Forwarder(self.address, targets, allow)
        except OSError as exc:
            sandbox.stop()
            raise SandboxError(f"node {self.node_id[:12]} could not listen for the guest ports: {exc}") from None
        return _Held(sandbox=sandbox, forwarder=forwarder, task_key=task_key)

    def _info(self, held: _Held) -> dict[str, Any]:
        return {
            "name": held.sandbox.name,
            "node_id": self.node_id,
            "node_address": self.address,
            "ports": {str(port): list(address) for port, address in held.forwarder.addresses.items()},
            "describe": held.sandbox.describe(),
            "ready_seconds": held.sandbox.ready_seconds,
        }

    def _discard(self, held: _Held) -> None:
        held.close(self._ray)

    def stop(self, name: str) -> bool:
        """Remove a sandbox of this node; False when it is not (any more) here."""
        with self._lock:
            held = self._held.pop(name, None)
        if held is None:
            return False
        held.close(self._ray)
        return True

    def alive(self, name: str) -> bool:
        with self._lock:
            held = self._held.get(name)
        return held is not None and held.sandbox.alive()

    def logs(self, name: str, tail: int) -> str:
        with self._lock:
            held = self._held.get(name)
        return held.sandbox.logs(tail) if held is not None else ""

    # --- the run
    def heartbeat(self) -> None:
        self._last_beat = time.monotonic()

    def status(self) -> dict[str, Any]:
        with self._lock:
            held = [
                {
                    "name": h.sandbox.name,
                    "task": h.task_key,
                    "ports": {str(p): list(a) for p, a in h.forwarder.addresses.items()},
                }
                for h in self._held.values()
            ]
        return {
            "node_id": self.node_id,
            "address": self.address,
            "run_id": self.owner.run_id,
            "problem": self._problem,
            "checked": self._checked,
            "pool": self._pool.counts() if self._pool is not None else None,
            "sandboxes": held,
            "pid": os.getpid(),
        }

    def leftovers(self, max_age: float, other_than: str) -> list[dict[str, Any]]:
        """What ended runs left on this node's engine (as ``leftovers.Managed`` fields)."""
        host = EngineHost()
        try:
            client = host.connect(timeout=20)
        except SandboxConfigError:
            return []
        with contextlib.closing(client):
            found = list_managed(client, host, max_age=max_age)
        return [vars(item) for item in found if item.leftover and item.run_id != other_than]

    def shutdown(self) -> int:
        """The run's end on this node: the pool shrinks to zero, every sandbox goes, then whatever is left
        of the run on this engine. Returns how many containers were removed."""
        return self._end("the run ended")

    def _end(self, why: str) -> int:
        with self._lock:
            if self._ended:
                return 0
            self._ended = True
            pool, self._pool = self._pool, None
            held = list(self._held.values())
            self._held.clear()
        removed = pool.close() if pool is not None else 0
        for item in held:
            with contextlib.suppress(Exception):
                item.close(self._ray)
            removed += 1
        removed += self._sweep()
        log.info("node agent %s ended (%s): %d container(s) removed", self.node_id[:12], why, removed)
        if self._provider is not None:
            with contextlib.suppress(Exception):
                self._provider.close()
        self._check.close()
        return removed

    def _sweep(self) -> int:
        host = EngineHost()
        try:
            client = host.connect(timeout=20)
        except SandboxConfigError:
            return 0
        with (
            contextlib.closing(client),
            contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException),
        ):
            return sweep_run(client, self.owner.run_id, services=False)
        return 0

    # --- the watchdog
    def _watch(self) -> None:
        next_reap = time.monotonic() + _REAP_INTERVAL
        while not self._ended:
            time.sleep(_WATCH_INTERVAL)  # the watchdog's period: heartbeats come every few seconds
            if time.monotonic() - self._last_beat > self.heartbeat_timeout:
                self._end(
                    f"no heartbeat of the run's owner for {self.heartbeat_timeout:g} s: the run's process is gone"
                )
                self._exit()
                return
            if time.monotonic() >= next_reap:
                next_reap = time.monotonic() + _REAP_INTERVAL
                with contextlib.suppress(Exception):
                    self._reap_lost_nodes()

    def _reap_lost_nodes(self) -> int:
        """Remove the run's containers on this engine whose node Ray reports dead (an engine several
        nodes share keeps what a lost node's agent started; on a node's own engine there are none)."""
        dead = {str(n.get("NodeID")) for n in self._ray.nodes() if not n.get("Alive")}
        if not dead:
            return 0
        host = EngineHost()
        client = host.connect(timeout=20)
        removed = 0
        with contextlib.closing(client):
            labels = [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={self.owner.run_id}", LABEL_NODE]
            for container in client.containers.list(all=True, filters={"label": labels}, sparse=True):
                if (container.attrs.get("Labels") or {}).get(LABEL_NODE) in dead:
                    with contextlib.suppress(docker.errors.NotFound):
                        container.remove(force=True, v=True)
                        removed += 1
        if removed:
            log.info("removed %d container(s) of run %s that lost nodes left", removed, self.owner.run_id)
        return removed

    def _exit(self) -> None:
        with contextlib.suppress(Exception):
            self._ray.kill(self._ray.get_runtime_context().current_actor, no_restart=True)
        os._exit(0)


def _problems(text: str) -> str:
    """A check's problems on one line, without its header for a whole run ("... no test was started:")."""
    head, found, rest = text.partition(":\n")
    if not found or "cannot run here" not in head:
        return " ".join(text.split())
    return "; ".join(line.strip().removeprefix("- ") for line in rest.splitlines() if line.strip())


class _Refused(SandboxError):
    """This node takes no sandboxes (its preflight failed): the driver places the sandbox elsewhere."""
