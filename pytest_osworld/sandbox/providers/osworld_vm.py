"""The ``osworld-vm`` sandbox: OSWorld's own VM image (``happysixd/osworld-docker``) over ``Ubuntu.qcow2``.

A container of a profile like any other (``profiles._osworld_vm`` says which: the qcow2 mounted
read-only at ``/System.qcow2``, KVM unless turned off, ``NET_ADMIN``); what this provider adds is
the qcow2. Before a session it must be set, be there on every environment host and be a qcow2
(not still the .zip); the run manifest gives its size and SHA-256. The qcow2 lives on the
environment host, so it is measured there by a probe container. Hashing 25 GB takes minutes; the
hash is kept in a small JSON cache keyed by host, path, size and mtime, so each version of the
file is hashed once.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
import docker.types

from pytest_osworld.fsutil import write_json
from pytest_osworld.sandbox.base import Progress
from pytest_osworld.sandbox.hosts import EngineHost
from pytest_osworld.sandbox.probe import probe_image, run_probe
from pytest_osworld.sandbox.profiles import QCOW2_SOURCE_URL, QCOW2_TARGET, ContainerProfile, Mount
from pytest_osworld.sandbox.providers.container import ContainerProvider
from pytest_osworld.sandbox.provides import Provides, declared

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings

# What OSWorld's Ubuntu.qcow2 provides, declared (the image cannot be read without booting it).
DECLARED_MANIFEST = "osworld-ubuntu.json"

QCOW2_MAGIC = "QFI"
_CACHE_LOCK = threading.Lock()


class OsworldVmProvider(ContainerProvider):
    """Starts containers of OSWorld's VM image, its qcow2 checked and described."""

    @classmethod
    def provides(cls, settings: Settings, *, build: bool = False, progress: Progress | None = None) -> Provides:
        return declared(settings.sandbox.name, DECLARED_MANIFEST)

    @classmethod
    def _pool_problems(cls, profile: ContainerProfile) -> list[str]:
        if profile.qcow2:
            return []
        return [
            "no qcow2 is set for osworld-vm: download Ubuntu.qcow2.zip (about 12 GB) from "
            f"{QCOW2_SOURCE_URL}, unzip it on the environment host, and set --osworld-upstream-vm-qcow2 "
            "/path/to/Ubuntu.qcow2 (or upstream_vm_qcow2 in the YAML profile)"
        ]

    @classmethod
    def _image_pin(cls, profile: ContainerProfile) -> str:
        return "--osworld-upstream-vm-image sha256:<id shown by docker load>"

    @classmethod
    def _probed_problems(
        cls,
        client: docker.DockerClient,
        probe: str,
        host: EngineHost,
        profile: ContainerProfile,
        labels: dict[str, str],
    ) -> list[str]:
        qcow2 = _check_qcow2(client, probe, profile.qcow2, host, labels) if profile.qcow2 else []
        return qcow2 + super()._probed_problems(client, probe, host, profile, labels)

    @classmethod
    def _checked_mounts(cls, profile: ContainerProfile) -> list[Mount]:
        # The qcow2's mount is checked above, with a message that says what to download.
        return [m for m in profile.mounts if m.source != profile.qcow2]

    @classmethod
    def _describe_host(
        cls, client: docker.DockerClient, host: EngineHost, profile: ContainerProfile, labels: dict[str, str]
    ) -> dict[str, Any]:
        entry = super()._describe_host(client, host, profile, labels)
        if profile.qcow2:
            probe = probe_image(client, [profile.image])
            entry["qcow2"] = (
                qcow2_identity(client, probe, profile.qcow2, host.display, labels)
                if probe
                else {"path": profile.qcow2, "problem": "no image with a shell to measure it"}
            )
        return entry


def _check_qcow2(
    client: docker.DockerClient, probe: str, path: str, host: EngineHost, labels: dict[str, str]
) -> list[str]:
    stat = stat_qcow2(client, probe, path, labels)
    if stat == "missing":
        return [
            f"the qcow2 {path} does not exist on environment host {host.display}: download Ubuntu.qcow2.zip "
            f"(about 12 GB) from {QCOW2_SOURCE_URL} and unzip it to {path} on that host, or point "
            f"--osworld-upstream-vm-qcow2 at where it is"
        ]
    if isinstance(stat, str):
        return [f"the qcow2 {path} on {host.display} {stat}"]
    size, _, is_qcow2 = stat
    if not is_qcow2:
        hint = " (is it still the .zip? unzip it first)" if path.endswith(".zip") or size < 1024 else ""
        return [f"{path} on {host.display} is not a qcow2 image: it lacks the QCOW2 header {QCOW2_MAGIC!r}{hint}"]
    return []


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-osworld"


def qcow2_mount(path: str) -> docker.types.Mount:
    # A Mount, not a volume bind: a bind of a missing path would make the engine create a folder there.
    return docker.types.Mount(target=QCOW2_TARGET, source=path, type="bind", read_only=True)


_STAT_SCRIPT = f"""
[ -f {QCOW2_TARGET} ] || {{ echo not-a-file; exit 3; }}
echo "stat $(stat -c '%s %Y' {QCOW2_TARGET}) $(head -c 3 {QCOW2_TARGET})"
"""


def stat_qcow2(
    client: docker.DockerClient, image: str, path: str, labels: dict[str, str]
) -> tuple[int, int, bool] | str:
    """(size, mtime, has the qcow2 magic) of the file on the engine host, or the problem in words."""
    result = run_probe(client, image, _STAT_SCRIPT, labels=labels, mounts=[qcow2_mount(path)], timeout=60)
    if not result.ran:
        text = result.output
        if "does not exist" in text or "no such file" in text.lower():
            return "missing"
        return f"cannot be checked ({text.strip()[:160]})"
    words = result.output.strip().split()
    if result.exit_code != 0 or len(words) < 3 or words[0] != "stat":
        return "not a file" if "not-a-file" in result.output else f"cannot be read ({result.output.strip()[:160]})"
    return int(words[1]), int(words[2]), len(words) > 3 and words[3] == QCOW2_MAGIC


def qcow2_identity(
    client: docker.DockerClient, image: str, path: str, host_display: str, labels: dict[str, str]
) -> dict[str, Any]:
    """``{path, size, sha256}`` of the qcow2 on the engine host; the hash from the cache when it is current."""
    stat = stat_qcow2(client, image, path, labels)
    if isinstance(stat, str):
        return {"path": path, "host": host_display, "problem": stat}
    size, mtime, _ = stat
    key = f"{host_display}|{path}|{size}|{mtime}"
    cache_file = cache_dir() / "qcow2-sha256.json"
    with _CACHE_LOCK:
        cache = _read_cache(cache_file)
    digest = cache.get(key)
    if digest is None:
        result = run_probe(
            client, image, f"sha256sum {QCOW2_TARGET}", labels=labels, mounts=[qcow2_mount(path)], timeout=4 * 3600
        )
        words = result.output.split()
        if result.exit_code != 0 or not words or len(words[0]) != 64:
            return {
                "path": path,
                "host": host_display,
                "size": size,
                "sha256": None,
                "problem": f"hashing failed: {result.output.strip()[:160]}",
            }
        digest = words[0]
        with _CACHE_LOCK:
            cache = _read_cache(cache_file)
            cache[key] = digest
            write_json(cache_file, cache)
    return {"path": path, "host": host_display, "size": size, "sha256": digest}


def _read_cache(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
