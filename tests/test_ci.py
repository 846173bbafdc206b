"""CI runs exactly the test command the README gives, and the README's fast loop names the marker the
suite uses for tests that need the Docker engine."""

from __future__ import annotations

import re

from tests.support.engine_guard import MARKER
from tests.support.paths import REPO


def _readme_commands() -> list[str]:
    blocks = re.findall(r"```\n(.*?)```", (REPO / "README.md").read_text(), flags=re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_ci_runs_the_readmes_test_command() -> None:
    prefix = "python3 -m pytest tests"
    tests = [c for c in _readme_commands() if c.startswith(prefix) and "-m" not in c.removeprefix(prefix).split()]
    assert len(tests) == 1, tests
    ci = (REPO / ".ci" / "run").read_text()
    assert f"phase tests {tests[0]}\n" in ci, tests[0]


def test_the_readmes_fast_loop_deselects_the_engines_tests() -> None:
    assert f'python3 -m pytest tests -m "not {MARKER}"' in _readme_commands()
