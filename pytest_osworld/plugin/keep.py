"""``--osworld-keep-failed N``: the sandboxes of up to N failed or masked tasks stay running for a look.

- At configure time: the options are checked (``--osworld-keep-failed-until-exit`` needs N; a provider
  that cannot keep its sandboxes, such as ``vm`` or ``ray``, refuses), before any sandbox starts.
- At a task's end (``plugin/sandbox.py``'s ``end_sandbox``, from the ``osworld_sandbox`` teardown and
  an OSWorld-V2 item's test function, calls :func:`keep_after_test`):
  a failed or masked task whose sandbox is still alive takes a slot of the run's ledger
  (``sandbox/kept.py``), its container is renamed to say why, its record notes it under
  ``sandbox.kept``, and the process that owns the run's terminal prints where to reach it.
- At the run's end (``plugin/sandbox.py``'s ``pytest_sessionfinish`` calls :func:`before_run_end` before
  it removes the run's containers): with ``--osworld-keep-failed-until-exit``, a wait for Enter or the
  timeout; the terminal summary lists what was kept.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from pytest_osworld.errors import OsworldError
from pytest_osworld.plugin.items import OsworldItem
from pytest_osworld.plugin.run import get_run
from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.store import RESULT_JSON, RunStore
from pytest_osworld.results.views import mask_reason, status_of
from pytest_osworld.sandbox import (
    API_PORT,
    VNC_PORT,
    KeepFailedError,
    KeepLedger,
    KeptSandbox,
    KeptWhy,
    Owner,
    Sandbox,
    SandboxConfigError,
    provider_class,
)
from pytest_osworld.sandbox.kept import wait_for_enter
from pytest_osworld.sanitize import collect_secrets
from pytest_osworld.settings import Settings

log = logging.getLogger("pytest_osworld.sandbox")

KEPT_PROPERTY = "osworld_sandbox_kept"  # a user property of the task's teardown report (and JUnit's)
_KEPT = pytest.StashKey[list[KeptSandbox]]()


def check_options(settings: Settings) -> None:
    """Raises :class:`KeepFailedError` when the keep options cannot work as given."""
    if settings.sandbox.keep_failed_until_exit and not settings.sandbox.keep_failed:
        raise KeepFailedError(
            "--osworld-keep-failed-until-exit needs --osworld-keep-failed N (how many sandboxes of failed "
            "or masked tasks to keep)"
        )
    if not settings.sandbox.keep_failed:
        return
    try:
        provider = provider_class(settings.sandbox.name, settings)
    except SandboxConfigError:
        return  # an unknown sandbox: the session's check says so
    if not provider.keeps_sandboxes:
        raise KeepFailedError(
            f"--osworld-keep-failed is not supported by the {settings.sandbox.name!r} sandbox ({provider.__name__}): "
            "it cannot leave a task's sandbox running after the task; use a container sandbox (desktop, "
            "osworld-vm or a profile's own) or leave --osworld-keep-failed out"
        )


def pytest_configure(config: pytest.Config) -> None:
    settings = get_run(config).settings
    try:
        check_options(settings)
    except OsworldError as exc:
        raise pytest.UsageError(str(exc)) from None
    if settings.sandbox.keep_failed:
        config.pluginmanager.register(_KeepHooks(config), "osworld-keep-failed")


# --- a task's end
def why_kept(result: TaskResult | None) -> KeptWhy | None:
    """Why a task's sandbox is worth keeping: it failed with a valid score, or it was masked (not by an
    interrupt: the run is ending). None for a pass, a skip, or a task without a record."""
    if result is None or result.termination is Termination.INTERRUPTED:
        return None
    status = status_of(result)
    if status == "failed":
        return KeptWhy("failed", f"{result.score:g}")
    if status == "masked":
        return KeptWhy("masked", mask_reason(result))
    return None


def keep_after_test(item: pytest.Item, sandbox: Sandbox, owner: Owner, result: TaskResult | None = None) -> bool:
    """Keep ``sandbox`` of a failed or masked task when the run's budget allows; True when kept (then the
    caller must not stop it). ``result``: the task's record (default: the one its report left on the
    item). Never raises but for an interrupt: anything else removes it as usual."""
    run = get_run(item.config)
    limit = run.settings.sandbox.keep_failed
    task_item = item if isinstance(item, OsworldItem) else None
    if result is None and task_item is not None:
        result = task_item.osworld_result
    why = why_kept(result) if limit else None
    if why is None:
        return False
    key = task_item.run_key if task_item else item.nodeid
    try:
        if not sandbox.alive():
            return False  # nothing to look at: its record has its last log lines
        ledger = KeepLedger(run.run_dir, owner, limit)
        entry = ledger.reserve(lambda: _mark(sandbox, key, why, run.worker_id))
    except Exception as exc:  # noqa: BLE001 - a sandbox that could not be kept is removed, never leaked
        log.warning("could not keep the sandbox of %s (%s: %s); it is removed", key, type(exc).__name__, exc)
        return False
    if entry is None:
        return False
    _note_in_record(item, key, entry)
    item.user_properties.append((KEPT_PROPERTY, entry.line()))
    return True


def _mark(sandbox: Sandbox, key: str, why: KeptWhy, worker: str | None) -> KeptSandbox:
    name = sandbox.mark_kept(why.mark(key))
    return KeptSandbox(
        key=key,
        name=name,
        why=why.text,
        worker=worker,
        api=_url(sandbox, API_PORT),
        vnc=(_url(sandbox, VNC_PORT) or "").removeprefix("http://") or None,
        kept_at=time.time(),
    )


def _url(sandbox: Sandbox, port: int) -> str | None:
    try:
        return sandbox.url(port)
    except OsworldError:
        return None  # a profile that does not publish it


def _note_in_record(item: pytest.Item, key: str, entry: KeptSandbox) -> None:
    """The record says its sandbox was kept (``sandbox.kept``); nothing else of it changes."""
    run = get_run(item.config)
    store = RunStore.for_settings(run.run_dir, run.settings, collect_secrets(run.settings))
    path = store.path_of(key) / RESULT_JSON
    try:
        result = TaskResult.model_validate_json(path.read_text(encoding="utf-8"))
        result.sandbox = {**result.sandbox, "kept": {"name": entry.name, "why": entry.why}}
        store.write_result(result)
    except (OSError, ValueError, OsworldError) as exc:
        log.warning("could not note in %s that its sandbox was kept: %s", path, exc)
        return
    item.osworld_result = result  # type: ignore[attr-defined]  # TaskItem, V2TaskItem


class _KeepHooks:
    """The hooks of a session that keeps sandboxes (registered only then)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Where a kept sandbox is, said as it is kept (xdist's workers send the property to the controller)."""
        if report.when != "teardown" or hasattr(self.config, "workerinput"):
            return
        for name, value in report.user_properties:
            if name == KEPT_PROPERTY:
                reporter = self.config.pluginmanager.get_plugin("terminalreporter")
                if reporter is not None:
                    _end_progress_line(reporter)
                    reporter.write_line(f"osworld: kept for a look until the run ends: {value}")
                    reporter.flush()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        kept = self.config.stash.get(_KEPT, [])
        if not kept:
            return
        terminalreporter.write_sep("=", "osworld kept sandboxes")
        terminalreporter.write_line(f"{_count(len(kept))} kept for a look, removed at the run's end:")
        for entry in kept:
            terminalreporter.write_line(f"  {entry.line()}")


# --- the run's end
def before_run_end(session: pytest.Session, owner: Owner) -> None:
    """In the run's owner, before its containers are removed: what was kept, and with
    ``--osworld-keep-failed-until-exit`` the wait for Enter (or the timeout; not after Ctrl-C)."""
    config = session.config
    settings = get_run(config).settings
    if not settings.sandbox.keep_failed:
        return
    try:
        kept = KeepLedger(get_run(config).run_dir, owner, settings.sandbox.keep_failed).entries()
    except OSError as exc:
        log.warning("could not read the kept sandboxes' ledger: %s", exc)
        return
    config.stash[_KEPT] = kept
    if not kept or not settings.sandbox.keep_failed_until_exit:
        return
    write = _writer(config)
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        write("osworld: interrupted: the kept sandboxes are removed now")
        return
    write(f"osworld: {_count(len(kept))} kept for a look (`pytest-osworld sandboxes --run-id {owner.run_id}`):")
    for entry in kept:
        write(f"  {entry.line()}")
    write(f"osworld: {_wait(config, settings.sandbox.keep_failed_timeout, write)}; removing the kept sandboxes")


def _wait(config: pytest.Config, timeout: float, write: Callable[[str], None]) -> str:
    """Wait for Enter on the terminal, at most ``timeout`` seconds; says how the wait ended."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    if capman is not None:
        capman.suspend_global_capture(in_=True)  # pytest holds stdin (fd 0) on /dev/null otherwise
    begun = time.monotonic()
    tty = False
    try:
        tty = os.isatty(0)
        if tty:
            write(f"osworld: press Enter to remove them (at most {timeout:g} s, --osworld-keep-failed-timeout)")
        else:
            write(
                f"osworld: no terminal to press Enter on (stdin is not a tty): they are removed in {timeout:g} s "
                "(--osworld-keep-failed-timeout), or when a line is read from stdin"
            )
        try:
            ended = wait_for_enter(0, timeout)
        except OSError:  # no stdin at all
            ended = "closed"
        if ended == "closed" and not tty:
            time.sleep(max(0.0, timeout - (time.monotonic() - begun)))  # stdin at its end: only the timeout can end it
            ended = "timeout"
    except KeyboardInterrupt:
        return "interrupted"
    finally:
        if capman is not None:
            capman.resume_global_capture()
            capman.suspend_global_capture()  # as it was at the session's end: output not captured, stdin held
    said = {"enter": "Enter pressed" if tty else "a line was read from stdin", "closed": "the terminal closed"}
    return said.get(ended, f"{timeout:g} s passed")


def _end_progress_line(reporter: Any) -> None:
    """Start a new line when the progress characters (``F.``) have begun one: xdist's progress does not
    tell the reporter's ``ensure_newline``."""
    reporter.ensure_newline()
    writer: Any = getattr(reporter, "_tw", None)
    if writer is not None and int(getattr(writer, "width_of_current_line", 0) or 0) > 0:
        reporter.write("\n")


def kept_count(config: pytest.Config) -> int:
    """How many sandboxes the run kept (known to the run's owner once ``before_run_end`` ran)."""
    return len(config.stash.get(_KEPT, []))


def _writer(config: pytest.Config) -> Callable[[str], None]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def write(line: str) -> None:
        if reporter is not None:
            reporter.write_line(line)
            reporter.flush()  # a person reads these while the run waits (stdout may be a pipe)

    return write


def _count(n: int) -> str:
    return f"{n} sandbox{'es' if n != 1 else ''} of failed or masked tasks"
