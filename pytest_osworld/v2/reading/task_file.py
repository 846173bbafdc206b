"""OSWorld-V2 task files read statically: one :class:`V2Task` per ``task_<id>.py``, never imported.

A V2 task is a Python class (``class Task001(BaseTask)``). Importing its module runs its code, and
upstream's modules raise at import without the website and GitLab environment, so collection parses
the file with :mod:`ast` instead. The task is found the way upstream's loader finds it, in this order:
a ``get_task()`` function, a ``TASK_CLASS`` name, a ``Task`` name, the first class of the file that
subclasses ``BaseTask`` (or ``MultiPhaseTask``, directly or through another class of the file).

Field values are resolved as :mod:`pytest_osworld.v2.reading.static` can; the rest stay
:class:`~pytest_osworld.v2.reading.static.Unresolved`. What the file uses (the LLM judge, the mock
websites, GitLab) is read from its imports, names and environment variable names.
"""

from __future__ import annotations

import ast
import re
from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_osworld.errors import TaskInputError, TaskInputErrors
from pytest_osworld.tasks.names import unsafe_name_message
from pytest_osworld.v2.reading.static import ClassRef, FunctionRef, Imported, Unresolved, dotted, evaluate

DOMAIN = "v2"  # V2 tasks have no domain folder: their items are v2/<id>, as v1 items are <domain>/<id>
TASK_FOLDER = "task_class"
SPLIT_KEY = "tasks"

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


def is_task_file_name(path: Path) -> bool:
    return path.suffix == ".py" and _TASK_FILE.match(path.name) is not None
