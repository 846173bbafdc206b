"""``--osworld-live [HOST:]PORT``: the live page of the run, served while it lasts (docs/live.md).

The process that owns the run (the xdist controller, or the plain pytest process) makes the run's
channel folder (``live/channel.py``), serves the page (``live/server.py``) and keeps the state
(``live/state.py``): a thread tails the events every process publishes, and this process's own report
hook adds each task's outcome. Each process that runs tasks publishes: the selection (the first
worker), each task's start, through :func:`attach` the episode's sandbox, phases and steps, and after
its teardown a failed task's sandbox that ``--osworld-keep-failed`` kept (its watch link stays until
the run's end). At the end the page names the run's final page, ``live.html``, which
``results/final_page.py`` writes from the records, with or without this page.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from pytest_osworld.live.channel import Channel, Publisher
from pytest_osworld.live.novnc import find_novnc
from pytest_osworld.live.observer import EpisodeObserver, Phase
from pytest_osworld.live.server import LiveServer, LiveServerError
from pytest_osworld.live.state import LiveState
from pytest_osworld.plugin.items import OsworldItem
from pytest_osworld.plugin.outcomes import report_info
from pytest_osworld.plugin.run import get_run
from pytest_osworld.record import HumanInput, TaskResult, Usage
from pytest_osworld.results.final_page import FINAL_PAGE
from pytest_osworld.results.store import RESULT_JSON, RunStore
from pytest_osworld.results.views import ANSWER_CHARS
from pytest_osworld.sandbox import VNC_PORT

if TYPE_CHECKING:
    from pytest_osworld.episode import Episode

_LIVE = pytest.StashKey["_Live"]()
_DIR_KEY = "osworld_live_dir"  # in xdist's workerinput: the channel folder
TAIL_INTERVAL_S = 0.25


# eq=False keeps it hashable: pytest before 8.4 keeps registered plugins in a set.
@dataclass(eq=False)
class _Live:
    channel: Channel
    publisher: Publisher | None = None  # None in xdist's controller: it runs no task
    state: LiveState | None = None  # the serving process only
    server: LiveServer | None = None
    owns_channel: bool = False
    stop: threading.Event = field(default_factory=threading.Event)
    tail: threading.Thread | None = None
    novnc_problem: str | None = None
    run_dir: Path | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A task's outcome, in the serving process (xdist sends it every worker's reports)."""
        info = report_info(report)
        if self.state is None or not info or info.get("status") is None:
            return
        key = str(info["key"])
        self.state.finish(key, info, self._record(key))

    def _record(self, key: str) -> TaskResult | None:
        if self.run_dir is None:
            return None
        try:
            return TaskResult.model_validate_json((RunStore(self.run_dir).path_of(key) / RESULT_JSON).read_bytes())
        except (OSError, ValueError):
            return None

    def drain(self) -> None:
        assert self.state is not None
        for event in self._tail.read():
            self.state.apply(event)

    def follow(self) -> None:
        while not self.stop.is_set():
            self.drain()
            self.stop.wait(TAIL_INTERVAL_S)

    def __post_init__(self) -> None:
        self._tail = self.channel.tail()


def _live(config: pytest.Config) -> _Live | None:
    return config.stash.get(_LIVE, None)


def _task_key(item: pytest.Item) -> str | None:
    """A task item's run key (v1 and OSWorld-V2 items alike); None for any other test."""
    return item.run_key if isinstance(item, OsworldItem) else None


@pytest.hookimpl(trylast=True)  # after the run exists (plugin/hooks.py) and resume has chosen its id
def pytest_configure(config: pytest.Config) -> None:
    run = get_run(config)
    settings = run.settings
    if settings.reports.live is None or config.option.collectonly:
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        if _DIR_KEY in workerinput:
            channel = Channel(Path(workerinput[_DIR_KEY]))
            config.stash[_LIVE] = _Live(channel=channel, publisher=channel.publisher(run.worker_id or "main"))
        return
    channel = Channel(Path(tempfile.mkdtemp(prefix="osworld-live-"))).make()
    state = LiveState(run_id=run.run_id, input_allowed=settings.reports.live_input)
    novnc, problem = find_novnc(settings.reports.live_novnc)
    try:
        server = LiveServer(
            settings.reports.live,
            state,
            channel,
            novnc=novnc,
            novnc_problem=problem,
            allow_input=settings.reports.live_input,
        ).start()
    except LiveServerError as exc:
        shutil.rmtree(channel.root, ignore_errors=True)
        raise pytest.UsageError(str(exc)) from None
    distributing = config.pluginmanager.hasplugin("dsession")
    live = _Live(
        channel=channel,
        publisher=None if distributing else channel.publisher("main"),
        state=state,
        server=server,
        owns_channel=True,
        novnc_problem=problem,
        run_dir=run.run_dir,
    )
    live.tail = threading.Thread(target=live.follow, name="osworld-live-tail", daemon=True)
    live.tail.start()
    config.stash[_LIVE] = live
    config.pluginmanager.register(live, "osworld-live")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistLiveHooks(), "osworld-live-xdist")


class _XdistLiveHooks:
    def pytest_configure_node(self, node: Any) -> None:
        live = _live(node.config)
        if live is not None:
            node.workerinput[_DIR_KEY] = str(live.channel.root)


def pytest_report_header(config: pytest.Config) -> list[str]:
    live = _live(config)
    if live is None or live.server is None:
        return []
    exposed = "" if live.server.address.loopback_only else " (not loopback: whoever reaches it sees the run)"
    lines = [f"osworld: live page at {live.server.url}{exposed}"]
    if live.novnc_problem:
        lines.append(f"osworld: live page: no watch view: {live.novnc_problem}")
    return lines


def pytest_collection_finish(session: pytest.Session) -> None:
    live, run = _live(session.config), get_run(session.config)
    if live is None or live.publisher is None or not run.writes_run_files:
        return
    tasks = []
    for item in session.items:
        if isinstance(item, OsworldItem):
            max_steps = run.settings.for_task(item.entry.id).loop.max_steps
            tasks.append({"key": item.run_key, "name": item.name, "max_steps": max_steps})
    live.publisher.publish("selected", tasks=tasks)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    live, key = _live(item.config), _task_key(item)
    if live is not None and live.publisher is not None and key is not None:
        live.publisher.publish("begin", key=key, name=item.name, at=time.time())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    try:
        return (yield)
    finally:
        _publish_kept(item)


def _publish_kept(item: pytest.Item) -> None:
    """A task whose sandbox ``--osworld-keep-failed`` kept (its record says so once its fixtures are
    torn down, plugin/keep.py): the page lists it with why, and its desktop stays watchable."""
    live = _live(item.config)
    if live is None or live.publisher is None or not isinstance(item, OsworldItem):
        return
    result = item.osworld_result
    kept = result.sandbox.get("kept") if result is not None else None
    if isinstance(kept, dict):
        live.publisher.publish("kept", key=item.run_key, sandbox=kept.get("name"), why=kept.get("why"))


# Not trylast: plugin/results.py (registered after this module, so called before it) has written the
# final page, and plugin/sandbox.py's trylast end, which may wait for Enter over the kept sandboxes,
# comes after: the page says the run ended while their watch links still work.
def pytest_sessionfinish(session: pytest.Session) -> None:
    live = _live(session.config)
    if live is None or live.state is None:
        return
    live.stop.set()
    if live.tail is not None:
        live.tail.join(timeout=5)
    live.drain()
    page = live.run_dir / FINAL_PAGE if live.run_dir is not None else None
    live.state.end(final_page=str(page) if page is not None and page.is_file() else None)


def pytest_unconfigure(config: pytest.Config) -> None:
    live = _live(config)
    if live is None:
        return
    live.stop.set()
    if live.publisher is not None:
        live.publisher.close()
    if live.server is not None:
        live.server.close()
    if live.owns_channel:
        shutil.rmtree(live.channel.root, ignore_errors=True)


# --- the episode's side


class _Publishing(EpisodeObserver):
    """An episode's phases and steps as events of its process's publisher."""

    def __init__(self, publisher: Publisher, channel: Channel, key: str) -> None:
        self.publisher = publisher
        self.channel = channel
        self.key = key

    def phase(self, phase: Phase) -> None:
        self.publisher.publish("phase", key=self.key, phase=phase)

    def step(self, number: int, of: int) -> None:
        self.publisher.publish("step", key=self.key, number=number, of=of)

    def stepped(self, number: int, response: str | None, screenshot: bytes | None, usage: Usage) -> None:
        shot = screenshot is not None and self.publisher.screenshot(self.key, screenshot)
        self.publisher.publish(
            "stepped",
            key=self.key,
            number=number,
            response=(response or "")[:ANSWER_CHARS] or None,
            shot=shot,
            usage=usage.model_dump(),
        )

    def human_input(self) -> HumanInput | None:
        return self.channel.human_input(self.key)


def attach(config: pytest.Config, key: str, episode: Episode) -> None:
    """With the live page on: the episode publishes its sandbox, phases and steps, and asks at its end
    whether a person sent input to its desktop. Nothing otherwise."""
    live = _live(config)
    if live is None or live.publisher is None:
        return
    sandbox = episode.sandbox
    try:
        vnc: str | None = urlsplit(sandbox.url(VNC_PORT)).netloc or None
    except Exception:  # noqa: BLE001 - a sandbox without a VNC port is watched without a desktop
        vnc = None
    live.publisher.publish("sandbox", key=key, sandbox=sandbox.name, vnc=vnc)
    episode.observer = _Publishing(live.publisher, live.channel, key)
