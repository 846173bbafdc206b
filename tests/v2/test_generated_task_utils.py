"""``evaluation_examples.task_class.generated_task_utils``: the v1 scoring helpers V2 tasks import.

Scores over the project's real getters and metrics, against a real HTTP server speaking the guest's
``/file`` and ``/execute`` protocol; a task file importing the module loads against the project's API;
and two tasks run end to end in real sandboxes of the desktop image.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import docker
import pytest

from pytest_osworld.errors import EvaluatorError
from pytest_osworld.evaluation.getters.file import CacheFileMissing
from pytest_osworld.guest.client import GuestClient, GuestUnreachable
from pytest_osworld.settings import Settings
from pytest_osworld.setup.assets import AssetCache
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.v2.api import scoring as utils
from pytest_osworld.v2.api.env import TaskEnv
from pytest_osworld.v2.api.loader import ApiMode, load_task
from pytest_osworld.v2.api.scoring import (
    aggregate_scores,
    call_metric,
    evaluate_infeasible_task,
    evaluate_metric,
    evaluate_metric_list,
    get_evaluator_state,
    run_postconfig,
)
from pytest_osworld.v2.api.setup_controller import SetupController
from pytest_osworld.v2.upstream.evaluation_examples.task_class import generated_task_utils as upstream_utils
from tests.episode.runs import run_tasks
from tests.support.loopback import loopback_http

# --- aggregate_scores and call_metric -----------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "conj", "expected"),
    [([1.0, 0.0, 0.5], "and", 0.5), ([1.0, 0.0, 0.5], "avg", 0.5), ([0.25, 0.75], "or", 0.75),
     ([0.75, 0.5], "sum", 1.0), ([0.25, 0.5], "sum", 0.75), ([0.2, 0.4], "anything", pytest.approx(0.3)),
     ([], "and", 0.0), ([], "or", 0.0), ([-0.5, 1.0], "and", 0.25)],
)  # fmt: skip
def test_aggregate_scores_follows_upstreams_conjunctions(scores: list[float], conj: str, expected: float) -> None:
    # "and" is the mean of what was scored, not the minimum: the short-circuit stops at a 0 before it.
    assert aggregate_scores(iter(scores), conj=conj) == expected


def test_call_metric_runs_the_projects_metrics_with_and_without_an_expected_value(tmp_path: Path) -> None:
    assert call_metric("exact_match", "abc", expected_state={"expected": "abc"}) == 1.0
    assert call_metric("exact_match", "abd", expected_state={"expected": "abc"}) == 0.0
    # No expected value: the metric gets the result and the options only.
    rules = {"include": ["hello"], "exclude": ["bye"]}
    assert call_metric("check_include_exclude", "hello world", options={"rules": rules}) == 1.0
    assert call_metric("check_include_exclude", "hello, bye", options={"rules": rules}) == 0.0
    ours, theirs, other = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    ours.write_text("line one\nline two\n")
    theirs.write_text("line one\nline two\n")
    other.write_text("something else\n")
    assert call_metric("compare_text_file", str(ours), expected_state=str(theirs)) == 1.0
    assert call_metric("compare_text_file", str(ours), expected_state=str(other)) == 0.0
    score = call_metric("literal_match", 1, expected_state="1")
    assert type(score) is float and score == 1.0


def test_call_metric_raises_for_a_metric_the_project_lacks_and_passes_a_metrics_own_error_on() -> None:
    with pytest.raises(EvaluatorError, match="metric 'no_such_metric' is not implemented here"):
        call_metric("no_such_metric", "x")
    # Names of the module that are not metrics are not metrics.
    for name in ("__getattr__", "annotations", "Any"):
        with pytest.raises(EvaluatorError, match="is not implemented here"):
            call_metric(name, "x")
    with pytest.raises(TypeError):
        call_metric("exact_match", "abc", expected_state="not a rules object")


# --- the helpers over a real env ----------------------------------------------------------------


@dataclass
class _Guest:
    """What the guest server holds and what it was asked."""

    files: dict[str, bytes] = field(default_factory=dict)
    commands: list[list[str]] = field(default_factory=list)


class _GuestHandler(BaseHTTPRequestHandler):
    """The guest's ``/file`` (404 for a missing file) and ``/execute``: ``echo`` prints its arguments,
    ``cat`` a held file, ``false`` exits 1, any other command exits 0 silently."""

    guest = _Guest()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/file":
            path = parse_qs(body.decode())["file_path"][0]
            content = self.guest.files.get(path)
            if content is None:
                self._send(404, json.dumps({"status": "error", "message": "File not found"}).encode())
            else:
                self._send(200, content, "application/octet-stream")
            return
        if self.path == "/execute":
            command = json.loads(body)["command"]
            argv = shlex.split(command) if isinstance(command, str) else list(command)
            self.guest.commands.append(argv)
            output, returncode = "", 0
            if argv[0] == "echo":
                output = " ".join(argv[1:]) + "\n"
            elif argv[0] == "cat":
                output = self.guest.files.get(argv[1], b"").decode()
            elif argv[0] == "false":
                returncode = 1
            answer = {"status": "success", "output": output, "error": "", "returncode": returncode}
            self._send(200, json.dumps(answer).encode())
            return
        self._send(404, b"{}")


@pytest.fixture
def guest() -> Iterator[tuple[str, _Guest]]:
    state = _Guest(files={"/home/user/answer.txt": b"hello\n"})
    _GuestHandler.guest = state
    with loopback_http(_GuestHandler) as url:
        yield url, state


def _env(url: str, tmp_path: Path) -> TaskEnv:
    settings = Settings(asset_cache=tmp_path / "assets")
    context = TaskContext(
        guest=GuestClient(url, retry_budget=0.0),
        url=lambda port: url,
        settings=settings,
        assets=AssetCache.from_settings(settings),
        cache_dir=tmp_path / "cache",
    )
    return TaskEnv(context=context, setup_controller=SetupController(context), task_id="u1")


@pytest.fixture
def env(guest: tuple[str, _Guest], tmp_path: Path) -> TaskEnv:
    return _env(guest[0], tmp_path)


ANSWER: dict[str, Any] = {"type": "vm_command_line", "command": ["cat", "/home/user/answer.txt"]}
HELLO: dict[str, Any] = {"type": "rule", "rules": {"expected": "hello\n"}}
MISSING: dict[str, Any] = {"type": "vlc_config", "dest": "vlcrc"}  # its file is not in the guest: FileNotFoundError


def test_a_metric_scores_over_the_getters(env: TaskEnv) -> None:
    assert get_evaluator_state(env, ANSWER) == "hello\n"
    assert evaluate_metric(env, metric_name="exact_match", result_spec=ANSWER, expected_spec=HELLO) == 1.0
    wrong = {"type": "rule", "rules": {"expected": "bye\n"}}
    assert evaluate_metric(env, metric_name="exact_match", result_spec=ANSWER, expected_spec=wrong) == 0.0
    rules = {"rules": {"include": ["hell"], "exclude": []}}
    assert evaluate_metric(env, metric_name="check_include_exclude", result_spec=ANSWER, options=rules) == 1.0


@pytest.mark.parametrize("fail", ["FAIL", {"action_type": "FAIL"}])
def test_a_last_action_fail_scores_zero_and_makes_an_infeasible_task_pass(env: TaskEnv, fail: Any) -> None:
    good: dict[str, Any] = {"metric_name": "exact_match", "result_spec": ANSWER, "expected_spec": HELLO}
    env.action_history.extend(["pyautogui.click(1, 1)", fail])
    assert evaluate_metric(env, **good) == 0.0
    assert evaluate_metric_list(env, metric_names=["exact_match"], result_specs=[ANSWER], expected_specs=[HELLO]) == 0.0
    assert evaluate_infeasible_task(env) == 1.0
    # A FAIL that is not the last action counts for nothing.
    env.action_history.append("DONE")
    assert evaluate_metric(env, **good) == 1.0
    assert evaluate_infeasible_task(env) == 0.0
    env.action_history.clear()
    assert evaluate_infeasible_task(env) == 0.0


def test_postconfig_runs_first_and_marks_the_environment_used(env: TaskEnv, guest: tuple[str, _Guest]) -> None:
    _, state = guest
    env.is_environment_used = False
    run_postconfig(env, [])
    assert env.is_environment_used is False and state.commands == []  # nothing to run, nothing marked
    postconfig = [{"type": "execute", "parameters": {"command": ["echo", "saved"]}}]
    score = evaluate_metric(
        env, metric_name="exact_match", result_spec=ANSWER, expected_spec=HELLO, postconfig=postconfig
    )
    assert score == 1.0 and env.is_environment_used is True
    assert state.commands == [["echo", "saved"], ["cat", "/home/user/answer.txt"]]  # postconfig, then the getter
    [step] = env.context.steps
    assert (step.type, step.ok) == ("execute", True)
    # Postconfig runs before the FAIL rule, as upstream's.
    env.action_history.append("FAIL")
    assert evaluate_infeasible_task(env, postconfig=postconfig) == 1.0
    assert state.commands[-1] == ["echo", "saved"]


def test_a_failing_postconfig_step_scores_zero_only_when_it_says_so(env: TaskEnv) -> None:
    zero = [{"type": "execute", "parameters": {"command": ["false"]}, "on_nonzero": "score_zero"}]
    good: dict[str, Any] = {"metric_name": "exact_match", "result_spec": ANSWER, "expected_spec": HELLO}
    assert evaluate_metric(env, **good, postconfig=zero) == 0.0
    assert evaluate_infeasible_task(env, postconfig=zero) == 0.0
    masked = [{"type": "execute", "parameters": {"command": ["false"]}, "on_nonzero": "mask"}]
    with pytest.raises(SetupError, match="exited with status 1"):
        evaluate_metric(env, **good, postconfig=masked)


def test_getter_and_metric_failures_score_as_upstreams(env: TaskEnv) -> None:
    # A missing result file scores 0; another failure of the result getter is raised.
    assert evaluate_metric(env, metric_name="exact_match", result_spec=MISSING, expected_spec=HELLO) == 0.0
    with pytest.raises(CacheFileMissing):
        evaluate_metric(env, metric_name="exact_match", result_spec={"type": "cache_file", "path": "never.txt"})
    # A failing expected getter, or a metric that raises, scores 0.
    never = {"type": "cache_file", "path": "never.txt"}
    assert evaluate_metric(env, metric_name="exact_match", result_spec=ANSWER, expected_spec=never) == 0.0
    broken = {"type": "rule", "rules": "not a rules object"}
    assert evaluate_metric(env, metric_name="exact_match", result_spec=ANSWER, expected_spec=broken) == 0.0
    # No result spec: the metric gets None.
    assert evaluate_metric(env, metric_name="check_include_exclude", options={"rules": {"include": []}}) == 0.0


def test_faults_of_the_run_are_raised_never_scored(env: TaskEnv, tmp_path: Path) -> None:
    with pytest.raises(EvaluatorError, match="metric 'no_such_metric' is not implemented here"):
        evaluate_metric(env, metric_name="no_such_metric", result_spec=ANSWER)
    with pytest.raises(EvaluatorError, match="getter 'no_such_getter' is not implemented here"):
        evaluate_metric(env, metric_name="exact_match", result_spec=ANSWER, expected_spec={"type": "no_such_getter"})
    gone = _env("http://127.0.0.1:9", tmp_path / "gone")  # nothing listens there: the sandbox is lost
    with pytest.raises(GuestUnreachable):
        evaluate_metric(gone, metric_name="exact_match", result_spec=HELLO, expected_spec=ANSWER)


def test_a_metric_list_short_circuits_and_aggregates(env: TaskEnv, guest: tuple[str, _Guest]) -> None:
    _, state = guest
    yes: dict[str, Any] = {"type": "vm_command_line", "command": ["echo", "yes"]}
    yes_rule = {"type": "rule", "rules": {"expected": "yes\n"}}
    no_rule = {"type": "rule", "rules": {"expected": "no\n"}}
    names = ["exact_match", "exact_match", "exact_match"]

    def run(expected: list[Any], **kw: Any) -> float:
        state.commands.clear()
        return evaluate_metric_list(env, metric_names=names, result_specs=[yes] * 3, expected_specs=expected, **kw)

    assert run([yes_rule, yes_rule, yes_rule]) == 1.0
    assert run([yes_rule, no_rule, yes_rule]) == 0.0 and len(state.commands) == 2  # stopped at the first 0
    assert run([yes_rule, no_rule, yes_rule], short_circuit=False) == pytest.approx(2 / 3)
    assert run([no_rule, yes_rule, no_rule], conj="or") == 1.0 and len(state.commands) == 2  # stopped at the first 1
    assert run([no_rule, no_rule, no_rule], conj="or") == 0.0
    assert run([yes_rule, no_rule, yes_rule], conj="sum", short_circuit=False) == 1.0
    # A missing result file: "and" stops at once, otherwise it counts 0.
    mixed = [MISSING, yes, yes]
    assert evaluate_metric_list(env, metric_names=names, result_specs=mixed, expected_specs=[yes_rule] * 3) == 0.0
    assert (
        evaluate_metric_list(env, metric_names=names, result_specs=mixed, expected_specs=[yes_rule] * 3, conj="or")
        == 1.0
    )
    assert evaluate_metric_list(
        env, metric_names=names, result_specs=mixed, expected_specs=[yes_rule] * 3, short_circuit=False
    ) == pytest.approx(2 / 3)
    # Options per metric; no expected specs at all.
    include = [{"rules": {"include": ["yes"]}}, {"rules": {"include": ["no"]}}]
    assert (
        evaluate_metric_list(
            env, metric_names=["check_include_exclude"] * 2, result_specs=[yes, yes], options_list=include, conj="or"
        )
        == 1.0
    )
    # The lists are walked as far as the shortest goes.
    assert evaluate_metric_list(env, metric_names=names, result_specs=[yes], expected_specs=[yes_rule, no_rule]) == 1.0


# --- a task file that imports the module --------------------------------------------------------

TASK_FILE = """
from desktop_env.task_base import BaseTask
from evaluation_examples.task_class.generated_task_utils import evaluate_metric, aggregate_scores

class TaskU1(BaseTask):
    id = "u1"
    instruction = "Write hello into ~/answer.txt"

    def evaluate(self, env):
        score = evaluate_metric(
            env,
            metric_name="exact_match",
            result_spec={"type": "vm_command_line", "command": ["cat", "/home/user/answer.txt"]},
            expected_spec={"type": "rule", "rules": {"expected": "hello\\n"}},
        )
        return aggregate_scores([score, 1.0], conj="and")

TASK_CLASS = TaskU1
"""


def test_a_task_file_importing_the_module_loads_against_the_projects_api(tmp_path: Path, env: TaskEnv) -> None:
    path = tmp_path / "task_u1.py"
    path.write_text(TASK_FILE)
    with ApiMode().api(loading=True):
        _, task = load_task(path, "u1")
        loaded = sys.modules["evaluation_examples.task_class.generated_task_utils"]
        assert loaded is upstream_utils and loaded.evaluate_metric is utils.evaluate_metric
    assert not any(n == "evaluation_examples" or n.startswith("evaluation_examples.") for n in sys.modules)
    with ApiMode().api():
        assert task.evaluate(env) == 1.0
        env.action_history.append("FAIL")
        assert task.evaluate(env) == 0.5  # the FAIL zeroes the metric; the task averages it with its 1.0


# --- end to end, in real sandboxes ---------------------------------------------------------------

E2E_HEAD = """
from desktop_env.task_base import BaseTask
from evaluation_examples.task_class.generated_task_utils import (
    aggregate_scores, evaluate_infeasible_task, evaluate_metric, evaluate_metric_list,
)

POST = {"type": "vm_command_line", "command": ["cat", "/home/user/post.txt"]}
AFTER = {"type": "rule", "rules": {"expected": "after\\n"}}
ANSWER = {"type": "vm_command_line", "command": ["cat", "/home/user/answer.txt"]}
HELLO = {"type": "rule", "rules": {"expected": "hello"}}
"""
E2E_TASKS = {
    # The oracle writes the answer; the postconfig writes a second file that only it can have written.
    "g1": """
class G1(BaseTask):
    id = "g1"
    instruction = "Write hello into ~/answer.txt"
    solution = ["open('/home/user/answer.txt', 'w').write('hello')", "DONE"]

    def setup(self, setup_controller, use_proxy=False):
        setup_controller.execute(["rm", "-f", "/home/user/answer.txt", "/home/user/post.txt"], check=True)

    def evaluate(self, env):
        before = evaluate_metric(env, metric_name="exact_match", result_spec=POST, expected_spec=AFTER)
        postconfig = [{"type": "execute", "parameters": {"command": ["bash", "-c", "echo after > /home/user/post.txt"]}}]
        score = evaluate_metric_list(
            env, metric_names=["exact_match", "exact_match"], result_specs=[POST, ANSWER],
            expected_specs=[AFTER, HELLO], postconfig=postconfig,
        )
        zeroed = evaluate_metric(
            env, metric_name="exact_match", result_spec=POST, expected_spec=AFTER,
            postconfig=[{"type": "execute", "parameters": {"command": ["false"]}, "on_nonzero": "score_zero"}],
        )
        return {"score": aggregate_scores([score]), "before": before, "zeroed": zeroed}
""",
    # The agent gives up: the same kind of check scores 0, and an infeasible reading of it 1.
    "g2": """
class G2(BaseTask):
    id = "g2"
    instruction = "Give up"
    solution = ["FAIL"]

    def evaluate(self, env):
        ok = {"type": "vm_command_line", "command": ["echo", "ok"]}
        score = evaluate_metric(
            env, metric_name="exact_match", result_spec=ok, expected_spec={"type": "rule", "rules": {"expected": "ok\\n"}}
        )
        return {"score": score, "infeasible": evaluate_infeasible_task(env), "last": env.action_history[-1]}
""",
}


def _write_tasks(root: Path) -> Path:
    folder = root / "v2tasks"
    (folder / "task_class").mkdir(parents=True, exist_ok=True)
    for task_id, body in E2E_TASKS.items():
        text = E2E_HEAD + textwrap.dedent(body) + f"\nTASK_CLASS = {task_id.upper()}\n"
        (folder / "task_class" / f"task_{task_id}.py").write_text(text)
    split = folder / "test_v2.json"
    split.write_text(json.dumps({"tasks": list(E2E_TASKS)}))
    return split


@pytest.mark.docker
def test_tasks_using_the_module_run_end_to_end(pytester: pytest.Pytester) -> None:
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure means there is no engine to test against
        pytest.fail(f"no Docker engine answers ({exc}); start dockerd (.ci/setup does)", pytrace=False)
    split = _write_tasks(pytester.path)
    run = run_tasks(pytester, split, "--osworld-agent", "oracle", "-n", "2")
    outcomes = run.result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("failed") == 1, run.result.stdout.str()

    g1 = run.record("v2/g1")
    assert g1["score"] == 1.0 and g1["termination"] == "done", g1
    assert g1["evaluation"] == {"score": 1.0, "before": 0.0, "zeroed": 0.0}
    # setup()'s command, the postconfig's step, then the failing step that scored 0.
    steps = [(s["type"], s["ok"]) for s in g1["setup_steps"]]
    assert steps == [("execute", True), ("execute", True), ("execute", False)], g1["setup_steps"]

    g2 = run.record("v2/g2")
    assert g2["score"] == 0.0 and g2["termination"] == "fail", g2
    assert g2["evaluation"] == {"score": 0.0, "infeasible": 1.0, "last": "FAIL"}
