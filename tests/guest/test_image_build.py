"""The desktop image's build API on the real engine (its `pytest-osworld image` commands: tests/cli/test_image.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import docker
import pytest

from pytest_osworld.guest import build, rootfs
from pytest_osworld.guest.errors import DockerUnavailableError, ImageBuildError


def test_context_hash_is_stable_and_covers_the_ca_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = build.context_hash()
    assert first == build.context_hash()
    assert len(first) == 64
    other_ca = tmp_path / "ca.pem"
    other_ca.write_bytes(build.HOST_CA_BUNDLE.read_bytes() + b"\n# another CA\n")
    monkeypatch.setenv(build.CA_BUNDLE_ENV, str(other_ca))
    assert build.context_hash() != first


def test_missing_ca_bundle_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build.CA_BUNDLE_ENV, str(tmp_path / "absent.pem"))
    with pytest.raises(ImageBuildError, match="no CA bundle"):
        build.context_hash()


def test_the_build_context_ships_the_server_and_the_session(tmp_path: Path) -> None:
    names = {item.name for item in build._context_files()}
    assert {
        "Dockerfile",
        "bin/session.sh",
        "bin/supervised/lib.sh",
        "bin/supervised/guest-server",
        "etc/sudoers/pytest-osworld-session",
        "guest_server/app.py",
        "guest_server/supervision.py",
        "ca-certificates.crt",
    } <= names
    assert not any("__pycache__" in name for name in names)


@pytest.mark.docker
def test_ensure_image_gives_the_labelled_current_image(engine: docker.DockerClient, desktop_image: str) -> None:
    info = build.ensure_image(engine)  # current already: returns without building
    assert info.id == desktop_image
    assert info.build_hash == build.context_hash()
    assert f"{build.IMAGE_REPOSITORY}:latest" in info.tags
    assert f"{build.IMAGE_REPOSITORY}:{info.build_hash[:12]}" in info.tags
    assert info.size > 500_000_000
    # The image says which versions of its applications it holds (Debian's packages move between builds).
    assert info.manifest is not None and info.manifest["kind"] == "pytest-osworld/image"
    assert {"chromium", "libreoffice", "gedit"} <= set(info.applications)
    assert all(version and version != "None" for version in info.applications.values()), info.applications
    # What it provides, recorded at build time: the OSWorld apps each application serves, and PATH's executables.
    assert info.serves is not None and info.serves["chromium"] == ["chrome"]
    assert info.serves["libreoffice"] == [
        "libreoffice",
        "libreoffice_calc",
        "libreoffice_writer",
        "libreoffice_impress",
    ]
    assert info.serves["gnome-terminal"] == ["terminal"]
    assert info.commands is not None and info.commands == sorted(set(info.commands))
    assert {"socat", "pkill", "google-chrome", "soffice", "gedit", "python3", "xdotool"} <= set(info.commands)
    assert "gimp" in info.commands and "code" in info.commands and "wget" not in info.commands
    base = rootfs.default_spec()
    assert engine.images.get(base.reference).labels[rootfs.BASE_HASH_LABEL] == base.digest()


def test_no_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DockerUnavailableError, match="no Docker engine answers"):
        build.connect()


def test_build_lock_makes_a_second_builder_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys, time
                from pytest_osworld.guest import build
                with build._build_lock(print):
                    print("holding", flush=True)
                    sys.stdin.readline()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
    )
    try:
        stdin, stdout = holder.stdin, holder.stdout
        assert stdin is not None and stdout is not None  # both are PIPEs
        assert stdout.readline().strip() == "holding"
        said: list[str] = []

        def release_soon(line: str) -> None:
            said.append(line)
            stdin.write("\n")  # the holder finishes once we are waiting
            stdin.flush()

        started = time.monotonic()
        with build._build_lock(release_soon):
            pass
        assert said == ["another process is building the desktop image; waiting for it"]
        assert time.monotonic() - started < 30
    finally:
        holder.kill()
        holder.wait()
