"""OSWorld-V2 task files read statically: one :class:`V2Task` per ``task_<id>.py``, never imported.

A V2 task is a Python class (``class Task001(BaseTask)``). Importing its module runs its code, and
upstream's modules raise at import without the website and GitLab environment, so collection parses
the file with :mod:`ast` instead. The task is found the way upstream's loader finds it, in this order:
a ``get_task()`` function, a ``TASK_CLASS`` name, a ``Task`` name, the first class of the file that
subclasses ``BaseTask`` (or ``MultiPhaseTask``, directly or through another class of the file).

Field values are resolved as :mod:`pytest_osworld.tasks.v2.static` can; the rest stay
:class:`~pytest_osworld.tasks.v2.static.Unresolved`. What the file uses (the LLM judge, the mock
websites, GitLab) is read from its imports, names and environment variable names.
"""

from __future__ import annotations

import ast
import json
import re
from collections import ChainMap
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_osworld.errors import TaskInputError, TaskInputErrors
from pytest_osworld.tasks.names import shown, unsafe_name_message
from pytest_osworld.tasks.v2.static import ClassRef, FunctionRef, Imported, Unresolved, dotted, evaluate

DOMAIN = "v2"  # V2 tasks have no domain folder: their items are v2/<id>, as v1 items are <domain>/<id>
TASK_FOLDER = "task_class"
SPLIT_KEY = "tasks"
MAX_REPORTED = 20

# BaseTask's class attributes and their defaults: a task class that does not set one has the default.
TASK_FIELDS: dict[str, Any] = {
    "id": "",
    "snapshot": "",
    "instruction": "",
    "source": "",
    "config": [],
    "trajectory": "",
    "related_apps": [],
    "evaluator": None,
    "proxy": False,
    "image": None,
    "instance_type": None,
    "volume_size": None,
    "platform": "linux",
    "user_simulator": None,
    "disable_vnc": False,
    "disable_recording": False,
    "intermediate_eval_safe": True,
}
# Project keys a task class may set beside BaseTask's fields: the reference solution the oracle plays
# (a list as v1's ``solution``; a MultiPhaseTask gives one per phase dict instead, read when it runs).
PROJECT_FIELDS: dict[str, Any] = {"solution": None}
TASK_BASES = frozenset({"BaseTask", "MultiPhaseTask"})
MULTI_PHASE_BASE = "MultiPhaseTask"

# What identifies a use, by the last parts of imported module paths and by names in the code.
JUDGE_MODULES = frozenset({"model_client", "llm_metrics"})
JUDGE_NAMES = frozenset({"generate_text", "generate_chat"})
JUDGE_NAME = re.compile(r"^compare_\w+_with_llm$")
JUDGE_ENV_PREFIX = "OSWORLD_EVAL_MODEL_"
WEBSITE_MODULES = frozenset({"website"})
WEBSITE_NAMES = frozenset(
    {
        "build_website_url",
        "resolve_website_url",
        "prepare_stateful_website_urls",
        "get_state_with_cookie",
        "get_state_file_with_cookie",
        "_chrome_open_tabs_with_state_setup",
    }
)
WEBSITE_ENV = frozenset({"WEBSITE_HOST_SUFFIX"})
GITLAB_MODULES = frozenset({"gitlab"})
GITLAB_NAMES = frozenset({"get_gitlab_admin_client", "create_user_and_get_client", "import_project_from_github"})
GITLAB_ENV = frozenset({"GITLAB_URL", "GITLAB_PRIVATE_TOKEN"})

_TASK_FILE = re.compile(r"^task_(.*)\.py$")


@dataclass(frozen=True)
class V2Task:
    """One V2 task as read from its file: where it is, how upstream would load it, what it declares."""

    id: str
    file: Path
    line: int  # 1-based: the task class, or the binding of the entry point when its class is unknown
    entry_point: str  # "get_task()", "TASK_CLASS", "Task" or "BaseTask subclass"
    class_name: str | None  # None when the entry point does not statically name a class of the file
    fields: dict[str, Any]  # every BaseTask field: a value, or an Unresolved
    multi_phase: bool
    uses: dict[str, str] = field(default_factory=dict)  # "llm_judge"/"website"/"gitlab" -> the first cause
    capabilities: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{DOMAIN}/{self.id}"

    @property
    def domain(self) -> str:
        return DOMAIN

    @property
    def origin(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def instruction(self) -> Any:
        return self.fields["instruction"]

    @property
    def related_apps(self) -> list[str]:
        """The related apps that resolved to names (an unresolved one is left out, not guessed)."""
        apps = self.fields["related_apps"]
        return [a for a in apps if isinstance(a, str)] if isinstance(apps, list) else []

    @property
    def user_sim(self) -> bool:
        return self.fields["user_simulator"] is not None

    @property
    def proxy(self) -> bool:
        # Upstream reads the flag by truthiness; an unresolved flag is not taken as set.
        value = self.fields["proxy"]
        return bool(value) and not isinstance(value, Unresolved)

    @property
    def services(self) -> list[str]:
        """The shared services the task needs: ``website``, ``gitlab``, ``proxy``."""
        found: list[str] = [name for name in ("website", "gitlab") if name in self.uses]
        return [*found, "proxy"] if self.proxy else found

    @property
    def solution(self) -> list[Any] | None:
        """The class's reference solution when it resolved to a list of steps (None: none, or not known
        statically: then the oracle's skip waits for the import, and a class without one masks nothing)."""
        value = self.fields.get("solution")
        if not isinstance(value, list) or not all(isinstance(v, str | dict) for v in value):
            return None  # an entry that did not resolve: only the imported class knows the solution
        return value

    @property
    def llm_judge(self) -> bool:
        return "llm_judge" in self.uses

    def describe(self) -> dict[str, Any]:
        """The collected facts as JSON values (an unresolved value as its ``<unresolved: ...>`` text)."""
        return {
            "id": self.id,
            "file": str(self.file),
            "line": self.line,
            "entry_point": self.entry_point,
            "class": self.class_name,
            "multi_phase": self.multi_phase,
            "uses": dict(self.uses),
            "services": self.services,
            "capabilities": list(self.capabilities),
            "fields": _displayed(self.fields),
        }


def _displayed(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _displayed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_displayed(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


# --- one module ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Class:
    name: str
    line: int
    bases: tuple[str | None, ...]
    attrs: dict[str, Any]


@dataclass
class _Module:
    scope: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # where each module-level name was last bound
    classes: dict[str, _Class] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)


def _bound_names(node: ast.AST) -> set[str]:
    """Every name a statement binds anywhere inside it (assignments, imports, defs, loop targets)."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.alias):
            names.add(sub.asname or sub.name.split(".")[0])
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(sub.name)
    return names


def _read_module(tree: ast.Module) -> _Module:
    """Bind the module's top-level names in order, as running it would (without running anything)."""
    module = _Module()
    scope = module.scope
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                name = alias.asname or alias.name.split(".")[0]
                scope[name] = Imported(alias.name if alias.asname else name)
                module.lines[name] = stmt.lineno
        elif isinstance(stmt, ast.ImportFrom):
            base = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                if alias.name != "*":
                    scope[alias.asname or alias.name] = Imported(f"{base}.{alias.name}")
                    module.lines[alias.asname or alias.name] = stmt.lineno
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            value = evaluate(stmt.value, scope)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                _bind(scope, target, value)
                for name in _bound_names(target):
                    module.lines[name] = stmt.lineno
        elif isinstance(stmt, ast.ClassDef):
            module.classes[stmt.name] = _read_class(stmt, scope)
            scope[stmt.name] = ClassRef(stmt.name)
            module.lines[stmt.name] = stmt.lineno
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            module.functions[stmt.name] = stmt
            scope[stmt.name] = FunctionRef(stmt.name)
            module.lines[stmt.name] = stmt.lineno
        else:
            # if/try/for/with and augmented assignments: what they bind depends on running them.
            for name in _bound_names(stmt):
                scope[name] = Unresolved(f"{name}, bound inside a {type(stmt).__name__.lower()} statement")
                module.lines[name] = stmt.lineno
    return module


def _bind(scope: dict[str, Any], target: ast.expr, value: Any) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
        return
    for name in _bound_names(target):  # tuple unpacking, attributes, subscripts
        scope[name] = Unresolved(f"{name}, bound by unpacking")


def _read_class(node: ast.ClassDef, module_scope: dict[str, Any]) -> _Class:
    """The class's attributes in order: its body sees its own earlier names, then the module's."""
    attrs: dict[str, Any] = {}
    scope = ChainMap(attrs, dict(module_scope))  # the module as it is when the class is defined
    for stmt in node.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            value = evaluate(stmt.value, scope)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                _bind(attrs, target, value)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            attrs[stmt.name] = FunctionRef(stmt.name)
        elif not isinstance(stmt, ast.Expr | ast.Pass):
            for name in _bound_names(stmt):
                attrs[name] = Unresolved(f"{name}, bound inside a {type(stmt).__name__.lower()} statement")
    return _Class(node.name, node.lineno, tuple(dotted(b) for b in node.bases), attrs)


def _task_base(cls: _Class, module: _Module, seen: frozenset[str] = frozenset()) -> str | None:
    """``BaseTask`` or ``MultiPhaseTask`` when the class derives from one, through the file's classes."""
    for base in cls.bases:
        if base is None:
            continue
        last = base.rpartition(".")[2]
        local = module.classes.get(base)
        if local is not None and base not in seen and base != cls.name:
            found = _task_base(local, module, seen | {cls.name})
            if found:
                return found
        elif last in TASK_BASES:
            return last
    return None


def _attrs(cls: _Class, module: _Module, seen: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Class attributes with those inherited from the file's own classes (the first base wins)."""
    merged: dict[str, Any] = {}
    for base in reversed(cls.bases):
        local = module.classes.get(base) if base else None
        if local is not None and local.name not in seen and local.name != cls.name:
            merged.update(_attrs(local, module, seen | {cls.name}))
    merged.update(cls.attrs)
    return merged


def _is_multi_phase(cls: _Class, module: _Module, seen: frozenset[str] = frozenset()) -> bool:
    for base in cls.bases:
        if base is None:
            continue
        local = module.classes.get(base)
        if local is not None and base not in seen and base != cls.name:
            if _is_multi_phase(local, module, seen | {cls.name}):
                return True
        elif base.rpartition(".")[2] == MULTI_PHASE_BASE:
            return True
    return False


def _classes_made_by(func: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module) -> set[str]:
    made: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            bound = module.scope.get(node.func.id)
            if isinstance(bound, ClassRef):
                made.add(bound.name)
    return made


def _entry_point(module: _Module) -> tuple[str, str | None, int] | None:
    """(entry point, the class it gives or None, the line) in upstream's loader order; None: no task."""
    scope = module.scope
    if "get_task" in scope:
        func = module.functions.get("get_task")
        made = _classes_made_by(func, module) if func is not None else set()
        name = made.pop() if len(made) == 1 else None
        return "get_task()", name, module.lines.get("get_task", 1)
    if "TASK_CLASS" in scope:
        value = scope["TASK_CLASS"]
        return "TASK_CLASS", value.name if isinstance(value, ClassRef) else None, module.lines.get("TASK_CLASS", 1)
    task = scope.get("Task")
    if isinstance(task, ClassRef | FunctionRef | Imported | Unresolved):  # what may be callable
        return "Task", task.name if isinstance(task, ClassRef) else None, module.lines.get("Task", 1)
    for cls in module.classes.values():
        if isinstance(scope.get(cls.name), ClassRef) and _task_base(cls, module):
            return "BaseTask subclass", cls.name, cls.line
    return None


def _uses(tree: ast.Module) -> dict[str, str]:
    """What the module uses, each with its first cause (``line N: ...``)."""
    found: dict[str, str] = {}

    def note(kind: str, line: int, what: str) -> None:
        found.setdefault(kind, f"line {line}: {what}")

    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [f"{node.module or ''}.{a.name}" for a in node.names]
        for qualname in modules:
            parts = set(qualname.split("."))
            for kind, names in (("llm_judge", JUDGE_MODULES), ("website", WEBSITE_MODULES), ("gitlab", GITLAB_MODULES)):
                if parts & names:
                    note(kind, line, f"imports {qualname.strip('.')}")
            last = qualname.rpartition(".")[2]
            if last in JUDGE_NAMES or JUDGE_NAME.match(last):
                note("llm_judge", line, f"imports {qualname.strip('.')}")
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None:
            if name in JUDGE_NAMES or JUDGE_NAME.match(name) or name in JUDGE_MODULES:
                note("llm_judge", line, f"uses {name}")
            if name in WEBSITE_NAMES:
                note("website", line, f"uses {name}")
            if name in GITLAB_NAMES:
                note("gitlab", line, f"uses {name}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.startswith(JUDGE_ENV_PREFIX):
                note("llm_judge", line, f"reads {text}")
            if text in WEBSITE_ENV:
                note("website", line, f"reads {text}")
            if text in GITLAB_ENV:
                note("gitlab", line, f"reads {text}")
    return found


def task_id_of(path: Path) -> str:
    """``task_001.py`` -> ``001``; any other file name -> its stem (upstream also loads ``<id>.py``)."""
    match = _TASK_FILE.match(path.name)
    return match.group(1) if match else path.stem


def parse(path: Path) -> ast.Module:
    """The file's syntax tree; an unreadable or unparsable file is an error naming ``file:line``."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise TaskInputErrors([TaskInputError(str(path), f"cannot read the file: {exc.strerror or exc}")]) from None
    try:
        return ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else str(path)
        column = f" at column {exc.offset}" if exc.offset else ""
        raise TaskInputErrors(
            [
                TaskInputError(
                    where,
                    f"not valid Python: {exc.msg}{column}",
                    "fix the task file (it is parsed, never imported, to collect it)",
                )
            ]
        ) from None
    except ValueError as exc:  # NUL bytes
        raise TaskInputErrors([TaskInputError(str(path), f"not valid Python: {exc}")]) from None


def read_task_file(path: Path, task_id: str | None = None) -> V2Task:
    """Read one V2 task file (``task_id`` defaults to the one its file name gives)."""
    task_id = task_id_of(path) if task_id is None else task_id
    problem = unsafe_name_message(task_id, "task id")
    if problem:
        raise TaskInputErrors([TaskInputError(str(path), problem, "rename the file task_<id>.py with a plain id")])
    tree = parse(path)
    module = _read_module(tree)
    found = _entry_point(module)
    if found is None:
        raise TaskInputErrors(
            [
                TaskInputError(
                    str(path),
                    "no task in the file: it defines no get_task(), TASK_CLASS, Task, nor a class derived "
                    "from BaseTask or MultiPhaseTask",
                    "end the file with TASK_CLASS = <the task class>, or give only task files to pytest",
                )
            ]
        )
    entry, class_name, line = found
    cls = module.classes.get(class_name) if class_name else None
    if cls is None:
        unknown = Unresolved(f"the class {entry} gives is not named statically")
        fields: dict[str, Any] = dict.fromkeys({**TASK_FIELDS, **PROJECT_FIELDS}, unknown)
        multi_phase = False
    else:
        attrs = _attrs(cls, module)
        fields = {name: attrs.get(name, default) for name, default in {**TASK_FIELDS, **PROJECT_FIELDS}.items()}
        multi_phase = _is_multi_phase(cls, module)
        line = cls.line
    return V2Task(
        id=task_id,
        file=path,
        line=line,
        entry_point=entry,
        class_name=class_name,
        fields=fields,
        multi_phase=multi_phase,
        uses=_uses(tree),
    )


# --- splits --------------------------------------------------------------------------------------


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


def is_task_file_name(path: Path) -> bool:
    return path.suffix == ".py" and _TASK_FILE.match(path.name) is not None


def has_split_beside(task_folder: Path) -> bool:
    """Whether a ``test_*.json`` V2 split beside ``task_folder`` already collects its tasks."""
    return any(is_v2_split(p) for p in task_folder.parent.glob("test_*.json"))
