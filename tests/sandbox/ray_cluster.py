"""A real Ray cluster of several nodes on this machine (``ray.cluster_utils.Cluster``): each node a raylet
of its own with a sandbox-slot resource, all on 127.0.0.1, small (one CPU, a small object store).

The nodes share this machine's Docker engine; the engine a node reaches is its own Ray processes'
``DOCKER_HOST``, so a node can be given one that does not answer (the preflight's case). Ray notices a
node whose raylet was killed within about 1.5 s here (its health checks run every 0.5 s).
"""

from __future__ import annotations

import os
import secrets
from typing import Any

# Before Ray is imported: a cluster that listens on 127.0.0.1 only is this machine alone (connect.py).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray
from ray.cluster_utils import Cluster

SLOT = "osworld_sandbox"
BROKEN_ENGINE = "unix:///nonexistent/pytest-osworld-broken-engine.sock"
SYSTEM_CONFIG = {
    # A lost node is noticed in about 1.5 s instead of Ray's default tens of seconds.
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 500,
    "health_check_failure_threshold": 3,
    # No idle Python workers started ahead per driver: on 2 cores they only compete with the sandboxes.
    "enable_worker_prestart": False,
    "prestart_worker_first_driver": False,
}
_NODE = {"num_cpus": 1, "object_store_memory": 75 * 1024 * 1024, "node_ip_address": "127.0.0.1"}


class TestCluster:
    """The head and the nodes added, each with ``slots`` sandbox slots; ``broken`` nodes reach no engine."""

    __test__ = False

    def __init__(self, *, nodes: int, slots: int, broken: int = 0) -> None:
        assert not ray.is_initialized()
        self.slots = slots
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={
                **_NODE,
                "resources": {SLOT: slots},
                "include_dashboard": False,
                "_system_config": SYSTEM_CONFIG,
            },
        )
        self.address: str = self.cluster.address
        self.head_id: str = self.cluster.head_node.node_id
        self.workers: list[Any] = []
        self.broken: list[Any] = []
        try:
            for _ in range(nodes - 1):
                self.workers.append(self.add_node())
            for _ in range(broken):
                self.broken.append(self.add_node(engine=BROKEN_ENGINE))
        except BaseException:
            self.cluster.shutdown()
            raise

    def add_node(self, *, slots: int | None = None, engine: str | None = None) -> Any:
        """A node that joins now; ``engine`` the Docker engine its Ray processes reach."""
        env = {"DOCKER_HOST": engine} if engine else None
        return self.cluster.add_node(**_NODE, resources={SLOT: slots or self.slots}, env_vars=env)

    def remove_node(self, node: Any) -> None:
        """Kill the node's raylet and its processes at once (no graceful end): a node lost."""
        self.cluster.remove_node(node, allow_graceful=False)
        if node in self.workers:
            self.workers.remove(node)

    @property
    def good_ids(self) -> list[str]:
        return [self.head_id, *(n.node_id for n in self.workers)]

    @property
    def broken_ids(self) -> list[str]:
        return [n.node_id for n in self.broken]

    def shutdown(self) -> None:
        if ray.is_initialized():
            ray.shutdown()
        self.cluster.shutdown()


def run_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"
