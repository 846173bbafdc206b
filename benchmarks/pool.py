"""The warm pool's claim latency (local provider and ray) beside a cold start, and the ray provider's
per-task overhead against the local one on the null control.

    python benchmarks/pool.py                                # 50 claims each; a 3-node Ray cluster on this machine
    python benchmarks/pool.py -n 100 --ray-address HOST:PORT  # an existing cluster (nodes with osworld_sandbox slots)
    python benchmarks/pool.py --no-overhead                  # claims only

A warm claim is measured once the pool is full (what a task gets when the pool kept up): the check
of a ready sandbox (its guest answers, its screen is up, no task had it) and, on ray, the call to its
node's agent. A cold start is the same provider's start without a pool, measured in the same run.
The overhead runs pytest over the bundled tasks with the null control twice, ``desktop`` and ``ray``
(no pool on either), and compares what a task costs: its wait for a sandbox plus its episode, from
the records, and the wall clock per task.

Targets: warm claim p50 <= 50 ms for both providers; the ray provider's per-task overhead <= 10 %.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import close_provider, open_provider

from pytest_osworld.results.summary import percentile
from pytest_osworld.sandbox import SandboxProvider, end_run
from pytest_osworld.sandbox.pooled import PooledProvider, PoolKey
from pytest_osworld.sandbox.ray.provider import RayProvider
from pytest_osworld.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "tasks" / "examples.jsonl"
CLAIM_TARGET = 0.050
OVERHEAD_TARGET = 0.10


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def figures(label: str, values: list[float]) -> str:
    return f"{label}: p50 {ms(percentile(values, 50))}, p95 {ms(percentile(values, 95))} over {len(values)}"


@contextmanager
def local_cluster(nodes: int, slots: int) -> Iterator[str]:
    """A Ray cluster of ``nodes`` nodes on this machine's loopback, ``slots`` sandbox slots each."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": 75 * 1024 * 1024, "node_ip_address": "127.0.0.1"}
    config = {"enable_worker_prestart": False, "prestart_worker_first_driver": False}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            **node,
            "resources": {"osworld_sandbox": slots},
            "include_dashboard": False,
            "_system_config": config,
        },
    )
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**node, resources={"osworld_sandbox": slots})
        yield str(cluster.address)
    finally:
        cluster.shutdown()


def cold_starts(provider: SandboxProvider, count: int) -> list[float]:
    times = []
    for index in range(count):
        started = time.monotonic()
        sandbox = provider.start(task_key=f"bench/cold-{index}")
        times.append(time.monotonic() - started)
        sandbox.stop()
        print(f"  cold start {index + 1}/{count}: {times[-1]:.2f} s", flush=True)
    return times


def warm_claims(provider: SandboxProvider, count: int, wait_full: Callable[[], None]) -> list[float]:
    times = []
    for index in range(count):
        wait_full()  # not timed: the pool has kept up
        started = time.monotonic()
        sandbox = provider.start(task_key=f"bench/warm-{index}")
        times.append(time.monotonic() - started)
        placement = getattr(sandbox, "placement", None)
        assert placement is not None and placement.warm, "a claim on a full pool found none ready"
        sandbox.stop()
        if (index + 1) % 10 == 0:
            print(f"  warm claims {index + 1}/{count}: last {ms(times[-1])}", flush=True)
    return times


@contextmanager
def provider_of(settings: Settings) -> Iterator[SandboxProvider]:
    """The provider of ``settings`` for a run of its own; what the run left is removed after."""
    opened = open_provider(settings)
    if opened is None:
        sys.exit(2)
    provider, owner = opened
    try:
        yield provider
    finally:
        close_provider(provider, owner)
        end_run(settings, owner)


def local_figures(count: int, colds: int) -> tuple[list[float], list[float]]:
    print("local provider (desktop):", flush=True)
    with provider_of(Settings()) as provider:
        cold = cold_starts(provider, colds)
    with provider_of(Settings(warm_pool=2)) as pooled:
        assert isinstance(pooled, PooledProvider)
        key = PoolKey("desktop")
        warm = warm_claims(pooled, count, lambda: _must(pooled.pool.wait_full(key, timeout=300), "the pool filled"))
    return cold, warm


def ray_figures(address: str, count: int, colds: int) -> tuple[list[float], list[float]]:
    print(f"ray provider (desktop on the nodes of {address}):", flush=True)
    with provider_of(Settings(sandbox="ray", ray_address=address)) as provider:
        cold = cold_starts(provider, colds)
    with provider_of(Settings(sandbox="ray", ray_address=address, warm_pool=1)) as pooled:
        assert isinstance(pooled, RayProvider)
        warm = warm_claims(pooled, count, lambda: ray_pools_full(pooled))
    return cold, warm


def ray_pools_full(provider: RayProvider) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        nodes = [n for n in provider.node_status() if n["problem"] is None]
        if nodes and all((n["pool"] or {}).get("ready", 0) >= 1 for n in nodes):
            return
        time.sleep(0.1)  # poll until every node's pool holds a ready sandbox
    raise RuntimeError("the nodes' pools did not fill within 300 s")


def _must(ok: bool, what: str) -> None:
    if not ok:
        raise RuntimeError(f"not done in time: {what}")


def null_control(options: list[str], workers: int) -> dict[str, Any]:
    """One pytest run of the null control over the bundled tasks; per-task figures from its records."""
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as tmp:
        reports = Path(tmp) / "reports"
        command = [
            sys.executable, "-m", "pytest", str(BUNDLED), "-q", "-p", "no:cacheprovider", "-n", str(workers),
            "--osworld-agent", "null", "--osworld-report-dir", str(reports), "--osworld-run-id", "bench", *options,
        ]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=1800)
        wall = time.monotonic() - started
        records = [json.loads(p.read_text()) for p in (reports / "bench").glob("*/*/result.json")]
    if len(records) != len(BUNDLED.read_text().splitlines()) or any(r["score"] != 0.0 for r in records):
        raise RuntimeError(f"the null control did not run every task:\n{done.stdout[-3000:]}")
    per_task = [(r["durations"]["sandbox_ready"] or 0.0) + (r["durations"]["total"] or 0.0) for r in records]
    return {"wall": wall, "tasks": len(records), "per_task": statistics.mean(per_task)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=50, help="warm claims per provider (default 50)")
    parser.add_argument("--cold", type=int, default=5, help="cold starts per provider (default 5)")
    parser.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: start 3 nodes here)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers of the null control runs (default 2)")
    parser.add_argument("--no-overhead", action="store_true", help="skip the null control runs")
    args = parser.parse_args()
    if args.n < 50:
        print("benchmark: at least 50 claims make a p95", file=sys.stderr)
        return 2

    local_cold, local_warm = local_figures(args.n, args.cold)
    with local_cluster(3, 2) if args.ray_address is None else _given(args.ray_address) as address:
        ray_cold, ray_warm = ray_figures(address, args.n, args.cold)
        overhead = None
        if not args.no_overhead:
            print("null control over the bundled tasks: desktop, then ray", flush=True)
            local = null_control([], args.workers)
            on_ray = null_control(["--osworld-sandbox", "ray", "--osworld-ray-address", address], args.workers)
            overhead = (local, on_ray)

    print()
    print(f"{figures('local warm claim', local_warm)}; cold start {figures('', local_cold).lstrip(': ')}")
    print(f"{figures('ray   warm claim', ray_warm)}; cold start {figures('', ray_cold).lstrip(': ')}")
    met = all((percentile(v, 50) or 1.0) <= CLAIM_TARGET for v in (local_warm, ray_warm))
    print(f"target: warm claim p50 <= {ms(CLAIM_TARGET)} for both: {'met' if met else 'NOT met'}")
    if overhead is not None:
        local, on_ray = overhead
        rise = on_ray["per_task"] / local["per_task"] - 1
        wall_rise = on_ray["wall"] / local["wall"] - 1
        print(
            f"null control, {local['tasks']} tasks, -n {args.workers}: per task (sandbox wait + episode) "
            f"desktop {local['per_task']:.2f} s, ray {on_ray['per_task']:.2f} s ({rise:+.1%}); wall clock "
            f"{local['wall']:.1f} s vs {on_ray['wall']:.1f} s ({wall_rise:+.1%})"
        )
        print(
            f"target: ray per-task overhead <= {OVERHEAD_TARGET:.0%}: {'met' if rise <= OVERHEAD_TARGET else 'NOT met'}"
        )
    return 0


@contextmanager
def _given(address: str) -> Iterator[str]:
    yield address


if __name__ == "__main__":
    sys.exit(main())
