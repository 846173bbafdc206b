"""What the live page costs a run: the null control over the bundled example tasks, without and with
``--osworld-live``, in one go.

    python benchmarks/live.py              # tasks/examples.jsonl at -n 2: without, then with the page
    python benchmarks/live.py --rounds 2   # without, with, with, without: a drift of the machine cancels out

With the page on, a reader holds its stream of changes open the whole run and fetches each new
screenshot, as a browser showing the page does. Prints each run's wall time (the pytest process, start
to exit) and the CPU time of its processes (the controller and its workers, not the desktops'
containers), the totals of both modes and the ratios; then the work a worker does for the page per
task (its events, a screenshot file, the check for a person's input), timed apart. The wall times move
with whatever else the machine runs; the CPU time and the worker's work are what the page itself adds.
Target: the page costs at most 2 % of the wall time. Exit status 1 when it misses.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from pytest_osworld.live.channel import Channel
from pytest_osworld.record import Usage

BUNDLED = Path(__file__).resolve().parents[1] / "tasks" / "examples.jsonl"
TARGET = 0.02


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PageReader(threading.Thread):
    """Reads the page's stream until the run ends, fetching every new screenshot."""

    def __init__(self, url: str, done: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.done = url, done
        self.updates = self.shots = 0
        self._seen: dict[str, int] = {}

    def run(self) -> None:
        with httpx.Client(base_url=self.url, trust_env=False, timeout=None) as http:
            while not self.done.is_set():
                try:
                    with http.stream("GET", "/events") as stream:
                        self._read(http, stream.iter_lines())
                    return
                except httpx.TransportError:
                    self.done.wait(0.1)  # the page is not up yet: poll until it answers

    def _read(self, http: httpx.Client, lines: Any) -> None:
        for line in lines:
            if not line.startswith("data: "):
                continue
            self.updates += 1
            for task in json.loads(line.removeprefix("data: ")).get("tasks", []):
                if task["shot"] > self._seen.get(task["key"], 0):
                    self._seen[task["key"]] = task["shot"]
                    self.shots += http.get("/shot", params={"task": task["key"]}).status_code == 200


def one_run(live: bool, workers: int) -> dict[str, Any]:
    run_id = f"bench-live-{os.getpid()}-{time.time_ns() % 10**8}"  # a run's end sweeps its run id's sandboxes
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        reports = Path(tmp) / "reports"
        command = [
            sys.executable, "-m", "pytest", str(BUNDLED), "-q", "-p", "no:cacheprovider", "-n", str(workers),
            "--osworld-agent", "null", "--osworld-report-dir", str(reports), "--osworld-run-id", run_id,
        ]  # fmt: skip
        done = threading.Event()
        reader = None
        if live:
            port = _free_port()
            command += ["--osworld-live", str(port)]
            reader = PageReader(f"http://127.0.0.1:{port}", done)
            reader.start()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        finished = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=1800)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # pytest and its xdist workers, once exited
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        done.set()
        if reader is not None:
            reader.join(timeout=10)
        records = [json.loads(p.read_text()) for p in (reports / run_id).glob("*/*/result.json")]
        shot = next((p.read_bytes() for p in (reports / run_id).glob("*/*/final.png")), b"")
    if len(records) != len(BUNDLED.read_text().splitlines()) or any(r["score"] != 0.0 for r in records):
        raise RuntimeError(f"the null control did not run every task:\n{finished.stdout[-3000:]}")
    figures: dict[str, Any] = {"live": live, "wall": wall, "cpu": cpu, "tasks": len(records), "shot": shot}
    if reader is not None:
        figures |= {"updates": reader.updates, "shots": reader.shots}
    return figures


def worker_cost(screenshot: bytes, tasks: int = 200) -> float:
    """Seconds a worker spends on the page per task of the null control, measured here: its events (start,
    sandbox, setup, one step begun and ended, evaluation), one screenshot file, the check for a person's
    input at the end."""
    with tempfile.TemporaryDirectory(prefix="bench-live-channel-") as tmp:
        channel = Channel(Path(tmp)).make()
        publisher = channel.publisher("gw0")
        usage = Usage(prompt_tokens=900, completion_tokens=40).model_dump()
        started = time.perf_counter()
        for n in range(tasks):
            key = f"os/task-{n}"
            publisher.publish("begin", key=key, name=key, at=time.time())
            publisher.publish("sandbox", key=key, sandbox="pytest-osworld-bench-gw0-1", vnc="127.0.0.1:49153")
            publisher.publish("phase", key=key, phase="setup")
            publisher.publish("step", key=key, number=1, of=15)
            publisher.screenshot(key, screenshot)
            publisher.publish("stepped", key=key, number=1, response="DONE", shot=True, usage=usage)
            publisher.publish("phase", key=key, phase="evaluation")
            channel.human_input(key)
        elapsed = time.perf_counter() - started
        publisher.close()
    return elapsed / tasks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="rounds of (without, with); 2 runs them ABBA")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (default 2)")
    args = parser.parse_args()
    order: list[bool] = []  # with the page? Round 1: without, with; round 2: with, without; ...
    for round_ in range(args.rounds):
        order += [False, True] if round_ % 2 == 0 else [True, False]
    runs = []
    for live in order:
        figures = one_run(live, args.workers)
        extra = f", {figures['updates']} updates read, {figures['shots']} screenshots fetched" if live else ""
        print(
            f"  {'with' if live else 'without'} the live page: {figures['wall']:.1f} s wall, "
            f"{figures['cpu']:.1f} s CPU, {figures['tasks']} tasks{extra}"
        )
        runs.append(figures)
    without = sum(r["wall"] for r in runs if not r["live"])
    with_page = sum(r["wall"] for r in runs if r["live"])
    cpu_without = sum(r["cpu"] for r in runs if not r["live"])
    cpu_with = sum(r["cpu"] for r in runs if r["live"])
    ratio = with_page / without - 1.0
    print(f"null control, {len(runs) // 2} run(s) each at -n {args.workers}:")
    print(f"  without --osworld-live  {without:8.1f} s wall  {cpu_without:7.1f} s CPU")
    print(f"  with --osworld-live     {with_page:8.1f} s wall  {cpu_with:7.1f} s CPU")
    print(f"  the page costs {100 * ratio:+.2f} % of the wall time (target <= {100 * TARGET:.0f} %)")
    print(
        f"  its CPU time, {cpu_with - cpu_without:+.1f} s, is {100 * (cpu_with - cpu_without) / with_page:+.2f} % of the wall time"
    )
    shot = next(r["shot"] for r in runs if r["shot"])
    per_task = worker_cost(shot)
    task_seconds = without * args.workers / sum(r["tasks"] for r in runs if not r["live"])
    print(
        f"  a worker's own work for the page: {1000 * per_task:.2f} ms per task (its events and a "
        f"{len(shot) // 1024} KB screenshot), {100 * per_task / task_seconds:.4f} % of a task's {task_seconds:.1f} s"
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
