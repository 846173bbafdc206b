"""What a sandbox asks of a Ray node, what each node offers, and the settings a node's agent runs with.

A sandbox is placed by Ray as a placement group of one bundle: one unit of the slot resource
(``ray_slot_resource``, declared per node: ``ray start --resources '{"osworld_sandbox": 4}'``), plus
the CPUs and memory the sandbox's profile gives it (``resources.cpus``/``memory`` of a container
profile, ``--osworld-sandbox-cpus/-memory``; for ``vm`` the guest's vCPUs and memory). Nothing here
talks to Ray: the functions read the settings and ``ray.nodes()``'s answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_osworld.sandbox.base import SandboxConfigError
from pytest_osworld.settings import Settings

MIB = 1024 * 1024
# Settings a node agent needs to start the sandbox the run asks for (and nothing of the model, the
# judge or the run's reports: they stay on the machine that runs pytest).
_NODE_FIELDS = (
    "sandbox_profiles",
    "reset",
    "screen_width",
    "screen_height",
    "client_password",
    "sandbox_cpus",
    "sandbox_memory",
    "sandbox_write_bps",
    "sandbox_write_iops",
    "sandbox_write_device",
    "sandbox_start_timeout",
    "sandbox_leftover_age",
)
_NODE_PREFIXES = ("upstream_vm_", "vm_")


def node_settings(settings: Settings) -> Settings:
    """The settings a node's agent starts sandboxes with: the run's sandbox settings, its inner sandbox
    (``ray_sandbox``), the node's own engine (``DOCKER_HOST`` there, else its local socket), no pool of
    its own process (the agent keeps the node's)."""
    data = settings.flat(mode="json")
    kept = {k: v for k, v in data.items() if k in _NODE_FIELDS or k.startswith(_NODE_PREFIXES)}
    return Settings.model_validate({**kept, "sandbox": settings.sandbox.ray_sandbox, "docker_host": [], "warm_pool": 0})


def sandbox_bundle(settings: Settings) -> dict[str, float]:
    """The resources one sandbox holds on its node while it lives (a placement group's bundle)."""
    inner = node_settings(settings)
    bundle: dict[str, float] = {settings.sandbox.ray_slot_resource: 1.0}
    cpus: float | None
    memory: int | None
    if inner.sandbox.name == "vm":
        from pytest_osworld.vm import config as vm_config

        vm = vm_config.resolve(inner)
        cpus = vm.container_cpus or float(vm.cpus)
        memory = vm.container_memory or vm.memory_mib * MIB
    else:
        from pytest_osworld.sandbox import profiles

        resources = profiles.resolve(inner).resources
        cpus, memory = resources.cpus, resources.memory
    if cpus:
        bundle["CPU"] = float(cpus)
    if memory:
        bundle["memory"] = float(memory)
    return bundle


@dataclass(frozen=True)
class NodeInfo:
    """One node as Ray reports it."""

    node_id: str
    address: str
    alive: bool
    slots: float  # units of the slot resource it declares
    resources: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "address": self.address,
            "alive": self.alive,
            "slots": self.slots,
            "resources": dict(sorted(self.resources.items())),
        }


def read_nodes(nodes: list[dict[str, Any]], slot: str) -> list[NodeInfo]:
    """``ray.nodes()``'s answer as :class:`NodeInfo`, in its order."""
    found = []
    for node in nodes:
        resources = {
            str(k): float(v) for k, v in (node.get("Resources") or {}).items() if not str(k).startswith("node:")
        }
        found.append(
            NodeInfo(
                node_id=str(node.get("NodeID")),
                address=str(node.get("NodeManagerAddress") or "?"),
                alive=bool(node.get("Alive")),
                slots=resources.get(slot, 0.0),
                resources=resources,
                labels={str(k): str(v) for k, v in (node.get("Labels") or {}).items()},
            )
        )
    return found


def slot_nodes(nodes: list[NodeInfo]) -> list[NodeInfo]:
    """The live nodes that may run sandboxes (they declare the slot resource)."""
    return [node for node in nodes if node.alive and node.slots > 0]


def check_bundle_fits(bundle: dict[str, float], nodes: list[NodeInfo], slot: str) -> None:
    """:class:`SandboxConfigError` when no live node could ever hold one sandbox (a placement would wait forever)."""
    candidates = slot_nodes(nodes)
    if not candidates:
        raise SandboxConfigError(
            f"no live Ray node declares the sandbox slot resource {slot!r}; start nodes with "
            f"`ray start ... --resources '{{\"{slot}\": N}}'` (N sandboxes at once per node) or set --osworld-ray-slot-resource"
        )
    if not any(all(node.resources.get(k, 0.0) >= v for k, v in bundle.items()) for node in candidates):
        wanted = ", ".join(f"{k} {_amount(k, v)}" for k, v in bundle.items())
        offered = "; ".join(
            f"{n.node_id[:12]}: " + ", ".join(f"{k} {_amount(k, n.resources.get(k, 0.0))}" for k in bundle)
            for n in candidates
        )
        raise SandboxConfigError(
            f"no Ray node can hold one sandbox ({wanted}); the nodes offer {offered}. Lower "
            f"--osworld-sandbox-cpus / --osworld-sandbox-memory or give the nodes more"
        )


def _amount(key: str, value: float) -> str:
    return f"{value / MIB:.0f} MiB" if key == "memory" else f"{value:g}"
