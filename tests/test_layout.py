"""The tests' own layout: what test modules share lives in helper modules (``tests/support/`` or a
folder's own), never in another test module, so that running or moving one test file never drags in
another one's tests, fixtures or module-level setup."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imports_of_test_modules(root: Path = TESTS) -> list[str]:
    """``file:line module`` for each import of a test module (``test_*.py``) by another module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if any(part.endswith("_data") for part in path.relative_to(root).parts):
            continue  # task files the tests read, not the tests' code (one is broken on purpose)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):  # the module, and what is taken from it (a module or a test)
                names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[-1].startswith("test_"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_no_module_imports_a_test_module() -> None:
    assert imports_of_test_modules() == []


def test_an_import_of_a_test_module_is_found(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("def helper() -> int:\n    return 1\n")
    (tmp_path / "test_b.py").write_text("import os\n\nfrom tests.x.test_a import helper\n")
    (tmp_path / "support.py").write_text("import tests.x.test_a\n")
    (tmp_path / "helpers.py").write_text("from tests.x import test_a\n")
    (tmp_path / "v2_data").mkdir()
    (tmp_path / "v2_data" / "task_1.py").write_text("from tests.x.test_a import (\n")  # data, and broken
    assert imports_of_test_modules(tmp_path) == [
        "helpers.py:1 tests.x.test_a",
        "support.py:1 tests.x.test_a",
        "test_b.py:3 tests.x.test_a",
    ]
