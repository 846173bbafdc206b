"""The wait before evaluation: how long ``eval_settle quiet`` waits, and whether it scores like OSWorld's 20 s.

    python benchmarks/settle.py               # every bundled task (tasks/examples.jsonl), both modes
    python benchmarks/settle.py -k calc       # the bundled tasks whose id contains "calc"

Each task runs with the oracle twice, each time on a fresh sandbox of the desktop profile: with
``eval_settle`` quiet, then with 20 (OSWorld's ``time.sleep(20)`` before ``env.evaluate()``). Prints
each task's scores and quiet wait, the median quiet wait and whether every score is equal in both
modes. Target: quiet median <= 2 s, every score equal. Exit status 1 when either is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import close_provider, open_provider

from pytest_osworld.agents import RunnerContext, make_runner
from pytest_osworld.episode import Episode
from pytest_osworld.record import TaskResult
from pytest_osworld.results.recorder import EpisodeRecorder
from pytest_osworld.results.store import RunStore
from pytest_osworld.settings import Settings, merge
from pytest_osworld.tasks.readers import TaskEntry, read_jsonl

BUNDLED = Path(__file__).resolve().parents[1] / "tasks" / "examples.jsonl"
TARGET_S = 2.0
MODES: tuple[str, str] = ("quiet", "20")


def one_episode(provider: Any, settings: Settings, entry: TaskEntry, reports: Path) -> TaskResult:
    store = RunStore.for_settings(reports, settings)
    runner = make_runner("oracle", RunnerContext(entry=entry, settings=settings, model=None))
    sandbox = provider.start(task_key=f"bench/{entry.id}/{time.monotonic_ns()}")
    try:
        with tempfile.TemporaryDirectory() as cache:
            episode = Episode.build(
                entry=entry,
                settings=settings,
                run_id="bench",
                repeat=1,
                sandbox=sandbox,
                runner=runner,
                recorder=EpisodeRecorder(store, f"{entry.domain}/{entry.id}"),
                model=None,
                markers=[],
                worker=None,
                cache_dir=Path(cache),
            )
            return episode.run()
    finally:
        runner.close()
        sandbox.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", "--keyword", default="", help="only the bundled tasks whose id contains this")
    args = parser.parse_args()
    entries = [e for e in read_jsonl(BUNDLED) if args.keyword in e.id]
    if not entries:
        print(f"benchmark: no bundled task id contains {args.keyword!r}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        settings = {mode: merge(cli={"eval_settle": mode, "report_dir": tmp}) for mode in MODES}
        opened = open_provider(settings["quiet"])
        if opened is None:
            return 2
        provider, owner = opened
        quiet_waits: list[float] = []
        unequal: list[str] = []
        try:
            for entry in entries:
                results = {
                    mode: one_episode(provider, settings[mode], entry, Path(tmp) / mode.replace(".", "_"))
                    for mode in MODES
                }
                quiet, fixed = results["quiet"], results["20"]
                waited = quiet.settle.seconds if quiet.settle else float("nan")
                quiet_waits.append(waited)
                same = quiet.score == fixed.score and quiet.score is not None
                if not same:
                    unequal.append(f"{entry.domain}/{entry.id}")
                print(
                    f"  {entry.domain}/{entry.id}: quiet waited {waited:.2f} s -> score {quiet.score} "
                    f"({quiet.termination.value}); 20 s -> score {fixed.score} ({fixed.termination.value})"
                    + ("" if same else "  DIFFERENT"),
                    flush=True,
                )
        finally:
            close_provider(provider, owner)
    median = statistics.median(quiet_waits)
    print(
        f"quiet settle median {median:.2f} s, max {max(quiet_waits):.2f} s over {len(entries)} tasks "
        f"(target <= {TARGET_S:g} s): {'met' if median <= TARGET_S else 'NOT met'}"
    )
    print(
        "every score equal in both modes: "
        + ("yes" if not unequal else f"NO ({len(unequal)} differ: {', '.join(unequal)})")
    )
    return 0 if median <= TARGET_S and not unequal else 1


if __name__ == "__main__":
    sys.exit(main())
