"""What must hold after a fault, checked from what a run left: its folder, its output, the engine, /proc.

- Every selected task has exactly one record, or none after the first session (where the fault allows
  it) and is then run by ``--osworld-resume``, which runs exactly the tasks without a valid record.
- Masks carry the right reason, and no task has a score it did not earn (each fault's ``judge``).
- No score from a half-evaluated task: a valid score is the one the reference solution earns, and a
  valid record agrees with its trajectory (as many steps as its ``traj.jsonl``, in order).
- Every JSON file of the run parses, every JSONL line too, and no temporary file of a write is left.
- The summary's counts equal the records (and its missing tasks the selected ones without a record).
- 0 containers, networks and processes of the run remain.
- The run's exit code says what happened.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_RUN_ID

Record = dict[str, Any]
MARKER_ENV = "PYTEST_OSWORLD_FAULT_RUN"  # in the environment of every process of a run under a fault


@dataclass
class Snapshot:
    """The run folder at one moment: the records by key (parsed), the summary, what did not parse."""

    records: dict[str, Record] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    corrupt: list[str] = field(default_factory=list)  # files that do not parse, temporary files left
    problems: list[str] = field(default_factory=list)


def snapshot(run_dir: Path) -> Snapshot:
    found = Snapshot()
    if not run_dir.is_dir():
        return found
    for path in sorted(run_dir.rglob("*")):
        if not path.is_file():
            continue
        name = path.relative_to(run_dir)
        if path.name.startswith(".") and path.name.endswith(".tmp"):
            found.corrupt.append(f"{name}: a temporary file of a write that never finished")
        elif path.suffix == ".json":
            try:
                value = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                found.corrupt.append(f"{name}: not JSON ({exc})")
                continue
            if path.name == "result.json" and not name.parts[0].startswith("_"):
                key = f"{name.parts[0]}/{name.parts[1]}"
                if value.get("domain") != name.parts[0] or value.get("task_id") != name.parts[1]:
                    found.problems.append(f"{name}: the record is of {value.get('domain')}/{value.get('task_id')}")
                found.records[key] = value
            elif path.name == "summary.json" and len(name.parts) == 1:
                found.summary = value
        elif path.suffix == ".jsonl":
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                try:
                    json.loads(line)
                except ValueError:
                    found.corrupt.append(f"{name}:{number}: not a JSON line ({line[:80]!r})")
    return found


def trajectory_problems(run_dir: Path, key: str, record: Record) -> list[str]:
    """A valid record's trajectory must be its own: its steps in order, as many as it says."""
    traj = run_dir / key / "traj.jsonl"
    if record["masked"] or not traj.is_file():
        return []
    numbers = []
    for line in traj.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            numbers.append(json.loads(line)["step_num"])
        except (ValueError, KeyError, TypeError):
            return [f"{key}: traj.jsonl has a line that is not a step"]
    if numbers != sorted(numbers) or len(set(numbers)) != record["steps"]:
        return [f"{key}: traj.jsonl steps {numbers} do not agree with the record's {record['steps']} steps"]
    return []


def summary_problems(summary: dict[str, Any] | None, records: dict[str, Record], selected: set[str]) -> list[str]:
    """The summary's counts must be the records', its missing tasks the selected ones without one."""
    if summary is None:
        return ["no summary.json"]
    integrity = summary.get("integrity", {})
    statuses = Counter(_status(r) for r in records.values())
    want = {
        "recorded": len(records),
        "passed": statuses["passed"],
        "failed": statuses["failed"],
        "masked": statuses["masked"],
        "skipped": statuses["skipped"],
        "missing": sorted(selected - set(records)),
    }
    got = {k: integrity.get(k) for k in want}
    problems = [f"summary integrity {got} != the records' {want}"] if got != want else []
    masks = dict(Counter(r["termination"] for r in records.values() if _status(r) == "masked"))
    if summary.get("masks") != masks:
        problems.append(f"summary masks {summary.get('masks')} != the records' {masks}")
    return problems


def _status(record: Record) -> str:
    if record["termination"] == "unsupported":
        return "skipped"
    if not record["masked"] and record["score"] is not None:
        return "passed" if record["score"] >= 1.0 else "failed"
    return "masked"


# --- what a run leaves outside its folder ------------------------------------------------------


def run_processes(run_id: str) -> list[str]:
    """Processes whose environment marks them as the run's (``MARKER_ENV``): pid and command line."""
    needle = f"{MARKER_ENV}={run_id}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes() and int(entry.name) != os.getpid():
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name} {cmdline.strip()[:160]}")
        except OSError:
            continue  # ended meanwhile, or not readable
    return found


def await_no_processes(run_id: str, limit: float = 30.0) -> list[str]:
    """The run's processes still there once they had ``limit`` seconds to end (workers tear down)."""
    deadline = time.monotonic() + limit
    while True:
        left = run_processes(run_id)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)  # poll for their end


def run_objects(engine_url: str, run_id: str) -> list[str]:
    """The run's containers and networks on the engine at ``engine_url``."""
    client = docker.DockerClient(base_url=engine_url, timeout=60)
    try:
        labels = {"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"]}
        containers = [f"container {c.name} ({c.status})" for c in client.containers.list(all=True, filters=labels)]
        networks = [f"network {n.name}" for n in client.networks.list(filters=labels)]
    finally:
        client.close()
    return containers + networks


def remove_run_objects(engine_url: str, run_id: str) -> None:
    """After the checks: what a failed scenario left is removed, so the next one starts clean."""
    client = docker.DockerClient(base_url=engine_url, timeout=60)
    try:
        labels = {"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"]}
        for container in client.containers.list(all=True, filters=labels):
            container.remove(force=True, v=True)
        for network in client.networks.list(filters=labels):
            network.remove()
    finally:
        client.close()
