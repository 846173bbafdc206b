"""The bundled OSWorld-V2 tasks (``tasks/test_v2.json``, ``tasks/task_class/``), checked without a runtime:
the split collects exactly them with the markers each needs, every file has upstream's module shape,
and every task (every phase of a multi-phase one) has a reference solution the oracle can play."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.agents.parsing import CONTROL_WORDS
from pytest_osworld.guest.client import PYAUTOGUI_PREFIX
from pytest_osworld.v2.reading.splits import read_split
from pytest_osworld.v2.reading.static import Unresolved, evaluate
from pytest_osworld.v2.reading.task_file import read_task_file

TASKS = Path(__file__).resolve().parents[2] / "tasks"
SPLIT = TASKS / "test_v2.json"
TASK_CLASS = TASKS / "task_class"
IDS = ["p01", "p02", "p03", "p04", "p05"]
NOT_CACHED = ("-p", "no:cacheprovider")


def task_file(task_id: str) -> Path:
    return TASK_CLASS / f"task_{task_id}.py"


def collected(result: pytest.RunResult) -> list[str]:
    return [line.rpartition("::")[2] for line in result.stdout.lines if "::" in line]


@pytest.fixture
def copied(pytester: pytest.Pytester) -> Path:
    """The bundled V2 tasks in pytester's folder, as ``tasks/`` holds them."""
    dest = pytester.path / "tasks"
    dest.mkdir()
    shutil.copy(SPLIT, dest / SPLIT.name)
    shutil.copytree(TASK_CLASS, dest / TASK_CLASS.name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_the_split_names_every_task_file_and_nothing_else() -> None:
    assert json.loads(SPLIT.read_text()) == {"tasks": IDS}
    assert sorted(p.name for p in TASK_CLASS.glob("*.py")) == [f"task_{i}.py" for i in IDS]


@pytest.mark.parametrize(
    ("marks", "ids"),
    [
        ("v2", IDS),
        ("osworld", IDS),
        ("llm_judge", ["p03"]),
        ("user_sim", ["p04"]),
        ("needs_services", ["p02"]),
        ("service(name='website')", ["p02"]),
        ("multi_phase", ["p05"]),
        ("needs_proxy or service(name='gitlab') or capability(name='human_in_the_loop')", []),
        ("not needs_services and not llm_judge and not user_sim and not multi_phase", ["p01"]),
    ],
)
def test_the_split_collects_the_tasks_with_their_markers(
    pytester: pytest.Pytester, copied: Path, marks: str, ids: list[str]
) -> None:
    result = pytester.runpytest(
        "tasks/test_v2.json", "--collect-only", "-q", "--strict-markers", "-m", marks, *NOT_CACHED
    )
    assert collected(result) == [f"v2/{i}" for i in ids], result.stdout.str()
    assert result.ret == (pytest.ExitCode.OK if ids else pytest.ExitCode.NO_TESTS_COLLECTED)


def test_walking_the_tasks_folder_collects_each_v2_task_once(pytester: pytest.Pytester) -> None:
    # As `pytest tasks/` does: beside the v1 JSONL files, the split (not task_class/ a second time).
    dest = pytester.path / "tasks"
    shutil.copytree(TASKS, dest, ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("tasks", "--collect-only", "-q", *NOT_CACHED)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    v2_items = [line for line in result.stdout.lines if "::v2/" in line]
    assert v2_items == [f"tasks/test_v2.json::v2/{i}" for i in IDS]
    assert any(line.startswith("tasks/examples.jsonl::") for line in result.stdout.lines)


def test_the_reader_finds_each_task_class_by_task_class() -> None:
    for task in read_split(SPLIT):
        assert task.entry_point == "TASK_CLASS", task.id
        assert task.class_name == f"Task{task.id.upper()}"
        assert task.fields["id"] == task.id
        assert isinstance(task.fields["instruction"], str) and task.fields["instruction"].strip()
        assert task.fields["source"] == "pytest-osworld"


@pytest.mark.parametrize("task_id", IDS)
def test_each_file_has_upstream_s_module_shape(task_id: str) -> None:
    tree = ast.parse(task_file(task_id).read_text(encoding="utf-8"))
    last = tree.body[-1]
    assert isinstance(last, ast.Assign) and ast.unparse(last) == f"TASK_CLASS = Task{task_id.upper()}"
    imports = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "desktop_env.task_base" in imports
    cls = _task_class(tree, task_id)
    methods = {node.name: node for node in cls.body if isinstance(node, ast.FunctionDef)}
    assert [a.arg for a in methods["setup"].args.args] == ["self", "setup_controller", "use_proxy"]
    assert [ast.unparse(d) for d in methods["setup"].args.defaults] == ["False"]
    assert [a.arg for a in methods["evaluate"].args.args] == ["self", "env"]


@pytest.mark.parametrize("task_id", [i for i in IDS if not read_task_file(task_file(i)).multi_phase])
def test_each_task_has_a_solution(task_id: str) -> None:
    tree = ast.parse(task_file(task_id).read_text(encoding="utf-8"))
    scope = _module_scope(tree)
    cls = _task_class(tree, task_id)
    solutions = [evaluate(n.value, scope) for n in cls.body if isinstance(n, ast.Assign) and _names(n) == ["solution"]]
    assert len(solutions) == 1, "one class attribute solution = [...]"
    _check_solution(solutions[0], task_id, asks_user=read_task_file(task_file(task_id)).user_sim)


def test_each_phase_of_the_multi_phase_task_has_a_solution_and_the_second_is_gated() -> None:
    tree = ast.parse(task_file("p05").read_text(encoding="utf-8"))
    scope = _module_scope(tree)
    cls = _task_class(tree, "p05")
    (get_phases,) = (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "get_phases")
    (returned,) = (n.value for n in ast.walk(get_phases) if isinstance(n, ast.Return))
    assert isinstance(returned, ast.List) and len(returned.elts) == 2
    phases: list[dict[str, Any]] = []
    for node in returned.elts:
        assert isinstance(node, ast.Dict)
        keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        assert {"name", "instruction", "evaluate", "solution"} <= set(keys)
        phases.append({k: evaluate(v, scope) for k, v in zip(keys, node.values) if k != "evaluate"})
    for phase in phases:
        assert isinstance(phase["instruction"], str) and phase["instruction"].strip()
        _check_solution(phase["solution"], f"p05 phase {phase['name']}", asks_user=False)
    # The first phase gates the second: a failed first phase ends the episode.
    assert phases[0]["gate"] is True and phases[0]["gate_min_score"] == 1.0
    assert "gate" not in phases[1]


def _task_class(tree: ast.Module, task_id: str) -> ast.ClassDef:
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == f"Task{task_id.upper()}")
    return cls


def _names(node: ast.Assign) -> list[str]:
    return [t.id for t in node.targets if isinstance(t, ast.Name)]


def _module_scope(tree: ast.Module) -> dict[str, Any]:
    """Module constants bound before the class, resolved as the reader resolves them."""
    scope: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for name in _names(node):
                scope[name] = evaluate(node.value, scope)
    return scope


def _check_solution(solution: Any, what: str, *, asks_user: bool) -> None:
    assert isinstance(solution, list) and solution, f"{what}: no solution"
    assert solution[-1] == "DONE", f"{what}: the solution ends with DONE"
    asked = False
    for number, entry in enumerate(solution, 1):
        where = f"{what} step {number}"
        assert not _unresolved(entry), f"{where}: not a literal value: {entry}"
        if isinstance(entry, dict):
            assert entry["action_type"] == "CALL_USER", where
            assert isinstance(entry["parameters"]["question"], str) and entry["parameters"]["question"].strip()
            asked = True
        elif entry.strip() not in CONTROL_WORDS:
            # As the runner sends it: each entry after the import line, one interpreter per step.
            compile(PYAUTOGUI_PREFIX + entry, where, "exec")
    assert asked == asks_user, f"{what}: asks the simulated user exactly when the task has one"


def _unresolved(value: Any) -> bool:
    if isinstance(value, Unresolved):
        return True
    if isinstance(value, list):
        return any(_unresolved(v) for v in value)
    if isinstance(value, dict):
        return any(_unresolved(v) for v in value.values())
    return False
