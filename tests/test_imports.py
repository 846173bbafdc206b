"""The package's imports: no cycle between modules, none between packages, and every import down the layers.

Imports under ``if TYPE_CHECKING:`` do not count (they never run). A cycle hidden behind an import
inside a function is still a cycle: it only moves the failure to the first call; an upward import
inside a function is still an upward import. The layers are the table of ``docs/architecture.md``
(``## Layers``), read here: the docs and this test cannot drift apart.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "pytest_osworld"
ARCHITECTURE = REPO / "docs" / "architecture.md"
ROOT = "__init__"  # the package's own __init__.py, as the layer table names it


@dataclass(frozen=True)
class Import:
    """One import of a module of the package by another: where it is written, and what it resolves to."""

    module: str  # the importing module (dotted)
    path: Path
    line: int
    target: str  # the imported module of the package (dotted)


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for other in node.orelse:
                yield from _imports_in(other)
            continue
        yield from _imports_in(node)


def _imports_in(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _imports(node)


def import_edges(package: Path = PACKAGE) -> list[Import]:
    """Every import of a package module by another, with its file and line (a name imported from a
    package resolves to its submodule when there is one, else to the package itself)."""
    modules = _modules(package)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: list[Import] = []
    for name, path in sorted(modules.items()):
        package_name = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [resolve(alias.name) for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package_name.split(".")
                    parent = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                targets = [
                    resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in modules else resolve(base) for a in node.names
                ]
            for target in dict.fromkeys(targets):
                if target and target != name:
                    edges.append(Import(name, path, node.lineno, target))
    return edges


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    graph: dict[str, set[str]] = {name: set() for name in _modules(package)}
    for edge in import_edges(package):
        graph[edge.module].add(edge.target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


# --- packages


def package_of(module: str, modules: dict[str, Path]) -> str:
    """The package a module counts in, without the ``pytest_osworld.`` prefix: its own for a package's
    ``__init__``, its parent's for a module in a sub-package; a top-level module is its own node
    (``settings``, ``errors``: the units of the layer table), the package's ``__init__`` is ``__init__``."""
    parts = module.split(".")[1:]
    if not parts:
        return ROOT
    if modules[module].name == "__init__.py" or len(parts) == 1:
        return ".".join(parts)
    return ".".join(parts[:-1])


def package_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    graph: dict[str, set[str]] = {package_of(name, modules): set() for name in modules}
    for edge in import_edges(package):
        source, target = package_of(edge.module, modules), package_of(edge.target, modules)
        if source != target:
            graph[source].add(target)
    return graph


# --- layers


def read_layers(text: str) -> dict[str, int]:
    """The layer table of ``docs/architecture.md``: each member (a top-level module or package) -> its
    layer's rank, lowest 0. Raises ValueError when the table is missing or names a member twice."""
    marker = text.find("<!-- layers:")
    if marker < 0:
        raise ValueError("docs/architecture.md has no layer table (the <!-- layers: ... --> comment before it)")
    rows: list[list[str]] = []
    for line in text[marker:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in ("layer", "") or set(cells[0]) <= {"-"}:
            continue
        rows.append(cells)
    layers: dict[str, int] = {}
    for rank, cells in enumerate(rows):
        for member in re.findall(r"`([^`]+)`", cells[1]):
            if member in layers:
                raise ValueError(f"the layer table names {member} twice")
            layers[member] = rank
    if not layers:
        raise ValueError("the layer table of docs/architecture.md has no rows")
    return layers


def layer_names(text: str) -> list[str]:
    marker = text.index("<!-- layers:")
    names = []
    for line in text[marker:].splitlines()[1:]:
        if line.startswith("|"):
            cell = line.strip("|").split("|")[0].strip()
            if cell not in ("layer", "") and not set(cell) <= {"-"}:
                names.append(cell)
        elif names:
            break
    return names


def top_level(module: str) -> str:
    """The layer table's unit of a module: its top-level module or package (``__init__`` for the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def upward_imports(edges: list[Import], layers: dict[str, int], names: list[str], root: Path) -> list[str]:
    """Each import of a higher layer, as ``file:line: module imports target (layer a imports layer b)``."""
    found = []
    for edge in edges:
        source, target = top_level(edge.module), top_level(edge.target)
        if layers[target] > layers[source]:
            found.append(
                f"{edge.path.relative_to(root)}:{edge.line}: {edge.module} imports {edge.target} "
                f"({source}, layer {names[layers[source]]}, imports {target}, layer {names[layers[target]]})"
            )
    return found


def _members(package: Path) -> set[str]:
    return {top_level(name) for name in _modules(package)}


# --- the tests


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the whole package was read
    assert cycles(graph) == []


def test_a_cycle_through_a_function_level_import_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    source = "import x\ndef f():\n    from pytest_osworld import plugin\nif TYPE_CHECKING:\n    import hidden\n"
    names = [n.names[0].name if isinstance(n, ast.Import) else n.module for n in _imports(ast.parse(source))]
    assert names == ["x", "pytest_osworld"]


def test_the_layer_table_names_every_top_level_module_and_package_once() -> None:
    layers = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    members = _members(PACKAGE)
    assert len(members) > 20
    assert sorted(members - set(layers)) == [], "top-level modules or packages missing from the layer table"
    assert sorted(set(layers) - members) == [], "the layer table names what the package does not have"
    assert layer_names(ARCHITECTURE.read_text(encoding="utf-8")) == ["core", "infrastructure", "task", "run", "front"]


def test_every_import_goes_down_the_layers() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    edges = import_edges()
    assert len(edges) > 500  # every import was read
    assert upward_imports(edges, read_layers(text), layer_names(text), REPO) == []


def test_an_upward_import_fails_the_layer_check(tmp_path: Path) -> None:
    """A copy of the package with one planted upward import (inside a function, as the quietest one
    would be): the check names its file and line, what it imports and both layers."""
    copy = tmp_path / "pytest_osworld"
    shutil.copytree(
        PACKAGE, copy, ignore=lambda folder, names: [n for n in names if n.endswith((".pyc", "__pycache__"))]
    )
    errors = copy / "errors.py"
    lines = errors.read_text(encoding="utf-8").splitlines()
    planted = [
        "",
        "",
        "def _report() -> None:",
        "    from pytest_osworld.plugin import outcomes  # planted: core imports the front",
        "",
        "    del outcomes",
    ]
    errors.write_text("\n".join([*lines, *planted]) + "\n", encoding="utf-8")
    text = ARCHITECTURE.read_text(encoding="utf-8")
    found = upward_imports(import_edges(copy), read_layers(text), layer_names(text), tmp_path)
    assert found == [
        f"pytest_osworld/errors.py:{len(lines) + 4}: pytest_osworld.errors imports pytest_osworld.plugin.outcomes "
        "(errors, layer core, imports plugin, layer front)"
    ]
    # A new top-level module the table does not name is caught too.
    (copy / "newcomer.py").write_text('"""Not in the table."""\n', encoding="utf-8")
    assert sorted(_members(copy) - set(read_layers(text))) == ["newcomer"]


def test_the_layer_table_is_read_as_written() -> None:
    table = (
        "<!-- layers: -->\n| layer | members | what |\n|---|---|---|\n"
        "| low | `a`, `b` | x |\n| high | `c` | `not a member: third column` |\n\nafter\n| x | `d` | |\n"
    )
    assert read_layers(table) == {"a": 0, "b": 0, "c": 1}
    assert layer_names(table) == ["low", "high"]
    with pytest.raises(ValueError, match="names a twice"):
        read_layers(table.replace("`c`", "`a`"))


def test_no_circle_between_packages() -> None:
    """Strongly connected components of the package graph (sub-packages counted): there is none."""
    graph = package_graph()
    assert {"guest", "sandbox", "sandbox.ray", "sandbox.providers", "v2.api", "v2.llm", "settings"} <= set(graph)
    assert cycles(graph) == []


def test_a_circle_between_packages_is_found() -> None:
    """guest -> sandbox (the lost sandbox's error) and sandbox -> guest (the image's build) formed one
    before ``SandboxLost`` moved to the core; modules in sub-packages count for their sub-package."""
    modules = {
        "pytest_osworld.guest": Path("guest/__init__.py"),
        "pytest_osworld.guest.client": Path("guest/client.py"),
        "pytest_osworld.sandbox": Path("sandbox/__init__.py"),
        "pytest_osworld.sandbox.ray.agent": Path("sandbox/ray/agent.py"),
        "pytest_osworld.settings": Path("settings.py"),
    }
    assert package_of("pytest_osworld.guest.client", modules) == "guest"
    assert package_of("pytest_osworld.sandbox.ray.agent", modules) == "sandbox.ray"
    assert package_of("pytest_osworld.settings", modules) == "settings"
    assert cycles({"guest": {"sandbox"}, "sandbox": {"guest", "settings"}, "settings": set()}) == [["guest", "sandbox"]]


# --- upstream's module names (v2/upstream): re-exports only, imported by nothing of the package

UPSTREAM = "pytest_osworld.v2.upstream"  # desktop_env and evaluation_examples as task files import them


def _in_upstream(module: str) -> bool:
    return module == UPSTREAM or module.startswith(UPSTREAM + ".")


def upstream_importers(package: Path = PACKAGE) -> list[str]:
    """Each import of an upstream-named module by a module outside them, as ``file:line: a imports b``.
    (The loader aliases them for task files by name, through the import system: no import statement.)"""
    return [
        f"{edge.path.relative_to(package.parent)}:{edge.line}: {edge.module} imports {edge.target}"
        for edge in import_edges(package)
        if _in_upstream(edge.target) and not _in_upstream(edge.module)
    ]


def _is_reexport(node: ast.stmt) -> bool:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return True  # a docstring
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module == "__future__" or (node.module or "").startswith("pytest_osworld.v2."))
    if isinstance(node, ast.Assign):
        return (
            [ast.unparse(t) for t in node.targets] == ["__all__"]
            and isinstance(node.value, ast.List)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts)
        )
    return False


def upstream_implementation(package: Path = PACKAGE) -> list[str]:
    """Each statement of an upstream-named module that is not a docstring, an import from the project's
    V2 package or an ``__all__`` list of names, as ``file:line: statement``."""
    found = []
    for name, path in sorted(_modules(package).items()):
        if not _in_upstream(name):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not _is_reexport(node):
                first = ast.unparse(node).splitlines()[0]
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {first}")
    return found


def test_upstream_names_only_reexport_and_nothing_of_the_package_imports_them() -> None:
    from pytest_osworld.v2.api.loader import OWN_PACKAGES

    modules = _modules()
    assert sum(_in_upstream(name) for name in modules) > 10  # every upstream-named module was read
    assert upstream_implementation() == []
    assert upstream_importers() == []
    # The loader names them (for task files), and names nothing else.
    assert {
        "desktop_env": f"{UPSTREAM}.desktop_env",
        "evaluation_examples": f"{UPSTREAM}.evaluation_examples",
    } == OWN_PACKAGES
    assert all(own in modules for own in OWN_PACKAGES.values())


def test_implementation_in_an_upstream_name_or_an_import_of_one_fails(tmp_path: Path) -> None:
    """A copy of the package with a function planted in an upstream-named module and the episode
    importing one: both checks name the file and line."""
    copy = tmp_path / "pytest_osworld"
    shutil.copytree(
        PACKAGE, copy, ignore=lambda folder, names: [n for n in names if n.endswith((".pyc", "__pycache__"))]
    )
    shim = copy / "v2" / "upstream" / "desktop_env" / "file_source.py"
    lines = shim.read_text(encoding="utf-8").splitlines()
    shim.write_text("\n".join([*lines, "", "", "def asset_twice(path: str) -> str:", "    return path"]) + "\n")
    episode = copy / "v2" / "episode.py"
    source = episode.read_text(encoding="utf-8").splitlines()
    planted = "from pytest_osworld.v2.upstream.desktop_env.controllers.setup import SetupController"
    episode.write_text("\n".join([*source, planted]) + "\n")
    assert upstream_implementation(copy) == [
        f"pytest_osworld/v2/upstream/desktop_env/file_source.py:{len(lines) + 3}: def asset_twice(path: str) -> str:"
    ]
    assert upstream_importers(copy) == [
        f"pytest_osworld/v2/episode.py:{len(source) + 1}: pytest_osworld.v2.episode imports "
        "pytest_osworld.v2.upstream.desktop_env.controllers.setup"
    ]
