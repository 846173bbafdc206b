"""Sandbox start and teardown times: create-to-ready and teardown, median and p90.

    python benchmarks/sandbox.py                     # the desktop profile, 10 sandboxes
    python benchmarks/sandbox.py -n 20 --sandbox osworld-vm --profile my.yaml

Targets for the desktop profile: create-to-ready <= 3 s, teardown <= 1 s (medians). The image is
built (or found current) before the first measurement, which is not counted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _common import close_provider, open_provider

from pytest_osworld.sandbox import host_pool, pick_host
from pytest_osworld.settings import merge, read_profile

TARGETS = {"desktop": (3.0, 1.0)}


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=10, help="sandboxes to start, one after the other (default 10)")
    parser.add_argument("--sandbox", default=None, help="profile name (default: desktop)")
    parser.add_argument("--profile", type=Path, default=None, help="a YAML settings profile")
    args = parser.parse_args()

    cli = {"sandbox": args.sandbox} if args.sandbox else {}
    profile = read_profile(args.profile) if args.profile else None
    settings = merge(cli=cli, profile=profile, profile_path=args.profile, invocation_dir=Path.cwd())
    opened = open_provider(settings)
    if opened is None:
        return 2
    provider, owner = opened
    ready: list[float] = []
    teardown: list[float] = []
    try:
        for i in range(args.n):
            started = time.monotonic()
            sandbox = provider.start(task_key=f"bench/{i}")
            ready.append(time.monotonic() - started)
            started = time.monotonic()
            sandbox.stop()
            teardown.append(time.monotonic() - started)
            print(f"  {i + 1:>3}/{args.n}: ready {ready[-1]:.2f} s, teardown {teardown[-1]:.2f} s", flush=True)
    finally:
        close_provider(provider, owner)

    name = settings.sandbox.name
    host = pick_host(host_pool(settings), owner.worker_id)  # the provider's: this process is no xdist worker
    print(f"\nsandbox profile {name}, {args.n} sandboxes on {host.display}")
    print(f"create-to-ready: median {statistics.median(ready):.2f} s, p90 {p90(ready):.2f} s")
    print(f"teardown:        median {statistics.median(teardown):.2f} s, p90 {p90(teardown):.2f} s")
    if name in TARGETS:
        ready_target, teardown_target = TARGETS[name]
        ok = statistics.median(ready) <= ready_target and statistics.median(teardown) <= teardown_target
        print(
            f"targets (medians): ready <= {ready_target:g} s, teardown <= {teardown_target:g} s: "
            f"{'met' if ok else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
