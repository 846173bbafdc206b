"""``pytest-osworld cleanup``: remove sandbox containers that runs left behind.

Without options it removes the leftovers of ended runs only (what a session start warns about);
``--run-id ID`` removes every container of that run, ``--all`` every container with the project's
labels, live runs included. Containers without the project's labels are never touched. With
``--ray-address`` it does the same on every live node of a Ray cluster, each on its own engine.
"""

from __future__ import annotations

import argparse
from typing import Any

from pytest_osworld.sandbox import SandboxConfigError, parse_hosts
from pytest_osworld.sandbox.leftovers import clean_engine


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cleanup",
        help="remove sandbox containers left by ended runs",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--run-id", metavar="ID", help="remove every container of this run, alive or not")
    which.add_argument("--all", action="store_true", help="remove every container with the project's labels")
    parser.add_argument(
        "--docker-host",
        action="append",
        default=None,
        metavar="URL",
        help="environment host to clean (repeatable; default: DOCKER_HOST or the local socket)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="clean every live node of this Ray cluster instead (auto, HOST:PORT or ray://HOST:PORT)",
    )
    parser.add_argument(
        "--leftover-age",
        type=float,
        default=6 * 3600.0,
        metavar="SECONDS",
        help="a container older than this is a leftover even when its run looks alive (default 21600)",
    )
    parser.add_argument("--dry-run", action="store_true", help="only print what would be removed")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.ray_address:
        return _run_on_ray(args)
    total = 0
    failed = False
    for host in parse_hosts(args.docker_host or []):
        try:
            client = host.connect(timeout=30)
        except SandboxConfigError as exc:
            print(f"pytest-osworld cleanup: {exc}")
            failed = True
            continue
        try:
            report = clean_engine(
                client, host, run_id=args.run_id, every=args.all, max_age=args.leftover_age, dry_run=args.dry_run
            )
        finally:
            client.close()
        for line in report.lines:
            print(line)
        total += report.removed
        failed = failed or report.failed
    _total(total, args.dry_run)
    return 1 if failed else 0


def _run_on_ray(args: argparse.Namespace) -> int:
    """The same on every live node of a Ray cluster (nodes sharing one engine answer for it once each)."""
    from pytest_osworld.sandbox.ray import connect as ray_connect
    from pytest_osworld.sandbox.ray import on_nodes

    try:
        ray = ray_connect.connect(args.ray_address, None)
    except SandboxConfigError as exc:
        print(f"pytest-osworld cleanup: {exc}")
        return 1
    try:
        answers = on_nodes.on_every_node(
            ray, None, on_nodes.clean_node, args.run_id, args.all, args.leftover_age, args.dry_run
        )
    finally:
        ray_connect.release()
    total = 0
    failed = False
    for node_id, report in answers.items():
        if isinstance(report, Exception):
            print(f"ray node {node_id[:12]}: could not clean ({type(report).__name__}: {report})")
            failed = True
            continue
        for line in report.lines:
            print(f"ray node {node_id[:12]}: {line}")
        total += report.removed
        failed = failed or report.failed
    _total(total, args.dry_run)
    return 1 if failed else 0


def _total(total: int, dry_run: bool) -> None:
    what = "would be removed" if dry_run else "removed"
    print(f"{total} container(s) {what}")
