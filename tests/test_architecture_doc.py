"""docs/architecture.md against the code: the claims a test can check.

The lists come from the package (its files, `pytest_plugins`, the entry points, the built-in services'
table), never from this file, so a module moved or added fails here until the docs say so.
"""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path
from types import ModuleType

from pytest_osworld.plugin import pytest_plugins
from pytest_osworld.services.builtin import BUILTIN
from tests.support.paths import REPO

PACKAGE = REPO / "pytest_osworld"
DOC = (REPO / "docs" / "architecture.md").read_text()


def section(title: str) -> str:
    """The text under a ``## title`` heading, up to the next heading of that level."""
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else len(DOC)]


def table(text: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the Markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def first_column_names(text: str) -> set[str]:
    """Package paths the tables' first column names: ``a/b.py``, a bare ``c.py`` after a path of the
    same cell (``a/c.py``), or a folder ``a/``."""
    names = set()
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        folder = ""
        for name in re.findall(r"`([^`]+)`", line.strip().strip("|").split(" | ")[0]):
            if not name.endswith((".py", "/")):
                continue  # a service's or an artifact's name
            if "/" in name.rstrip("/"):
                folder = name if name.endswith("/") else name.rsplit("/", 1)[0] + "/"
                names.add(name)
            else:
                names.add(folder + name)
    return names


def module_files() -> list[str]:
    return sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


# --- the module tables


def test_every_module_of_the_package_has_a_row() -> None:
    named = first_column_names(section("Modules"))

    def covered(path: str) -> bool:
        parts = path.split("/")
        return path in named or any("/".join(parts[:i]) + "/" in named for i in range(1, len(parts)))

    missing = [path for path in module_files() if not covered(path)]
    assert not missing, f"modules docs/architecture.md's tables do not name: {missing}"


def test_every_module_a_row_names_exists() -> None:
    absent = sorted(name for name in first_column_names(section("Modules")) if not (PACKAGE / name).exists())
    assert not absent, f"docs/architecture.md names modules the package does not have: {absent}"


# --- the plugin modules


def registered_modules(module: ModuleType) -> set[str]:
    """Modules of the objects ``module`` hands to ``pluginmanager.register(...)``."""
    tree = ast.parse(Path(module.__file__ or "").read_text())
    found = set()
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        made = {
            target.id: node.value.func
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
            if not (isinstance(call.func, ast.Attribute) and call.func.attr == "register"):
                continue
            if "pluginmanager" not in ast.unparse(call.func.value):
                continue
            arg = call.args[0]
            maker = arg.func if isinstance(arg, ast.Call) else made[arg.id] if isinstance(arg, ast.Name) else None
            assert maker is not None, f"{module.__name__}: cannot tell what {ast.unparse(call)} registers"
            found.add(
                eval(ast.unparse(maker), vars(module)).__module__
            )  # the module's own expression, in its namespace
    return found


def package_plugins() -> dict[str, str]:
    """Every plugin module of the package (a path under pytest_osworld/) -> how pytest gets it."""
    entry_points = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    loaded: dict[str, str] = {}
    for target in entry_points.values():
        loaded[target] = "entry point"
    for name in pytest_plugins:
        loaded[name] = "pytest_plugins"
    for path in sorted((PACKAGE / "plugin").glob("*.py")):  # hook objects any module of plugin/ registers
        for registered in registered_modules(importlib.import_module(f"pytest_osworld.plugin.{path.stem}")):
            loaded.setdefault(registered, "registered")
    paths = {}
    for name, how in loaded.items():
        module = importlib.import_module(name)
        paths[str(Path(module.__file__ or "").relative_to(PACKAGE))] = how
    return paths


def test_the_plugin_modules_are_the_ones_the_package_registers() -> None:
    rows = table(section("Modules"), "| plugin module | loaded by |")
    documented = {re.findall(r"`([^`]+)`", module)[0]: how for module, how in rows}
    actual = package_plugins()
    assert set(documented) == set(actual), (
        f"docs/architecture.md's plugin table: missing {sorted(set(actual) - set(documented))}, "
        f"not plugins {sorted(set(documented) - set(actual))}"
    )
    said_pytest_plugins = {path for path, how in documented.items() if how.startswith("`pytest_plugins`")}
    assert said_pytest_plugins == {path for path, how in actual.items() if how == "pytest_plugins"}


def test_the_pytest_plugins_order_is_the_documented_one() -> None:
    sentence = re.search(r"`pytest_plugins` lists, in this order, [^:]*:(.*?)\.\n", DOC, re.S)
    assert sentence is not None, "docs/architecture.md no longer gives the order of pytest_plugins"
    documented = [name.removesuffix(".py").replace("/", ".") for name in re.findall(r"`([^`]+)`", sentence.group(1))]
    assert documented == [name.removeprefix("pytest_osworld.") for name in pytest_plugins]


# --- the built-in services


def test_the_builtin_services_table_is_builtin_py() -> None:
    rows = table(section("Modules"), "| service | server | ports | held |")
    documented = {}
    for service, server, ports, held in rows:
        module = re.findall(r"`servers/([^`/.]+)", server)[0]
        documented[service.strip("`")] = (module, [int(p) for p in ports.split(",")], held.split(" ")[0])
    actual = {
        name: (
            service.entrypoint[-1].rsplit(".", 1)[-1] if service.entrypoint else "",
            list(service.ports),
            "exclusive" if service.exclusive else "shared",
        )
        for name, service in BUILTIN.items()
    }
    assert documented == actual


# --- "plain modules know nothing of pytest"


def imports_pytest(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        if any(name.split(".")[0] in ("pytest", "_pytest") for name in names):
            return True
    return False


def test_the_modules_outside_the_plugin_that_import_pytest_are_the_documented_exceptions() -> None:
    intro = DOC[: DOC.index("\n## ")]
    documented = {name for name in re.findall(r"`([^`]+\.py)`", intro) if (PACKAGE / name).is_file()}
    actual = {path for path in module_files() if not path.startswith("plugin/") and imports_pytest(PACKAGE / path)}
    assert documented == actual, "docs/architecture.md's exceptions to 'plain modules know nothing of pytest'"


MODULE_LINES = 700  # docs/architecture.md, "Modules"
UPSTREAM_LAYOUT = "evaluation/metrics/"  # the modules that keep upstream's layout may be longer


def long_modules(package: Path) -> list[str]:
    """Modules of ``package`` over ``MODULE_LINES`` lines, but for those that keep upstream's layout."""
    found = []
    for path in sorted(package.rglob("*.py")):
        inside = path.relative_to(package).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MODULE_LINES and not inside.startswith(UPSTREAM_LAYOUT):
            found.append(f"{inside}: {lines} lines")
    return found


def test_no_module_is_over_the_documented_size() -> None:
    assert f"none is over {MODULE_LINES} lines" in " ".join(section("Modules").split())
    assert long_modules(PACKAGE) == []


def test_a_long_module_is_named_unless_it_keeps_upstreams_layout(tmp_path: Path) -> None:
    (tmp_path / "evaluation" / "metrics").mkdir(parents=True)
    (tmp_path / "evaluation" / "metrics" / "docs.py").write_text("x = 1\n" * 900)
    (tmp_path / "episode.py").write_text("x = 1\n" * 701)
    (tmp_path / "short.py").write_text("x = 1\n" * 700)
    assert long_modules(tmp_path) == ["episode.py: 701 lines"]
