"""The OSWorld-V2 task API (the project's ``desktop_env``), its loader in both modes, and the website
helpers against a real HTTP server speaking the mock websites' state protocol."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy
import pytest

from pytest_osworld.agents.base import Action
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.parsing import parse_pyautogui_answer
from pytest_osworld.agents.pyautogui_runner import code_actions
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.v2.api.loader import (
    ApiMode,
    TaskLoadError,
    checkout_environment,
    load_task,
    module_name,
)
from pytest_osworld.v2.api.state import RuntimeUnavailable, TaskRuntime, active
from pytest_osworld.v2.api.task_base import BaseTask, MultiPhaseTask
from pytest_osworld.v2.episode import Phase, score_of
from pytest_osworld.v2.llm.judge import Judge
from pytest_osworld.v2.llm.settings import JudgeLayer, JudgeSettings
from tests.support.loopback import loopback_http
from tests.support.model_server import ModelServer, Reply, Status

# --- BaseTask -----------------------------------------------------------------------------------


class _Sample(BaseTask):
    id = "s1"
    instruction = "do it"
    related_apps = ["chrome"]  # noqa: RUF012 - a task's class attribute, as upstream's tasks write it


def test_a_task_is_a_dict_of_its_fields_with_defaults_and_attribute_access() -> None:
    task = _Sample()
    assert task["id"] == "s1" and task.instruction == "do it"
    assert task["platform"] == "linux" and task["intermediate_eval_safe"] is True and task["user_simulator"] is None
    task["instruction"] = "changed"
    assert task.instruction == "changed"
    task.related_apps.append("gimp")
    assert _Sample.related_apps == ["chrome"]  # the instance holds a deep copy
    task.proxy = True
    assert task["proxy"] is True
    assert set(task) == {
        "id", "snapshot", "instruction", "source", "config", "trajectory", "related_apps", "evaluator", "proxy",
        "image", "instance_type", "volume_size", "platform", "user_simulator", "disable_vnc", "disable_recording",
        "intermediate_eval_safe",
    }  # fmt: skip


def test_a_multi_phase_task_gives_its_phases() -> None:
    class Two(MultiPhaseTask):
        instruction = "first"

        def get_phases(self) -> list[dict[str, Any]]:
            return [{"instruction": "a"}, {"instruction": "b", "gate": True, "gate_min_score": 0.5}]

    phases = [Phase.from_dict(p, n, "x") for n, p in enumerate(Two().get_phases(), 1)]
    assert [p.instruction for p in phases] == ["a", "b"]
    assert phases[1].gate and phases[1].gate_min_score == 0.5 and not phases[0].gate
    assert MultiPhaseTask().get_phases() == [{"instruction": ""}]
    with pytest.raises(ValueError, match=r"get_phases\(\)\[0\]"):
        Phase.from_dict({"gate": True}, 1, "x")


@pytest.mark.parametrize(
    ("value", "score"),
    [(1, 1.0), (0.25, 0.25), (True, 1.0), ({"score": 0.5, "why": "half"}, 0.5), ({"why": "none"}, 0.0),
     ({"score": "high"}, 0.0), (None, 0.0), ("1.0", 0.0), (float("nan"), 0.0), (numpy.int64(1), 1.0),
     ({"score": numpy.float32(0.5)}, 0.5)],
)  # fmt: skip
def test_the_score_of_what_evaluate_returns(value: Any, score: float) -> None:
    got, payload = score_of(value)
    assert got == score
    assert payload == (value if isinstance(value, dict) else None)


# --- loading ------------------------------------------------------------------------------------

TASK_FILE = """
from desktop_env.task_base import BaseTask
from desktop_env.evaluators import getters, metrics
from desktop_env.evaluators.metrics.llm_metrics import compare_text_with_llm
from desktop_env.file_source import asset

ASSET = asset("task_{id}/data.csv")

class Task{id}(BaseTask):
    id = "{id}"
    instruction = "Read " + ASSET
    solution = ["DONE"]

    def evaluate(self, env):
        return 1.0

TASK_CLASS = Task{id}
"""


def _write(folder: Path, task_id: str, text: str) -> Path:
    path = folder / f"task_{task_id}.py"
    path.write_text(text)
    return path


def test_a_task_file_loads_against_the_projects_api_only_while_loading(tmp_path: Path) -> None:
    path = _write(tmp_path, "a1", TASK_FILE.replace("{id}", "a1"))
    runtime = TaskRuntime("a1", file_base="https://files.example/v2")
    with active(runtime), ApiMode().api(loading=True):
        module, task = load_task(path, "a1")
        assert sys.modules["desktop_env.task_base"].__name__ == "pytest_osworld.v2.upstream.desktop_env.task_base"
    assert module.__name__ == module_name("a1") == "osworld_task_task_a1"
    assert type(task).__name__ == "Taska1" and isinstance(task, BaseTask)
    assert task["instruction"] == "Read https://files.example/v2/task_a1/data.csv"
    assert not any(name == "desktop_env" or name.startswith("desktop_env.") for name in sys.modules)
    with pytest.raises(ImportError):
        __import__("desktop_env")


def test_the_loader_order_get_task_first_then_task_class_then_the_first_subclass(tmp_path: Path) -> None:
    head = "from desktop_env.task_base import BaseTask\n"
    classes = "class One(BaseTask):\n    id = 'one'\n\nclass Two(BaseTask):\n    id = 'two'\n"
    cases = {
        "g1": head + classes + "TASK_CLASS = One\ndef get_task():\n    return Two()\n",
        "g2": head + classes + "Task = Two\nTASK_CLASS = One\n",
        "g3": head + classes + "Task = Two\n",
        "g4": head + classes,
    }
    expected = {"g1": "two", "g2": "one", "g3": "two", "g4": "one"}
    for task_id, text in cases.items():
        with ApiMode().api(loading=True):
            _, task = load_task(_write(tmp_path, task_id, text), task_id)
        assert task["id"] == expected[task_id], task_id


def test_a_file_that_fails_to_import_is_named_with_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "b1", "from desktop_env.task_base import BaseTask\n\nraise RuntimeError('boom')\n")
    with (
        ApiMode().api(loading=True),
        pytest.raises(TaskLoadError, match=r"task_b1.py:3: task b1: .*RuntimeError: boom"),
    ):
        load_task(path, "b1")
    assert module_name("b1") not in sys.modules
    empty = _write(tmp_path, "b2", "X = 1\n")
    with ApiMode().api(loading=True), pytest.raises(TaskLoadError, match="no task found"):
        load_task(empty, "b2")


FAKE_DESKTOP_ENV = """
import os
SEEN = {"suffix": os.environ["WEBSITE_HOST_SUFFIX"], "cwd": os.getcwd(),
        "gitlab": os.environ.get("GITLAB_URL"), "token": os.environ.get("GITLAB_PRIVATE_TOKEN"),
        "files": os.environ.get("OSWORLD_FILE_BASE_URL")}
"""
FAKE_TASK_BASE = "class BaseTask(dict):\n    def evaluate(self, env):\n        return 0.0\n"


def test_with_a_checkout_its_own_desktop_env_loads_with_the_services_environment(tmp_path: Path) -> None:
    checkout = tmp_path / "OSWorld-V2"
    (checkout / "desktop_env").mkdir(parents=True)
    (checkout / "desktop_env" / "__init__.py").write_text(FAKE_DESKTOP_ENV)
    (checkout / "desktop_env" / "task_base.py").write_text(FAKE_TASK_BASE)
    folder = tmp_path / "tasks"
    folder.mkdir()
    text = (
        "import desktop_env\nfrom desktop_env.task_base import BaseTask\n"
        "class T(BaseTask):\n    seen = desktop_env.SEEN\nTASK_CLASS = T\n"
    )
    path = _write(folder, "c1", text)
    services = {
        "website": ServiceAccess("website", "website.osworld.test", (80,)),
        "forge": ServiceAccess(
            "forge", "forge.osworld.test", (80,), host_urls={80: "http://127.0.0.1:4321"}, token="t0k"
        ),
    }
    environ = checkout_environment(services, "file:///srv/assets")
    assert environ == {
        "WEBSITE_HOST_SUFFIX": "osworld.test",
        "GITLAB_URL": "http://127.0.0.1:4321",
        "GITLAB_PRIVATE_TOKEN": "t0k",
        "OSWORLD_FILE_BASE_URL": "file:///srv/assets",
    }
    before = os.getcwd()
    assert "WEBSITE_HOST_SUFFIX" not in os.environ
    with ApiMode(checkout, environ).api(loading=True):
        _, task = load_task(path, "c1")
        assert sys.modules["desktop_env"].__file__ == str(checkout.resolve() / "desktop_env" / "__init__.py")
    seen = type(task).seen
    assert seen == {
        "suffix": "osworld.test",
        "cwd": str(checkout.resolve()),
        "gitlab": "http://127.0.0.1:4321",
        "token": "t0k",
        "files": "file:///srv/assets",
    }
    # Everything restored: the working folder, the environment, sys.path, the modules.
    assert os.getcwd() == before and "WEBSITE_HOST_SUFFIX" not in os.environ
    assert str(checkout.resolve()) not in sys.path and "desktop_env" not in sys.modules


# A checkout's own judge client, as upstream's: it reads OSWORLD_EVAL_MODEL_* itself and asks the endpoint
# over HTTP; its metrics bind generate_text at import and turn any failure into 0.0.
CHECKOUT_MODEL_CLIENT = """
import json, os, urllib.request


def generate_text(prompt, image_paths=None, options=None, *, system=None, default_provider="openai",
                  default_model="gpt-4o", default_api_key_env="OPENAI_API_KEY", default_max_tokens=512):
    body = {"model": os.environ["OSWORLD_EVAL_MODEL_NAME"], "max_tokens": default_max_tokens,
            "messages": [{"role": "user", "content": prompt}]}
    request = urllib.request.Request(os.environ["OSWORLD_EVAL_MODEL_BASE_URL"] + "/chat/completions",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["choices"][0]["message"]["content"].strip()


def generate_chat(messages, options=None, **defaults):
    return generate_text(messages[-1]["content"], options=options, **defaults)
"""
CHECKOUT_LLM_METRICS = """
from desktop_env.evaluators.model_client import generate_text


def compare_text_with_llm(text, question):
    try:
        return generate_text(question + "\\n" + text, default_max_tokens=8)
    except Exception:
        return 0.0
"""
CHECKOUT_JUDGED_TASK = """
from desktop_env.task_base import BaseTask
from desktop_env.evaluators.metrics import llm_metrics


class J1(BaseTask):
    def evaluate(self, env):
        return [llm_metrics.compare_text_with_llm("a report", "Is it fine?") for _ in range(3)]


TASK_CLASS = J1
"""


def test_a_checkouts_own_judge_calls_are_counted_and_a_failed_or_empty_one_masks(
    tmp_path: Path, model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "OSWorld-V2"
    evaluators = checkout / "desktop_env" / "evaluators"
    (evaluators / "metrics").mkdir(parents=True)
    (checkout / "desktop_env" / "__init__.py").write_text("")
    (checkout / "desktop_env" / "task_base.py").write_text(FAKE_TASK_BASE)
    (evaluators / "__init__.py").write_text("")
    (evaluators / "model_client.py").write_text(CHECKOUT_MODEL_CLIENT)
    (evaluators / "metrics" / "__init__.py").write_text("")
    (evaluators / "metrics" / "llm_metrics.py").write_text(CHECKOUT_LLM_METRICS)
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_BASE_URL", model_server.openai_url)
    monkeypatch.setenv("OSWORLD_EVAL_MODEL_NAME", "test-model")
    path = _write(tmp_path, "j1", CHECKOUT_JUDGED_TASK)
    mode = ApiMode(checkout, {})
    with mode.api(loading=True):
        _, task = load_task(path, "j1")
    judge = Judge()
    model_server.script("test-model", Reply("YES", prompt_tokens=9), Status(500), Reply("  "))
    with judge.for_task("j1") as scope, mode.api():
        # Upstream's code decides the values: its metric swallowed the HTTP 500 as 0.0.
        assert task.evaluate(None) == ["YES", 0.0, ""]
    calls = scope.calls()
    assert [(c.task_id, c.kind, c.model, c.ok) for c in calls] == [("j1", "text", "test-model", True)] + [
        ("j1", "text", "test-model", False)
    ] * 2
    assert calls[0].url == model_server.openai_url
    assert "the LLM judge (the checkout's generate_text) failed: HTTPError: HTTP Error 500" in (calls[1].error or "")
    assert calls[2].error == "the LLM judge (the checkout's generate_text) gave an empty answer"
    assert (scope.error() or "").endswith("(and 1 more failed judge call(s))")
    assert len(judge.calls()) == 3 and len(model_server.completions()) == 3
    # Outside a task's scope the checkout's calls run as they are, recorded nowhere.
    model_server.script("test-model", Reply("NO"))
    with mode.api():
        assert task.evaluate(None)[0] == "NO"
    assert len(judge.calls()) == 3


# --- the mock websites, over a real state server -------------------------------------------------


class _StateServer(BaseHTTPRequestHandler):
    states: dict[str, Any] = {}  # noqa: RUF012 - one server per test module, reset per test

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _cookie(self) -> str:
        # The visitor: ?cookie=ID, else the cookie user_id=ID (the protocol takes either).
        given = parse_qs(urlsplit(self.path).query).get("cookie", [""])[0]
        if given:
            return given
        for part in (self.headers.get("Cookie") or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == "user_id":
                return value
        return ""

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        cookie = self._cookie()
        self._answer(200, {"user_id": cookie, "state": self.states.get(cookie, {"data": {}, "meta": {}})})

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.states[self._cookie()] = json.loads(self.rfile.read(length))
        self._answer(200, {"ok": True})


@pytest.fixture
def state_server() -> Iterator[str]:
    _StateServer.states = {}
    with loopback_http(_StateServer) as url:
        yield url


def test_website_helpers_use_the_tasks_service_and_its_cookie(state_server: str, tmp_path: Path) -> None:
    # Upstream's calls, positionally; tests/v2/test_website_helpers.py covers the rest of their surface.
    from pytest_osworld.v2.api import getters, website

    access = ServiceAccess(
        "website", "website.osworld.test", (80,), state_key="v2-w1-abc", host_urls={80: state_server}
    )
    runtime = TaskRuntime("w1", services={"website": access}, cache_dir=tmp_path)
    with active(runtime):
        assert website.HOST_SUFFIX == "osworld.test"
        assert website.build_website_url("mailhub") == "http://website.osworld.test"
        urls = website.prepare_stateful_website_urls("mailhub", {"data": {"inbox": [1, 2]}}, None, str(tmp_path))
        assert urls == ["http://website.osworld.test?cookie=v2-w1-abc"]
        saved = json.loads((tmp_path / "state_cookie.json").read_text())
        assert [e["user_id_cookie"] for e in saved["entries"]] == ["v2-w1-abc"]
        assert _StateServer.states["v2-w1-abc"] == {"data": {"inbox": [1, 2]}}

        class Env:
            cache_dir = str(tmp_path)

        state = getters.get_state_with_cookie(Env(), {"return_type": "json"})
        assert state == {"data": {"inbox": [1, 2]}}
    with pytest.raises(RuntimeUnavailable, match="outside a running OSWorld-V2 task"):
        website.build_website_url("mailhub")
    with active(TaskRuntime("w2")), pytest.raises(RuntimeUnavailable, match="needs the shared service 'website'"):
        website.build_website_url("mailhub")


# --- the judge through llm_metrics ----------------------------------------------------------------


def test_llm_metrics_ask_the_runs_judge_in_the_tasks_scope_and_failures_are_recorded(
    model_server: ModelServer,
) -> None:
    from pytest_osworld.v2.api import llm_metrics

    judge = Judge(JudgeSettings(given=JudgeLayer(base_url=model_server.openai_url, model="test-model")), environ={})
    model_server.script("test-model", Reply("YES, it does"), Reply("no"), Status(500), Status(500), Status(500))
    runtime = TaskRuntime("j1")
    with active(runtime), judge.for_task("j1") as scope:
        runtime.judge = scope
        assert llm_metrics.compare_text_with_llm("the report", "Is it a report?") == "YES"
        assert llm_metrics.compare_answers_with_llm("q?", "a", "b") == 0.0
        assert llm_metrics.compare_text_with_llm("again", "ok?") == "FAIL"  # the judge failed
    assert len(scope.calls()) == 3 and len(scope.failed()) == 1
    error = scope.error()
    assert error is not None and "HTTP 500" in error
    first = model_server.completions()[0]
    assert first.body["max_tokens"] == 10 and "Is it a report?" in first.text()
    no_judge = TaskRuntime("j2")
    with active(no_judge):
        assert llm_metrics.compare_text_with_llm("x") == "FAIL"
    assert no_judge.judge_problems and "no LLM judge is configured" in no_judge.judge_problems[0]


# --- CALL_USER ------------------------------------------------------------------------------------


def test_call_user_in_the_pyautogui_space_and_in_a_solution() -> None:
    assert parse_pyautogui_answer("CALL_USER: Which folder should I use?") == ["CALL_USER Which folder should I use?"]
    frame = Frame(screen=(1920, 1080), image=(1920, 1080))
    [action] = code_actions("```\nCALL_USER Which one?\n```", frame)
    assert action == Action.call_user("Which one?")
    assert action.recorded() == {"action_type": "CALL_USER", "parameters": {"question": "Which one?"}}
    assert parse_pyautogui_answer("DONE") == ["DONE"]  # the control words are unchanged


# --- what is skipped before any sandbox ----------------------------------------------------------


def test_skips_known_before_any_sandbox(tmp_path: Path) -> None:
    from pytest_osworld.plugin.v2 import NO_RUNNER, NO_SOLUTION, skip_reason
    from pytest_osworld.settings import Settings
    from pytest_osworld.v2.reading.task_file import read_task_file

    big = _write(
        tmp_path,
        "d1",
        "from desktop_env.task_base import BaseTask\nclass T(BaseTask):\n    volume_size = 64\n    solution = ['DONE']\n",
    )
    task = read_task_file(big)
    assert task.solution == ["DONE"]
    assert skip_reason(task, Settings()) == NO_RUNNER
    assert skip_reason(task, Settings(agent="oracle")) is None  # a container's disk is its engine's
    vm = Settings(agent="oracle", sandbox="osworld-vm")
    reason = skip_reason(task, vm)
    assert reason is not None and "needs a 64 GB disk (volume_size)" in reason and "32G" in reason
    assert skip_reason(task, vm.replace(upstream_vm_disk_size="100G")) is None
    bare = read_task_file(
        _write(tmp_path, "d2", "from desktop_env.task_base import BaseTask\nclass T(BaseTask):\n    pass\n")
    )
    assert skip_reason(bare, Settings(agent="oracle")) == NO_SOLUTION
    assert skip_reason(bare, Settings(agent="null")) is None
    computed = read_task_file(
        _write(
            tmp_path, "d4", "from desktop_env.task_base import BaseTask\nclass T(BaseTask):\n    solution = [f(1)]\n"
        )
    )
    assert computed.solution is None and skip_reason(computed, Settings(agent="oracle")) is None
    web = read_task_file(
        _write(
            tmp_path,
            "d3",
            "from desktop_env.controllers.gitlab import get_gitlab_admin_client\nfrom desktop_env.task_base import BaseTask\nclass T(BaseTask):\n    pass\n",
        )
    )
    gitlab = skip_reason(web, Settings(agent="null"))
    assert gitlab is not None and "needs the shared service 'gitlab'" in gitlab


def test_the_v2_image_password_only_on_v2s_image() -> None:
    from pytest_osworld.plugin.v2 import V2_IMAGE_PASSWORD, v2_settings
    from pytest_osworld.settings import Settings

    assert V2_IMAGE_PASSWORD == "osworld-public-evaluation"
    assert v2_settings(Settings(), "001").sandbox.client_password == "password"
    assert v2_settings(Settings(v2_image=True), "001").sandbox.client_password == V2_IMAGE_PASSWORD


def test_base_task_defaults_are_the_static_readers() -> None:
    # The loaded task and the collected one must agree on every field's default.
    from pytest_osworld.v2.api.task_base import BaseTask
    from pytest_osworld.v2.reading.task_file import TASK_FIELDS

    assert {name: getattr(BaseTask, name) for name in TASK_FIELDS} == TASK_FIELDS
