"""Fixtures over real desktop containers, shared by tests/setup_and_evaluation, tests/guest_client and tests/settle
(a plugin loaded by tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.sandbox.base import API_PORT, Sandbox
from pytest_osworld.settings import Settings
from pytest_osworld.setup.assets import AssetCache
from pytest_osworld.setup.context import TaskContext
from tests.support.desktop import Desktop, desktop, desktop_image


@pytest.fixture(scope="session")
def desktop_ref(engine: Any) -> str:
    return desktop_image(engine)


@pytest.fixture(scope="session")
def shared_desktop(engine: Any, desktop_ref: str) -> Iterator[Desktop]:
    """One container for checks that only read, or write files no other test looks at."""
    with desktop(engine, desktop_ref) as made:
        yield made


@pytest.fixture
def fresh_desktop(engine: Any, desktop_ref: str) -> Iterator[Desktop]:
    """A container of its own, for tests whose state matters (windows, browser, settings)."""
    with desktop(engine, desktop_ref) as made:
        yield made


class DesktopSandbox(Sandbox):
    """A test container seen through the sandbox interface the episode hands to the runtime."""

    def __init__(self, made: Desktop) -> None:
        self.made = made

    @property
    def name(self) -> str:
        name: str = self.made.container.name
        return name

    def url(self, guest_port: int = API_PORT) -> str:
        return self.made.url(guest_port)

    def alive(self) -> bool:
        self.made.container.reload()
        status: str = self.made.container.status
        return status == "running"

    def logs(self, tail: int = 50) -> str:
        logs: bytes = self.made.container.logs(tail=tail)
        return logs.decode("utf-8", "replace")

    def describe(self) -> dict[str, Any]:
        return {"profile": "test", "container": self.made.container.id}

    def stop(self) -> None:
        self.made.stop()


def make_context(made: Desktop, tmp: Path, **settings: Any) -> TaskContext:
    resolved = Settings(**{"asset_cache": tmp / "assets", **settings})
    ctx = TaskContext.for_sandbox(
        DesktopSandbox(made),
        resolved,
        cache_dir=tmp / "cache",
        report_dir=tmp / "report",
        assets=AssetCache.from_settings(resolved),
    )
    made.clients.append(ctx.guest)  # closed with the container
    return ctx
