"""The fault matrix, N times: every fault a long run meets, each at a moment drawn from a printed seed.

Each round runs every fault once (seed = the first seed + the round) in real runs of the quick bundled
tasks at -n 2 (tests/support/faults/scenario.py): the faults that hit one task share one run, each on a
task of its own dealt from the seed; each fault that hits the whole run has a run of its own. A run that
left tasks without a record is resumed; everything is checked (tests/support/faults/check.py). Prints one line per scenario as it ends, then a table:
fault, runs, tasks, records complete, masks by reason, resumes needed, leftovers, corrupt files, and
the problems found; the last line gives the totals (the target: 100% accounted, 0 leftovers, 0 corrupt).

    python benchmarks/faults.py                          # 20 rounds of every fault, seeds 1..20
    python benchmarks/faults.py --runs 3 --seed 100      # 3 rounds, seeds 100..102
    python benchmarks/faults.py --faults sigkill,disk_full --runs 5

Needs root (the disk-full fault mounts a tmpfs, the engine restart starts a dockerd of its own) and the
desktop image. A failing scenario is replayed alone with ``--faults NAME --seed SEED --runs 1``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.support

import docker

from tests.support.faults.engine import own_engine
from tests.support.faults.kinds import FAULTS
from tests.support.faults.scenario import Outcome, run_plan


def table(outcomes: list[Outcome]) -> list[str]:
    by_fault: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:  # the faults that shared a run are one row
        by_fault[outcome.fault if len(outcome.plan) == 1 else f"one task each ({len(outcome.plan)})"].append(outcome)
    head = f"{'fault':<20} {'runs':>4} {'tasks':>5} {'records complete':>17} {'resumes':>7} {'leftovers':>9} {'corrupt':>7} {'problems':>8}  masks by reason"
    lines = [head, "-" * len(head)]
    for fault, group in by_fault.items():
        lines.append(_row(fault, group))
    lines.append("-" * len(head))
    lines.append(_row("total", outcomes))
    tasks = sum(o.tasks for o in outcomes)
    accounted = sum(o.accounted for o in outcomes)
    leftovers = sum(len(o.leftovers) for o in outcomes)
    corrupt = sum(len(o.corrupt) for o in outcomes)
    problems = sum(len(o.problems) for o in outcomes)
    lines.append(
        f"totals: {len(outcomes)} runs, {tasks} tasks, {accounted / tasks:.0%} accounted ({accounted}/{tasks}), "
        f"{leftovers} leftovers, {corrupt} corrupt files, {problems} problems"
    )
    return lines


def _row(name: str, group: list[Outcome]) -> str:
    tasks = sum(o.tasks for o in group)
    accounted = sum(o.accounted for o in group)
    masks: Counter[str] = Counter()
    for outcome in group:
        masks.update(outcome.masks)
    reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(masks.items())) or "-"
    return (
        f"{name:<20} {len(group):>4} {tasks:>5} {f'{accounted}/{tasks} {accounted / tasks:.0%}':>17} "
        f"{sum(o.resumed for o in group):>7} {sum(len(o.leftovers) for o in group):>9} "
        f"{sum(len(o.corrupt) for o in group):>7} {sum(len(o.problems) for o in group):>8}  {reasons}"
    )


def main() -> int:
    # A run gets SIGINT as from a terminal: started in the background (`cmd &`, nohup), this process
    # inherits SIGINT ignored and so would every run it starts, and the SIGINT fault would never land.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="rounds of the matrix (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="the first round's seed (default 1)")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated faults (default: all)")
    parser.add_argument("--keep", type=Path, default=None, help="keep every scenario's folder under this one")
    args = parser.parse_args()
    names = [n.strip() for n in args.faults.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        parser.error(f"unknown faults {unknown}; choose from {', '.join(FAULTS)}")
    outcomes: list[Outcome] = []
    started = time.monotonic()
    with ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="osworld-faults-")))
        engine = None
        if any(FAULTS[n].own_engine for n in names):
            engine = stack.enter_context(own_engine())
            _, copied = engine.ensure_desktop_image(docker.from_env())
            image = f"copied in {copied:.0f} s" if copied else "found by its id"
            print(f"own engine at {engine.url}; desktop image {image}", flush=True)
        per_task = [n for n in names if FAULTS[n].per_task]
        plans = [[n] for n in names if not FAULTS[n].per_task]
        plans = ([per_task] if per_task else []) + plans
        for round_ in range(args.runs):
            seed = args.seed + round_
            for plan in plans:
                workdir = root / f"{'+'.join(plan)}-{seed}"
                workdir.mkdir(parents=True, exist_ok=True)
                began = time.monotonic()
                outcome = run_plan(
                    [(n, seed) for n in plan], workdir, own_engine=engine, say=lambda _line: None, spread=True
                )
                outcomes.append(outcome)
                seconds = [f"{s.name} {s.seconds:.0f} s" for s in outcome.sessions]
                status = "ok" if not outcome.problems else f"{len(outcome.problems)} PROBLEM(S)"
                print(
                    f"seed {seed:>3}: {len(plan)} fault(s), {', '.join(seconds)} ({time.monotonic() - began:.0f} s): {status}"
                )
                for name, moment, injected in zip(plan, outcome.moments, outcome.injected):
                    print(f"    {name:<20} {moment}; {injected}")
                for problem in outcome.problems:
                    print(f"    PROBLEM {problem}", flush=True)
    print()
    for line in table(outcomes):
        print(line)
    print(f"({time.monotonic() - started:.0f} s in all)")
    return 0 if not any(o.problems for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
