"""The build pieces every project image shares, on the real engine with the project's base rootfs."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import docker
import docker.errors
import pytest

from pytest_osworld.guest import rootfs
from pytest_osworld.guest.docker_build import ContextFile, run_build, untag_stale
from pytest_osworld.guest.errors import ImageBuildError

pytestmark = pytest.mark.docker

REPOSITORY = "pytest-osworld/build-test"
DOCKERFILE = "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY run.sh /run.sh\nRUN /run.sh\n"


@pytest.fixture
def base(engine: docker.DockerClient) -> str:
    return rootfs.ensure_base(engine, rootfs.default_spec(), lambda line: None)


@pytest.fixture
def repository(engine: docker.DockerClient) -> Iterator[str]:
    yield REPOSITORY
    for image in engine.images.list(name=REPOSITORY):
        for tag in image.tags:
            if tag.startswith(f"{REPOSITORY}:"):  # not the base's own tag, which some tests reuse
                engine.images.remove(tag)


def files(script: str) -> list[ContextFile]:
    return [ContextFile("Dockerfile", DOCKERFILE.encode()), ContextFile("run.sh", script.encode(), executable=True)]


def test_a_build_gives_the_image_with_its_labels_and_the_context_as_given(
    engine: docker.DockerClient, base: str, repository: str
) -> None:
    lines: list[str] = []
    tag = f"{repository}:{secrets.token_hex(4)}"
    marker = secrets.token_hex(8)  # a fresh script: no cached layer can stand in for the run
    image_id = run_build(
        engine,
        files(f"#!/bin/sh\necho built {marker} > /built\n"),
        tag=tag,
        buildargs={"BASE_IMAGE": base},
        labels={"io.pytest-osworld.test": marker},
        what="test image",
        error=ImageBuildError,
        progress=lines.append,
    )
    image = engine.images.get(tag)
    assert image.id == image_id
    assert image.labels["io.pytest-osworld.test"] == marker
    # The executable bit came through the tar (the RUN would fail otherwise) and the file was written.
    output = engine.containers.run(image_id, ["cat", "/built"], remove=True)
    assert output.decode().strip() == f"built {marker}"
    assert any(line.strip().startswith("Step ") and "RUN /run.sh" in line for line in lines), lines


def test_a_failing_step_is_the_given_error_with_the_step_and_the_last_output(
    engine: docker.DockerClient, base: str, repository: str
) -> None:
    script = f"#!/bin/sh\necho about to fail {secrets.token_hex(4)}\nexit 7\n"
    with pytest.raises(ImageBuildError) as info:
        run_build(
            engine,
            files(script),
            tag=f"{repository}:broken",
            buildargs={"BASE_IMAGE": base},
            labels={},
            what="test image",
            error=ImageBuildError,
            progress=lambda line: None,
        )
    message = str(info.value)
    assert message.startswith("the test image build failed at Step 4/4:")
    assert "about to fail" in message and "code: 7" in message


def test_untag_stale_keeps_only_the_tags_asked_for(engine: docker.DockerClient, base: str, repository: str) -> None:
    for name in ("old1", "old2", "keep", "latest"):
        engine.images.get(base).tag(repository, name)
    untag_stale(engine, repository, keep=(f"{repository}:keep", f"{repository}:latest"))
    tags = {tag for image in engine.images.list(name=repository) for tag in image.tags}
    assert {tag for tag in tags if tag.startswith(f"{repository}:")} == {f"{repository}:keep", f"{repository}:latest"}
    # The same image's tags in other repositories (here the base's own) are left alone.
    assert base in tags
