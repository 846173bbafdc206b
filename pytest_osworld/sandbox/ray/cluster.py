"""The run's side of the cluster, held by the process that owns the run (the xdist controller, or the
plain pytest process): a node agent per node, the preflight, fences, the node watch, the run's end.

``RunCluster.open`` (the provider's check before the session) connects, makes an agent on every live
node that declares the slot resource, runs every agent's preflight and fences the nodes that fail it:
a placement group pinned to the node holding all its slots, so Ray places no sandbox there; the run
says so at its start. A thread then keeps watch every second: it makes an agent (and a warm pool) on
each node that joins, notes the nodes that die, and sends every agent the owner's heartbeat (an
agent that hears none for ``ray_heartbeat_timeout`` seconds ends the run on its node by itself).
``close`` ends the run: every agent shrinks its pool, removes its sandboxes and what is left of the
run on its engine, and goes; the fences go too. ``describe`` is the manifest's view of the cluster.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from pytest_osworld.sandbox.base import Progress, SandboxConfigError
from pytest_osworld.sandbox.labels import Owner
from pytest_osworld.sandbox.ray import connect as ray_connect
from pytest_osworld.sandbox.ray.agent import NodeAgent
from pytest_osworld.sandbox.ray.resources import NodeInfo, check_bundle_fits, node_settings, read_nodes, sandbox_bundle
from pytest_osworld.settings import Settings

log = logging.getLogger("pytest_osworld.sandbox.ray")

AGENT_PREFIX = "node-"
_WATCH_INTERVAL = 1.0
PREFLIGHT_TIMEOUT = 3600.0  # a node may build the desktop image first (minutes)
END_TIMEOUT = 120.0


def agent_name(node_id: str) -> str:
    return AGENT_PREFIX + node_id


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class NodeRecord:
    """One node as this run saw it."""

    info: NodeInfo
    seen_at: str = field(default_factory=_now)
    problem: str | None = None  # why it takes no sandboxes (its preflight)
    lost_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.info.to_json(),
            "seen_at": self.seen_at,
            "takes_sandboxes": self.problem is None and self.lost_at is None,
            "problem": self.problem,
            "lost_at": self.lost_at,
        }


class RunCluster:
    """See the module's docstring; one per run in the process that owns it."""

    _open: ClassVar[dict[str, RunCluster]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def open(
        cls,
        settings: Settings,
        owner: Owner,
        *,
        progress: Progress | None = None,
    ) -> RunCluster:
        with cls._registry_lock:
            found = cls._open.get(owner.run_id)
            if found is None:
                found = cls(settings, owner, progress=progress)
                cls._open[owner.run_id] = found
        return found

    @classmethod
    def current(cls, run_id: str) -> RunCluster | None:
        with cls._registry_lock:
            return cls._open.get(run_id)

    def __init__(self, settings: Settings, owner: Owner, *, progress: Progress | None) -> None:
        self.settings = settings
        self.owner = owner
        self.slot = settings.sandbox.ray_slot_resource
        self.heartbeat_timeout = settings.sandbox.ray_heartbeat_timeout
        self.bundle = sandbox_bundle(settings)
        self._say = progress or (lambda line: log.info("%s", line))
        self.namespace = ray_connect.namespace_of(owner.run_id)
        self.ray = ray_connect.connect(settings.sandbox.ray_address, self.namespace)
        self.version = str(self.ray.__version__)
        self.nodes: dict[str, NodeRecord] = {}
        self.agents: dict[str, Any] = {}
        self.fences: dict[str, Any] = {}
        self._pending: dict[str, Any] = {}  # node id -> the preflight answer not read yet
        self._lock = threading.Lock()
        self._watch_lock = threading.Lock()  # one round of the watch at a time (the watcher, describe)
        self._agent_class = self.ray.remote(NodeAgent)
        self._closed = False
        try:
            self._start_agents()
        except BaseException:
            self._stop_agents()
            ray_connect.release()
            raise
        self._watcher = threading.Thread(target=self._watch, name="ray run watcher", daemon=True)
        self._watcher.start()

    # --- agents
    def _read_nodes(self) -> list[NodeInfo]:
        return read_nodes(self.ray.nodes(), self.slot)

    def _start_agents(self) -> None:
        nodes = self._read_nodes()
        check_bundle_fits(self.bundle, nodes, self.slot)
        for node in nodes:
            if node.alive and node.slots > 0:
                self._add(node)
        for node_id, ref in list(self._pending.items()):
            try:
                problem = self.ray.get(ref, timeout=PREFLIGHT_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - a node lost or hung during its preflight takes no sandbox
                problem = f"its agent did not answer the preflight: {type(exc).__name__}: {str(exc)[:200]}"
            self._settle(node_id, problem)
        self._pending.clear()
        usable = [r for r in self.nodes.values() if r.problem is None]
        if not usable:
            raise SandboxConfigError(
                "no Ray node can start sandboxes; no test was started:\n  - "
                + "\n  - ".join(
                    f"node {r.info.node_id[:12]} ({r.info.address}): {r.problem}" for r in self.nodes.values()
                )
            )
        self._say(
            f"ray {self.version}: {len(usable)} of {len(self.nodes)} node(s) take sandboxes "
            f"({sum(r.info.slots for r in usable):g} slots of {self.slot}; each sandbox holds "
            + ", ".join(f"{k} {v:g}" for k, v in self.bundle.items())
            + (f"; warm pool {self.settings.sandbox.warm_pool} per node" if self.settings.sandbox.warm_pool else "")
            + ")"
        )

    def _add(self, node: NodeInfo) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        agent = self._agent_class.options(
            name=agent_name(node.node_id),
            namespace=self.namespace,
            lifetime="detached",  # the run's owner ends it; its watchdog ends it when the owner is gone
            get_if_exists=True,
            num_cpus=0,
            max_concurrency=64,
            max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
        ).remote(
            run_id=self.owner.run_id,
            settings=node_settings(self.settings).flat(mode="json"),
            bundle=self.bundle,
            heartbeat_timeout=self.heartbeat_timeout,
        )
        with self._lock:
            self.agents[node.node_id] = agent
            self.nodes[node.node_id] = NodeRecord(info=node)
        self._pending[node.node_id] = agent.preflight.remote()

    def _settle(self, node_id: str, problem: str | None) -> None:
        """A node's preflight answered: fence it when it failed, else keep its warm pool."""
        record = self.nodes[node_id]
        record.problem = problem
        if problem is not None:
            self._fence(record)
            self._say(
                f"ray node {node_id[:12]} ({record.info.address}) takes no sandboxes: {problem.splitlines()[0][:300]}"
            )
        elif self.settings.sandbox.warm_pool:
            self.agents[node_id].start_pool.remote(self.settings.sandbox.warm_pool)

    def _fence(self, record: NodeRecord) -> None:
        """Hold all of the node's slots in a placement group of this process: Ray places no sandbox there."""
        group = self.ray.util.placement_group(
            [{self.slot: record.info.slots}],
            strategy="STRICT_PACK",
            bundle_label_selector=[{"ray.io/node-id": record.info.node_id}],
        )
        self.fences[record.info.node_id] = group

    # --- the watch
    def _watch(self) -> None:
        while not self._closed:
            time.sleep(_WATCH_INTERVAL)  # the watch's period; a joining node waits at most this long
            with contextlib.suppress(Exception):  # a GCS hiccup: the next round tries again
                self._watch_once()

    def _watch_once(self) -> None:
        with self._watch_lock:
            self._watch_round()

    def _watch_round(self) -> None:
        for node in self._read_nodes():
            record = self.nodes.get(node.node_id)
            if record is None and node.alive and node.slots > 0 and not self._closed:
                self._add(node)
                self._say(f"ray node {node.node_id[:12]} ({node.address}) joined the run")
            elif record is not None and not node.alive and record.lost_at is None:
                record.lost_at = _now()
                self._say(f"ray node {node.node_id[:12]} ({node.address}) was lost")
        if self._pending:
            ready, _ = self.ray.wait(list(self._pending.values()), num_returns=len(self._pending), timeout=0)
            for node_id, ref in list(self._pending.items()):
                if ref in ready:
                    del self._pending[node_id]
                    try:
                        problem = self.ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - as at the start: no sandbox on that node
                        problem = f"its agent did not answer the preflight: {type(exc).__name__}"
                    self._settle(node_id, problem)
        for node_id, agent in list(self.agents.items()):
            if self.nodes[node_id].lost_at is None:
                agent.heartbeat.remote()

    # --- the end
    def close(self) -> int:
        """End the run on every node (pools, sandboxes, what is left); returns how many containers went."""
        with self._registry_lock:
            if self._open.get(self.owner.run_id) is self:
                del self._open[self.owner.run_id]
        if self._closed:
            return 0
        self._closed = True
        self._watcher.join(5)
        removed = self._stop_agents()
        ray_connect.release()
        return removed

    def _stop_agents(self) -> int:
        live = {nid: a for nid, a in self.agents.items() if nid not in self.nodes or self.nodes[nid].lost_at is None}
        refs = {nid: agent.shutdown.remote() for nid, agent in live.items()}
        removed = 0
        for node_id, ref in refs.items():
            try:
                removed += int(self.ray.get(ref, timeout=END_TIMEOUT))
            except Exception as exc:  # noqa: BLE001 - a node lost at the end: its own watchdog or the sweep ends it
                log.warning("ray node %s did not end the run: %s", node_id[:12], exc)
        for agent in self.agents.values():
            with contextlib.suppress(Exception):
                self.ray.kill(agent, no_restart=True)
        for group in self.fences.values():
            with contextlib.suppress(Exception):
                self.ray.util.remove_placement_group(group)
        return removed

    def leftovers(self) -> list[dict[str, Any]]:
        """What ended runs left on the nodes' engines, asked of every live agent (one answer per engine)."""
        refs = [
            agent.leftovers.remote(self.settings.sandbox.leftover_age, self.owner.run_id)
            for nid, agent in self.agents.items()
            if self.nodes[nid].lost_at is None
        ]
        found: dict[str, dict[str, Any]] = {}
        for answer in self.ray.get(refs, timeout=60):
            for item in answer:
                found[item["id"]] = item  # nodes sharing one engine see the same containers
        return list(found.values())

    def describe(self) -> dict[str, Any]:
        """The run manifest's ``cluster``: Ray's version, the slot resource, what a sandbox holds, every node seen."""
        with contextlib.suppress(Exception):
            if not self._closed:
                self._watch_once()
        return {
            "ray_version": self.version,
            "address": self.settings.sandbox.ray_address,
            "namespace": self.namespace,
            "slot_resource": self.slot,
            "bundle": dict(self.bundle),
            "warm_pool_per_node": self.settings.sandbox.warm_pool,
            "nodes": [record.to_json() for record in self.nodes.values()],
        }
