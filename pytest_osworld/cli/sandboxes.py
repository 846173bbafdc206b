"""``pytest-osworld sandboxes``: the running sandboxes and where to watch them live.

For each container with the project's labels: its run, worker and task, its age, and the host-side
addresses of its guest API and of its VNC server (guest port 8006), to open in any VNC viewer
while the episode runs; a sandbox kept after its task (``--osworld-keep-failed``) says why it was
kept. On an ``ssh://`` host the addresses are on that host's loopback: forward the port first
(``ssh -L PORT:127.0.0.1:PORT host``). With ``--ray-address``, the sandboxes of the runs on a Ray
cluster, asked of each node's agent: the addresses are the agents' forwarders on the nodes, which let
through only the machine of the driver that claimed the sandbox.
"""

from __future__ import annotations

import argparse
from typing import Any

from pytest_osworld.sandbox import (
    API_PORT,
    LABEL_MANAGED,
    LABEL_POOL,
    LABEL_RUN_ID,
    LABEL_TASK,
    LABEL_WORKER,
    VNC_PORT,
    SandboxConfigError,
    parse_hosts,
    read_kept_name,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sandboxes",
        help="list running sandboxes with their live-view (VNC) addresses",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("--run-id", metavar="ID", help="only this run's sandboxes")
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="list the sandboxes of the runs on this Ray cluster instead (auto, HOST:PORT or ray://HOST:PORT)",
    )
    parser.add_argument(
        "--docker-host",
        action="append",
        default=None,
        metavar="URL",
        help="environment host to look at (repeatable; default: DOCKER_HOST or the local socket)",
    )
    parser.set_defaults(func=run)


def _published(ports: list[dict[str, Any]], private: int) -> str | None:
    for port in ports:
        if port.get("PrivatePort") == private and port.get("PublicPort"):
            return f"{port.get('IP') or '127.0.0.1'}:{port['PublicPort']}"
    return None


def run(args: argparse.Namespace) -> int:
    if args.ray_address:
        return _run_on_ray(args)
    failed = False
    shown = 0
    for host in parse_hosts(args.docker_host or []):
        try:
            client = host.connect(timeout=30)
        except SandboxConfigError as exc:
            print(f"pytest-osworld sandboxes: {exc}")
            failed = True
            continue
        labels = [f"{LABEL_MANAGED}=1"] + ([f"{LABEL_RUN_ID}={args.run_id}"] if args.run_id else [])
        try:
            containers = client.containers.list(filters={"label": labels}, sparse=True)
            for container in containers:
                attrs = container.attrs
                tags = attrs.get("Labels") or {}
                ports = attrs.get("Ports") or []
                api, vnc = _published(ports, API_PORT), _published(ports, VNC_PORT)
                kept = read_kept_name(str((attrs.get("Names") or [""])[0]))
                task = tags.get(LABEL_TASK, "-")
                if kept is not None and kept.task and LABEL_POOL in tags:
                    task = kept.task  # started ahead by a warm pool: its labels name no task, its name does
                print(
                    f"{host.display} run {tags.get(LABEL_RUN_ID, '?')} worker {tags.get(LABEL_WORKER, '-')} "
                    f"{task}: {attrs.get('Status', attrs.get('State', '?'))}"
                    f"{f', kept: {kept.why}' if kept else ''}"
                    f"{f', api http://{api}' if api else ''}{f', live view vnc://{vnc}' if vnc else ''}"
                )
                shown += 1
        finally:
            client.close()
    if not shown and not failed:
        print("no running sandbox" + (f" of run {args.run_id}" if args.run_id else ""))
    return 1 if failed else 0


def _run_on_ray(args: argparse.Namespace) -> int:
    from pytest_osworld.sandbox.ray import connect as ray_connect
    from pytest_osworld.sandbox.ray.cluster import AGENT_PREFIX

    try:
        ray = ray_connect.connect(args.ray_address, None)
    except SandboxConfigError as exc:
        print(f"pytest-osworld sandboxes: {exc}")
        return 1
    shown = 0
    try:
        for entry in ray.util.list_named_actors(all_namespaces=True):
            namespace, name = str(entry["namespace"]), str(entry["name"])
            run_id = namespace.removeprefix(ray_connect.NAMESPACE_PREFIX)
            if not namespace.startswith(ray_connect.NAMESPACE_PREFIX) or not name.startswith(AGENT_PREFIX):
                continue
            if args.run_id and run_id != args.run_id:
                continue
            try:
                status = ray.get(ray.get_actor(name, namespace=namespace).status.remote(), timeout=30)
            except Exception as exc:  # noqa: BLE001 - an agent of a lost node: say so and go on
                print(f"ray node {name.removeprefix(AGENT_PREFIX)[:12]} run {run_id}: no answer ({type(exc).__name__})")
                continue
            for sandbox in status["sandboxes"]:
                ports = sandbox["ports"]
                api, vnc = ports.get(str(API_PORT)), ports.get(str(VNC_PORT))
                print(
                    f"ray node {status['node_id'][:12]} ({status['address']}) run {run_id} {sandbox['task']}: "
                    f"{sandbox['name']}{f', api http://{api[0]}:{api[1]}' if api else ''}"
                    f"{f', live view vnc://{vnc[0]}:{vnc[1]}' if vnc else ''}"
                )
                shown += 1
    finally:
        ray_connect.release()
    if not shown:
        print("no running sandbox on the cluster" + (f" of run {args.run_id}" if args.run_id else ""))
    return 0
