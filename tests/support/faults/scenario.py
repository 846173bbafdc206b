"""A scenario: a real run of the quick bundled tasks at -n 2 under one fault (or several faults that each
hit a task of their own), each at a moment drawn from its seed; the resume, when the run left tasks
without a record; and the checks (:mod:`tests.support.faults.verdict`).

``run_scenario`` (one fault, one seed) is what ``benchmarks/faults.py`` calls; ``run_plan`` takes several
``(fault, seed)`` pairs of per-task faults into one run, as the matrix's test does to save runs. Each
returns an :class:`Outcome` with the figures and every problem found (none: everything held).
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.episode.runs import BUNDLED, bundled_task
from tests.services.tasks import service_task, write_tasks
from tests.support.faults import check, verdict
from tests.support.faults.agent import ScriptedAgent
from tests.support.faults.disk import Disk, small_disk
from tests.support.faults.engine import OwnEngine
from tests.support.faults.kinds import ANCHORS, FAULTS, MODEL_RETRIES, Fault, Injection
from tests.support.faults.timeline import EngineWatcher, RecordWatcher, Timeline, Watcher
from tests.support.faults.verdict import Session, Strike
from tests.support.model_server import ModelServer

QUICK_TASKS = ("os-notes-folder", "os-rename-report", "os-make-executable", "os-zip-reports")
SERVICE_TASK = "svc-echo"
SELECTION = "(os- and not refresh) or svc-"
# Small limits: each proves the same as the defaults, sooner.
LIMITS = (
    "--osworld-action-timeout=5",
    f"--osworld-model-retries={MODEL_RETRIES}",
    "--osworld-model-backoff=0.1",
    "--osworld-model-timeout=20",
    "--osworld-guest-ready-timeout=30",
)
SESSION_LIMIT_S = 300.0
_DROPPED_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@dataclass
class Outcome:
    """A scenario's figures and problems (``benchmarks/faults.py`` makes its table of them)."""

    plan: list[tuple[str, int]]
    moments: list[str]
    tasks: int
    accounted: int = 0  # selected tasks with exactly one record at the end
    masks: Counter[str] = field(default_factory=Counter)  # after the fault, by reason
    missing_after_fault: int = 0
    resumed: bool = False
    leftovers: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    landed: bool = False  # every fault hit something
    injected: list[str] = field(default_factory=list)  # what each injection did, and when
    sessions: list[Session] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def fault(self) -> str:
        return "+".join(name for name, _ in self.plan)

    def report(self) -> str:
        lines = [f"fault {name} seed {seed}: {moment}" for (name, seed), moment in zip(self.plan, self.moments)]
        lines += [f"  injected: {what}" for what in self.injected]
        lines += [f"  PROBLEM {p}" for p in self.problems]
        for session in self.sessions:
            lines.append(f"--- {session.name}: exit {session.returncode} in {session.seconds:.1f} s")
            lines += session.output.splitlines()[-80:]
        return "\n".join(lines)


def scenario_tasks(service: bool) -> dict[str, dict[str, Any]]:
    tasks = {f"os/{task_id}": bundled_task(task_id) for task_id in QUICK_TASKS}
    if service:
        tasks[f"os/{SERVICE_TASK}"] = service_task(SERVICE_TASK)
    return tasks


def run_scenario(
    fault: str, seed: int, workdir: Path, *, own_engine: OwnEngine | None = None, say: Callable[[str], None] = print
) -> Outcome:
    """One fault at the moment its seed draws."""
    return run_plan([(fault, seed)], workdir, own_engine=own_engine, say=say)


def run_plan(
    plan: Sequence[tuple[str, int]],
    workdir: Path,
    *,
    own_engine: OwnEngine | None = None,
    say: Callable[[str], None] = print,
    spread: bool = False,
) -> Outcome:
    """``spread``: each fault hits a task of its own, dealt from the seeds (else each fault's seed draws
    its task too, and two that draw one task are refused)."""
    faults = [FAULTS[name] for name, _ in plan]
    if len(plan) > 1 and not all(f.per_task for f in faults):
        raise ValueError("only faults that hit one task each can share a run")
    tasks = scenario_tasks(any(f.service for f in faults))
    victims = _dealt(faults, plan, sorted(tasks)) if spread else [sorted(tasks)] * len(plan)
    moments = [f.draw(random.Random(f"{name}/{seed}"), v) for f, (name, seed), v in zip(faults, plan, victims)]
    if len({m.task for m in moments}) != len(moments):
        raise ValueError(f"two faults of {list(plan)} hit the same task: choose other seeds")
    for (name, seed), moment in zip(plan, moments):
        say(f"fault {name}, seed {seed}: {moment}")
    outcome = Outcome(list(plan), [str(m) for m in moments], len(tasks))
    run_id = f"faults-{'-'.join(f'{n[:6]}{s}' for n, s in plan).replace('_', '')}-{secrets.token_hex(3)}"
    sources = [str(BUNDLED)]
    if any(f.service for f in faults):
        sources.append(str(write_tasks(workdir / "service.jsonl", [tasks[f"os/{SERVICE_TASK}"]])))
    engine = own_engine if any(f.own_engine for f in faults) else None
    engine_url = engine.url if engine is not None else _shared_engine_url()
    reports, run_dir, selected = workdir / "reports", workdir / "reports" / run_id, set(tasks)
    result = verdict.Verdict()
    with _report_disk(reports, any(f.tmpfs for f in faults)) as disk, ModelServer(models=["scripted"]) as server:
        timeline = Timeline()
        agent = ScriptedAgent(server, tasks, timeline)
        strikes = [
            Strike(f, seed, Injection(m, run_id, run_dir, engine_url, 0, agent, engine, disk))
            for f, (_, seed), m in zip(faults, plan, moments)
        ]
        for strike in strikes:
            strike.fault.prepare(strike.injection)
        base = [*sources, "-p", "no:cacheprovider", "-n", "2", "-v", "-k", SELECTION, *agent.args(), *LIMITS]
        base += ["--osworld-report-dir", str(reports)]
        env = _env(run_id, engine_url)
        first = Session("run")
        outcome.sessions.append(first)
        with _watching(engine_url, run_id, run_dir, [m.task for m in moments], timeline):
            _run(first, [*base, "--osworld-run-id", run_id], workdir, env, strikes, timeline)
        for strike in strikes:
            strike.fault.conclude(strike.injection)
        if disk is not None:
            disk.full_at_end = disk.full
            disk.free()
        outcome.landed = all(s.injection.landed for s in strikes)
        outcome.injected = [_when(s.injection) for s in strikes]
        left = check.await_no_processes(run_id)
        after_fault = check.snapshot(run_dir)
        verdict.judge_first(result, strikes, first, after_fault, selected, left)
        outcome.missing_after_fault = len(selected - set(after_fault.records))
        if outcome.missing_after_fault or any(s.fault.always_resume and s.injection.landed for s in strikes):
            outcome.resumed = True
            agent.new_session()
            second = Session("resume")
            outcome.sessions.append(second)
            _run(second, [*base, "--osworld-resume", str(run_dir)], workdir, env, [], timeline)
            verdict.judge_resume(result, second, after_fault, selected)
            left = check.await_no_processes(run_id)
        leftovers = left + check.run_objects(engine_url, run_id)
        if engine_url != _shared_engine_url():
            leftovers += [f"on the shared engine: {o}" for o in check.run_objects(_shared_engine_url(), run_id)]
        verdict.judge_final(result, check.snapshot(run_dir), run_dir, selected, outcome.resumed, leftovers)
        check.remove_run_objects(engine_url, run_id)
        if disk is not None:  # kept beside the small disk, which goes
            shutil.copytree(reports, workdir / "reports-kept", dirs_exist_ok=True)
    outcome.problems, outcome.masks, outcome.accounted = result.problems, result.masks, result.accounted
    outcome.leftovers, outcome.corrupt = result.leftovers, result.corrupt
    return outcome


def _dealt(faults: list[Fault], plan: Sequence[tuple[str, int]], tasks: list[str]) -> list[list[str]]:
    """One task for each fault, none twice: the service's fault takes the task that needs it, the others
    the rest in an order shuffled by the plan's seeds."""
    rest = [t for t in tasks if not t.endswith(f"/{SERVICE_TASK}")]
    random.Random("/".join(f"{n}{s}" for n, s in plan)).shuffle(rest)
    if sum(not f.service for f in faults) > len(rest):
        raise ValueError(f"{len(plan)} faults cannot each hit one of {len(tasks)} tasks")
    dealt = iter(rest)
    return [[t for t in tasks if t.endswith(f"/{SERVICE_TASK}")] if f.service else [next(dealt)] for f in faults]


def _shared_engine_url() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _env(run_id: str, engine_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update({"PY_COLORS": "0", check.MARKER_ENV: run_id, "DOCKER_HOST": engine_url})
    return env


@contextmanager
def _report_disk(reports: Path, small: bool) -> Iterator[Disk | None]:
    if not small:
        reports.mkdir(parents=True, exist_ok=True)
        yield None
        return
    with small_disk(reports) as disk:
        yield disk


@contextmanager
def _watching(engine_url: str, run_id: str, run_dir: Path, victims: list[str], timeline: Timeline) -> Iterator[None]:
    watchers: list[Watcher] = [EngineWatcher(engine_url, run_id, timeline)]
    watchers += [RecordWatcher(run_dir / victim, victim, timeline) for victim in victims]
    for watcher in watchers:
        watcher.start()
    try:
        yield
    finally:
        for watcher in watchers:
            watcher.close()


def _run(
    session: Session, args: list[str], workdir: Path, env: dict[str, str], strikes: list[Strike], timeline: Timeline
) -> None:
    """Run one session to its end; each strike's fault strikes at its moment meanwhile."""
    log = workdir / f"{session.name}.log"
    started = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", *args, f"--basetemp={workdir / f'basetemp-{session.name}'}"],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a terminal's job: group signals stay in it
        )
    ended = threading.Event()
    strikers = []
    for strike in strikes:
        strike.injection.process_id = process.pid
        strikers.append(threading.Thread(target=_strike, args=(strike, timeline, ended), daemon=True))
        strikers[-1].start()
    try:
        session.returncode = process.wait(timeout=SESSION_LIMIT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        session.returncode = process.wait()
        session.output = f"(killed: no end within {SESSION_LIMIT_S:g} s)\n"
    finally:
        ended.set()
        for striker in strikers:
            striker.join(timeout=120)
    session.seconds = time.monotonic() - started
    session.output += log.read_text(errors="replace")


def _strike(strike: Strike, timeline: Timeline, ended: threading.Event) -> None:
    injection = strike.injection
    moment = injection.moment
    anchor = timeline.wait_for(ANCHORS[moment.anchor][0], moment.task, ended)
    if anchor is None:
        injection.detail = f"{strike.fault.name}: its anchor {moment.anchor} never came"
        return
    if moment.delay and ended.wait(moment.delay):
        injection.detail = f"{strike.fault.name}: the run ended before the moment"
        return
    injection.at = time.time()
    try:
        strike.fault.inject(injection)
    except Exception as exc:  # noqa: BLE001 - a fault that could not strike is reported, not raised
        injection.detail = f"could not inject: {type(exc).__name__}: {exc}"
    timeline.note("fault", moment.task, injection.detail)


def _when(injection: Injection) -> str:
    if injection.at is None:
        return injection.detail
    at = time.strftime("%H:%M:%S", time.localtime(injection.at)) + f".{int((injection.at % 1) * 1000):03d}"
    return f"{injection.detail} at {at}"
