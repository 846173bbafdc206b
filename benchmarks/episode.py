"""The agent loop's own overhead per step: everything but the model's and the guest's time.

    python benchmarks/episode.py                 # 5 episodes of 30 steps on the desktop profile
    python benchmarks/episode.py -e 3 -s 50

Each episode runs on a real sandbox of the desktop image with the oracle runner playing a solution
of no-op steps (an instant "model"). Every call into the guest and into the runner is timed where it
is made; the loop's overhead is the agent phase's wall-clock time minus those, divided by the steps:
observation bookkeeping, step records, traj.jsonl and screenshot writes, Allure hooks.
Target: median <= 20 ms per step. The pause after an action (action_pause) is set to 0.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import close_provider, open_provider

from pytest_osworld.agents import RunnerContext, make_runner
from pytest_osworld.episode import Episode
from pytest_osworld.results.recorder import EpisodeRecorder
from pytest_osworld.results.store import RunStore
from pytest_osworld.settings import merge
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry

TARGET_MS = 20.0


class Stopwatch:
    """Adds up the time spent inside the wrapped callables while the agent phase runs.

    Calls outside it (the final screenshot, evaluation) are not in the agent phase's duration either.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.armed = False

    def wrap(self, owner: Any, name: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                if self.armed:
                    self.seconds += time.perf_counter() - started

        setattr(owner, name, timed)

    def arm_during(self, owner: Any, name: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        @functools.wraps(original)
        def armed(*args: Any, **kwargs: Any) -> Any:
            self.armed = True
            try:
                return original(*args, **kwargs)
            finally:
                self.armed = False

        setattr(owner, name, armed)


def entry(steps: int) -> TaskEntry:
    task = Task.model_validate(
        {
            "id": "loop-overhead",
            "instruction": "nothing",
            "config": [],
            "evaluator": {
                "func": "exact_match",
                "result": {"type": "vm_command_line", "command": "echo ok", "shell": True},
                "expected": {"type": "rule", "rules": {"expected": "ok\n"}},
            },
            "solution": ["x = 1"] * steps + ["DONE"],
        }
    )
    return TaskEntry(task=task, domain="os", origin="benchmark")


def one_episode(provider: Any, settings: Any, steps: int, reports: Path) -> float:
    task = entry(steps)
    store = RunStore.for_settings(reports, settings)
    runner = make_runner("oracle", RunnerContext(entry=task, settings=settings, model=None))
    sandbox = provider.start(task_key=f"bench/{time.monotonic_ns()}")
    try:
        with tempfile.TemporaryDirectory() as cache:
            episode = Episode.build(
                entry=task,
                settings=settings,
                run_id="bench",
                repeat=1,
                sandbox=sandbox,
                runner=runner,
                recorder=EpisodeRecorder(store, "os/loop-overhead"),
                model=None,
                markers=["osworld", "os"],
                worker=None,
                cache_dir=Path(cache),
            )
            outside = Stopwatch()
            for name in ("screenshot", "accessibility", "run_action"):
                outside.wrap(episode.guest, name)
            outside.wrap(runner, "predict")
            outside.arm_during(episode, "_agent_loop")
            result = episode.run()
    finally:
        sandbox.stop()
    if result.score != 1.0 or result.durations.agent is None:
        raise RuntimeError(f"the benchmark episode did not complete: {result.termination} {result.message}")
    return (result.durations.agent - outside.seconds) / (steps + 1) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-e", "--episodes", type=int, default=5, help="episodes to run (default 5)")
    parser.add_argument("-s", "--steps", type=int, default=30, help="steps per episode (default 30)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        settings = merge(cli={"action_pause": 0, "max_steps": args.steps + 5, "report_dir": tmp})
        opened = open_provider(settings)
        if opened is None:
            return 2
        provider, owner = opened
        overheads: list[float] = []
        try:
            for i in range(args.episodes):
                overheads.append(one_episode(provider, settings, args.steps, Path(tmp) / f"r{i}"))
                print(f"  episode {i + 1}/{args.episodes}: {overheads[-1]:.2f} ms per step", flush=True)
        finally:
            close_provider(provider, owner)
    median = statistics.median(overheads)
    print(
        f"loop overhead per step: median {median:.2f} ms, max {max(overheads):.2f} ms "
        f"over {args.episodes} episodes of {args.steps + 1} steps (target <= {TARGET_MS:.0f} ms): "
        f"{'met' if median <= TARGET_MS else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
