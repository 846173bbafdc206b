"""The faults a long run meets, each injected at a moment drawn from a seed, and what each allows.

A fault draws its :class:`Moment` (the task it hits, the anchor, the delay after it, its own choices)
from a ``random.Random`` seeded with the fault's name and the seed, so a seed replays the same moment.
``inject`` does it to the running run; ``judge`` says what is wrong with one task's record after the
first session (``None``: no record), given what the injection did. The checks every fault shares are
in :mod:`tests.support.faults.check`.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

from pytest_osworld.sandbox import LABEL_PID, LABEL_ROLE, LABEL_RUN_ID, LABEL_TASK, LABEL_WORKER, ROLE_SERVICE
from tests.support.faults.agent import Drops, ScriptedAgent
from tests.support.faults.disk import Disk
from tests.support.faults.engine import OwnEngine
from tests.support.polling import poll_until

Record = dict[str, Any]

# Anchor -> (the timeline event it waits for, the delay after it in seconds, drawn uniformly).
ANCHORS: dict[str, tuple[str, tuple[float, float]]] = {
    "sandbox_start": ("container_create", (0.0, 1.5)),  # while the sandbox starts
    "setup": ("guest_ready", (0.0, 1.0)),  # during setup (and the settle after it)
    "agent": ("model_request", (0.0, 1.5)),  # while the agent acts
    "last_action": ("done_answer", (0.0, 1.0)),  # between the last action and the evaluation
    "record": ("record_write", (0.0, 0.004)),  # while the record is being written
}
MODEL_RETRIES = 1  # the run's --osworld-model-retries
CONTAINER_WAIT_S = 60.0  # how long a container fault waits for its task's container to exist


@dataclass(frozen=True)
class Moment:
    """Where a fault lands: ``task``'s ``anchor`` plus ``delay`` seconds, and the fault's own draws."""

    task: str
    anchor: str
    delay: float
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        more = "".join(f", {k} {v}" for k, v in sorted(self.extra.items()))
        return f"task {self.task} at {self.anchor} + {self.delay:.3f} s{more}"


@dataclass
class Injection:
    """What a fault acts on, and what it did (``at``: ``time.time()`` when it struck; ``landed``:
    whether it hit something, e.g. a process or a container that was there)."""

    moment: Moment
    run_id: str
    run_dir: Path
    engine_url: str
    process_id: int  # the run's controller (and its process group)
    agent: ScriptedAgent
    own_engine: OwnEngine | None = None
    disk: Disk | None = None
    at: float | None = None
    landed: bool = False
    detail: str = ""

    def engine(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.engine_url, timeout=30)

    def containers(self, *labels: str) -> list[Any]:
        client = self.engine()
        try:
            found: list[Any] = client.containers.list(filters={"label": [f"{LABEL_RUN_ID}={self.run_id}", *labels]})
            return found
        finally:
            client.close()


def _interrupted_or_done(record: Record | None) -> str | None:
    """After a signal: a task ended before it (scored), was interrupted, or has no record (resumed)."""
    if record is None or record["termination"] == "interrupted":
        return None
    return _scored(record)


def _scored(record: Record) -> str | None:
    """A scored record of the reference solution: it must have the reference score."""
    if record["masked"] or record["score"] != 1.0:
        return f"ended {record['termination']} with score {record['score']}: {record['message']}"
    return None


@dataclass(frozen=True)
class Fault:
    """One kind of fault. ``anchors``: the moments it may be drawn at; ``service``: the run has a task
    that needs a shared service (then the victim); ``own_engine``/``tmpfs``: it needs the engine of its
    own or a small report disk; ``may_lose_records``: a task may end without a record (then resumed)."""

    name: str
    anchors: tuple[str, ...] = tuple(ANCHORS)
    service: bool = False
    own_engine: bool = False
    tmpfs: bool = False
    may_lose_records: bool = False
    always_resume: bool = False  # the run ends early: a user resumes it
    per_task: bool = True  # it hits one task (several such faults can share a run); else the whole run

    def draw(self, rng: random.Random, tasks: list[str]) -> Moment:
        victim = next((t for t in tasks if t.endswith("/svc-echo")), None) if self.service else None
        task = victim or rng.choice(tasks)
        anchor = rng.choice(self.anchors)
        low, high = ANCHORS[anchor][1]
        return Moment(task, anchor, round(rng.uniform(low, high), 4), self.extra(rng))

    def extra(self, rng: random.Random) -> dict[str, Any]:
        return {}

    def prepare(self, injection: Injection) -> None:
        """Before the run starts (the model's drops are set here)."""

    def inject(self, injection: Injection) -> None:
        raise NotImplementedError

    def conclude(self, injection: Injection) -> None:
        """After the first session: what the fault did, when only the run's end tells."""

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        """What is wrong with ``key``'s record after the first session; by default the victim may be
        masked with one of ``victim_masks`` and every task must be scored as its solution earns."""
        if record is None:
            return None if self.may_lose_records else "no record (never a missing record for this fault)"
        return _scored(record)

    def expected_exit(self, records: dict[str, Record | None]) -> set[int]:
        passed = all(r is not None and not r["masked"] and r["score"] == 1.0 for r in records.values())
        return {0} if passed else {1}


def _masked_with(record: Record | None, reasons: set[str]) -> str | None:
    if record is None:
        return "no record"
    if record["masked"]:
        return None if record["termination"] in reasons else f"masked {record['termination']}, not {sorted(reasons)}"
    return _scored(record)


class ContainerKilled(Fault):
    def inject(self, injection: Injection) -> None:
        # Drawn early in a sandbox's start, the moment may come before its container exists on a busy
        # engine (claims take seconds there): the fault strikes as soon as it does.
        found = poll_until(
            lambda: injection.containers(f"{LABEL_TASK}={injection.moment.task}"), bool, CONTAINER_WAIT_S
        )
        for container in found:
            container.kill()
            injection.landed, injection.detail = True, f"killed {container.name}"

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        if key == injection.moment.task and injection.landed:
            return _masked_with(record, {"sandbox_lost", "sandbox_error"})
        return super().judge(key, record, injection)


class GuestServerKilled(Fault):
    def extra(self, rng: random.Random) -> dict[str, Any]:
        return {"signal": rng.choice(["KILL", "TERM"])}

    def inject(self, injection: Injection) -> None:
        # Drawn early in a sandbox's start, the moment may come before its container or its guest server
        # exists on a busy engine: the fault strikes as soon as there is a server to kill.
        sig = injection.moment.extra["signal"]

        def kill() -> bool:
            for container in injection.containers(f"{LABEL_TASK}={injection.moment.task}"):
                try:
                    code, _ = container.exec_run(
                        ["pkill", f"-{sig}", "-f", "-x", "python3 -m guest_server"], user="root"
                    )
                except docker.errors.APIError as error:  # the container ended meanwhile
                    injection.detail = f"pkill -{sig} guest_server in {container.name}: {error.explanation}"
                    continue
                injection.detail = f"pkill -{sig} guest_server in {container.name}: exit {code}"
                if code == 0:
                    return True
            return False

        injection.landed = poll_until(kill, bool, CONTAINER_WAIT_S)

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        if key != injection.moment.task or not injection.landed or record is None:
            return super().judge(key, record, injection)
        restarted = {r["process"] for r in record.get("restarts") or []}
        if "guest-server" not in restarted:
            return f"the record does not name the guest server's restart (restarts {record.get('restarts')})"
        if record["masked"]:
            # The sandbox was never lost: a step whose one request was cut is the phase's own error.
            return _masked_with(record, {"setup_error", "evaluator_error"})
        if record["score"] != 1.0 and not _action_cut(injection.run_dir / key):
            return _scored(record)
        return None


def _action_cut(task_dir: Path) -> bool:
    """Whether one of the task's actions was cut by the guest server's end (the agent's failure)."""
    traj = task_dir / "traj.jsonl"
    return traj.is_file() and "the connection dropped while the action ran" in traj.read_text(errors="replace")


class EngineRestarted(Fault):
    def inject(self, injection: Injection) -> None:
        assert injection.own_engine is not None
        down, up = injection.own_engine.restart()
        injection.landed, injection.detail = True, f"engine down {down:.3f}, answering again {up:.3f}"

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        # Any task under way or starting while the engine was away lost its sandbox, or could not start one.
        return _masked_with(record, {"sandbox_lost", "sandbox_error"})

    def expected_exit(self, records: dict[str, Record | None]) -> set[int]:
        return {0, 1} if super().expected_exit(records) == {0} else {1}  # a removal refused meanwhile: an error


class WorkerKilled(Fault):
    def inject(self, injection: Injection) -> None:
        for container in injection.containers(f"{LABEL_TASK}={injection.moment.task}"):
            labels = container.labels
            os.kill(int(labels[LABEL_PID]), signal.SIGKILL)
            injection.landed = True
            injection.detail = f"SIGKILL to worker {labels.get(LABEL_WORKER)} (pid {labels[LABEL_PID]})"
            return

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        if key != injection.moment.task or not injection.landed:
            return super().judge(key, record, injection)
        if record is None:
            return "no record: a task whose worker died must be masked worker_lost"
        if record["termination"] == "worker_lost":
            return None if record["score"] is None else "worker_lost with a score"
        finished = _instant(record.get("finished_at"))
        if injection.at is not None and finished is not None and finished <= injection.at:
            return _scored(record)  # it had ended before its worker died
        return f"ended {record['termination']} after its worker was killed, not worker_lost"

    def expected_exit(self, records: dict[str, Record | None]) -> set[int]:
        return {1}  # a worker that died is an error of the run, whatever its task's record says


class ModelDrops(Fault):
    def draw(self, rng: random.Random, tasks: list[str]) -> Moment:
        task = rng.choice(tasks)
        return Moment(task, "agent", 0.0, {"from_request": rng.randint(0, 1), "drops": rng.randint(1, 3)})

    def prepare(self, injection: Injection) -> None:
        extra = injection.moment.extra
        injection.agent.drops = Drops(injection.moment.task, extra["from_request"], extra["drops"])

    def inject(self, injection: Injection) -> None:
        """The model server drops the requests itself (``prepare``)."""

    def conclude(self, injection: Injection) -> None:
        dropped = injection.agent.dropped(injection.moment.task)
        injection.landed, injection.detail = dropped > 0, f"{dropped} request(s) dropped"

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        if key != injection.moment.task:
            return super().judge(key, record, injection)
        if injection.moment.extra["drops"] > MODEL_RETRIES:
            return _masked_with(record, {"model_error"}) or (
                None if record and record["masked"] else "scored although every retry of a request was dropped"
            )
        return super().judge(key, record, injection)  # the retry got an answer: scored as ever


class ServiceKilled(Fault):
    def inject(self, injection: Injection) -> None:
        for container in injection.containers(f"{LABEL_ROLE}={ROLE_SERVICE}"):
            container.kill()
            injection.landed, injection.detail = True, f"killed service container {container.name}"

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        if key == injection.moment.task and record is not None and record["masked"]:
            problem = _masked_with(record, {"service_error"})
            return problem or (None if "service echo" in (record["message"] or "") else "the mask does not name echo")
        return super().judge(key, record, injection)


class DiskFull(Fault):
    def extra(self, rng: random.Random) -> dict[str, Any]:
        return {"full_for": rng.choice([round(rng.uniform(0.5, 4.0), 2), "the rest of the run"])}

    def inject(self, injection: Injection) -> None:
        assert injection.disk is not None
        injection.disk.fill()
        injection.landed, injection.detail = True, f"filled {injection.disk.path}"
        full_for = injection.moment.extra["full_for"]
        if isinstance(full_for, float):
            freeing = threading.Timer(full_for, injection.disk.free)
            freeing.daemon = True  # never keeps the matrix's process alive past its run
            freeing.start()

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        if record is not None and record["masked"]:
            return _masked_with(record, {"harness_error"})
        return super().judge(key, record, injection)


@dataclass(frozen=True)
class Signalled(Fault):
    """SIGINT, SIGTERM or SIGKILL, to the run's controller or to its whole process group (Ctrl-C in a
    terminal sends SIGINT to the group)."""

    signum: signal.Signals = signal.SIGINT

    def extra(self, rng: random.Random) -> dict[str, Any]:
        return {"to": rng.choice(["controller", "group"])}

    def inject(self, injection: Injection) -> None:
        send: Callable[[int, int], None] = os.killpg if injection.moment.extra["to"] == "group" else os.kill
        send(injection.process_id, self.signum)
        injection.landed, injection.detail = True, f"{self.signum.name} to the {injection.moment.extra['to']}"

    def judge(self, key: str, record: Record | None, injection: Injection) -> str | None:
        return _interrupted_or_done(record)

    def expected_exit(self, records: dict[str, Record | None]) -> set[int]:
        return {-signal.SIGKILL} if self.signum is signal.SIGKILL else {2}


def _instant(text: str | None) -> float | None:
    from datetime import datetime

    return datetime.fromisoformat(text).timestamp() if text else None


NO_FAULT = Fault("none")  # the rules of a task no fault hit: it has a record, scored as its solution earns
FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        ContainerKilled("container_killed"),
        GuestServerKilled("guest_server_killed", anchors=("setup", "agent", "last_action", "record")),
        EngineRestarted("engine_restarted", own_engine=True, per_task=False),
        WorkerKilled("worker_killed"),
        ModelDrops("model_drops", anchors=("agent",)),
        ServiceKilled("service_killed", service=True),
        DiskFull("disk_full", tmpfs=True, may_lose_records=True, per_task=False),
        Signalled("sigint", may_lose_records=True, always_resume=True, per_task=False, signum=signal.SIGINT),
        Signalled("sigterm", may_lose_records=True, always_resume=True, per_task=False, signum=signal.SIGTERM),
        Signalled("sigkill", may_lose_records=True, always_resume=True, per_task=False, signum=signal.SIGKILL),
    )
}
