"""docs/settings.md is what the schema renders: regenerated here, compared with the committed page."""

from __future__ import annotations

from pathlib import Path

from pytest_osworld.settings import FLAT
from pytest_osworld.settings.reference import COMMAND, render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def test_the_committed_page_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), f"docs/settings.md is out of date; run: {COMMAND}"


def test_the_page_has_every_setting_once_in_its_group() -> None:
    page = render()
    for flat, (group, field) in FLAT.items():
        assert page.count(f"| `{flat}` | `{group}.{field}` |") == 1, flat
