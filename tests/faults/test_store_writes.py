"""The run store under a file system that refuses writes, and after a writer that died mid-write.

A file-size limit (``RLIMIT_FSIZE``, in a child process) stands for a full disk without root: a write
that crosses it is cut short and the next one fails, as on a disk that fills up (the fault matrix fills
a real tmpfs, tests/faults/test_matrix.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.store import RunStore

CHILD = r"""
import json, resource, signal, sys
from pathlib import Path
from pytest_osworld.record import StepRecord, TaskResult, Termination
from pytest_osworld.results.store import RunStore, StoreError

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
store = RunStore(Path(sys.argv[1]), keep_screenshots=False)
key = "os/t1"
big = "x" * 3000
store.write_step(key, StepRecord(step_num=1, action_timestamp="t", action="first"))
size = (store.path_of(key) / "traj.jsonl").stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 1000, resource.RLIM_INFINITY))
seen = []
try:
    store.write_step(key, StepRecord(step_num=2, action_timestamp="t", action=big))  # crosses the limit
except StoreError as exc:
    seen.append(str(exc))
record = TaskResult(run_id="r", task_id="t1", domain="os", termination=Termination.DONE, score=1.0, message=big * 2)
try:
    store.write_result(record)
except StoreError as exc:
    seen.append(str(exc))
print(json.dumps(seen))
"""


def test_a_refused_write_is_a_store_error_and_leaves_whole_lines(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", CHILD, str(run_dir)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    errors = json.loads(done.stdout)
    assert len(errors) == 2, errors  # the step and the record: each a clear error, never a bare OSError
    assert all(f"could not write os/t1's files in {run_dir}" in e and "--osworld-resume" in e for e in errors)
    traj = (run_dir / "os" / "t1" / "traj.jsonl").read_text()
    assert traj.endswith("\n") and [json.loads(line)["step_num"] for line in traj.splitlines()] == [1]
    assert not (run_dir / "os" / "t1" / "result.json").exists()
    assert not [p for p in (run_dir / "os" / "t1").iterdir() if p.name.endswith(".tmp")]  # no half-written file


def test_what_a_dead_writer_left_half_done_is_discarded(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    folder = store.task_dir("os/t1")
    (folder / "traj.jsonl").write_text('{"step_num": 1}\n{"step_num": 2, "acti')  # torn by a kill mid-append
    (folder / ".result.json.abc.tmp").write_text('{"run_id": "r", "task')  # an atomic write never finished
    (folder / "step_1.png").write_bytes(b"\x89PNG")
    cleared = store.discard_unfinished("os/t1")
    assert sorted(cleared) == [".result.json.abc.tmp", "traj.jsonl (its torn last line)"]
    assert (folder / "traj.jsonl").read_text() == '{"step_num": 1}\n'
    assert sorted(p.name for p in folder.iterdir()) == ["step_1.png", "traj.jsonl"]
    assert store.discard_unfinished("os/t1") == []  # nothing more to clear
    assert store.discard_unfinished("os/never-ran") == []
    store.write_result(TaskResult(run_id="r", task_id="t1", domain="os", termination=Termination.WORKER_LOST))
    assert store.load_results()["os/t1"].masked


def test_an_attempt_set_aside_by_a_resume_keeps_no_half_written_file(tmp_path: Path) -> None:
    # The fault matrix's sigkill seed 2: the run killed while a record's files were written left a
    # temporary file, which the resume set aside under _superseded as it was.
    store = RunStore(tmp_path)
    folder = store.task_dir("os/t1")
    (folder / "traj.jsonl").write_text('{"step_num": 1}\n{"step_num": 2, "acti')
    (folder / ".result.txt.wbnazk59.tmp").write_text("1.")
    kept = store.begin("os/t1")
    assert kept is not None and kept.parent.parent.parent.name == "_superseded"
    assert sorted(p.name for p in kept.iterdir()) == ["traj.jsonl"]
    assert (kept / "traj.jsonl").read_text() == '{"step_num": 1}\n'
    assert not folder.exists() or not any(folder.iterdir())
