"""Setup steps: ``config`` before the agent, ``evaluator.postconfig`` after it.

:func:`run_setup` runs the steps in order. A step that fails raises :class:`SetupError` (masked as
``setup_error``), or a valid zero when the step declares ``on_nonzero: score_zero``. A guest that
stops answering raises :class:`GuestUnreachable` as it is (masked as ``sandbox_lost``).

Where upstream's controller ignores a failure, so does this one, and says so in the step's note:
``launch`` of a program is checked (the guest refuses unknown programs), but a window action that
matches no window is not an error (upstream's guest never reports it). An ``execute`` step's exit
status does not fail it unless the step sets ``on_nonzero`` (a project extension).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_osworld.errors import OsworldError
from pytest_osworld.guest.client import ExecResult, GuestRequestError, GuestUnreachable
from pytest_osworld.guest.devtools import CdpSession, DevTools, DevToolsError
from pytest_osworld.setup.assets import HISTORY_EMPTY_URL
from pytest_osworld.setup.context import StepRecord, TaskContext
from pytest_osworld.setup.errors import AssetError, SetupError
from pytest_osworld.setup.placeholders import redact, substitute, uses_password
from pytest_osworld.setup.urls import compare_urls  # upstream matches tabs this way
from pytest_osworld.tasks.model import CREDENTIAL_STEP_TYPES

EXECUTE_MAX_FAILURES = 5  # upstream gives up on an execute step after 5 failed requests
UNTIL_POLL_S = 0.3  # upstream's pause between two runs of an `until` command
OPEN_ATTEMPTS = 5
TAB_LOAD_S = 60.0  # upstream's page.goto timeout when opening tabs
START_TAB_WAIT_S = 10.0  # a browser answers DevTools a moment before its start tab exists
# A page's server launched by an earlier step may not listen yet: its refusals are tried again this long.
REFUSED_RETRY_S = 10.0
CHROME_HISTORY = "~/.config/google-chrome/Default/History"
# Chrome's visit transition for a typed, top-level navigation, as upstream writes it.
TYPED_TRANSITION = 805306368
CHROME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)


class StepFailed(OsworldError):
    """A step's failure, worded for the user; :func:`run_setup` turns it into a :class:`SetupError`."""


Handler = Callable[[TaskContext, Any], str]


# --- the steps ------------------------------------------------------------------------------


def _download(ctx: TaskContext, step: Any) -> str:
    files = step.parameters.files
    for spec in files:
        if not spec.url or not spec.path:
            raise StepFailed(f"a file needs both 'url' and 'path' (got url={spec.url!r}, path={spec.path!r})")
        local = ctx.assets.path(spec.url)
        ctx.guest.upload(spec.path, local)
    return f"{len(files)} file(s)"


def _upload_file(ctx: TaskContext, step: Any) -> str:
    base = ctx.source_dir or Path.cwd()
    for spec in step.parameters.files:
        local = Path(spec.local_path).expanduser()
        if not local.is_absolute():
            local = base / local
        if not local.is_file():
            raise StepFailed(f"local file {local} does not exist (a relative path is read from {base})")
        ctx.guest.upload(spec.path, local)
    return f"{len(step.parameters.files)} file(s)"


def _launch(ctx: TaskContext, step: Any) -> str:
    command = step.parameters.command
    if not command:
        raise StepFailed("empty command")
    shell = bool(step.parameters.shell)
    command, note = through_proxy(ctx, command, shell)
    ctx.guest.launch(command, shell=shell)
    return note


def through_proxy(ctx: TaskContext, command: str | list[str], shell: bool) -> tuple[str | list[str], str]:
    """The command with ``--proxy-server`` when it starts ``google-chrome`` and the task holds the proxy
    service, as OSWorld's setup points the Chrome it launches at its proxy (``enable_proxy``). Upstream
    looks at a list's first word (a string without a shell is split first); so does this."""
    proxy = ctx.services.get("proxy")
    words = command.split() if isinstance(command, str) and not shell else command
    if proxy is None or not isinstance(words, list) or not words or words[0] != "google-chrome":
        return command, ""
    flag = f"--proxy-server={proxy.guest_url()}"
    return [*words, flag], f"through the proxy service ({flag})"


def _until_met(until: dict[str, Any], result: ExecResult) -> bool:
    # Any one of the given conditions ends the polling, as upstream.
    return (
        ("returncode" in until and result.returncode == until["returncode"])
        or ("stdout" in until and str(until["stdout"]) in result.output)
        or ("stderr" in until and str(until["stderr"]) in result.error)
    )


def _tail(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _execute(ctx: TaskContext, step: Any) -> str:
    params = step.parameters
    template = params.command
    if not template:
        raise StepFailed("empty command")
    command = substitute(template, ctx.settings)
    secret = ctx.settings.sandbox.client_password if uses_password(template) else None
    until = params.until or {}
    deadline = time.monotonic() + ctx.settings.loop.until_timeout
    failures = 0
    last_error = ""
    runs = 0
    while True:
        runs += 1
        result: ExecResult | None
        try:
            result = ctx.guest.execute(command, shell=bool(params.shell))
        except GuestRequestError as exc:
            if exc.status < 500:  # the guest refused the request itself: another try cannot change that
                raise StepFailed(redact(exc.message, secret)) from None
            failures += 1
            last_error = redact(exc.message, secret)
            result = None
        if result is not None:
            _save_output(ctx, params.stdout, result.output)
            _save_output(ctx, params.stderr, result.error)
            if not until or _until_met(until, result):
                break
        if failures >= EXECUTE_MAX_FAILURES:
            raise StepFailed(f"the guest failed the command {failures} times; last: {last_error}")
        if until and time.monotonic() >= deadline:
            shown = f"exit {result.returncode}, stdout {_tail(result.output, 120)!r}" if result else last_error
            raise StepFailed(
                f"'until' {until} not met after {runs} runs in {ctx.settings.loop.until_timeout:g} s (last: "
                f"{redact(shown, secret)}); raise until_timeout if the guest is just slow"
            )
        time.sleep(UNTIL_POLL_S)  # upstream's pause between two runs
    if step.on_nonzero and not until and result.returncode != 0:
        raise StepFailed(
            f"exited with status {result.returncode}: {redact(_tail(result.error or result.output), secret)}"
        )
    return f"exit {result.returncode}" + (f" after {runs} runs" if runs > 1 else "")


def _save_output(ctx: TaskContext, name: str | None, text: str) -> None:
    if name:
        ctx.cache_path(name).write_text(text, encoding="utf-8")


def _execute_with_verification(ctx: TaskContext, step: Any) -> str:
    """Run the command, then poll the verification until it passes (upstream does this in its guest)."""
    params = step.parameters
    if not params.command:
        raise StepFailed("empty command")
    template = params.command
    secret = ctx.settings.sandbox.client_password if uses_password(template) else None
    try:
        result = ctx.guest.execute(substitute(template, ctx.settings), shell=bool(params.shell))
    except GuestRequestError as exc:
        raise StepFailed(redact(exc.message, secret)) from None
    verification = params.verification or {}
    if not verification:
        return f"exit {result.returncode}"
    max_wait = float(params.max_wait_time if params.max_wait_time is not None else 10)
    interval = float(params.check_interval if params.check_interval is not None else 1.0)
    deadline = time.monotonic() + max_wait
    while True:
        if _verified(ctx, verification):
            return f"exit {result.returncode}, verified"
        if time.monotonic() + interval > deadline:
            raise StepFailed(f"verification {verification} did not pass within {max_wait:g} s")
        time.sleep(interval)  # the task's own check interval


def _verified(ctx: TaskContext, verification: dict[str, Any]) -> bool:
    if "window_exists" in verification:
        listing = ctx.guest.execute(["wmctrl", "-l"])
        if str(verification["window_exists"]).lower() not in listing.output.lower():
            return False
    if "command_success" in verification:
        try:
            if ctx.guest.execute(verification["command_success"], shell=True).returncode != 0:
                return False
        except GuestRequestError:
            return False
    return True


def _open(ctx: TaskContext, step: Any) -> str:
    path = step.parameters.path
    if not path:
        raise StepFailed("empty path")
    for attempt in range(OPEN_ATTEMPTS):
        try:
            ctx.guest.open_file(path)
            return ""
        except GuestRequestError as exc:
            # Upstream retries only the answers that say "not now" (502/503/504).
            if exc.status not in (502, 503, 504) or attempt == OPEN_ATTEMPTS - 1:
                raise StepFailed(f"cannot open {path}: {exc.message}") from None
        time.sleep(min(3 * 2**attempt, 30))  # upstream's backoff between two tries
    raise AssertionError("unreachable")


def _sleep(ctx: TaskContext, step: Any) -> str:
    seconds = float(step.parameters.seconds)
    if seconds < 0:
        raise StepFailed(f"seconds must not be negative (got {seconds:g})")
    time.sleep(seconds)  # the task asks for this pause
    return ""


def _window_action(action: str) -> Handler:
    def handle(ctx: TaskContext, step: Any) -> str:
        params = step.parameters
        if not params.window_name:
            raise StepFailed("empty window_name")
        call = ctx.guest.activate_window if action == "activate" else ctx.guest.close_window
        try:
            call(params.window_name, strict=bool(params.strict), by_class=bool(params.by_class))
        except GuestRequestError as exc:
            if exc.status == 404:  # upstream's guest answers 200 whether or not a window matched
                return f"no window matched {params.window_name!r}; ignored as upstream does"
            raise StepFailed(exc.message) from None
        return ""

    return handle


def _change_wallpaper(ctx: TaskContext, step: Any) -> str:
    if not step.parameters.path:
        raise StepFailed("empty path")
    ctx.guest.change_wallpaper(step.parameters.path)
    return ""


def _chrome_open_tabs(ctx: TaskContext, step: Any) -> str:
    """Open each URL in a new tab; a page the guest cannot load fails the step (upstream goes on).

    Upstream notes a failed ``page.goto`` and goes on, so a task whose site is unreachable starts from
    a browser that never visited it, and doing nothing can score (a cookie never set is "deleted").
    Here such a page is a setup error naming the URL: the task is masked, never scored.
    """
    urls = step.parameters.urls_to_open
    notes = []
    with DevTools(ctx.devtools_url) as devtools:
        devtools.wait_available()
        before = devtools.wait_pages(START_TAB_WAIT_S)
        for i, url in enumerate(urls):
            target = devtools.new_tab()
            with devtools.session(target, timeout=TAB_LOAD_S) as cdp:
                failure, note = open_page(cdp, url, TAB_LOAD_S)
            if failure:
                raise StepFailed(
                    f"the guest's browser cannot load {url}: {failure}; the task needs this site live "
                    "(run it where the guest reaches it, or select it away with -m 'not needs_network')"
                )
            if note:
                notes.append(f"{url}: {note}")
            if i == 0 and before:
                # Upstream closes the browser's start tab once the first task tab is open.
                devtools.close_tab(before[-1]["id"])
    return "; ".join(notes) or f"{len(urls)} tab(s)"


def open_page(cdp: CdpSession, url: str, timeout: float) -> tuple[str | None, str | None]:
    """Navigate the tab to ``url``: ``(failure, note)``, each None when there is nothing to say.

    A failure is a page that could not load: the navigation's error (DNS, refused connection, TLS,
    Chrome's own page for an empty 4xx/5xx answer), no response within ``timeout``, or a main document
    answered with a 5xx status. A page whose response arrived but whose load event is late is only
    noted (a slow page is fine), as is an aborted navigation (a download, or one a script replaced).
    A refused or reset connection is tried again for a few seconds: a server that an earlier step
    launched (``python3 -m http.server``) may not listen yet.
    """
    page = cdp.open(url, timeout, retry_refused=REFUSED_RETRY_S, read_status=True)
    if not page.answered:
        return f"no response within {timeout:g} s", None
    if page.error == "net::ERR_ABORTED":
        return None, "navigation aborted (a download, or replaced by another navigation)"
    if page.error:
        return f"navigation failed ({page.error})", None
    if page.status is not None and page.status >= 500:
        return f"the server answered HTTP {page.status}", None
    if page.status is None:
        return None, "response status unread (a script navigated on)"
    return None, None if page.loaded else f"did not finish loading within {timeout:g} s (its response arrived)"


def _chrome_close_tabs(ctx: TaskContext, step: Any) -> str:
    closed = 0
    with DevTools(ctx.devtools_url) as devtools:
        devtools.wait_available()
        for url in step.parameters.urls_to_close:
            for page in devtools.pages():
                if compare_urls(page.get("url", ""), url):
                    devtools.close_tab(page["id"])
                    closed += 1
                    break
    return f"closed {closed} of {len(step.parameters.urls_to_close)} tab(s)"


def chrome_time(moment: datetime) -> int:
    """Chrome's timestamps: microseconds since 1601-01-01 UTC."""
    return int((moment - CHROME_EPOCH).total_seconds() * 1_000_000)


def write_history(db: Path, history: Sequence[dict[str, Any]], now: datetime | None = None) -> None:
    """Add visits to a Chrome History database, one ``urls`` row and one ``visits`` row each."""
    now = now or datetime.now(UTC)
    connection = sqlite3.connect(db)
    try:
        for item in history:
            visited = chrome_time(now - timedelta(seconds=float(item["visit_time_from_now_in_seconds"])))
            cursor = connection.execute(
                "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                "VALUES (?, ?, 1, 0, ?, 0)",
                (item["url"], item["title"], visited),
            )
            connection.execute(
                "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                "VALUES (?, ?, 0, ?, 0, 0)",
                (cursor.lastrowid, visited, TYPED_TRANSITION),
            )
        connection.commit()
    finally:
        connection.close()


def _update_browse_history(ctx: TaskContext, step: Any) -> str:
    history = step.parameters.history
    for item in history:
        missing = {"url", "title", "visit_time_from_now_in_seconds"} - set(item)
        if missing:
            raise StepFailed(f"a history entry lacks {', '.join(sorted(missing))}: {item}")
    base = ctx.assets.path(HISTORY_EMPTY_URL)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "History"
        shutil.copyfile(base, db)
        try:
            write_history(db, history)
        except sqlite3.Error as exc:
            raise StepFailed(f"cannot write the History database from {HISTORY_EMPTY_URL}: {exc}") from None
        ctx.guest.upload(CHROME_HISTORY, db)
    return f"{len(history)} visit(s)"


def _needs_credentials(ctx: TaskContext, step: Any) -> str:
    raise StepFailed(
        f"step '{step.type}' needs Google credentials, which this engine does not handle; "
        "such tasks are skipped before a sandbox starts"
    )


HANDLERS: dict[str, Handler] = {
    "download": _download,
    "upload_file": _upload_file,
    "launch": _launch,
    "execute": _execute,
    "command": _execute,
    "execute_with_verification": _execute_with_verification,
    "open": _open,
    "sleep": _sleep,
    "activate_window": _window_action("activate"),
    "close_window": _window_action("close"),
    "change_wallpaper": _change_wallpaper,
    "chrome_open_tabs": _chrome_open_tabs,
    "chrome_close_tabs": _chrome_close_tabs,
    "update_browse_history": _update_browse_history,
}
SUPPORTED_STEP_TYPES = frozenset(HANDLERS)
# Optional libraries some steps need: (module, pip package). Declared so a task is skipped, not crashed.
STEP_REQUIREMENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "chrome_open_tabs": (("websocket", "websocket-client"),),
}
for _type in CREDENTIAL_STEP_TYPES:
    HANDLERS[_type] = _needs_credentials


def run_setup(ctx: TaskContext, steps: Sequence[Any], *, phase: str = "config") -> list[StepRecord]:
    """Run ``steps`` in order; each one's record is appended to ``ctx.steps`` and returned."""
    records: list[StepRecord] = []
    for index, step in enumerate(steps):
        started = time.monotonic()
        ok, note, error = _run_step(ctx, step, index, phase)
        entry = StepRecord(phase, index, step.type, time.monotonic() - started, ok, note)
        records.append(entry)
        ctx.steps.append(entry)
        if error is not None:
            raise error
    return records


def _run_step(ctx: TaskContext, step: Any, index: int, phase: str) -> tuple[bool, str, Exception | None]:
    """(ok, note, the error to raise) for one step."""
    handler = HANDLERS.get(step.type)
    if handler is None:
        return (
            False,
            "unknown step type",
            SetupError(index, step.type, f"unknown step type {step.type!r}: the task is malformed", phase=phase),
        )
    try:
        return True, handler(ctx, step), None
    except GuestUnreachable as exc:
        return False, "the guest stopped answering", exc
    except (StepFailed, GuestRequestError, AssetError, DevToolsError, OSError, ValueError) as exc:
        # OSError/ValueError: a host-side file the step names is unreadable, or a path leaves the cache.
        secret = ctx.settings.sandbox.client_password if _holds_password(step) else None
        message = redact(exc.message if isinstance(exc, GuestRequestError) else str(exc), secret)
        score_zero = getattr(step, "on_nonzero", None) == "score_zero"
        return False, message, SetupError(index, step.type, message, score_zero=score_zero, phase=phase)


def _holds_password(step: Any) -> bool:
    command = getattr(getattr(step, "parameters", None), "command", None)
    if not command:
        return False
    return uses_password(command)
