"""pytest side of the LLM judge of OSWorld-V2 tasks (docs/v2-tasks.md).

- ``osworld_judge`` (session): this process's :class:`~pytest_osworld.v2.llm.judge.Judge`, or None when no
  judge is configured (no judge setting, no ``OSWORLD_EVAL_MODEL_*`` naming one).
- Once the selection is final (``-k``/``-m``, the shard, resume): when a selected item carries
  ``llm_judge``, one tiny call (:func:`~pytest_osworld.v2.llm.judge.preflight`). With no judge configured,
  those items are skipped with the reason (first among the item's skips: it is the one to fix). A
  configured judge that does not answer is an infrastructure failure: each of those items is recorded
  masked ``judge_error`` with the reason, before its services or sandbox start (:func:`dead_judge`), so
  it is never scored and a resumed run tries it again.
- The judge's calls, tokens and cost, apart from the agent's: one line of the terminal summary when any
  call was made (under xdist the controller adds up the workers').
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_osworld.plugin.run import get_run
from pytest_osworld.record import ModelCalls
from pytest_osworld.settings import INI_PREFIX
from pytest_osworld.v2.llm.judge import NOT_CONFIGURED, Judge, preflight
from pytest_osworld.v2.llm.settings import LAYER_SETTINGS, JudgeSettings

JUDGE_MARKER = "llm_judge"
_WORKER_KEY = "osworld_judge_usage"  # in xdist's workeroutput: the worker's judge calls, added up


@dataclass
class _State:
    judge: Judge | None
    workers: list[ModelCalls] = field(default_factory=list)
    dead: str | None = None  # why the configured judge failed its preflight


_STATE = pytest.StashKey[_State]()


def judge_settings(config: pytest.Config) -> JudgeSettings:
    """The run's judge settings, those given on the command line told apart (they win over the environment)."""
    given = {name for name in LAYER_SETTINGS.values() if config.getoption(INI_PREFIX + name) is not None}
    return JudgeSettings.from_settings(get_run(config).settings, given)


def pytest_configure(config: pytest.Config) -> None:
    judge = Judge(judge_settings(config))
    config.stash[_STATE] = _State(judge if judge.configured() else None)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistJudgeHooks(), "osworld-judge-xdist")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None and state.judge is not None:
        state.judge.close()


class _XdistJudgeHooks:
    """The controller adds up what each worker's judge did."""

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        if output.get(_WORKER_KEY):
            node.config.stash[_STATE].workers.append(ModelCalls.model_validate(output[_WORKER_KEY]))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Before any test runs: the judge answers, or the items that need it are skipped saying why."""
    config = session.config
    if config.option.collectonly:
        return
    judged = [item for item in session.items if item.get_closest_marker(JUDGE_MARKER)]
    if not judged:
        return
    state = config.stash[_STATE]
    reason = NOT_CONFIGURED if state.judge is None else preflight(state.judge)
    if reason is None:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if state.judge is not None:
        state.dead = reason
        if reporter is not None:
            reporter.write_line(
                f"osworld: {reason}; {len(judged)} task(s) marked {JUDGE_MARKER} are masked judge_error "
                "without starting"
            )
        return
    if reporter is not None:
        reporter.write_line(f"osworld: {reason}; {len(judged)} task(s) marked {JUDGE_MARKER} are skipped")
    for item in judged:
        # First among the item's skips: pytest reports the first skip marker it finds.
        item.add_marker(pytest.mark.skip(reason=f"needs the LLM judge: {reason}"), append=False)


def dead_judge(item: pytest.Item) -> str | None:
    """Why ``item`` cannot be judged: it needs the judge and the configured judge failed its preflight."""
    state = item.config.stash.get(_STATE, None)
    if state is None or state.dead is None or item.get_closest_marker(JUDGE_MARKER) is None:
        return None
    return f"the LLM judge failed its preflight: {state.dead}"


@pytest.fixture(scope="session")
def osworld_judge(pytestconfig: pytest.Config) -> Judge | None:
    """The session's LLM judge (None when none is configured); its clients close with the session."""
    return pytestconfig.stash[_STATE].judge


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    workeroutput = getattr(session.config, "workeroutput", None)
    if state is not None and state.judge is not None and workeroutput is not None and state.judge.calls():
        workeroutput[_WORKER_KEY] = state.judge.usage().model_dump()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    counts = list(state.workers)
    if state.judge is not None and state.judge.calls():
        counts.append(state.judge.usage())
    line = usage_line(counts)
    if line:
        terminalreporter.write_line(line)


def usage_line(counts: list[ModelCalls]) -> str | None:
    """The terminal's line for the judge's calls (None when none was made)."""
    calls = sum(c.calls for c in counts)
    if not calls:
        return None
    failed = sum(c.failed for c in counts)
    prompt = sum(c.usage.prompt_tokens for c in counts)
    completion = sum(c.usage.completion_tokens for c in counts)
    costs = [c.usage.cost for c in counts if c.usage.cost is not None]
    cost = f", cost {sum(costs):g}" if costs else ""
    failures = f", {failed} failed" if failed else ""
    return (
        f"osworld: LLM judge (apart from the agent's usage): {calls} call{'s' if calls != 1 else ''}{failures}, "
        f"{prompt:,} prompt + {completion:,} completion tokens{cost}"
    )
