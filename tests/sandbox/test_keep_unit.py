"""Keeping failed sandboxes, without an engine: why a task's sandbox is kept, what its name says, the
run's ledger shared by concurrent processes, and the wait for Enter on a real terminal (a pty)."""

from __future__ import annotations

import multiprocessing
import os
import pty
import re
import threading
import time
from pathlib import Path

import pytest

from pytest_osworld.plugin.keep import why_kept
from pytest_osworld.record import Termination
from pytest_osworld.sandbox import (
    KEPT_MARK,
    KeepLedger,
    KeptName,
    KeptSandbox,
    KeptWhy,
    Owner,
    is_kept,
    own_identity,
    read_kept_name,
)
from pytest_osworld.sandbox.kept import LEDGER, TASK_CHARS, owner_token, wait_for_enter
from tests.results.helpers import record

NAME = "pytest-osworld-run-1-gw0-3-ab12"


def test_why_a_tasks_sandbox_is_kept() -> None:
    assert why_kept(record("os/a", 0.0, Termination.DONE)) == KeptWhy("failed", "0")
    assert why_kept(record("os/a", 0.5, Termination.MAX_STEPS)) == KeptWhy("failed", "0.5")
    assert why_kept(record("os/a", None, Termination.SETUP_ERROR)) == KeptWhy("masked", "setup_error")
    assert why_kept(record("os/a", None, Termination.DONE)) == KeptWhy("masked", "done_without_score")
    # A pass, a skip, an interrupt (the run is ending) and a task without a record keep nothing.
    assert why_kept(record("os/a", 1.0, Termination.DONE)) is None
    assert why_kept(record("os/a", None, Termination.UNSUPPORTED)) is None
    assert why_kept(record("os/a", None, Termination.INTERRUPTED)) is None
    assert why_kept(None) is None


@pytest.mark.parametrize(
    ("why", "key", "mark", "text", "task"),
    [
        (KeptWhy("failed", "0"), "os/a1b2", "--kept-failed-score-0--os.a1b2", "failed with score 0", "os/a1b2"),
        (KeptWhy("failed", "0.25"), "os/x-y", "--kept-failed-score-0.25--os.x-y", "failed with score 0.25", "os/x-y"),
        (KeptWhy("failed", "-1"), "os/t", "--kept-failed-score-m1--os.t", "failed with score -1", "os/t"),
        (KeptWhy("failed", "1e-05"), "os/t", "--kept-failed-score-1em05--os.t", "failed with score 1e-05", "os/t"),
        (
            KeptWhy("masked", "sandbox_lost"),
            "libreoffice_calc/0bf05a7d-b28b-44d2-955a-50b41e24012a#r2",
            "--kept-masked-sandbox_lost--libreoffice_calc.0bf05a7d-b28b-44d2-955a-50b41e24012a.r2",
            "masked (sandbox_lost)",
            "libreoffice_calc/0bf05a7d-b28b-44d2-955a-50b41e24012a#r2",
        ),
    ],
)
def test_a_kept_containers_name_says_why_and_for_which_task(
    why: KeptWhy, key: str, mark: str, text: str, task: str
) -> None:
    assert why.mark(key) == mark and mark.startswith(KEPT_MARK)
    assert why.text == text
    name = NAME + mark
    assert is_kept(name) and not is_kept(NAME)
    # The engine's list puts a "/" before a name.
    assert read_kept_name(name) == read_kept_name("/" + name) == KeptName(text, task)
    assert read_kept_name(NAME) is None


def test_a_task_a_name_cannot_hold_is_kept_readable_and_short() -> None:
    mark = KeptWhy("masked", "odd reason/with:chars").mark("os/Ünïcode task " + "x" * 200)
    assert mark.startswith("--kept-masked-odd_reason_with_chars--os._n_code_task_xxx")
    assert len(mark) <= len("--kept-masked-odd_reason_with_chars--") + TASK_CHARS
    assert re.fullmatch(r"[a-zA-Z0-9_.-]+", mark)
    found = read_kept_name(NAME + mark)
    assert found is not None and found.why == "masked (odd_reason_with_chars)"
    assert found.task is not None and found.task.startswith("os/_n_code_task_xx")


def entry(key: str) -> KeptSandbox:
    return KeptSandbox(key=key, name=f"{NAME}--kept-failed-score-0", why="failed with score 0")


def test_the_ledger_keeps_at_most_its_limit(tmp_path: Path) -> None:
    owner = Owner(run_id="r1")
    ledger = KeepLedger(tmp_path / "run", owner, 2)
    calls: list[str] = []

    def keep(key: str) -> KeptSandbox:
        calls.append(key)
        return entry(key)

    assert ledger.reserve(lambda: keep("os/a")) is not None
    assert ledger.reserve(lambda: keep("os/b")) is not None
    assert ledger.reserve(lambda: keep("os/c")) is None
    assert calls == ["os/a", "os/b"]  # a full ledger marks nothing
    assert [e.key for e in ledger.entries()] == ["os/a", "os/b"]
    assert (tmp_path / "run" / LEDGER).is_file()


def test_a_failed_mark_takes_no_slot(tmp_path: Path) -> None:
    ledger = KeepLedger(tmp_path, Owner(run_id="r1"), 1)

    def broken() -> KeptSandbox:
        raise OSError("the engine refused the rename")

    with pytest.raises(OSError):
        ledger.reserve(broken)
    assert ledger.entries() == []
    assert ledger.reserve(lambda: entry("os/b")) is not None


def test_an_earlier_sessions_entries_do_not_count(tmp_path: Path) -> None:
    earlier = KeepLedger(tmp_path, Owner(run_id="r1", run_pid=1, run_process_start="boot:1"), 1)
    assert earlier.reserve(lambda: entry("os/a")) is not None
    now = KeepLedger(tmp_path, Owner(run_id="r1"), 1)  # this process owns the run now (a resume)
    assert now.token != earlier.token
    assert now.entries() == []
    assert now.reserve(lambda: entry("os/b")) is not None
    assert [e.key for e in now.entries()] == ["os/b"]


def test_workers_share_the_owners_token() -> None:
    # A worker's owner names the controller by its pid and start identity (plugin/sandbox.py's owner_of);
    # the controller's own owner names nobody: it is the run's process.
    controller = Owner(run_id="r1")
    worker = Owner(run_id="r1", worker_id="gw0", run_pid=os.getpid(), run_process_start=own_identity())
    assert owner_token(worker) == owner_token(controller)
    assert owner_token(Owner(run_id="r1", worker_id="gw0", run_pid=1, run_process_start="x")) != owner_token(controller)


def _reserve_in_process(run_dir: str, token_pid: int, start: str, key: str, barrier: object, out: object) -> None:
    ledger = KeepLedger(Path(run_dir), Owner(run_id="r1", run_pid=token_pid, run_process_start=start), 2)
    barrier.wait()  # type: ignore[attr-defined]

    def keep() -> KeptSandbox:
        time.sleep(0.05)  # a rename takes a moment: the others must wait for the lock meanwhile
        return entry(key)

    out.put((key, ledger.reserve(keep) is not None))  # type: ignore[attr-defined]


def test_concurrent_processes_keep_no_more_than_the_limit(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(6)
    out = context.Queue()
    processes = [
        context.Process(target=_reserve_in_process, args=(str(tmp_path), 4242, "boot:7", f"os/t{i}", barrier, out))
        for i in range(6)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
    results = dict(out.get(timeout=5) for _ in processes)
    assert sum(results.values()) == 2, results
    ledger = KeepLedger(tmp_path, Owner(run_id="r1", run_pid=4242, run_process_start="boot:7"), 2)
    assert sorted(e.key for e in ledger.entries()) == sorted(k for k, kept in results.items() if kept)


def test_enter_on_a_terminal_ends_the_wait() -> None:
    master, slave = pty.openpty()
    try:
        threading.Timer(0.3, lambda: os.write(master, b"\n")).start()
        begun = time.monotonic()
        assert wait_for_enter(slave, 30) == "enter"
        assert time.monotonic() - begun < 10
    finally:
        os.close(master)
        os.close(slave)


def test_the_wait_ends_at_its_timeout_or_when_its_input_closes() -> None:
    read, write = os.pipe()
    try:
        begun = time.monotonic()
        assert wait_for_enter(read, 0.3) == "timeout"
        assert time.monotonic() - begun >= 0.3
        os.write(write, b"not a whole line")
        assert wait_for_enter(read, 0.3) == "timeout"
        os.close(write)
        assert wait_for_enter(read, 30) == "closed"
    finally:
        os.close(read)
