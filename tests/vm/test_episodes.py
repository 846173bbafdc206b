"""Whole episodes on the vm sandbox: QEMU killed mid-task is a mask, and the bundled controls hold."""

from __future__ import annotations

import json
import shutil
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
# Under TCG LibreOffice takes tens of seconds to draw its first window: a WAIT must cover that.
SLOW = ("--osworld-wait-seconds", "30", "--osworld-action-pause", "2")


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


# The fewest tasks that prove episodes on the VM: a quick os task and a LibreOffice one (an application
# under QEMU), each from the saved state.
PASSING = "os-rename-report or writer-add-closing"


def test_qemu_killed_mid_task_masks_that_task_and_the_others_pass_from_the_snapshot(pytester: pytest.Pytester) -> None:
    """One run, one sandbox at a time: QEMU killed under one task masks just that task; the bundled tasks
    beside it pass, each on a VM restored from the saved state; nothing is left."""
    pytester.makeini("[pytest]\n")
    engine = docker.from_env()
    run_id = "vm-kill"
    acting = "import pathlib, time; pathlib.Path('/tmp/acting').touch(); time.sleep(100)"
    tasks = [task("killed", config=[], solution=[acting, "DONE"])]
    tasks += [json.loads(line) for line in BUNDLED.read_text().splitlines()]
    write_jsonl(pytester.path / "t.jsonl", tasks)
    shutil.copytree(BUNDLED.parent / "assets", pytester.path / "assets")  # the bundled tasks' files, beside them
    outcome: dict[str, Run] = {}
    args = ("-k", f"killed or {PASSING}", "--osworld-agent", "oracle", *VM_ARGS, *SLOW)
    runner = threading.Thread(
        target=lambda: outcome.setdefault("run", run_tasks(pytester, pytester.path / "t.jsonl", *args, run_id=run_id)),
    )
    runner.start()
    killed_in = None
    deadline = time.monotonic() + 900
    while runner.is_alive() and time.monotonic() < deadline and killed_in is None:
        time.sleep(0.5)  # poll interval: is the task's action running in a sandbox of the run yet?
        for container in engine.containers.list(
            filters={"label": [f"{LABEL_RUN_ID}={run_id}", f"{LABEL_ROLE}=sandbox"]}
        ):
            # Asked from inside the QEMU container (busybox wget): pytester drops modules imported
            # during its test, so this process must not start using an HTTP client here. A sandbox of
            # an earlier task may end between the listing and the question.
            try:
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
            except docker.errors.APIError:
                continue
            if asked.exit_code == 0:
                kill = container.exec_run(["sh", "-c", "kill -KILL $(cat /run/vm/qemu.pid)"])
                assert kill.exit_code == 0, kill.output
                killed_in = container.id
    runner.join(timeout=900)
    assert killed_in is not None, "the task's action never started in a sandbox"
    run = outcome["run"]
    assert run.result.parseoutcomes().get("masked") == 1, run.result.stdout.str()
    record = run.record("os/killed")
    assert record["termination"] == "sandbox_lost" and record["masked"] is True and record["score"] is None
    assert record["sandbox"]["profile"] == "vm"
    passed = {k: r for k, r in run.records().items() if k != "os/killed"}
    assert {r["domain"] for r in passed.values()} == {"os", "libreoffice_writer"}, run.result.stdout.str()
    assert {k: r["score"] for k, r in passed.items()} == dict.fromkeys(passed, 1.0), run.result.stdout.str()
    assert {r["sandbox"]["reset"] for r in passed.values()} == {"snapshot"}
    left = engine.containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={run_id}"})
    assert [c.name for c in left] == []
    assert _qemu_processes_of(killed_in) == []


def test_the_null_control_scores_zero_on_the_vm(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    null = run_tasks(pytester, BUNDLED, "-k", PASSING, "--osworld-agent", "null", *VM_ARGS, run_id="vm-null")
    scores = {k: r["score"] for k, r in null.records().items()}
    assert scores == {"os/os-rename-report": 0.0, "libreoffice_writer/writer-add-closing": 0.0}, (
        null.result.stdout.str()
    )
    assert {r["sandbox"]["reset"] for r in null.records().values()} == {"snapshot"}
