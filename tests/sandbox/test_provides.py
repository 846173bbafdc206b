"""What a sandbox provides: image manifests old and new, the declared OSWorld image, providers' answers."""

from __future__ import annotations

import json
from typing import Any

import docker
import pytest

from pytest_osworld.guest.build import MANIFEST_LABEL, ImageInfo, parse_manifest
from pytest_osworld.sandbox.provides import MANIFESTS_DIR, REBUILD, declared, from_manifest
from pytest_osworld.sandbox.registry import provider_class
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.needs import Need

# The manifest of an image built before apps' "serves" and PATH's "commands" were recorded.
OLD: dict[str, Any] = {
    "kind": "pytest-osworld/image",
    "debian": "12.9",
    "applications": {"chromium": {"package": "chromium", "command": "google-chrome", "version": "120"}},
}
NEW: dict[str, Any] = {
    **OLD,
    "applications": {
        "chromium": {"package": "chromium", "command": "google-chrome", "version": "120", "serves": ["chrome"]},
        "libreoffice": {
            "package": "libreoffice-core",
            "command": "soffice",
            "version": "7.4",
            "serves": ["libreoffice_calc", "libreoffice_writer"],
        },
    },
    "commands": ["google-chrome", "socat", "soffice"],
}


def _info(manifest: dict[str, Any] | None) -> ImageInfo:
    text = json.dumps(manifest) if manifest is not None else None
    return ImageInfo(id="sha256:x", size=1, build_hash="h", tags=(), manifest=parse_manifest(text))


def test_a_new_manifest_says_which_apps_and_commands() -> None:
    found = from_manifest("desktop", parse_manifest(json.dumps(NEW)), "image d:1")
    assert found.known and found.problem is None
    assert found.apps == {"chrome", "libreoffice_calc", "libreoffice_writer"}
    assert found.has(Need("app", "chrome")) and found.has(Need("command", "socat"))
    assert not found.has(Need("app", "gimp")) and not found.has(Need("command", "nautilus"))
    info = _info(NEW)
    assert info.serves == {"chromium": ["chrome"], "libreoffice": ["libreoffice_calc", "libreoffice_writer"]}
    assert info.commands == ["google-chrome", "socat", "soffice"]


def test_an_old_manifest_is_unknown_and_says_to_rebuild() -> None:
    info = _info(OLD)
    assert info.applications == {"chromium": "120"}  # what old images told still reads
    assert info.serves is None and info.commands is None
    found = from_manifest("desktop", info.manifest, "image d:1")
    assert not found.known and not found.has(Need("app", "chrome"))
    assert found.problem == f"image d:1 was built before manifests listed apps and commands; {REBUILD}"
    assert REBUILD == "rebuild the image: pytest-osworld image build"
    none = from_manifest("desktop", _info(None).manifest, "image d:0")
    assert none.problem == f"image d:0 carries no image manifest; {REBUILD}"
    half = {**NEW, "applications": {**NEW["applications"], "gedit": {"command": "gedit"}}}
    assert "application 'gedit' has no 'serves' list" in (from_manifest("desktop", half, "i").problem or "")


def test_the_declared_osworld_image_provides_every_osworld_app() -> None:
    found = provider_class("osworld-vm", Settings(sandbox="osworld-vm")).provides(Settings(sandbox="osworld-vm"))
    assert found.known, found.problem
    assert found.source == "declared manifest osworld-ubuntu.json"
    osworld_domains = {"chrome", "gimp", "libreoffice_calc", "libreoffice_impress", "libreoffice_writer"}
    assert osworld_domains | {"thunderbird", "vlc", "vs_code", "terminal"} <= found.apps
    assert found.commands is not None and {"socat", "pkill", "nautilus", "python", "code", "gimp"} <= found.commands
    raw = json.loads((MANIFESTS_DIR / "osworld-ubuntu.json").read_text())
    assert raw["commands"] == sorted(set(raw["commands"])), "keep the declared commands sorted, once each"


def test_a_declared_manifest_that_cannot_be_read_is_unknown_with_its_path() -> None:
    found = declared("osworld-vm", "absent.json")
    assert not found.known and "absent.json" in (found.problem or "")


@pytest.mark.docker
def test_an_image_without_a_manifest_label_is_unknown(engine: docker.DockerClient, stand_in: str) -> None:
    settings = Settings(sandbox="mine", sandbox_profiles={"mine": {"image": stand_in}})
    found = provider_class("mine", settings).provides(settings)
    assert not found.known
    assert f"image {stand_in}" in found.source
    assert f"give the image the label {MANIFEST_LABEL}" in (found.problem or "")
    gone = Settings(sandbox="mine", sandbox_profiles={"mine": {"image": "pytest-osworld/absent:never"}})
    missing = provider_class("mine", gone).provides(gone)
    assert not missing.known and "is not on the engine" in (missing.problem or "")


def test_the_vm_on_a_disk_of_ones_own_is_unknown() -> None:
    settings = Settings(sandbox="vm", vm_qcow2="/vms/Ubuntu.qcow2")
    found = provider_class("vm", settings).provides(settings)
    assert not found.known and "--sandbox osworld-vm" in (found.problem or "")
