"""Every object the plugin registers with pytest's plugin manager can be hashed: pytest before 8.4 keeps
the objects it reads fixtures from in a set, so an unhashable one (a dataclass with ``eq``) stops every run
with an INTERNALERROR at the session's start on those versions, whichever pytest runs this test."""

from __future__ import annotations

import json

import pytest

CHECK_EVERY_PLUGIN = """
import json

def pytest_sessionfinish(session):
    manager = session.config.pluginmanager
    seen = {"names": [], "unhashable": []}
    for name, plugin in manager.list_name_plugin():  # a list: get_plugins() makes a set itself
        seen["names"].append(name)
        try:
            hash(plugin)
        except TypeError:
            seen["unhashable"].append(name)
    with open("plugins.json", "w") as out:
        json.dump(seen, out)
"""


def test_every_registered_plugin_object_is_hashable(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CHECK_EVERY_PLUGIN)
    pytester.makepyfile("def test_nothing(): pass")
    # Each option below makes the plugin register one more object of its own.
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--osworld-live",
        "0",
        "--osworld-keep-failed",
        "1",
        "--html",
        "report.html",
    )
    assert result.ret == 0, result.stdout.str()
    seen = json.loads((pytester.path / "plugins.json").read_text())
    assert {"osworld-live", "osworld-keep-failed", "osworld-html", "osworld-live-xdist"} <= set(seen["names"])
    assert seen["unhashable"] == []
    result.stdout.fnmatch_lines(["osworld: live page at http://127.0.0.1:*/"])
