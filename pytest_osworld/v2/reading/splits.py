"""OSWorld-V2 splits: ``{"tasks": [ids]}`` (``test_v2.json``) or a capability's ``{"<capability>": [ids]}``
beside a ``task_class/`` folder, each task file read statically (:mod:`pytest_osworld.v2.reading.task_file`),
and which files pytest should collect as V2 inputs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_osworld.errors import TaskInputError, TaskInputErrors
from pytest_osworld.tasks.names import shown, unsafe_name_message
from pytest_osworld.v2.reading.task_file import SPLIT_KEY, TASK_FOLDER, V2Task, read_task_file

MAX_REPORTED = 20


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskInputErrors([TaskInputError(str(path), f"cannot read the file: {exc}")]) from None
    except json.JSONDecodeError as exc:
        raise TaskInputErrors(
            [TaskInputError(f"{path}:{exc.lineno}", f"malformed JSON: {exc.msg} at column {exc.colno}")]
        ) from None


def split_ids(value: Any) -> tuple[str, list[Any]] | None:
    """(key, ids) of a V2 split, ``{"tasks": [...]}`` or ``{"<capability>": [...]}``; None for another shape."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, ids),) = value.items()
        if isinstance(ids, list):
            return str(key), ids
    return None


def find_task_file(folder: Path, task_id: str) -> Path | None:
    """Where upstream's loader finds a task: ``task_<id>.py``, ``<id>.py``, or ``<domain>/task_<id>.py``."""
    for candidate in (folder / f"task_{task_id}.py", folder / f"{task_id}.py"):
        if candidate.is_file():
            return candidate
    nested = sorted(folder.glob(f"*/task_{task_id}.py"))
    return nested[0] if len(nested) == 1 else None


def capabilities_beside(folder: Path) -> dict[str, list[str]]:
    """Task id -> its capabilities, from the capability splits in ``folder`` (``<cap>.json`` = ``{"<cap>": [ids]}``)."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue  # not a capability split; a split given to pytest reports its own errors
        shape = split_ids(value)
        if shape is None or shape[0] != path.stem or shape[0] == SPLIT_KEY:
            continue
        for task_id in shape[1]:
            if isinstance(task_id, str):
                found.setdefault(task_id, []).append(path.stem)
    return found


def with_capabilities(task: V2Task, capabilities: dict[str, list[str]]) -> V2Task:
    caps = tuple(dict.fromkeys([*task.capabilities, *capabilities.get(task.id, [])]))
    return replace(task, capabilities=caps)


def read_split(path: Path) -> list[V2Task]:
    """Read a V2 split and every task file it names, from the ``task_class/`` folder beside it."""
    where = str(path)
    shape = split_ids(_load_json(path))
    if shape is None:
        raise TaskInputErrors(
            [
                TaskInputError(
                    where,
                    "not an OSWorld-V2 split",
                    'a V2 split is {"tasks": ["001", ...]} or {"<capability>": ["001", ...]}',
                )
            ]
        )
    key, ids = shape
    folder = path.parent / TASK_FOLDER
    if not folder.is_dir():
        raise TaskInputErrors(
            [TaskInputError(where, f"no {TASK_FOLDER} folder at {folder}", f"keep the split beside {TASK_FOLDER}/")]
        )
    if not ids:
        raise TaskInputErrors([TaskInputError(where, "the split names no task")])
    capabilities = capabilities_beside(path.parent)
    tasks: list[V2Task] = []
    errors: list[TaskInputError] = []
    seen: set[str] = set()
    for index, task_id in enumerate(ids):
        entry_where = f"{where} ({key}[{index}])"
        if not isinstance(task_id, str):
            errors.append(TaskInputError(entry_where, f"a task id must be a string, got {shown(repr(task_id))}"))
            continue
        # Checked before a path is built from it: "../x" must not read outside task_class/.
        problem = unsafe_name_message(task_id, "task id")
        if problem:
            errors.append(TaskInputError(entry_where, problem))
            continue
        if task_id in seen:
            errors.append(TaskInputError(entry_where, f"duplicate task id {task_id}"))
            continue
        seen.add(task_id)
        file = find_task_file(folder, task_id)
        if file is None:
            errors.append(
                TaskInputError(
                    entry_where,
                    f"names a missing task: no {folder / f'task_{task_id}.py'}",
                    "download the release's task files into task_class/",
                )
            )
            continue
        try:
            task = read_task_file(file, task_id)
        except TaskInputErrors as exc:
            errors.extend(exc.errors)
            continue
        if key != SPLIT_KEY:
            task = replace(task, capabilities=(key,))
        tasks.append(with_capabilities(task, capabilities))
    if errors:
        raise TaskInputErrors(errors[:MAX_REPORTED])
    return tasks


def read_input(path: Path) -> list[V2Task]:
    """A V2 split (``.json``) or one task file (``.py``), with the capabilities of the splits beside it."""
    if path.suffix == ".json":
        return read_split(path)
    task = read_task_file(path)
    beside = path.parent.parent if path.parent.name == TASK_FOLDER else path.parent
    return [with_capabilities(task, capabilities_beside(beside))]


# --- what pytest should collect ------------------------------------------------------------------


def is_v2_split(path: Path) -> bool:
    """A ``.json`` beside a ``task_class/`` folder shaped as a V2 split (not a v1 domain split).

    A one-key v1 split names a domain folder of ``examples/``; a V2 split's key is ``tasks`` or a
    capability.
    """
    if path.suffix != ".json" or not (path.parent / TASK_FOLDER).is_dir():
        return False
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return path.name.startswith("test_")  # a broken split is collected, so its error is shown
    shape = split_ids(value)
    return shape is not None and (shape[0] == SPLIT_KEY or not (path.parent / "examples" / shape[0]).is_dir())


def has_split_beside(task_folder: Path) -> bool:
    """Whether a ``test_*.json`` V2 split beside ``task_folder`` already collects its tasks."""
    return any(is_v2_split(p) for p in task_folder.parent.glob("test_*.json"))
