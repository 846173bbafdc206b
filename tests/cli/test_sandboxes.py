"""``pytest-osworld sandboxes`` lists running sandboxes with a live view that really is a VNC server."""

from __future__ import annotations

import re
import socket

import docker
import pytest

from pytest_osworld.cli import main as cli_main
from pytest_osworld.sandbox import Owner, make_provider
from pytest_osworld.settings import Settings

pytestmark = pytest.mark.docker


def test_a_running_sandbox_shows_its_live_view(
    engine: docker.DockerClient, run_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = make_provider(Settings(), Owner(run_id=run_id))
    sandbox = provider.start(task_key="os/live-view")
    try:
        assert cli_main(["sandboxes", "--run-id", run_id]) == 0
        line = capsys.readouterr().out.strip()
        assert f"run {run_id}" in line and "os/live-view" in line
        api = re.search(r"api (http://\S+?),", line)
        vnc = re.search(r"live view vnc://(\S+):(\d+)", line)
        assert api and api.group(1) == sandbox.api_url
        assert vnc
        with socket.create_connection((vnc.group(1), int(vnc.group(2))), timeout=10) as conn:
            assert conn.recv(12).startswith(b"RFB ")  # the VNC protocol's greeting
    finally:
        sandbox.stop()
        provider.close()
    assert cli_main(["sandboxes", "--run-id", run_id]) == 0
    assert capsys.readouterr().out.strip() == f"no running sandbox of run {run_id}"
