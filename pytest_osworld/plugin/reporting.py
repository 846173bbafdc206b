"""The results layer's state for one pytest session, and the hooks that need it.

One :class:`RunReporting` is registered per ``pytest.Config``: on an xdist worker it turns reports into
records and outcomes; on the controller (or a plain run) it also writes the summary and applies the gate.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.errors import OsworldError
from pytest_osworld.plugin import html as html_report
from pytest_osworld.plugin.items import OsworldItem, TaskItem
from pytest_osworld.plugin.outcomes import Outcome, classify, report_info, set_report_info
from pytest_osworld.plugin.run import get_run
from pytest_osworld.plugin.v2 import V2TaskItem
from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results import allure_report, task_page
from pytest_osworld.results.final_page import FINAL_PAGE, write_final_page
from pytest_osworld.results.gate import GateResult, GateRules, evaluate
from pytest_osworld.results.render import gate_lines, summary_lines
from pytest_osworld.results.store import FINAL_PNG, MANIFEST, RESULT_JSON, SUMMARY, RunStore
from pytest_osworld.results.summary import load_summary, summarize_run, write_summary
from pytest_osworld.results.views import UNRUNNABLE_MARKER
from pytest_osworld.sanitize import collect_secrets, remember, sanitize
from pytest_osworld.settings import Settings

_STATE_NAME = "osworld-results"
# The markers a record keeps: the selection markers, and unrunnable (the summary's kind of skip).
_SELECTION_MARKERS = (
    "osworld",
    "infeasible",
    "needs_proxy",
    "needs_gdrive",
    "needs_network",
    "needs_services",
    UNRUNNABLE_MARKER,
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def state(config: pytest.Config) -> RunReporting:
    found = config.pluginmanager.get_plugin(_STATE_NAME)
    assert isinstance(found, RunReporting), "pytest-osworld's results plugin is not configured"
    return found


def get_store(config: pytest.Config) -> RunStore:
    """The run store of this process (the episode writes through it)."""
    return state(config).store


def configure(config: pytest.Config) -> None:
    reporting = RunReporting(config)
    reporting.check_options()
    config.pluginmanager.register(reporting, _STATE_NAME)
    if config.pluginmanager.hasplugin("html"):
        config.pluginmanager.register(html_report.HtmlHooks(), "osworld-html")


class RunReporting:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.run = get_run(config)
        self.is_worker = hasattr(config, "workerinput")
        self.secrets = collect_secrets(self.run.settings)
        remember(self.secrets)
        self._store: RunStore | None = None
        self._started: dict[str, tuple[str, float]] = {}
        self._seen: list[dict[str, Any]] = []  # outcomes as reports carried them (controller side under xdist)
        self.summary: dict[str, Any] | None = None
        self.summary_path: Path | None = None
        self.gate: GateResult | None = None
        self.baseline: dict[str, Any] | None = None
        self.errors: list[str] = []
        self._allure_pages: allure_report.TaskPages | None = None

    # --- options ------------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.run.settings

    def check_options(self) -> None:
        s = self.settings
        if s.gate.max_drop is not None and s.gate.baseline is None:
            raise pytest.UsageError(
                "--osworld-max-drop needs --osworld-baseline SUMMARY.json (the run to compare against)"
            )
        if s.gate.baseline is not None and not self.is_worker:
            try:
                self.baseline = load_summary(Path(s.gate.baseline))
            except OsworldError as exc:
                raise pytest.UsageError(f"--osworld-baseline: {exc}") from None

    @property
    def store(self) -> RunStore:
        if self._store is None:
            self._store = RunStore.for_settings(self.run.run_dir, self.settings, self.secrets)
        return self._store

    # --- collection ---------------------------------------------------------------------------------

    def after_selection(self, items: list[pytest.Item]) -> None:
        """Allure's labels for the task items that will run, and the plugin that shapes their pages."""
        if not allure_report.active():
            return
        if self._allure_pages is None and any(isinstance(item, OsworldItem) for item in items):
            self._allure_pages = allure_report.TaskPages()
            self.config.add_cleanup(allure_report.register(self._allure_pages))
        for item in items:
            if isinstance(item, TaskItem):
                entry = item.entry
                marks = allure_report.label_marks(self.run.run_id, entry.id, entry.domain, entry.task.related_apps)
            elif isinstance(item, V2TaskItem):
                task = item.task
                marks = allure_report.label_marks(self.run.run_id, task.id, task.domain, task.related_apps)
            else:
                continue
            for mark in marks:
                item.add_marker(mark)

    # --- one item -----------------------------------------------------------------------------------

    def begin(self, item: pytest.Item) -> None:
        if not isinstance(item, OsworldItem):
            return
        key = item.run_key
        item.osworld_result = None
        self._started[key] = (_now(), time.monotonic())
        try:
            self.store.begin(key)  # an earlier attempt (resume, a reused run id) is kept apart, not overwritten
        except OSError as exc:
            self.errors.append(f"{key}: could not set the earlier attempt aside: {exc}")

    def on_report(self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
        if not isinstance(item, OsworldItem):
            return
        outcome = classify(report, call.excinfo)
        if outcome is None:
            return
        key = item.run_key
        result = self._result_for(item, key, outcome)
        status = outcome.status
        if status == "masked" and report.when == "call":
            # junitxml writes <error> only for setup/teardown reports; a mask is an error, not a failure.
            report.when = "setup"
        termination = (
            result.termination.value if result else (outcome.termination.value if outcome.termination else None)
        )
        score = result.score if result is not None and result.valid else None
        message = sanitize(outcome.message or (result.message if result else "") or "", self.secrets) or None
        if call.excinfo is not None:
            self._sanitize_exception(call.excinfo.value)
        if outcome.replace_longrepr and message:
            report.longrepr = message if message.startswith("masked (") else f"masked ({termination}): {message}"
        else:
            self._sanitize_longrepr(report)
        set_report_info(
            report, {"key": key, "status": status, "termination": termination, "score": score, "message": message}
        )
        for name, value in (("osworld_status", status), ("osworld_termination", termination), ("osworld_score", score)):
            if value is not None:
                item.user_properties.append((name, value if name != "osworld_score" else f"{value:g}"))
        self._attach(item, key, result, report)

    def _result_for(self, item: OsworldItem, key: str, outcome: Outcome) -> TaskResult | None:
        """The episode's record; written here when the episode never got to write one."""
        # The record on disk first: it is the one the store sanitized.
        result = self._read_record(key) or item.osworld_result
        if result is None and outcome.status in ("masked", "skipped") and outcome.termination is not None:
            result = self._plugin_record(item, key, outcome)
        elif result is not None and not result.markers:
            result.markers = _markers(item)  # the no-gdrive view reads them
            self._write(result)
        if result is not None:
            item.osworld_result = result
        return result

    def _read_record(self, key: str) -> TaskResult | None:
        path = self.store.path_of(key) / RESULT_JSON
        if not path.is_file():
            return None
        try:
            return TaskResult.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _plugin_record(self, item: OsworldItem, key: str, outcome: Outcome) -> TaskResult:
        s = self.settings
        started_iso, started = self._started.get(key, (None, None))
        result = TaskResult(
            run_id=self.run.run_id,
            task_id=item.entry.id,
            domain=item.entry.domain,
            repeat=item.repeat,
            termination=outcome.termination or Termination.HARNESS_ERROR,
            message=sanitize(outcome.message or "", self.secrets) or None,
            runner=s.loop.agent,
            model={"api": s.model.api, "name": s.model.name} if s.model.name else {},
            related_apps=list(item.entry.task.related_apps),
            markers=_markers(item),
            worker=self.run.worker_id,
            services=item.osworld_services,
            started_at=started_iso,
            finished_at=_now(),
        )
        if started is not None:
            result.durations.total = round(time.monotonic() - started, 3)
        self._write(result)
        return result

    def _write(self, result: TaskResult) -> None:
        try:
            self.store.write_result(result)
        except (OSError, OsworldError) as exc:
            self.errors.append(f"{result.key}: could not write its record: {exc}")

    def _sanitize_exception(self, exc: BaseException) -> None:
        # allure-pytest and others read the exception itself, not the report: clean its text in place.
        if exc.args and any(isinstance(a, str) for a in exc.args):
            exc.args = tuple(sanitize(a, self.secrets) if isinstance(a, str) else a for a in exc.args)

    def _sanitize_longrepr(self, report: pytest.TestReport) -> None:
        if report.longrepr is None:
            return
        text = str(report.longrepr)
        clean = sanitize(text, self.secrets)
        if clean != text:
            report.longrepr = clean
        report.sections = [(name, sanitize(body, self.secrets)) for name, body in report.sections]

    def _attach(self, item: OsworldItem, key: str, result: TaskResult | None, report: pytest.TestReport) -> None:
        final_png = None
        final = self.store.path_of(key) / FINAL_PNG
        want_allure = allure_report.active()
        want_html = html_report.active(self.config)
        if not (want_allure or want_html):
            return
        if final.is_file():
            final_png = final.read_bytes()
        page = self._task_page(item, key, result, report)
        if want_allure:
            allure_report.attach_episode(result, self.store.read_traj(key), final_png)
            if self._allure_pages is not None:
                self._allure_pages.stage(page, result)
        if want_html:
            html_report.add_extras(report, html_report.extras_for(result, final_png, page))

    def _task_page(
        self, item: OsworldItem, key: str, result: TaskResult | None, report: pytest.TestReport
    ) -> task_page.TaskPage:
        """What the item's report pages say (Allure, pytest-html), from its record and its outcome."""
        return task_page.build(
            name=item.name,
            file_nodeid=item.parent.nodeid if item.parent is not None else item.nodeid.split("::", 1)[0],
            entry=item.entry,
            key=key,
            repeat=item.repeat,
            result=result,
            info=report_info(report) or {},
            runner=self.settings.runner_name,
            model=self.settings.model.name,
            run_dir=self.run.run_dir,
            task_dir=self.store.path_of(key),
        )

    # --- hooks that need this state -----------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: pytest.FixtureRequest) -> Any:
        # Innermost: a fixture's error (a SandboxError naming a URL with a token) is cleaned before
        # allure-pytest records it on its fixture container.
        try:
            return (yield)
        except Exception as exc:
            self._sanitize_exception(exc)
            raise

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        info = report_info(report)
        if info:
            self._seen.append(info)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, Any] | None:
        info = report_info(report)
        if info and info.get("status") == "masked" and report.failed:
            return "masked", "M", ("MASKED", {"yellow": True})
        return None

    # --- the end of the session ---------------------------------------------------------------------

    def finish(self, session: pytest.Session) -> None:
        if self.is_worker or session.config.option.collectonly:
            return
        run_dir = self.run.run_dir
        if not (run_dir / MANIFEST).is_file() and not self._seen:
            return  # no OSWorld task in this session
        try:
            self.summary = summarize_run(run_dir, store=RunStore(run_dir))
        except (OsworldError, OSError) as exc:
            self.errors.append(f"no summary: {exc}")
            return
        rules = GateRules(
            baseline=self.baseline,
            max_drop=self.settings.gate.max_drop,
            min_success=self.settings.gate.min_success,
            max_masked=self.settings.gate.max_masked,
            view=self.settings.gate.view,
            gate=self.settings.gate.mode,
            alpha=self.settings.gate.alpha,
        )
        if rules.active:
            self.gate = evaluate(self.summary, rules)
            self.summary["gate"] = self.gate.to_json()
        try:
            self.summary_path = write_summary(run_dir, self.summary)
        except OSError as exc:
            self.errors.append(f"could not write {run_dir / SUMMARY}: {exc}")
        self._write_final_page(run_dir)
        self._set_exit_status(session)

    def _write_final_page(self, run_dir: Path) -> None:
        """The run's final state as a static page beside the summary (``results/final_page.py``)."""
        if self.summary is None:
            return
        try:
            write_final_page(run_dir, self.summary)
        except Exception as exc:  # noqa: BLE001 - the summary is written: the page must not break the run's end
            self.errors.append(f"could not write {run_dir / FINAL_PAGE}: {type(exc).__name__}: {exc}")

    def _set_exit_status(self, session: pytest.Session) -> None:
        current = int(session.exitstatus)
        judged = current in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
        if self.gate is not None and judged:
            # With a gate, single tasks do not decide the exit status: the gate does.
            session.exitstatus = pytest.ExitCode.OK if self.gate.held else pytest.ExitCode.TESTS_FAILED
        elif current == pytest.ExitCode.NO_TESTS_COLLECTED and self.summary and self.summary["integrity"]["resumed"]:
            session.exitstatus = pytest.ExitCode.OK  # everything was already done: nothing left to run is success

    def terminal_lines(self) -> list[str]:
        lines: list[str] = []
        if self.summary is not None:
            lines.append("== osworld summary ==")
            lines += summary_lines(self.summary, str(self.summary_path) if self.summary_path else None)
            masked = [i for i in self._seen if i.get("status") == "masked"]
            if masked:
                lines.append("masked tasks (no valid score; infrastructure, not the agent):")
                lines += [f"  MASKED {i['key']}: {_first_line(_masked_text(i))}" for i in masked]
        if self.gate is not None:
            lines.append("== osworld gate ==")
            lines += gate_lines(self.gate)
        if self.errors:
            lines.append("== osworld problems ==")
            lines += [f"  {e}" for e in self.errors]
        return lines


def _masked_text(info: dict[str, Any]) -> str:
    message = info.get("message") or ""
    return message if message.startswith("masked (") else f"masked ({info.get('termination')}): {message}"


def _first_line(text: str | None, limit: int = 200) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _markers(item: OsworldItem) -> list[str]:
    names = {m.name for m in item.iter_markers()}
    return [n for n in _SELECTION_MARKERS if n in names] + ([item.entry.domain] if item.entry.domain in names else [])
