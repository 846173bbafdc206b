"""The desktop survives its agent: an action that kills the desktop's own processes is the agent's
failure, never a mask, and the task is scored on what is left.

One real run of bundled tasks at -n 2 (one test) proves every case. A scripted model answers each task (told
apart by its instruction) first with an action that kills part of the desktop as the desktop user,
then with the task's reference solution. The guest's supervisor starts what was killed again, the
episode goes on, the evaluator scores the task, and the record lists the restarts. One more task
has its container killed from outside (SIGKILL from the engine), which the agent cannot cause: it
is still masked ``sandbox_lost``.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import docker
import pytest

from pytest_osworld.sandbox import LABEL_RUN_ID, LABEL_TASK
from tests.episode.runs import BUNDLED, Run, bundled_task, run_tasks, scripted_pyautogui
from tests.support.model_server import ModelServer, RecordedRequest, Reply, Status, solution_answers

pytestmark = pytest.mark.docker

SUPERVISED = frozenset({"xvfb", "dbus", "openbox", "x11vnc", "guest-server"})
# The active window's client and the window manager (through the window it keeps on the root), by xkill.
XKILL = (
    'import os; os.system("xkill -id $(xdotool getactivewindow); '
    "xkill -id $(xprop -root _NET_SUPPORTING_WM_CHECK | awk '{print $NF}')\")"
)
CLOSE_EVERY_WINDOW = "import os; os.system(\"wmctrl -l | awk '{print $1}' | xargs -r -n1 wmctrl -i -c\")"


@dataclass(frozen=True)
class Kill:
    """The first action of a task, the score its reference solution still earns after it, and which
    supervised processes restart because of it."""

    action: str
    score: float
    restarted: frozenset[str]
    drops_the_action: bool = False  # it kills the guest server that runs it


KILLS = {
    "os-notes-folder": Kill("import os; os.system('pkill python3')", 1.0, frozenset({"guest-server"}), True),
    "os-rename-report": Kill("import os; os.system('pkill -f guest')", 1.0, frozenset({"guest-server"}), True),
    "os-make-executable": Kill("import os; os.system('kill -9 -1')", 1.0, SUPERVISED, True),
    "os-zip-reports": Kill("import os; os.system('pkill Xvfb')", 1.0, frozenset({"xvfb", "openbox", "x11vnc"})),
    # An infeasible task: the solution says FAIL, which scores 1.0 with the window manager gone or back.
    "os-refresh-rate": Kill("import os; os.system('pkill openbox')", 1.0, frozenset({"openbox"})),
    "chrome-search-lamp": Kill("import os; os.system('pkill x11vnc')", 1.0, frozenset({"x11vnc"})),
    # The document's application is gone: the solution types into nothing and the file is scored as left.
    "writer-add-closing": Kill(XKILL, 0.0, frozenset({"openbox"})),
    "calc-sum-units": Kill(CLOSE_EVERY_WINDOW, 0.0, frozenset()),
}
KILLED_FROM_OUTSIDE = "chrome-open-about"
HARMLESS = "pyautogui.moveTo(10, 10)"


def key(task_id: str) -> str:
    return f"{bundled_task(task_id)['domain']}/{task_id}"


def script(server: ModelServer, run_id: str) -> None:
    """Per task: its kill, then its reference solution. The task killed from outside has its container
    killed by the engine when its first model request arrives, then gets a harmless action."""
    queues: dict[str, deque[Reply]] = {}
    for task_id, kill in KILLS.items():
        task = bundled_task(task_id)
        queues[task["instruction"]] = deque(
            [Reply(f"```python\n{kill.action}\n```"), *solution_answers(task["solution"])]
        )
    outside = bundled_task(KILLED_FROM_OUTSIDE)["instruction"]
    lock = threading.Lock()

    def respond(request: RecordedRequest) -> Reply | Status:
        text = request.text()
        with lock:
            if outside in text:
                engine = docker.from_env()
                labels = [f"{LABEL_RUN_ID}={run_id}", f"{LABEL_TASK}={key(KILLED_FROM_OUTSIDE)}"]
                for container in engine.containers.list(filters={"label": labels}):
                    container.kill()
                return Reply(f"```python\n{HARMLESS}\n```")
            for instruction, queue in queues.items():
                if instruction in text:
                    return queue.popleft() if queue else Reply("DONE")
        return Status(400, {"error": {"message": "no task's instruction in the prompt"}})

    server.respond_with("scripted", respond)


def run_all(pytester: pytest.Pytester) -> Run:
    """The run: the tasks above and the one killed from outside, at -n 2."""
    run_id = f"run-kills-{secrets.token_hex(4)}"
    selected = [*KILLS, KILLED_FROM_OUTSIDE]
    with ModelServer(models=["scripted"]) as server:
        script(server, run_id)
        return run_tasks(
            pytester,
            BUNDLED,
            "-n",
            "2",
            *scripted_pyautogui(server),
            "--osworld-action-timeout",
            "10",
            "-k",
            " or ".join(selected),
            run_id=run_id,
        )


def first_step(run: Run, task_key: str) -> dict[str, Any]:
    step: dict[str, Any] = json.loads((run.run_dir / task_key / "traj.jsonl").read_text().splitlines()[0])
    return step


def problems_of_killed(run: Run, task_id: str, kill: Kill) -> list[str]:
    """What is wrong with a task whose agent killed part of the desktop: it must be scored (the score its
    solution earns on what is left), have run every step, and name exactly the restarts its kill causes."""
    record = run.record(key(task_id))
    found = []
    ending = "fail" if bundled_task(task_id)["solution"][-1] == "FAIL" else "done"
    if record["masked"] or record["termination"] != ending or record["score"] != kill.score:
        found.append(f"ended {record['termination']} with score {record['score']}: {record['message']}")
    if record["steps"] != 1 + len(bundled_task(task_id)["solution"]):  # the episode went on to its end
        found.append(f"{record['steps']} steps")
    restarts = record["restarts"] or []
    if {each["process"] for each in restarts} != kill.restarted:
        found.append(f"restarts {restarts}, expected of {sorted(kill.restarted)}")
    for restart in restarts:
        if not _instant(record["started_at"]) < _instant(restart["at"]) < _instant(record["finished_at"]):
            found.append(f"restart {restart} outside the episode")
        if restart["down_seconds"] is None or restart["down_seconds"] > 1.5:
            found.append(f"restart {restart} not at once")
    step = first_step(run, key(task_id))
    if step["action"] != kill.action:
        found.append(f"first action {step['action']!r}")
    if kill.drops_the_action and not (
        step["execute_status"] == "error"
        and step["returncode"] is None
        and "the connection dropped while the action ran" in step["execute_error"]
    ):
        found.append(f"the killing action's step is not its failure: {step}")
    return [f"{task_id}: {problem}" for problem in found]


def test_the_desktop_survives_what_its_agent_kills_and_the_tasks_are_scored(pytester: pytest.Pytester) -> None:
    run = run_all(pytester)

    # The first done-when point: pkill python3 sent by the model kills the guest server; the
    # action failed (its step says so), the episode went on, the task is scored, the record names it.
    record = run.record(key("os-notes-folder"))
    assert record["masked"] is False and record["termination"] == "done" and record["score"] == 1.0, record
    assert record["steps"] == 1 + len(bundled_task("os-notes-folder")["solution"])
    step = first_step(run, key("os-notes-folder"))
    assert step["action"] == "import os; os.system('pkill python3')"
    assert step["execute_status"] == "error" and "the connection dropped while the action ran" in step["execute_error"]
    [restart] = record["restarts"]
    assert restart["process"] == "guest-server" and restart["signal"] == 15, restart  # pkill's SIGTERM

    # Every other kill, each in a task of its own.
    problems = [problem for task_id, kill in KILLS.items() for problem in problems_of_killed(run, task_id, kill)]
    assert not problems, "\n".join(problems)

    # A container killed from outside is lost for a reason the agent cannot cause: still masked.
    lost = run.record(key(KILLED_FROM_OUTSIDE))
    assert lost["termination"] == "sandbox_lost" and lost["masked"] is True and lost["score"] is None, lost
    assert lost["restarts"] is None  # the guest is gone: it cannot say
    assert lost["durations"]["agent"] < 15  # the wait for the guest ended when the sandbox was found stopped

    outcomes = run.result.parseoutcomes()
    passed = sum(kill.score == 1.0 for kill in KILLS.values())
    expected = {"passed": passed, "failed": len(KILLS) - passed, "masked": 1}
    assert {name: outcomes.get(name) for name in expected} == expected, run.result.stdout.str()
    assert set(run.records()) == {key(task_id) for task_id in (*KILLS, KILLED_FROM_OUTSIDE)}
    containers = docker.from_env().containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={run.run_id}"})
    assert containers == []


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)
