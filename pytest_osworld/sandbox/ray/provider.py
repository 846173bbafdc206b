"""The ``ray`` sandbox provider: sandboxes on a Ray cluster's nodes, placed by Ray resources.

Each pytest process (an xdist worker, or the plain run) is a driver of the cluster and stays on the
machine that runs pytest; the sandboxes run on the nodes, started by each node's agent
(``agent.NodeAgent``) on that node's engine, and reached through the agent's forwarders.

- without a warm pool, a sandbox is a placement group of one bundle (a slot, CPUs, memory:
  ``resources.sandbox_bundle``): Ray picks the node, the node's agent starts the sandbox there. A
  node that refuses (its preflight failed) or dies while starting is left out and the placement is
  tried again elsewhere;
- with ``warm_pool N``, every node keeps N sandboxes ready (the agents' pools, shared by all the
  run's drivers): a claim takes a ready one from any node and a refill starts behind it on that node.

A :class:`RaySandbox` knows its node: ``alive`` asks the node's agent (a node Ray reports dead, or an
agent that does not answer, is not alive), and ``lost`` names the node, so a task whose node was lost
is masked ``sandbox_lost`` naming it. The run's cluster side (agents, fences, the node watch, the
run's end) is ``cluster.RunCluster``, held by the process that owns the run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from pytest_osworld.errors import SandboxError, SandboxLost
from pytest_osworld.record import Placement, now_iso
from pytest_osworld.sandbox import profiles
from pytest_osworld.sandbox.base import API_PORT, Progress, Sandbox, SandboxConfigError, SandboxProvider
from pytest_osworld.sandbox.leftovers import Managed
from pytest_osworld.sandbox.provides import Provides, unknown
from pytest_osworld.sandbox.ray import connect as ray_connect
from pytest_osworld.sandbox.ray import on_nodes
from pytest_osworld.sandbox.ray.cluster import AGENT_PREFIX, RunCluster, agent_name
from pytest_osworld.sandbox.ray.resources import node_settings, read_nodes, sandbox_bundle

if TYPE_CHECKING:
    from pytest_osworld.sandbox.labels import Owner
    from pytest_osworld.settings import Settings

log = logging.getLogger("pytest_osworld.sandbox.ray")

PROVIDER = "ray"
MAX_PLACEMENTS = 4  # placements of one sandbox (a node that refuses or dies while starting is left out)
CALL_TIMEOUT = 30.0  # an agent's quick calls (claim, alive, logs)
AGENT_PING_TIMEOUT = 5.0  # a lost sandbox's node agent asked whether it still answers
NODE_VERDICT_WAIT = 45.0  # at most this long for Ray to call a silent node dead (its health check, under load)
START_TIMEOUT = 3600.0  # an agent's start may run the node's preflight first (an image build)
STOP_TIMEOUT = 120.0
AGENT_WAIT = 30.0  # for the owner's watch to make the agent of a node that just joined
_WAIT_SLICE = 1.0  # a claim that found none ready waits this long on one node, then looks again


class RaySandbox(Sandbox):
    """A sandbox on a Ray node, reached through its node agent's forwarders."""

    def __init__(
        self,
        provider: RayProvider,
        agent: Any,
        info: Mapping[str, Any],
        placement: Placement,
        *,
        task_key: str,
        group: Any = None,
    ) -> None:
        self._provider = provider
        self._agent = agent
        self._info = dict(info)
        self.placement = placement
        self.task_key = task_key
        self._group = group  # the driver's own placement group (no pool)
        self._ports = {int(port): (str(ip), int(p)) for port, (ip, p) in info["ports"].items()}
        self.node_id = str(info["node_id"])
        self.node_address = str(info["node_address"])
        self.ready_seconds = placement.claim_seconds
        self._stopped = False

    @property
    def name(self) -> str:
        return str(self._info["name"])

    def url(self, guest_port: int = API_PORT) -> str:
        try:
            ip, port = self._ports[guest_port]
        except KeyError:
            raise SandboxError(
                f"sandbox {self.name}: guest port {guest_port} is not published (it publishes {sorted(self._ports)})"
            ) from None
        return f"http://{ip}:{port}"

    def alive(self) -> bool:
        """Whether its node's agent says it runs; a node Ray reports dead, or an agent that does not answer, is not."""
        if self._stopped:
            return False
        ray = self._provider.ray
        try:
            return bool(ray.get(self._agent.alive.remote(self.name), timeout=CALL_TIMEOUT))
        except Exception:  # noqa: BLE001 - the actor died with its node, or it does not answer: gone either way
            return False

    def logs(self, tail: int = 50) -> str:
        ray = self._provider.ray
        try:
            return str(ray.get(self._agent.logs.remote(self.name, tail), timeout=CALL_TIMEOUT))
        except Exception:  # noqa: BLE001 - no logs from a lost node
            return ""

    def lost(self, what: str) -> SandboxLost:
        return SandboxLost(
            f"sandbox {self.name} on Ray node {self.node_id} ({self.node_address}) was lost ({what}); "
            f"{self._provider.node_state(self.node_id)}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            **self._info["describe"],
            "node_id": self.node_id,
            "node_address": self.node_address,
            "placement": self.placement.model_dump(mode="json"),
        }

    def stop(self) -> None:
        """Remove it through its node's agent; a lost node's container is removed by the sweep."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._provider.ray.get(self._agent.stop.remote(self.name), timeout=STOP_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - a lost node: its containers are the sweep's
            log.info("sandbox %s on node %s: not stopped by its agent (%s)", self.name, self.node_id[:12], exc)
        finally:
            self._provider.release(self)


class RayProvider(SandboxProvider):
    """The driver side of the ``ray`` sandbox (see the module's docstring)."""

    pools_itself = True

    def __init__(self, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
        self.settings = settings
        self.owner = owner
        self.bundle = sandbox_bundle(settings)
        self.slot = settings.sandbox.ray_slot_resource
        self.namespace = ray_connect.namespace_of(owner.run_id)
        self.ray = ray_connect.connect(settings.sandbox.ray_address, self.namespace)
        self.allow = [ray_connect.driver_address(self.ray, settings.sandbox.ray_address)]
        self._agents: dict[str, Any] = {}
        self._live: dict[str, RaySandbox] = {}
        self._turn = _worker_index(owner.worker_id)
        self._pid = os.getpid()
        self._closed = False

    # --- the provider class
    @classmethod
    def from_settings(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> Self:
        return cls(settings, owner, progress=progress)

    @classmethod
    def check(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
        """The run's side on the cluster: an agent per node, each node's preflight, fences (``RunCluster``)."""
        RunCluster.open(settings, owner, progress=progress)

    @classmethod
    def describe_pool(cls, settings: Settings, owner: Owner) -> dict[str, Any]:
        inner = node_settings(settings)
        entry: dict[str, Any] = {
            "provider": PROVIDER,
            "profile": inner.sandbox.name,
            "warm_pool": settings.sandbox.warm_pool,
        }
        if inner.sandbox.name != "vm":  # the nodes' images are in the records (each node's engine has its own)
            with contextlib.suppress(SandboxConfigError):
                profile = profiles.resolve(inner)
                entry["image"] = profile.image
                entry["resources"] = profile.resources.model_dump(exclude_none=True)
        run = RunCluster.current(owner.run_id)
        if run is not None:
            entry["cluster"] = run.describe()
        else:
            entry["cluster"] = _describe_without_run(settings, owner)
        return entry

    @classmethod
    def provides(cls, settings: Settings, *, build: bool = False, progress: Progress | None = None) -> Provides:
        """What the inner sandbox provides, read on a node that runs sandboxes."""
        inner = node_settings(settings)
        try:
            ray = ray_connect.connect(settings.sandbox.ray_address, None)
        except SandboxConfigError as exc:
            return unknown(PROVIDER, f"sandbox {inner.sandbox.name} on the Ray cluster", str(exc))
        try:
            return on_nodes.what_a_node_provides(
                ray, settings.sandbox.ray_slot_resource, inner.flat(mode="json"), build
            )
        except Exception as exc:  # noqa: BLE001 - unknown, with why: the run's check says the rest
            return unknown(PROVIDER, f"sandbox {inner.sandbox.name} on the Ray cluster", f"{type(exc).__name__}: {exc}")
        finally:
            ray_connect.release()

    @classmethod
    def end_run(cls, settings: Settings, owner: Owner) -> int | None:
        run = RunCluster.current(owner.run_id)
        if run is not None:
            return run.close()
        try:
            ray = ray_connect.connect(settings.sandbox.ray_address, ray_connect.namespace_of(owner.run_id))
        except SandboxConfigError:
            return 0
        try:
            namespace = ray_connect.namespace_of(owner.run_id)
            for name in agent_names(ray, namespace):
                with contextlib.suppress(Exception):
                    agent = ray.get_actor(name, namespace=namespace)
                    ray.get(agent.shutdown.remote(), timeout=STOP_TIMEOUT)
                    ray.kill(agent, no_restart=True)
            answers = on_nodes.on_every_node(ray, None, on_nodes.sweep_node, owner.run_id)
            return sum(a for a in answers.values() if isinstance(a, int))
        finally:
            ray_connect.release()

    @classmethod
    def run_leftovers(cls, settings: Settings, owner: Owner) -> list[Managed] | None:
        run = RunCluster.current(owner.run_id)
        if run is None:
            return None
        return [Managed(**item) for item in run.leftovers()]

    # --- agents
    def _agent(self, node_id: str, deadline: float) -> Any:
        """The agent of a node (the owner's watch makes it for a node that just joined)."""
        found = self._agents.get(node_id)
        while found is None:
            try:
                found = self.ray.get_actor(agent_name(node_id), namespace=self.namespace)
            except ValueError:
                if time.monotonic() >= deadline:
                    raise SandboxError(
                        f"Ray node {node_id[:12]} has no agent of run {self.owner.run_id} (is the run's owner gone?)"
                    ) from None
                time.sleep(0.2)  # the owner's watch makes agents once a second
            else:
                self._agents[node_id] = found
        return found

    def _all_agents(self) -> list[tuple[str, Any]]:
        """Every live node's agent, in an order that differs per worker (claims spread over nodes)."""
        alive = {n.node_id for n in read_nodes(self.ray.nodes(), self.slot) if n.alive}
        names = agent_names(self.ray, self.namespace)
        found = []
        for name in names:
            node_id = name.removeprefix(AGENT_PREFIX)
            if node_id not in alive:
                continue
            if node_id not in self._agents:
                with contextlib.suppress(ValueError):
                    self._agents[node_id] = self.ray.get_actor(name, namespace=self.namespace)
            if node_id in self._agents:
                found.append((node_id, self._agents[node_id]))
        self._turn += 1
        if found:
            shift = self._turn % len(found)
            found = found[shift:] + found[:shift]
        return found

    def node_status(self) -> list[dict[str, Any]]:
        """What every live node's agent holds: its preflight's problem, its warm pool, its sandboxes."""
        agents = self._all_agents()
        return [self.ray.get(agent.status.remote(), timeout=CALL_TIMEOUT) for _, agent in agents]

    def node_state(self, node_id: str, wait: float = NODE_VERDICT_WAIT) -> str:
        """What Ray says of a node, for a lost sandbox's message. A node whose raylet just died is still
        alive to Ray until its health check gives up on it: while the node's agent does not answer, Ray
        is asked again, up to ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while True:
            try:
                nodes = {n.node_id: n for n in read_nodes(self.ray.nodes(), self.slot)}
            except Exception:  # noqa: BLE001 - the cluster itself does not answer
                return "the Ray cluster does not answer"
            node = nodes.get(node_id)
            if node is None:
                return "Ray does not know the node any more"
            if not node.alive:
                return "Ray reports the node dead"
            if self._agent_answers(node_id):
                return "the node and its agent answer: the sandbox itself ended"
            if time.monotonic() >= deadline:
                return "the node is alive but its agent does not answer"
            time.sleep(1.0)  # poll interval: Ray's health check decides within its own period

    def _agent_answers(self, node_id: str) -> bool:
        agent = self._agents.get(node_id)
        if agent is None:
            return False
        try:
            self.ray.get(agent.status.remote(), timeout=AGENT_PING_TIMEOUT)
        except Exception:  # noqa: BLE001 - any failure of the call is an agent that does not answer
            return False
        return True

    # --- sandboxes
    def start(self, *, task_key: str, labels: Mapping[str, str] | None = None) -> RaySandbox:
        if self._closed:
            raise SandboxError("the ray provider of this process is closed")
        sandbox = self._claim(task_key) if self.settings.sandbox.warm_pool else self._place(task_key)
        self._live[sandbox.name] = sandbox
        return sandbox

    def start_on_network(self, *, task_key: str, network: str, labels: Mapping[str, str] | None = None) -> Sandbox:
        raise SandboxError(
            f"a ray sandbox cannot join the shared services' network {network}: the services run on the engine "
            "of the machine that runs pytest, the sandboxes on the cluster's nodes; run tasks that need services "
            "with a local sandbox (desktop, osworld-vm, vm)"
        )

    def _place(self, task_key: str) -> RaySandbox:
        """Ray picks a node for a placement group of one sandbox; that node's agent starts it."""
        begun = time.monotonic()
        left_out: list[str] = []
        why: list[str] = []
        for _ in range(MAX_PLACEMENTS):
            selector = [{"ray.io/node-id": f"!in({','.join(left_out)})"}] if left_out else None
            group = self.ray.util.placement_group([self.bundle], strategy="STRICT_PACK", bundle_label_selector=selector)
            remaining = self.settings.sandbox.ray_place_timeout - (time.monotonic() - begun)
            if not group.wait(timeout_seconds=max(remaining, 0.001)):
                self.ray.util.remove_placement_group(group)
                raise SandboxError(
                    f"no Ray node had a free sandbox slot ({self.slot}) within {self.settings.sandbox.ray_place_timeout:g} s "
                    f"(each sandbox holds {_bundle_text(self.bundle)}; see `ray status`)"
                )
            placed = time.monotonic()
            node_id = str(self.ray.util.placement_group_table(group)["bundles_to_node_id"][0])
            try:
                agent = self._agent(node_id, time.monotonic() + AGENT_WAIT)
                answer = self.ray.get(agent.start.remote(task_key, self.allow), timeout=START_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - the node died or its agent is gone: place it elsewhere
                answer = {"ok": False, "kind": "lost", "message": f"{type(exc).__name__}: {str(exc)[:200]}"}
            if answer.get("ok"):
                placement = Placement(
                    provider=PROVIDER,
                    node_id=node_id,
                    node_address=str(answer["node_address"]),
                    pool_wait_seconds=round(placed - begun, 4),
                    claim_seconds=round(time.monotonic() - begun, 4),
                    claimed_at=now_iso(),
                )
                return RaySandbox(self, agent, answer, placement, task_key=task_key, group=group)
            self.ray.util.remove_placement_group(group)
            if answer.get("kind") == "error":
                raise SandboxError(f"Ray node {node_id[:12]}: {answer.get('message')}")
            left_out.append(node_id)
            why.append(f"node {node_id[:12]}: {answer.get('message')}")
        raise SandboxError(f"no Ray node started the sandbox after {len(why)} placements: " + "; ".join(why))

    def _claim(self, task_key: str) -> RaySandbox:
        """A ready sandbox from any node's warm pool; when none is ready, wait on the nodes in turn."""
        begun = time.monotonic()
        deadline = begun + self.settings.sandbox.ray_place_timeout
        first_round = True
        while True:
            agents = self._all_agents()
            for node_id, agent in agents:  # a ready one anywhere, without waiting
                sandbox = self._claim_from(node_id, agent, task_key, 0.0, begun, first_round)
                if sandbox is not None:
                    return sandbox
            first_round = False
            if time.monotonic() >= deadline:
                raise SandboxError(
                    f"no warm sandbox got ready on any Ray node within {self.settings.sandbox.ray_place_timeout:g} s "
                    f"({len(agents)} node(s) with agents; see `ray status`)"
                )
            for node_id, agent in agents[:1]:  # then wait a moment on one node (the order turns)
                sandbox = self._claim_from(node_id, agent, task_key, _WAIT_SLICE, begun, False)
                if sandbox is not None:
                    return sandbox
            if not agents:
                time.sleep(_WAIT_SLICE)  # no agent yet: the owner's watch makes them

    def _claim_from(
        self, node_id: str, agent: Any, task_key: str, wait: float, begun: float, first_round: bool
    ) -> RaySandbox | None:
        asked = time.monotonic()
        try:
            answer = self.ray.get(agent.claim.remote(task_key, self.allow, wait), timeout=CALL_TIMEOUT + wait)
        except Exception:  # noqa: BLE001 - a node lost or silent: the other nodes are asked
            self._agents.pop(node_id, None)
            return None
        if not answer.get("ok"):
            if answer.get("kind") == "error":
                raise SandboxError(f"Ray node {node_id[:12]}: {answer.get('message')}")
            return None
        claim = answer["claim"]
        placement = Placement(
            provider=PROVIDER,
            node_id=node_id,
            node_address=str(answer["node_address"]),
            pooled=True,
            warm=bool(first_round and claim["warm"]),
            pool_wait_seconds=round(asked - begun + float(claim["pool_wait_seconds"]), 4),
            claim_seconds=round(time.monotonic() - begun, 4),
            verify_seconds=float(claim["verify_seconds"]),
            rejected=int(claim["rejected"]),
            claimed_at=str(claim["claimed_at"]),
        )
        return RaySandbox(self, agent, answer, placement, task_key=task_key)

    def release(self, sandbox: RaySandbox) -> None:
        """A sandbox was stopped: its placement group (a driver's) goes."""
        self._live.pop(sandbox.name, None)
        group = sandbox._group
        if group is not None:
            with contextlib.suppress(Exception):
                self.ray.util.remove_placement_group(group)

    # --- identity and the end
    def describe(self) -> dict[str, Any]:
        return self.describe_pool(self.settings, self.owner)

    def sweep(self, run_id: str, *, pid: int | None = None) -> int:
        """This process's own sandboxes (``pid``), or the whole run's on every node."""
        if pid is None:
            return self.end_run(self.settings, self.owner) or 0
        live = list(self._live.values()) if pid == self._pid else []
        for sandbox in live:
            sandbox.stop()
        return len(live)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        ray_connect.release()


def agent_names(ray: Any, namespace: str) -> list[str]:
    """The names of the node agents of the run whose namespace this is."""
    return sorted(
        str(entry["name"])
        for entry in ray.util.list_named_actors(all_namespaces=True)
        if entry["namespace"] == namespace and str(entry["name"]).startswith(AGENT_PREFIX)
    )


def _worker_index(worker_id: str | None) -> int:
    digits = "".join(ch for ch in worker_id or "" if ch.isdigit())
    return int(digits) if digits else 0


def _bundle_text(bundle: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in bundle.items())


def _describe_without_run(settings: Settings, owner: Owner) -> dict[str, Any]:
    """The cluster as Ray reports it now, for a process that holds no run's side (a benchmark, a tool)."""
    try:
        ray = ray_connect.connect(settings.sandbox.ray_address, ray_connect.namespace_of(owner.run_id))
    except SandboxConfigError as exc:
        return {"problem": str(exc)}
    try:
        return {
            "ray_version": str(ray.__version__),
            "address": settings.sandbox.ray_address,
            "slot_resource": settings.sandbox.ray_slot_resource,
            "bundle": sandbox_bundle(settings),
            "nodes": [n.to_json() for n in read_nodes(ray.nodes(), settings.sandbox.ray_slot_resource)],
        }
    finally:
        ray_connect.release()
