"""Whole episodes on the vm sandbox: QEMU killed mid-task is a mask, and the bundled controls hold."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import docker
import pytest

from pytest_osworld.sandbox import LABEL_ROLE, LABEL_RUN_ID
from tests.episode.runs import BUNDLED, Run, run_tasks
from tests.support.taskfactory import task, write_jsonl
from tests.vm.conftest import TEST_MEMORY

pytestmark = pytest.mark.docker

DOMAINS = "os or libreoffice_calc or libreoffice_writer"
VM_ARGS = (
    "--osworld-sandbox",
    "vm",
    "--osworld-vm-accel",
    "tcg",
    "--osworld-vm-memory",
    TEST_MEMORY,
    "--osworld-reset",
    "snapshot",
)


def _qemu_processes_of(container_id: str) -> list[int]:
    """Host pids of QEMU processes that ran in that container (its cgroup names it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.joinpath("comm").read_text().strip() != "qemu-system-x86":
                continue
            if container_id in proc.joinpath("cgroup").read_text():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_qemu_killed_mid_task_masks_the_task_and_leaves_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    engine = docker.from_env()
    run_id = "vm-kill"
    acting = "import pathlib, time; pathlib.Path('/tmp/acting').touch(); time.sleep(100)"
    write_jsonl(pytester.path / "t.jsonl", [task("killed", config=[], solution=[acting, "DONE"])])
    outcome: dict[str, Run] = {}
    runner = threading.Thread(
        target=lambda: outcome.setdefault(
            "run", run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle", *VM_ARGS, run_id=run_id)
        ),
    )
    runner.start()
    killed_in = None
    deadline = time.monotonic() + 600
    while runner.is_alive() and time.monotonic() < deadline and killed_in is None:
        time.sleep(0.5)  # poll interval: is the task's action running in a sandbox of the run yet?
        for container in engine.containers.list(
            filters={"label": [f"{LABEL_RUN_ID}={run_id}", f"{LABEL_ROLE}=sandbox"]}
        ):
            # Asked from inside the runner container (busybox wget): pytester drops modules imported
            # during its test, so this process must not start using an HTTP client here.
            asked = container.exec_run(
                [
                    "busybox",
                    "wget",
                    "-q",
                    "-O",
                    "/dev/null",
                    "--post-data",
                    "file_path=/tmp/acting",
                    "http://127.0.0.1:5000/file",
                ]
            )
            if asked.exit_code == 0:
                kill = container.exec_run(["sh", "-c", "kill -KILL $(cat /run/vm/qemu.pid)"])
                assert kill.exit_code == 0, kill.output
                killed_in = container.id
    runner.join(timeout=600)
    assert killed_in is not None, "the task's action never started in a sandbox"
    run = outcome["run"]
    assert run.result.parseoutcomes().get("masked") == 1, run.result.stdout.str()
    record = run.record("os/killed")
    assert record["termination"] == "sandbox_lost" and record["masked"] is True and record["score"] is None
    assert record["sandbox"]["profile"] == "vm"
    left = engine.containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={run_id}"})
    assert [c.name for c in left] == []
    assert _qemu_processes_of(killed_in) == []


@pytest.mark.slow
def test_oracle_passes_and_null_scores_zero_on_the_bundled_os_and_libreoffice_tasks(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    # Under TCG LibreOffice takes tens of seconds to draw its first window: a WAIT must cover that.
    slow = ("--osworld-wait-seconds", "30", "--osworld-settle", "2")
    oracle = run_tasks(
        pytester, BUNDLED, "-m", DOMAINS, "--osworld-agent", "oracle", *VM_ARGS, *slow, run_id="vm-oracle"
    )
    records = oracle.records()
    domains = {r["domain"] for r in records.values()}
    assert domains == {"os", "libreoffice_calc", "libreoffice_writer"}, domains
    assert {k: r["score"] for k, r in records.items()} == dict.fromkeys(records, 1.0), oracle.result.stdout.str()
    assert {r["sandbox"]["reset"] for r in records.values()} == {"snapshot"}
    null = run_tasks(pytester, BUNDLED, "-m", DOMAINS, "--osworld-agent", "null", *VM_ARGS, run_id="vm-null")
    scores = {k: r["score"] for k, r in null.records().items()}
    assert scores == dict.fromkeys(records, 0.0), null.result.stdout.str()
