"""OSWorld-V2 task files read statically: entry points in the loader's order, values resolved or shown
as unresolved (never guessed), what each task uses, splits and their errors."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.errors import TaskInputErrors
from pytest_osworld.v2.reading.markers import v2_markers
from pytest_osworld.v2.reading.splits import read_input, read_split
from pytest_osworld.v2.reading.static import Imported, Unresolved, evaluate
from pytest_osworld.v2.reading.task_file import read_task_file
from tests.support.v2data import ALL_IDS, BROKEN, EXAMPLES, TASK_CLASS


def value(expression: str, **scope: Any) -> Any:
    node = ast.parse(expression, mode="eval").body
    return evaluate(node, scope)


def test_literals_and_names_bound_to_them_resolve() -> None:
    assert value("['a', ('b', 2), {'k': None, 'n': -1.5}]") == ["a", ["b", 2], {"k": None, "n": -1.5}]
    assert value("A + ' world'", A="hello") == "hello world"
    assert value("['x'] + APPS", APPS=["y"]) == ["x", "y"]
    assert value("f'{N} items in {WHERE}'", N=3, WHERE="/tmp") == "3 items in /tmp"
    assert value("'  padded\\n'.strip()") == "padded"
    assert value("textwrap.dedent(T)", textwrap=Imported("textwrap"), T="  a\n  b") == "a\nb"


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("f'on {HOST}'", "f-string over HOST, imported from desktop_env.controllers.website"),
        ("'https://' + HOST", "concatenation with HOST, imported from desktop_env.controllers.website"),
        ("str(uuid4())", "call to str()"),
        ("HOST", "HOST, imported from desktop_env.controllers.website"),
        ("LATER", "name LATER (not bound before its use)"),
        ("{**BASE}", "a dict with ** unpacking"),
        ("CONFIG['key']", "subscript expression"),
        ("f'{N:>4}'", "f-string with a conversion or format spec"),
    ],
)
def test_what_only_running_gives_is_unresolved(expression: str, why: str) -> None:
    found = value(expression, HOST=Imported("desktop_env.controllers.website.HOST"), N=1, CONFIG={"key": 1}, BASE={})
    assert found == Unresolved(why)
    assert str(found) == f"<unresolved: {why}>"


def test_the_dedent_of_another_module_is_not_textwrap_s() -> None:
    assert isinstance(value("dedent(T)", dedent=Imported("mylib.dedent"), T=" a"), Unresolved)


def test_a_plain_task_file() -> None:
    task = read_task_file(TASK_CLASS / "task_001.py")
    assert (task.id, task.key, task.class_name, task.entry_point) == ("001", "v2/001", "Task001", "TASK_CLASS")
    assert task.origin == f"{TASK_CLASS / 'task_001.py'}:12"
    # A module constant, stripped; BaseTask's defaults for what the class leaves out.
    assert task.instruction == "Open the report on the desktop, make its title bold and save it in place."
    assert task.fields["snapshot"] == "base_setup"
    assert task.related_apps == ["libreoffice_writer", "os"]
    assert task.fields["volume_size"] == 40
    assert task.fields["intermediate_eval_safe"] is False
    assert task.fields["platform"] == "linux"
    assert task.fields["user_simulator"] is None
    assert not task.multi_phase and task.uses == {} and task.services == []


def test_an_earlier_class_attribute_resolves_inside_a_later_one() -> None:
    task = read_task_file(TASK_CLASS / "task_004.py")
    simulator = task.fields["user_simulator"]
    assert simulator["type"] == "llm"
    assert simulator["instruction"] == task.instruction
    assert task.user_sim and task.proxy
    assert task.services == ["proxy"]


def test_get_task_comes_before_task_class_and_the_first_subclass() -> None:
    # The file also binds TASK_CLASS to ForgeTask, the first BaseTask subclass it defines.
    task = read_task_file(TASK_CLASS / "task_006.py")
    assert (task.entry_point, task.class_name) == ("get_task()", "Task006")
    assert task.instruction.startswith("Open a merge request")
    assert task.fields["snapshot"] == "base_setup"  # inherited from ForgeTask
    assert task.related_apps == ["gitlab", "chrome"]


def test_task_class_comes_before_task_and_the_first_subclass() -> None:
    task = read_task_file(TASK_CLASS / "task_007.py")
    assert (task.entry_point, task.class_name, task.fields["id"]) == ("TASK_CLASS", "Task007", "007")


def test_task_comes_before_the_first_subclass() -> None:
    task = read_task_file(TASK_CLASS / "task_008.py")
    assert (task.entry_point, task.class_name) == ("Task", "Task")
    assert task.fields["snapshot"] == "ubuntu"  # from Base008


def test_the_first_base_task_subclass_when_nothing_names_one(tmp_path: Path) -> None:
    file = tmp_path / "task_050.py"
    file.write_text(
        "from desktop_env.task_base import BaseTask\n"
        "class Helper:\n    instruction = 'not a task'\n"
        "class Task050(BaseTask):\n    instruction = 'the task'\n"
        "class Later(BaseTask):\n    instruction = 'second'\n"
    )
    task = read_task_file(file)
    assert (task.entry_point, task.class_name, task.line, task.instruction) == (
        "BaseTask subclass",
        "Task050",
        4,
        "the task",
    )


def test_get_task_whose_class_is_not_static_leaves_every_field_unresolved(tmp_path: Path) -> None:
    file = tmp_path / "task_051.py"
    file.write_text("from factory import make\n\ndef get_task():\n    return make('051')\n")
    task = read_task_file(file)
    assert (task.entry_point, task.class_name, task.line) == ("get_task()", None, 3)
    assert str(task.instruction) == "<unresolved: the class get_task() gives is not named statically>"
    assert task.related_apps == []


def test_unresolvable_values_are_shown_not_guessed() -> None:
    task = read_task_file(TASK_CLASS / "task_008.py")
    shown = task.describe()["fields"]
    imported = "REPORT_DIR, imported from evaluation_examples.task_class.generated_task_utils"
    assert shown["instruction"] == f"<unresolved: f-string over {imported}>"
    assert shown["source"] == "<unresolved: concatenation with call to str()>"
    assert shown["trajectory"] == f"<unresolved: concatenation with {imported}>"
    assert shown["related_apps"] == ["os", f"<unresolved: {imported}>"]
    assert task.related_apps == ["os"]  # an unresolved app gives no app marker


def test_names_bound_inside_statements_are_unresolved(tmp_path: Path) -> None:
    file = tmp_path / "task_052.py"
    file.write_text(
        "import os\nfrom desktop_env.task_base import BaseTask\n"
        "try:\n    TEXT = os.environ['X']\nexcept KeyError:\n    TEXT = 'fallback'\n"
        "class Task052(BaseTask):\n    instruction = TEXT\n    snapshot = SNAP\nSNAP = 'too late'\nTASK_CLASS = Task052\n"
    )
    task = read_task_file(file)
    assert task.instruction == Unresolved("TEXT, bound inside a try statement")
    assert task.fields["snapshot"] == Unresolved("name SNAP (not bound before its use)")


@pytest.mark.parametrize(
    ("file", "uses"),
    [
        ("task_001.py", set()),
        ("task_002.py", {"website"}),
        ("task_003.py", {"llm_judge"}),
        ("task_006.py", {"gitlab"}),
    ],
)
def test_what_a_task_uses_comes_from_its_imports_and_names(file: str, uses: set[str]) -> None:
    assert set(read_task_file(TASK_CLASS / file).uses) == uses


def test_uses_name_their_cause(tmp_path: Path) -> None:
    file = tmp_path / "task_053.py"
    file.write_text(
        "import os\nfrom desktop_env.task_base import BaseTask\n"
        "class Task053(BaseTask):\n"
        "    def evaluate(self, env):\n"
        "        os.environ.get('OSWORLD_EVAL_MODEL_NAME')\n"
        "        return os.environ['GITLAB_URL'] + os.environ['WEBSITE_HOST_SUFFIX']\n"
    )
    assert read_task_file(file).uses == {
        "llm_judge": "line 5: reads OSWORLD_EVAL_MODEL_NAME",
        "gitlab": "line 6: reads GITLAB_URL",
        "website": "line 6: reads WEBSITE_HOST_SUFFIX",
    }


def test_multi_phase_is_a_multi_phase_task_subclass() -> None:
    assert read_task_file(TASK_CLASS / "task_005.py").multi_phase
    assert not read_task_file(TASK_CLASS / "task_001.py").multi_phase


def test_markers_of_each_kind() -> None:
    tasks = {t.id: t for t in read_split(EXAMPLES / "test_v2.json")}
    names = {i: {m if not kw else f"{m}={kw['name']}" for m, kw in v2_markers(t)} for i, t in tasks.items()}
    assert {"osworld", "v2"} <= names["001"]
    assert {"needs_services", "service=website"} <= names["002"]
    assert "llm_judge" in names["003"] and "needs_services" not in names["003"]
    assert {"user_sim", "needs_proxy", "service=proxy", "capability=human_in_the_loop"} <= names["004"]
    assert "multi_phase" in names["005"]
    assert {"service=gitlab", "app=gitlab"} <= names["006"]
    assert "capability=tutorial_following" in names["001"] and "capability=tutorial_following" not in names["002"]


def test_a_split_reads_every_task_it_names() -> None:
    tasks = read_split(EXAMPLES / "test_v2.json")
    assert [t.id for t in tasks] == ALL_IDS
    assert tasks[3].capabilities == ("human_in_the_loop", "tutorial_following")


def test_a_capability_split_gives_its_own_capability() -> None:
    tasks = read_split(EXAMPLES / "tutorial_following.json")
    assert [(t.id, t.capabilities) for t in tasks] == [
        ("001", ("tutorial_following",)),
        ("004", ("tutorial_following", "human_in_the_loop")),
    ]


def test_a_task_file_alone_gets_the_capabilities_beside_its_folder() -> None:
    (task,) = read_input(TASK_CLASS / "task_004.py")
    assert set(task.capabilities) == {"human_in_the_loop", "tutorial_following"}


def test_an_unparsable_file_names_its_line() -> None:
    with pytest.raises(TaskInputErrors) as info:
        read_task_file(BROKEN)
    (error,) = info.value.errors
    assert error.where == f"{BROKEN}:8"
    assert "not valid Python: unterminated string literal" in error.problem


def test_a_file_without_a_task_is_an_error() -> None:
    with pytest.raises(TaskInputErrors) as info:
        read_task_file(TASK_CLASS / "generated_task_utils.py")
    assert "no task in the file" in str(info.value)


def test_an_unsafe_file_name_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "task_ x.py"
    file.write_text("TASK_CLASS = None\n")
    with pytest.raises(TaskInputErrors) as info:
        read_task_file(file)
    assert "task id ' x' cannot be a folder name" in str(info.value)


def _split(tmp_path: Path, text: str) -> Path:
    (tmp_path / "task_class").mkdir(exist_ok=True)
    split = tmp_path / "test_v2.json"
    split.write_text(text)
    return split


def test_split_errors_name_the_split_and_the_entry(tmp_path: Path) -> None:
    outside = tmp_path / "task_class" / ".." / "secret.py"
    split = _split(tmp_path, '{"tasks": ["../secret", "404", 7]}')
    outside.write_text("TASK_CLASS = None\n")
    with pytest.raises(TaskInputErrors) as info:
        read_split(split)
    messages = [str(e) for e in info.value.errors]
    assert messages[0].startswith(f"{split} (tasks[0]): task id '../secret' cannot be a folder name")
    assert messages[1].startswith(f"{split} (tasks[1]): names a missing task")
    assert messages[2].startswith(f"{split} (tasks[2]): a task id must be a string")


def test_a_split_of_another_shape_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TaskInputErrors) as info:
        read_split(_split(tmp_path, '{"chrome": ["a"], "os": ["b"]}'))
    assert "not an OSWorld-V2 split" in str(info.value)
