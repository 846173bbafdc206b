"""OSWorld-V2 tasks run end to end: task files written here, real sandboxes of the desktop image, the
oracle and null runners, a real (scripted) judge endpoint; the records read back."""

from __future__ import annotations

import json
import os
import re
import secrets
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.episode.runs import Run, run_tasks, scripted_pyautogui
from tests.support.model_server import ModelServer, RecordedRequest, Reply, Status

pytestmark = pytest.mark.docker

HEAD = """
from desktop_env.task_base import BaseTask, MultiPhaseTask
from desktop_env.evaluators import getters

"""
JUDGE_IMPORT = "from desktop_env.evaluators.metrics import llm_metrics\n"

TASKS = {
    # The oracle writes a file from the guest; evaluate reads it back through a getter.
    "r1": """
class R1(BaseTask):
    id = "r1"
    instruction = "Write hello into ~/answer.txt"
    solution = ["open('/home/user/answer.txt', 'w').write('hello')", "DONE"]

    def setup(self, setup_controller, use_proxy=False):
        setup_controller.execute(["rm", "-f", "/home/user/answer.txt"], check=True)

    def evaluate(self, env):
        path = getters.get_vm_file(env, {"path": "/home/user/answer.txt", "dest": "answer.txt"})
        return 1.0 if path and open(path).read() == "hello" else 0.0
""",
    "r2": """
class R2(BaseTask):
    id = "r2"
    instruction = "Nothing to do"
    solution = ["DONE"]

    def evaluate(self, env):
        return {"score": 1.0, "checks": {"a": True, "steps": len(env.action_history)}}
""",
    "r3": """
class R3(BaseTask):
    id = "r3"
    instruction = "Never starts"
    solution = ["DONE"]

    def setup(self, setup_controller, use_proxy=False):
        raise RuntimeError("the fixture file is missing")

    def evaluate(self, env):
        return 1.0
""",
    "r4": """
class R4(BaseTask):
    id = "r4"
    instruction = "Ask which colour"
    user_simulator = {"type": "fixed", "response": "blue"}
    solution = [{"action_type": "CALL_USER", "parameters": {"question": "Which colour?"}}, "DONE"]

    def evaluate(self, env):
        history = env.user_simulator.get_history()
        return 1.0 if history == [{"question": "Which colour?", "answer": "blue"}] else 0.0
""",
    "r5": """
class R5(MultiPhaseTask):
    id = "r5"
    instruction = "two phases"

    def get_phases(self):
        return [
            {"instruction": "phase one", "gate": True, "evaluate": lambda env: 0.25, "solution": ["DONE"]},
            {"instruction": "phase two", "solution": ["DONE"]},
        ]

    def evaluate(self, env):
        return 1.0
""",
    "r6": """
class R6(BaseTask):
    id = "r6"
    instruction = "judged, the judge fails"
    solution = ["DONE"]

    def evaluate(self, env):
        try:
            return 1.0 if llm_metrics.compare_text_with_llm("FAIL-THIS", "ok?") == "YES" else 1.0
        except Exception:
            return 1.0  # upstream's tasks swallow judge errors: the mask still comes
""",
    "r7": """
class R7(BaseTask):
    id = "r7"
    instruction = "judged, the judge answers"
    solution = ["DONE"]

    def evaluate(self, env):
        return 1.0 if llm_metrics.compare_text_with_llm("a fine report", "Is it fine?") == "YES" else 0.0
""",
    # An LLM simulated user (its model and key from OSWORLD_USER_SIM_*).
    "r12": """
class R12(BaseTask):
    id = "r12"
    instruction = "Ask the user which colour"
    user_simulator = {"type": "llm", "knowledge": "The colour is blue."}
    solution = [{"action_type": "CALL_USER", "parameters": {"question": "Which colour?"}}, "DONE"]

    def evaluate(self, env):
        history = env.user_simulator.get_history()
        return 1.0 if history and "blue" in history[0]["answer"] else 0.0
""",
    # A judge call with a key the endpoint refuses (and echoes back in its error).
    "r13": """
class R13(BaseTask):
    id = "r13"
    instruction = "judged with the wrong key"
    solution = ["DONE"]

    def evaluate(self, env):
        try:
            llm_metrics.compare_text_with_llm("a report", "Fine?", options={"api_key_env": "WRONG_JUDGE_KEY"})
        except Exception:
            pass
        return 1.0
""",
    # The file raises while it is imported: masked before any sandbox starts.
    "r9": """
class R9(BaseTask):
    id = "r9"
    solution = ["DONE"]

    def evaluate(self, env):
        return 1.0

raise RuntimeError("broken at import")
""",
    "r8": """
class R8(MultiPhaseTask):
    id = "r8"
    instruction = "phases without intermediate evaluation"
    intermediate_eval_safe = False

    def get_phases(self):
        return [
            {"instruction": "phase one", "gate": True, "evaluate": lambda env: 0.0, "solution": ["DONE"]},
            {"instruction": "phase two", "solution": ["DONE"]},
        ]

    def evaluate(self, env):
        return 1.0
""",
}


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure means there is no engine to test against
        pytest.fail(f"no Docker engine answers ({exc}); start dockerd (.ci/setup does)", pytrace=False)
    for name in list(os.environ):
        if name.startswith(("OSWORLD_EVAL_MODEL_", "OSWORLD_USER_SIM_")) or name in (
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_RETRY_DELAY", "0")


@pytest.fixture
def judge_server() -> Iterator[ModelServer]:
    """The judge's endpoint: YES to every question, HTTP 500 to one that says FAIL-THIS."""
    with ModelServer(models=["judge"]) as server:
        server.respond_with("judge", _judge_answer)
        yield server


def _write(root: Path, ids: list[str]) -> Path:
    folder = root / "v2tasks"
    (folder / "task_class").mkdir(parents=True, exist_ok=True)
    for task_id in ids:
        head = HEAD + (JUDGE_IMPORT if "llm_metrics" in TASKS[task_id] else "")
        text = head + textwrap.dedent(TASKS[task_id]) + f"\nTASK_CLASS = {task_id.upper()}\n"
        (folder / "task_class" / f"task_{task_id}.py").write_text(text)
    split = folder / "test_v2.json"
    split.write_text(json.dumps({"tasks": ids}))
    return split


def _judge_answer(request: RecordedRequest) -> Any:
    return Status(500) if "FAIL-THIS" in request.text() else Reply("YES")


def _record(run: Run, task_id: str) -> dict[str, Any]:
    return run.record(f"v2/{task_id}")


def test_v2_tasks_run_with_their_setup_evaluation_user_phases_and_judge(
    pytester: pytest.Pytester, judge_server: ModelServer
) -> None:
    split = _write(pytester.path, ["r1", "r2", "r3", "r4", "r5", "r6", "r7", "r9", "r8"])
    judge = ("--osworld-judge-url", judge_server.openai_url, "--osworld-judge-model", "judge")
    run = run_tasks(pytester, split, "--osworld-agent", "oracle", *judge, "-n", "2")
    outcomes = run.result.parseoutcomes()
    assert outcomes.get("passed") == 6 and outcomes.get("masked") == 3, run.result.stdout.str()

    r1 = _record(run, "r1")
    assert r1["score"] == 1.0 and r1["termination"] == "done" and r1["domain"] == "v2" and r1["steps"] == 2
    [step] = r1["setup_steps"]  # setup_controller.execute(), recorded as a setup step
    assert (step["phase"], step["type"], step["ok"], step["note"]) == ("setup()", "execute", True, "exit 0")
    r2 = _record(run, "r2")
    assert r2["score"] == 1.0 and r2["evaluation"] == {"score": 1.0, "checks": {"a": True, "steps": 1}}

    r3 = _record(run, "r3")
    assert r3["termination"] == "setup_error" and r3["score"] is None and r3["steps"] == 0
    assert "setup() raised RuntimeError: the fixture file is missing" in r3["message"]

    r4 = _record(run, "r4")
    assert r4["score"] == 1.0
    trajectory = [json.loads(line) for line in (run.run_dir / "v2" / "r4" / "traj.jsonl").read_text().splitlines()]
    assert trajectory[0]["action"] == {"action_type": "ASK_USER", "question": "Which colour?", "answer": "blue"}

    r5 = _record(run, "r5")
    assert r5["score"] == 1.0 and r5["steps"] == 1  # the gate stopped it after phase one
    [phase] = r5["phase_results"]
    assert phase["phase"] == 1 and phase["score"] == 0.25 and phase["gate"].startswith("stopped: score 0.25 < 1")

    r6 = _record(run, "r6")
    assert r6["termination"] == "judge_error" and r6["score"] is None, r6
    assert "HTTP 500" in r6["message"] and r6["judge"]["failed"] == 1

    r7 = _record(run, "r7")
    assert r7["score"] == 1.0 and r7["judge"]["calls"] == 1 and r7["judge"]["failed"] == 0

    r8 = _record(run, "r8")
    assert r8["score"] == 1.0 and [p["phase"] for p in r8["phase_results"]] == [1, 2]
    assert r8["phase_results"][0]["gate"].startswith("not checked") and r8["phase_results"][0]["score"] is None
    r9 = _record(run, "r9")
    assert r9["termination"] == "setup_error" and r9["sandbox"] == {} and r9["steps"] == 0
    assert re.search(
        r"task_r9\.py:\d+: task r9: importing the task file failed: RuntimeError: broken at import", r9["message"]
    )
    run.result.stdout.fnmatch_lines(["*MASKED v2/r3: masked (setup_error)*", "*MASKED v2/r6: masked (judge_error)*"])


def test_the_null_runner_scores_zero_and_the_oracle_skips_a_task_without_a_solution(pytester: pytest.Pytester) -> None:
    split = _write(pytester.path, ["r1"])
    run = run_tasks(pytester, split, "--osworld-agent", "null")
    assert run.result.parseoutcomes().get("failed") == 1, run.result.stdout.str()
    record = _record(run, "r1")
    assert record["score"] == 0.0 and record["termination"] != "setup_error"
    bare = pytester.path / "v2tasks" / "task_class" / "task_r1.py"
    bare.write_text(bare.read_text().replace('    solution = ["open', '    unused = ["open'))
    run = run_tasks(pytester, split, "--osworld-agent", "oracle", "-rs")
    assert run.result.parseoutcomes().get("skipped") == 1
    run.result.stdout.fnmatch_lines(["SKIPPED*task_r1.py: oracle runner: task has no reference solution*"])


def test_a_model_asks_the_user_and_sees_the_answer_in_its_next_prompt(pytester: pytest.Pytester) -> None:
    split = _write(pytester.path, ["r4"])
    with ModelServer(models=["scripted"]) as agent:
        agent.script("scripted", Reply("CALL_USER: Which colour?"), Reply("DONE"))
        run = run_tasks(pytester, split, *scripted_pyautogui(agent))
        assert run.result.parseoutcomes().get("passed") == 1, run.result.stdout.str()
        first, second = agent.completions()
        assert "The user answered" not in first.text()
        assert "answer with CALL_USER: your question" in first.text()  # the prompt says how to ask
        assert "You asked the user: Which colour?\nThe user answered: blue" in second.text()
    record = _record(run, "r4")
    assert record["score"] == 1.0 and record["steps"] == 2


def test_a_computer_13_model_asks_the_user_and_a_task_without_one_is_not_told_how(pytester: pytest.Pytester) -> None:
    split = _write(pytester.path, ["r4", "r2"])
    computer_13 = ("--osworld-agent", "computer_13")
    ask = '```json\n{"action_type": "CALL_USER", "parameters": {"question": "Which colour?"}}\n```'
    with ModelServer(models=["scripted"]) as agent:
        agent.script("scripted", Reply(ask), Reply("DONE"))
        model = ("--osworld-model-url", agent.openai_url, "--osworld-model", "scripted")
        run = run_tasks(pytester, split, *computer_13, *model, "-k", "r4")
        assert run.result.parseoutcomes().get("passed") == 1, run.result.stdout.str()
        first, second = agent.completions()
        assert '{"action_type": "CALL_USER", "parameters": {"question": "your question"}}' in first.text()
        assert "You asked the user: Which colour?\nThe user answered: blue" in second.text()
        agent.script("scripted", Reply("DONE"))
        run_tasks(pytester, split, *computer_13, *model, "-k", "r2")
        assert "CALL_USER" not in agent.completions()[-1].text()
    assert _record(run, "r4")["score"] == 1.0


def test_allure_labels_v2_tasks_and_a_resume_reruns_only_what_has_no_valid_record(pytester: pytest.Pytester) -> None:
    split = _write(pytester.path, ["r1", "r2", "r3"])
    allure = pytester.path / "allure"
    run = run_tasks(pytester, split, "--osworld-agent", "oracle", "--alluredir", str(allure))
    outcomes = run.result.parseoutcomes()
    assert outcomes.get("passed") == 2 and outcomes.get("masked") == 1, run.result.stdout.str()
    labels: dict[str, dict[str, list[str]]] = {}
    for path in allure.glob("*-result.json"):
        result = json.loads(path.read_text())
        found: dict[str, list[str]] = {}
        for label in result["labels"]:
            found.setdefault(label["name"], []).append(label["value"])
        labels[found["task_id"][0]] = found
    assert sorted(labels) == ["r1", "r2", "r3"]
    assert labels["r1"]["feature"] == ["v2"] and labels["r1"]["parentSuite"] == [f"osworld run {run.run_id}"]
    first_r1 = (run.run_dir / "v2" / "r1" / "result.json").read_text()
    manifest = (run.run_dir / "manifest.json").read_text()

    # The masked r3 runs again (it now passes); r1 and r2 keep their records and do not start.
    task_file = pytester.path / "v2tasks" / "task_class" / "task_r3.py"
    task_file.write_text(task_file.read_text().replace('raise RuntimeError("the fixture file is missing")', "pass"))
    resumed = run_tasks(pytester, split, "--osworld-agent", "oracle", "--osworld-resume", str(run.run_dir), run_id=None)
    # r3's file changed: its earlier record is not of the same task.
    assert resumed.result.ret == pytest.ExitCode.USAGE_ERROR
    resumed.result.stderr.fnmatch_lines(["*V2 task file(s) changed since that run: task_r3.py*"])
    assert (run.run_dir / "manifest.json").read_text() == manifest  # a refused resume leaves the run as it was

    task_file.write_text(
        task_file.read_text().replace("        pass\n", '        raise RuntimeError("the fixture file is missing")\n')
    )
    resumed = run_tasks(pytester, split, "--osworld-agent", "oracle", "--osworld-resume", str(run.run_dir), run_id=None)
    assert resumed.result.parseoutcomes() == {"masked": 1, "deselected": 2}, resumed.result.stderr.str()
    assert (run.run_dir / "v2" / "r1" / "result.json").read_text() == first_r1
    summary = json.loads((run.run_dir / "summary.json").read_text())
    assert summary["integrity"]["resumed"] == ["v2/r1", "v2/r2"], summary["integrity"]


def test_judge_and_user_keys_reach_their_endpoints_and_never_a_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge_key, user_key, wrong_key = (f"sk-{who}-{secrets.token_hex(8)}" for who in ("judge", "user", "wrong"))
    split = _write(pytester.path, ["r7", "r12", "r13"])
    with (
        ModelServer(models=["judge"], api_key=judge_key, echo_key=True) as judge_endpoint,
        ModelServer(models=["usersim"], api_key=user_key, echo_key=True) as user_endpoint,
    ):
        judge_endpoint.respond_with("judge", lambda _request: Reply("YES"))
        user_endpoint.respond_with("usersim", lambda _request: Reply("It is blue."))
        monkeypatch.setenv("OSWORLD_EVAL_MODEL_API_KEY", judge_key)
        monkeypatch.setenv("WRONG_JUDGE_KEY", wrong_key)
        monkeypatch.setenv("OSWORLD_USER_SIM_BASE_URL", user_endpoint.openai_url)
        monkeypatch.setenv("OSWORLD_USER_SIM_MODEL", "usersim")
        monkeypatch.setenv("OSWORLD_USER_SIM_API_KEY", user_key)
        reports = (
            "--alluredir",
            str(pytester.path / "allure"),
            "--junitxml",
            str(pytester.path / "junit.xml"),
            "--html",
            str(pytester.path / "report.html"),
            "--self-contained-html",
            "--osworld-keep-model-io",
        )
        judge = ("--osworld-judge-url", judge_endpoint.openai_url, "--osworld-judge-model", "judge")
        run = run_tasks(pytester, split, "--osworld-agent", "oracle", *judge, *reports, "-n", "2")
        # The keys did their work: the judge and the user answered; the wrong key was refused.
        outcomes = run.result.parseoutcomes()
        assert outcomes.get("passed") == 2 and outcomes.get("masked") == 1, run.result.stdout.str()
        assert _record(run, "r13")["termination"] == "judge_error"
        assert "invalid api key" in _record(run, "r13")["message"]
        assert user_endpoint.completions() and judge_endpoint.completions()
    written = [p for p in pytester.path.rglob("*") if p.is_file() and p.suffix != ".py"]
    assert any(p.name == "report.html" for p in written) and any(p.parent.name == "allure" for p in written)
    for key in (judge_key, user_key, wrong_key):
        assert key not in run.result.stdout.str() + run.result.stderr.str()
        leaked = [str(p.relative_to(pytester.path)) for p in written if key.encode() in p.read_bytes()]
        assert leaked == [], (key[:9], leaked)
