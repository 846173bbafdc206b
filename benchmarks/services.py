"""Shared service timings on the local Docker engine, with the built-in echo service.

Measures:
- start-to-ready: the container created and started, its probe polled until it answers (the run's
  services network exists already, as it does for every service after the first);
- one health check, the request made before each task that needs a service (target: median <= 20 ms);
- attach from a second process: another pytest process of the run finds the running service by its
  labels and reads its ports, then checks it once.

    python benchmarks/services.py                      # 3 starts, 50 health checks, 5 attaches
    python benchmarks/services.py --starts 5 --checks 100 --attaches 10

The desktop image (the echo service's) is built or found current before the first measurement, which
is not counted. Everything the benchmark starts is removed at its end. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from pytest_osworld.errors import OsworldError
from pytest_osworld.guest import build
from pytest_osworld.plugin.run import new_run_id
from pytest_osworld.sandbox import Owner, parse_hosts
from pytest_osworld.services import BUILTIN
from pytest_osworld.services.declaration import DEFAULT_SUFFIX
from pytest_osworld.services.pool import ServicePool, remove_services

CHECK_TARGET_MS = 20.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def make_pool(run_id: str) -> ServicePool:
    return ServicePool(BUILTIN, host=parse_hosts([])[0], owner=Owner(run_id=run_id), suffix=DEFAULT_SUFFIX, restarts=0)


def attach_child(run_id: str) -> int:
    """In a process of its own: attach to the run's echo service, check it once; print both times (ms)."""
    pool = make_pool(run_id)
    try:
        started = time.perf_counter()
        pool.attach("echo")
        attached = time.perf_counter()
        pool.healthy("echo")
        checked = time.perf_counter()
    finally:
        pool.close()
    print(json.dumps({"attach_ms": (attached - started) * 1000, "checked_ms": (checked - started) * 1000}))
    return 0


def start_to_ready(starts: int) -> list[float]:
    """Seconds from create to a ready echo service, each start in a run of its own (then removed)."""
    seconds = []
    for i in range(starts):
        run_id = f"bench-{new_run_id()}"
        pool = make_pool(run_id)
        try:
            pool.network()
            started = time.monotonic()
            pool.attach("echo")
            pool.healthy("echo")  # ready: it answers its probe
            seconds.append(time.monotonic() - started)
        finally:
            pool.close()
            remove_services(parse_hosts([]), run_id)
        print(f"  start {i + 1:>2}/{starts}: ready in {seconds[-1]:.2f} s", flush=True)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=3, help="services started one after the other (default 3)")
    parser.add_argument("--checks", type=int, default=50, help="health checks of the running service (default 50)")
    parser.add_argument("--attaches", type=int, default=5, help="second processes attaching (default 5)")
    parser.add_argument("--attach-child", metavar="RUN_ID", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attach_child:
        return attach_child(args.attach_child)

    host = parse_hosts([])[0]
    try:
        client = host.connect()
        build.ensure_image(client)
        client.close()
    except OsworldError as exc:
        print(f"benchmark: {exc}", file=sys.stderr)
        return 2

    ready = start_to_ready(args.starts)

    run_id = f"bench-{new_run_id()}"
    pool = make_pool(run_id)
    checks: list[float] = []
    attaches: list[float] = []
    attach_checked: list[float] = []
    try:
        pool.healthy("echo")  # started, not measured here
        for _ in range(args.checks):
            started = time.perf_counter()
            pool.healthy("echo")
            checks.append((time.perf_counter() - started) * 1000)
        for _ in range(args.attaches):
            done = subprocess.run(
                [sys.executable, __file__, "--attach-child", run_id], capture_output=True, text=True, check=True
            )
            times = json.loads(done.stdout.strip().splitlines()[-1])
            attaches.append(times["attach_ms"])
            attach_checked.append(times["checked_ms"])
    finally:
        pool.close()
        removed = remove_services([host], run_id)

    check_median = statistics.median(checks)
    print(f"\necho service on {host.display} ({removed} container removed at the end)")
    print(
        f"start-to-ready:          median {statistics.median(ready):7.2f} s    max {max(ready):7.2f} s    n={len(ready)}"
    )
    print(
        f"health check:            median {check_median:7.1f} ms   p95 {percentile(checks, 0.95):7.1f} ms   "
        f"n={len(checks)}   target <= {CHECK_TARGET_MS:g} ms: {'met' if check_median <= CHECK_TARGET_MS else 'NOT met'}"
    )
    print(
        f"attach, second process:  median {statistics.median(attaches):7.1f} ms   max {max(attaches):7.1f} ms   "
        f"n={len(attaches)}"
    )
    print(
        f"  with its first check:  median {statistics.median(attach_checked):7.1f} ms   "
        f"max {max(attach_checked):7.1f} ms"
    )
    print(f"a health check is {statistics.median(ready) * 1000 / check_median:,.0f}x cheaper than a start")
    return 0


if __name__ == "__main__":
    sys.exit(main())
