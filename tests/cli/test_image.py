"""The `pytest-osworld image` commands on the real engine (the build API: tests/guest/test_image_build.py)."""

from __future__ import annotations

import docker
import pytest

from pytest_osworld.cli import main
from pytest_osworld.guest import build


@pytest.mark.docker
def test_cli_image_info_prints_the_image(desktop_image: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "info"]) == 0
    out = capsys.readouterr().out
    assert desktop_image in out
    assert build.context_hash() in out
    assert "current" in out
    info = build.image_info(docker.from_env())
    assert info is not None
    for name, version in info.applications.items():
        assert f"app:        {name} {version}" in out
    assert info.commands is not None and f"commands:   {len(info.commands)} on PATH" in out
    assert "app:        chromium " in out and "(serves chrome)" in out


@pytest.mark.docker
def test_cli_image_build_is_a_no_op_when_current(desktop_image: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "build"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_cli_without_engine_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    assert main(["image", "info"]) == 2
    assert "no Docker engine answers" in capsys.readouterr().err
