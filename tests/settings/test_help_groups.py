"""``pytest --help`` shows the settings' options in titled groups, in the groups' order, each option once."""

from __future__ import annotations

import re

import pytest

from pytest_osworld.settings import FLAT, GROUPS, Settings, cli_names
from pytest_osworld.settings.layers import _is_bool

ORDER = ["model", "judge", "loop", "sandbox", "vm", "services", "reports", "gate", "tasks"]


def help_sections(pytester: pytest.Pytester) -> dict[str, list[str]]:
    """The --osworld-* options under each section title of ``pytest --help``."""
    result = pytester.runpytest("--help")
    assert result.ret == 0
    sections: dict[str, list[str]] = {}
    title = ""
    for line in result.outlines:
        if line and not line[0].isspace() and line.endswith(":"):
            title = line[:-1]
            sections.setdefault(title, [])
        for option in re.findall(r"^\s+(--osworld-[a-z0-9-]+)", line):
            sections.setdefault(title, []).append(option)
    return {title: options for title, options in sections.items() if options}


def test_the_groups_in_order_with_their_titles(pytester: pytest.Pytester) -> None:
    sections = help_sections(pytester)
    assert list(GROUPS) == ORDER
    titles = [title for title in sections if title.startswith("osworld ")]
    assert titles == [f"osworld {name}: {GROUPS[name].title}" for name in ORDER]
    first = next(iter(sections))  # the profile's group, before the settings'
    assert first.startswith("pytest-osworld: ") and sections[first] == ["--osworld-profile"]


def test_every_option_is_in_exactly_one_group_its_own(pytester: pytest.Pytester) -> None:
    sections = help_sections(pytester)
    seen: dict[str, list[str]] = {}
    for title, options in sections.items():
        for option in options:
            seen.setdefault(option, []).append(title)
    expected = {"--osworld-profile"}
    for name in cli_names():
        flag = "--osworld-" + name.replace("_", "-")
        expected.add(flag)
        if _is_bool(name):
            expected.add(flag.replace("--osworld-", "--osworld-no-", 1))
        group = FLAT[name][0]
        assert seen.get(flag) == [f"osworld {group}: {GROUPS[group].title}"], flag
    assert set(seen) == expected
    assert all(len(titles) == 1 for titles in seen.values()), {o: t for o, t in seen.items() if len(t) > 1}


def test_every_setting_is_in_one_group() -> None:
    fields = [(group, field) for group, model in GROUPS.items() for field in model.model_fields]
    assert sorted(FLAT.values()) == sorted(fields) and len(FLAT) == len(fields)
    assert set(Settings.model_fields) == set(GROUPS)
