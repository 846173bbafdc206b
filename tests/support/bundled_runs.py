"""The session's shared real runs of the bundled tasks (``tasks/``, the README's main job), which many
tests read instead of each starting its own: the oracle, and the null control gated against it."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer, RecordedRequest, Reply, Status, solution_answers
from tests.support.paths import REPO
from tests.support.shared_runs import RunSpec, SharedRun, shared_run

TASKS = REPO / "tasks"
EXAMPLES = TASKS / "examples.jsonl"
JUDGE = "judge"
# Reports the oracle run writes beside its run folder, for the report tests (paths in SharedRun.folder).
REPORTS = ("--junitxml=junit.xml", "--alluredir=allure", "--html=report.html", "--self-contained-html")


class YesJudge:
    """A local LLM judge that answers YES to every question, the preflight's and the tasks'."""

    def __init__(self, server: ModelServer) -> None:
        self.server = server
        self.args: tuple[str, ...] = ("--osworld-judge-url", server.openai_url, "--osworld-judge-model", JUDGE)

    def notes(self) -> dict[str, Any]:
        return {"judge_texts": [text for request in self.server.completions(JUDGE) for text in request.texts()]}


@contextmanager
def yes_judge() -> Iterator[YesJudge]:
    with ModelServer(models=[JUDGE]) as server:

        def yes(_request: RecordedRequest) -> Reply:
            return Reply("YES")

        server.respond_with(JUDGE, yes)
        yield YesJudge(server)


def oracle_run(root: Path) -> SharedRun:
    """The README's main job with a judge configured: every bundled task, v1 and V2, by its solution."""
    spec = RunSpec("oracle", TASKS, ("-n", "2", "-v", "--osworld-agent", "oracle", *REPORTS))
    return shared_run(root, spec, yes_judge)


def null_run(root: Path, oracle: SharedRun) -> SharedRun:
    """The null control over every bundled task, gated against the oracle run (a drop the gate fails)."""
    baseline = oracle.run_dir / "summary.json"
    args = ("-n", "2", "-v", "--osworld-agent", "null", "--osworld-baseline", str(baseline), "--osworld-max-drop", "2")
    return shared_run(root, RunSpec("null", TASKS, args), yes_judge)


def task_keys(path: Path) -> set[str]:
    """``<domain>/<id>`` of every task of a bundled JSONL file."""
    return {f"{task['domain']}/{task['id']}" for task in map(json.loads, path.read_text().splitlines())}


# --- bad actions: every bundled example task, played by a scripted model that first errs


BAD_ACTIONS = ("raise RuntimeError('bad')", "time.sleep(600)")
BAD_ACTION_TIMEOUT = 10.0  # proves the kill as the guest's 120 s does; room for a loaded guest to start python
EVAL_SETTLE = 20.0  # OSWorld's fixed wait before evaluation, which the same run proves harmless


class ScriptedModel:
    """A model that answers each task (told apart by its instruction) the bad actions, then its solution."""

    def __init__(self, server: ModelServer, tasks: Path) -> None:
        self.server = server
        self.args = server.agent_args()
        queues: dict[str, deque[Reply]] = {}
        for task in map(json.loads, tasks.read_text().splitlines()):
            first = [Reply(f"```python\n{action}\n```") for action in BAD_ACTIONS]
            queues[task["instruction"]] = deque([*first, *solution_answers(task["solution"])])
        lock = threading.Lock()

        def respond(request: RecordedRequest) -> Reply | Status:
            text = request.text()
            with lock:
                for instruction, queue in queues.items():
                    if instruction in text:
                        return queue.popleft() if queue else Reply("DONE")
            return Status(400, {"error": {"message": "no task's instruction in the prompt"}})

        server.respond_with("scripted", respond)

    def notes(self) -> dict[str, Any]:
        return {}


@contextmanager
def scripted_model() -> Iterator[ScriptedModel]:
    with ModelServer(models=["scripted"]) as server:
        yield ScriptedModel(server, EXAMPLES)


def bad_actions_run(root: Path) -> SharedRun:
    """Every bundled example task with bad first actions, a 10 s action limit and OSWorld's 20 s wait before
    evaluation (four workers: most of each episode is waiting, which costs no CPU)."""
    args = (
        "-n",
        "4",
        "-v",
        "--osworld-action-timeout",
        f"{BAD_ACTION_TIMEOUT:g}",
        "--osworld-eval-settle",
        f"{EVAL_SETTLE:g}",
    )
    return shared_run(root, RunSpec("bad-actions", EXAMPLES, args), scripted_model)
