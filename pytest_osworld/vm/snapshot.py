"""Saved VM states in the store: the RAM and device state of a booted guest, and its disk then.

A state is made by booting a VM whose disk overlay lives in the store, waiting for the guest API,
then, through QMP, pausing it and migrating its RAM and device state into a file. The overlay is
never written again after that moment: it becomes the read-only backing of every later
sandbox's own overlay, which starts QEMU with ``-incoming`` from the file. Such a restore only
reads what the guest had in RAM (seconds) instead of booting (minutes under TCG).

One state per key (see ``qemu_args.state_key``), made by one process at a time under a host lock;
an incomplete one is never visible (made under a ``.partial`` name, renamed when complete).
"""

from __future__ import annotations

import json
import secrets
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docker

from pytest_osworld.errors import OsworldError
from pytest_osworld.vm import store
from pytest_osworld.vm.qmp import QmpClient

Progress = Callable[[str], None]


class StateError(OsworldError):
    """A state could not be saved (the message says why)."""


@dataclass(frozen=True)
class SavedState:
    key: str
    token: str  # told apart from a later state of the same key (see ``invalidate``)
    meta: dict[str, Any]

    @property
    def directory(self) -> str:
        return state_dir(self.key)

    @property
    def disk(self) -> str:
        return f"{self.directory}/disk.qcow2"

    @property
    def ram(self) -> str:
        return f"{self.directory}/ram.state"

    @property
    def vars(self) -> str:
        return f"{self.directory}/vars.fd"

    @property
    def incoming(self) -> str:
        return f"exec:cat {self.ram}"


def state_dir(key: str) -> str:
    return f"{store.STATES}/{key}"


def find(client: docker.DockerClient, qemu_image_id: str, key: str, labels: dict[str, str]) -> SavedState | None:
    """The complete state of ``key`` in the store, or None."""
    meta = store.read_json(client, qemu_image_id, f"{state_dir(key)}/meta.json", labels)
    if meta is None or meta.get("key") != key or not meta.get("token"):
        return None
    return SavedState(key=key, token=str(meta["token"]), meta=meta)


def partial_dir(key: str) -> tuple[str, str]:
    token = secrets.token_hex(6)
    return f"{store.STATES}/{key}.partial-{token}", token


def save(qmp: QmpClient, ram_path: str, *, deadline: float) -> float:
    """Pause the VM and write its RAM and device state to ``ram_path``; returns the seconds taken.

    The VM is paused first so the state is one consistent moment and is written in one pass.
    """
    started = time.monotonic()
    qmp.execute("stop")
    qmp.execute("migrate", {"uri": f"exec:cat > {shlex.quote(ram_path)}"})
    delay = 0.05
    while True:
        info = qmp.execute("query-migrate")
        status = info.get("status") if isinstance(info, dict) else None
        if status == "completed":
            return time.monotonic() - started
        if status in ("failed", "cancelled"):
            raise StateError(f"QEMU could not write the RAM state: {info.get('error-desc', status)}")
        if time.monotonic() >= deadline:
            raise StateError(f"writing the RAM state did not finish in time (migration status {status})")
        time.sleep(delay)  # poll interval of the migration status
        delay = min(delay * 1.5, 0.5)


_PUBLISH = r"""
set -eu
partial="$1"; final="$2"; meta="$3"
[ -s "$partial/ram.state" ] || { echo "no RAM state was written"; exit 3; }
[ -s "$partial/disk.qcow2" ] || { echo "no disk overlay was written"; exit 3; }
printf '%s\n' "$meta" > "$partial/meta.json"
rm -rf "$final"
mv "$partial" "$final"
# States cut short by a killed process are never finished: drop those older than an hour.
find /store/states -maxdepth 1 -name '*.partial-*' -mmin +60 -exec rm -rf {} + 2>/dev/null || true
du -sm "$final/ram.state" | cut -f1
"""


def publish(
    client: docker.DockerClient,
    qemu_image_id: str,
    partial: str,
    key: str,
    meta: dict[str, Any],
    labels: dict[str, str],
) -> int:
    """Make a saved state visible under its key; returns the RAM state's size in MiB."""
    result = store.run(
        client,
        qemu_image_id,
        _shell(_PUBLISH, partial, state_dir(key), json.dumps(meta, sort_keys=True)),
        labels=labels,
        writable=True,
        timeout=120,
    )
    if result.exit_code != 0:
        raise StateError(f"the saved state could not be stored: {result.output.strip()[-300:]}")
    try:
        return int(result.output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


_INVALIDATE = r"""
final="$1"; token="$2"
grep -q "\"token\": \"$token\"" "$final/meta.json" 2>/dev/null || exit 0
mv "$final" "$final.bad-$token" && rm -rf "$final.bad-$token"
"""


def invalidate(client: docker.DockerClient, qemu_image_id: str, state: SavedState, labels: dict[str, str]) -> None:
    """Drop a state that failed to restore, unless another process replaced it meanwhile."""
    store.run(client, qemu_image_id, _shell(_INVALIDATE, state.directory, state.token), labels=labels, writable=True)


def discard(client: docker.DockerClient, qemu_image_id: str, partial: str, labels: dict[str, str]) -> None:
    store.run(client, qemu_image_id, f"rm -rf {shlex.quote(partial)}", labels=labels, writable=True)


def _shell(script: str, *args: str) -> str:
    """``script`` run with positional arguments (``run_probe`` takes one ``sh -c`` string)."""
    return f"set -- {shlex.join(args)}\n{script}"
