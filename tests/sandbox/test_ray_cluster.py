"""The ray provider on a real cluster on this machine: three nodes with two sandbox slots each, and a
fourth whose Docker engine does not answer (it must take no sandbox, and runs say so at the start).

- the oracle over the bundled tasks with ``-n 3 --osworld-sandbox ray`` and a warm pool per node:
  every task passes, the records show more than one node, nothing is left (about 1.5 min);
- the same run (the os and Calc tasks) with a node lost mid-run: the task on it is masked
  ``sandbox_lost`` naming the node, the rest pass, a resume passes the masked ones, nothing is left
  (about 2 min with the resume: a masked task's guest client first retries for 30 s);
- placement by Ray resources, without pytest (stand-in guests, about 20 s): Ray fills every good
  node's slots and none of the broken node's, a sandbox waits for a free slot and takes a node that
  joins meanwhile, and a node lost is told from Ray (not alive, lost naming it, its container swept);
- the run's process killed hard: every node's agent ends the run on its node (its warm pool included)
  once the heartbeat stops (about 20 s).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from pytest_osworld.sandbox import LABEL_NODE, Owner, check_pool, end_run, make_provider
from pytest_osworld.sandbox.ray import connect as ray_connect
from pytest_osworld.sandbox.ray.provider import RaySandbox
from pytest_osworld.settings import Settings
from tests.episode.runs import BUNDLED, Run, run_tasks
from tests.sandbox import support
from tests.sandbox.ray_cluster import SLOT, TestCluster, run_id
from tests.support.paths import REPO
from tests.support.polling import wait_for

# One lane (tests/support/xdist_groups.py): the module's tests share one cluster, started once.
pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("ray")]

# Every bundled v1 task a Ray node can run: all but those that need the shared services, which run on
# the pytest machine's engine (docs/scaling.md, "Not on Ray").
APPS = REPO / "tasks" / "apps.jsonl"
TASKS = len(BUNDLED.read_text().splitlines()) + len(APPS.read_text().splitlines())


@pytest.fixture(scope="module")
def cluster() -> Iterator[TestCluster]:
    started = TestCluster(nodes=3, slots=2, broken=1)
    try:
        yield started
    finally:
        started.shutdown()


def ray_options(cluster: TestCluster, *extra: str) -> tuple[str, ...]:
    return ("-n", "3", "--osworld-sandbox", "ray", "--osworld-ray-address", cluster.address, *extra)


def placements(run: Run) -> dict[str, dict[str, Any]]:
    return {key: record["sandbox"].get("placement") or {} for key, record in run.records().items()}


def stand_in_settings(cluster: TestCluster, image: str, **extra: Any) -> Settings:
    return Settings(
        sandbox="ray",
        ray_address=cluster.address,
        ray_sandbox="stand-in",
        sandbox_profiles={"stand-in": {"image": image, "ports": [5000]}},
        **extra,
    )


def test_the_oracle_passes_every_bundled_task_on_three_nodes(
    pytester: pytest.Pytester, cluster: TestCluster, engine: docker.DockerClient
) -> None:
    oracle = ray_options(cluster, "--osworld-agent", "oracle", "--osworld-warm-pool", "1")
    run = run_tasks(pytester, BUNDLED, str(APPS), *oracle)
    output = run.result.stdout.str()
    run.result.assert_outcomes(passed=TASKS)
    assert support.run_containers(engine, run.run_id) == []

    # The broken node was fenced at the start, and said so; no sandbox went there.
    [broken] = cluster.broken_ids
    assert f"ray node {broken[:12]} (127.0.0.1) takes no sandboxes: it fails the preflight" in output
    assert "3 of 4 node(s) take sandboxes (6 slots of osworld_sandbox" in output
    where = placements(run)
    nodes = Counter(p["node_id"] for p in where.values())
    assert len(nodes) > 1 and set(nodes) <= set(cluster.good_ids), nodes
    assert all(p["provider"] == "ray" and p["node_address"] == "127.0.0.1" and p["pooled"] for p in where.values())
    assert any(p["warm"] for p in where.values())  # the pools of the nodes served claims ready

    # The manifest records the cluster; the summary the claims and the sandboxes per node.
    manifest = json.loads((run.run_dir / "manifest.json").read_text())["sandbox"]
    cluster_entry = manifest["cluster"]
    assert manifest["provider"] == "ray" and manifest["profile"] == "desktop"
    assert cluster_entry["ray_version"] and cluster_entry["slot_resource"] == "osworld_sandbox"
    assert cluster_entry["warm_pool_per_node"] == 1
    by_id = {n["node_id"]: n for n in cluster_entry["nodes"]}
    assert set(by_id) >= {*cluster.good_ids, broken}
    assert by_id[broken]["takes_sandboxes"] is False and "preflight" in by_id[broken]["problem"]
    assert all(
        by_id[n]["resources"]["osworld_sandbox"] == 2.0 and by_id[n]["takes_sandboxes"] for n in cluster.good_ids
    )
    figures = run.summary()["sandboxes"]
    assert figures["claims"] == TASKS and figures["pooled"] == TASKS
    assert sum(n["sandboxes"] for n in figures["nodes"].values()) == TASKS and len(figures["nodes"]) > 1
    assert f"  sandboxes  {TASKS} claims: p50 " in output and "  per node   " in output


class NodeKiller(threading.Thread):
    """Waits until a task of the run holds a sandbox on ``node`` (its episode has begun), then kills the node.

    A plugin of the inner run (:data:`HANDED_OVER`) writes one file per task whose test has its sandbox,
    holding the sandbox's node id: a sandbox merely started on the node may still be handed to another
    node's start when the node dies first (the provider tries the placement again), which is no loss.
    """

    def __init__(self, cluster: TestCluster, node: Any, handed_over: Path) -> None:
        super().__init__(daemon=True)
        self.cluster, self.node, self.handed_over = cluster, node, handed_over
        self.task: str | None = None
        self.error: BaseException | None = None
        self.killed = threading.Event()

    def run(self) -> None:
        try:
            self.task = wait_for(self._a_task_on_the_node, "a task holding a sandbox on the node", timeout=600)
            self.cluster.remove_node(self.node)
            self.killed.set()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _a_task_on_the_node(self) -> str | None:
        for marker in sorted(self.handed_over.glob("*.json")) if self.handed_over.is_dir() else []:
            held = json.loads(marker.read_text() or "{}")  # written whole (a rename): never partial
            if held.get("node_id") == self.node.node_id:
                return str(held["task"])
        return None


# A plugin of the inner run (``-p handed_over``): when a task's test is called, its sandbox is its own;
# it says on which node.
HANDED_OVER = """
import json, os, pathlib

def pytest_runtest_call(item):
    sandbox = item.funcargs.get("osworld_sandbox")
    node_id = getattr(sandbox, "node_id", None)
    if node_id is None:
        return
    folder = pathlib.Path({folder!r})
    folder.mkdir(exist_ok=True)
    name = item.run_key.replace("/", "__")
    (folder / (name + ".tmp")).write_text(json.dumps({{"task": item.run_key, "node_id": node_id}}))
    os.replace(folder / (name + ".tmp"), folder / (name + ".json"))
"""


# The os and Calc tasks: the point is a node lost under running tasks, not every task.
LOST_NODE_TASKS = ("-k", "os- or calc-")
# The lost-node run holds each sandbox this long after setup (a fixed wait, as OSWorld's): an os task is
# over in seconds, and the node must be gone while its task still runs, however long removing it takes.
HOLD = ("--osworld-start-settle", "15")


@contextlib.contextmanager
def slots_held(cluster: TestCluster, nodes: list[Any]) -> Iterator[None]:
    """Every slot of ``nodes`` held by this test (placement groups of its own), for the duration."""
    ray = ray_connect.connect(cluster.address, None)
    groups = [
        ray.util.placement_group(
            [{SLOT: float(cluster.slots)}],
            strategy="STRICT_PACK",
            bundle_label_selector=[{"ray.io/node-id": n.node_id}],
        )
        for n in nodes
    ]
    try:
        assert all(group.wait(30) for group in groups)
        yield
    finally:
        for group in groups:
            ray.util.remove_placement_group(group)
        ray_connect.release()


def test_a_node_lost_mid_run_masks_its_task_naming_it_and_a_resume_passes_it(
    pytester: pytest.Pytester, cluster: TestCluster, engine: docker.DockerClient
) -> None:
    victim = cluster.add_node()  # the three nodes stay for the other tests
    name = run_id("lost-node")
    handed_over = pytester.path / "handed-over"
    pytester.makepyfile(handed_over=HANDED_OVER.format(folder=str(handed_over)))
    killer = NodeKiller(cluster, victim, handed_over)
    # Only the head's two slots and the victim's two are free: three workers always have a task on the victim.
    with slots_held(cluster, cluster.workers):
        killer.start()
        run = run_tasks(
            pytester,
            BUNDLED,
            *ray_options(cluster, "-p", "handed_over", "--osworld-agent", "oracle", *HOLD, *LOST_NODE_TASKS),
            run_id=name,
        )
        killer.join(10)
    assert killer.error is None and killer.killed.is_set(), killer.error

    records = run.records()
    assert len(records) == 7
    masked = {k: r for k, r in records.items() if r["termination"] not in ("done", "fail")}
    assert killer.task in masked, (killer.task, sorted(masked))  # the task that was on the node
    for key, record in masked.items():
        assert record["termination"] == "sandbox_lost", (key, record["message"])
        assert f"on Ray node {victim.node_id} (127.0.0.1) was lost" in record["message"], record["message"]
        assert "Ray reports the node dead" in record["message"], record["message"]
        assert record["sandbox"]["placement"]["node_id"] == victim.node_id
    passed = {k for k, r in records.items() if r["score"] == 1.0}
    assert passed | set(masked) == set(records)
    outcomes = run.result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("masked")) == (len(passed), len(masked)), run.result.stdout.str()
    assert f"ray node {victim.node_id[:12]} (127.0.0.1) was lost" in run.result.stdout.str()
    assert support.run_containers(engine, name) == []

    resumed = run_tasks(
        pytester,
        BUNDLED,
        *ray_options(cluster, "--osworld-agent", "oracle", "--osworld-resume", str(run.run_dir), *LOST_NODE_TASKS),
        run_id=None,
    )
    resumed.result.assert_outcomes(passed=len(masked))
    final = run.records()
    assert {k: r["score"] for k, r in final.items()} == dict.fromkeys(records, 1.0)
    assert all(final[k]["sandbox"]["placement"]["node_id"] != victim.node_id for k in masked)
    assert support.run_containers(engine, name) == []


def test_ray_places_by_slots_waits_for_one_and_uses_a_node_that_joins(
    cluster: TestCluster, stand_in: str, engine: docker.DockerClient
) -> None:
    settings = stand_in_settings(cluster, stand_in)
    owner = Owner(run_id=run_id("ray-place"))
    said: list[str] = []
    check_pool(settings, owner, progress=said.append)
    [broken] = cluster.broken_ids
    assert any(line.startswith(f"ray node {broken[:12]} (127.0.0.1) takes no sandboxes") for line in said), said
    provider = make_provider(settings, owner)
    held: list[RaySandbox] = []
    try:
        for index in range(6):  # every slot of the three good nodes
            sandbox = provider.start(task_key=f"os/t{index}")
            assert isinstance(sandbox, RaySandbox)
            held.append(sandbox)
        assert Counter(s.node_id for s in held) == dict.fromkeys(cluster.good_ids, 2)
        first = held[0]
        assert httpx.get(first.api_url + "/screenshot", trust_env=False, timeout=10).text == "PNG"  # through its node
        container = engine.containers.get(first.describe()["container_id"])
        assert {b["HostIp"] for b in container.ports["5000/tcp"]} == {"127.0.0.1"}  # published on loopback only
        assert container.labels[LABEL_NODE] == first.node_id

        # A seventh waits for a free slot, and takes the node that joins meanwhile.
        got: list[RaySandbox] = []
        waiter = threading.Thread(target=lambda: got.append(provider.start(task_key="os/t7")))  # type: ignore[arg-type]
        waiter.start()
        wait_for(lambda: _pending_groups(provider), "the seventh waiting for a slot", timeout=30)
        joiner = cluster.add_node()
        waiter.join(60)
        [late] = got
        assert late.node_id == joiner.node_id
        assert late.placement.pool_wait_seconds > 0.5  # it waited for the slot

        # That node is lost: Ray tells it, the sandbox is not alive and lost names the node, its container goes.
        name = late.describe()["name"]
        cluster.remove_node(joiner)
        wait_for(lambda: not late.alive(), "the lost node's sandbox reported not alive", timeout=30)
        lost = str(late.lost("GET /platform: no answer"))
        assert f"on Ray node {joiner.node_id} (127.0.0.1) was lost" in lost and "Ray reports the node dead" in lost
        # Nothing listens at its address any more (a plain socket: an earlier in-process pytest run may
        # have left httpx mapping another copy of httpcore's errors).
        address = httpx.URL(late.api_url)
        with pytest.raises(OSError):
            socket.create_connection((address.host, address.port or 80), timeout=5).close()
        late.stop()
        wait_for(
            lambda: name not in support.run_containers(engine, owner.run_id),
            "the lost node's container swept by a live node's agent",
            timeout=30,
        )
    finally:
        for sandbox in held:
            sandbox.stop()
        provider.close()
        end_run(settings, owner)
    assert support.run_containers(engine, owner.run_id) == []


def _pending_groups(provider: Any) -> bool:
    table = provider.ray.util.placement_group_table()
    return any(group.get("state") == "PENDING" for group in table.values())


OWNER_SCRIPT = """
import sys, time
from pytest_osworld.sandbox import Owner, check_pool
from pytest_osworld.settings import Settings
settings = Settings.model_validate_json(sys.argv[1])
check_pool(settings, Owner(run_id=sys.argv[2]), progress=print)
print("opened", flush=True)
time.sleep(600)
"""


def test_the_runs_process_killed_ends_the_run_on_every_node(
    cluster: TestCluster, stand_in: str, engine: docker.DockerClient, tmp_path: Path
) -> None:
    settings = stand_in_settings(cluster, stand_in, warm_pool=1, ray_heartbeat_timeout=3)
    name = run_id("ray-owner")
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, settings.model_dump_json(), name],
        stdout=(tmp_path / "owner.out").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def three_or_more() -> list[str] | None:
            found = support.run_containers(engine, name)
            return found if len(found) >= 3 else None

        pooled = wait_for(
            three_or_more,
            f"a warm sandbox on each good node ({(tmp_path / 'owner.out').read_text()})",
            timeout=120,
        )
        labels = {engine.containers.get(c).labels.get("io.pytest-osworld.pool") for c in pooled}
        assert labels == {"stand-in"}  # the sweep knows them as pooled
        os.killpg(owner.pid, signal.SIGKILL)  # no teardown can run in the run's process
        owner.wait(30)
        wait_for(
            lambda: support.run_containers(engine, name) == [],
            "the agents ending the run without their owner's heartbeat",
            timeout=30,
        )
        ray = ray_connect.connect(cluster.address, None)
        try:
            wait_for(
                lambda: (
                    not [a for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"].endswith(name)]
                ),
                "the run's agents gone",
                timeout=30,
            )
        finally:
            ray_connect.release()
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
        support.remove_run(engine, name)
