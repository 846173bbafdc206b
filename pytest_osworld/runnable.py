"""What this engine can run, declared before any sandbox starts, and what a chosen sandbox can run.

The plugin asks :func:`engine_skip` for each task, then :func:`sandbox_skip` against what the chosen
sandbox provides (``sandbox.profiles.sandbox_provides``): ``None`` to run it, else the skip and its reason (never a
score). :func:`support_command` is ``pytest-osworld tasks support INPUT``: a task is runnable on a
sandbox when the engine supports it and the sandbox provides every need of it
(:mod:`pytest_osworld.tasks.needs` against :mod:`pytest_osworld.sandbox.provides`, in
:func:`sandbox_lacks`, which both use).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_osworld.evaluation.getters import CREDENTIAL_GETTERS, getter_unavailable_reason, missing_getters
from pytest_osworld.sandbox.profiles import sandbox_provides
from pytest_osworld.sandbox.provides import Provides
from pytest_osworld.settings import Settings, merge, read_profile
from pytest_osworld.setup.assets import AssetCache, task_urls
from pytest_osworld.setup.steps import STEP_REQUIREMENTS, SUPPORTED_STEP_TYPES
from pytest_osworld.tasks.markers import live_sites
from pytest_osworld.tasks.model import CREDENTIAL_STEP_TYPES, Task
from pytest_osworld.tasks.needs import CAUSE_KINDS, TaskNeed, causes_by_need, task_needs


def needs_credentials(task: Task) -> str | None:
    """Why the task needs Google credentials (its steps or getters), or None."""
    steps = sorted(task.step_types & CREDENTIAL_STEP_TYPES)
    getters = sorted(task.getter_types & CREDENTIAL_GETTERS)
    if not steps and not getters:
        return None
    what = [f"step {s}" for s in steps] + [f"getter {g}" for g in getters]
    return f"needs Google credentials ({', '.join(what)}), which this engine does not handle"


@dataclass
class Gaps:
    """Everything that keeps one task from running here, by kind; empty when it can run."""

    credentials: str | None = None
    steps: list[str] = field(default_factory=list)
    getters: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # name -> "needs pip install ..."
    uncached: list[str] = field(default_factory=list)  # URLs, offline only
    live: list[str] = field(default_factory=list)  # internet sites the guest must load, offline only

    def labels(self) -> list[str]:
        """Short names of what is missing, for counting across tasks."""
        out = ["credentials"] if self.credentials else []
        out += [f"step {s}" for s in self.steps]
        out += [f"getter {g}" for g in self.getters]
        out += [f"metric {m}" for m in self.metrics]
        out += sorted(self.unavailable.values())
        out += ["files not in the asset cache (offline)"] if self.uncached else []
        out += ["live web sites (offline)"] if self.live else []
        return out

    def reason(self) -> str | None:
        parts: list[str] = []
        if self.credentials:
            parts.append(self.credentials)
        if self.steps:
            parts.append("setup step types this engine lacks: " + ", ".join(self.steps))
        if self.getters:
            parts.append("getters this engine lacks: " + ", ".join(self.getters))
        if self.metrics:
            parts.append("metrics this engine lacks: " + ", ".join(self.metrics))
        parts.extend(self.unavailable[name] for name in sorted(self.unavailable))
        if self.uncached:
            shown = ", ".join(self.uncached[:3]) + (
                f" and {len(self.uncached) - 3} more" if len(self.uncached) > 3 else ""
            )
            parts.append(
                f"offline, and {len(self.uncached)} file(s) are not in the asset cache ({shown}); "
                "fill it with: pytest-osworld assets prefetch INPUT"
            )
        if self.live:
            shown = ", ".join(self.live[:3]) + (f" and {len(self.live) - 3} more" if len(self.live) > 3 else "")
            parts.append(
                f"offline, and the task needs live web sites the guest cannot load here ({shown}); run it with "
                "internet access, or select it away with -m 'not needs_network'"
            )
        return "; ".join(parts) or None


def _metric_gaps(names: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    from pytest_osworld.evaluation.metrics import metric_unavailable_reason, missing_metrics

    missing = missing_metrics(names)
    unavailable = {}
    for name in dict.fromkeys(names):
        if name not in missing:
            reason = metric_unavailable_reason(name)
            if reason:
                unavailable[f"metric {name}"] = reason
    return missing, unavailable


def gaps(task: Task, settings: Settings, assets: AssetCache | None = None) -> Gaps:
    found = Gaps(credentials=needs_credentials(task))
    found.steps = sorted(task.step_types - SUPPORTED_STEP_TYPES - CREDENTIAL_STEP_TYPES)
    for step_type in sorted(task.step_types & set(STEP_REQUIREMENTS)):
        packages = sorted({p for m, p in STEP_REQUIREMENTS[step_type] if importlib.util.find_spec(m) is None})
        if packages:
            found.unavailable[f"step {step_type}"] = f"step {step_type!r} needs pip install {' '.join(packages)}"
    getter_names = [g.type for g in task.evaluator.getters() if g.type not in CREDENTIAL_GETTERS]
    found.getters = missing_getters(getter_names)
    for name in dict.fromkeys(getter_names):
        if name not in found.getters:
            reason = getter_unavailable_reason(name)
            if reason:
                found.unavailable[f"getter {name}"] = reason
    found.metrics, metric_reasons = _metric_gaps(task.evaluator.metric_names)
    found.unavailable.update(metric_reasons)
    if settings.tasks.offline:
        cache = assets or AssetCache.from_settings(settings)
        found.uncached = [url for url in task_urls(task) if not cache.contains(url)]
        found.live = live_sites(task)
    return found


def unsupported_reason(task: Task, settings: Settings, assets: AssetCache | None = None) -> str | None:
    """Why this engine cannot run ``task`` here (the plugin skips it with this reason), or None."""
    return gaps(task, settings, assets).reason()


@dataclass(frozen=True)
class Skip:
    """Why a run skips a task: ``unrunnable`` when the chosen sandbox lacks what it needs (the task stays in
    the all view's denominator), else the engine cannot run it anywhere here (in no denominator)."""

    reason: str
    unrunnable: bool = False


def engine_skip(task: Task, settings: Settings, assets: AssetCache | None = None) -> Skip | None:
    """The skip of a task this engine cannot run here (steps, getters, metrics, credentials, offline)."""
    reason = unsupported_reason(task, settings, assets)
    return Skip(f"unsupported here: {reason}") if reason else None


def sandbox_skip(task: Task, provides: Provides) -> Skip | None:
    """The skip of a task the chosen sandbox lacks needs of (the same comparison as ``tasks support``)."""
    reason = unrunnable_reason(task, provides)
    return Skip(reason, unrunnable=True) if reason else None


def unknown_provides_line(provides: Provides) -> str:
    """What a run says when it cannot tell what the chosen sandbox provides: it runs every task."""
    name = provides.sandbox
    return (
        f"what sandbox {name} provides is unknown ({provides.problem}); no task is skipped for lacking an app or "
        f"command on it, and a task whose app is missing will fail its setup; declare its apps under "
        f"sandbox_profiles.{name}.apps in the YAML profile"
    )


# --- the report -----------------------------------------------------------------------------


def missing_needs(needs: Iterable[TaskNeed], provides: Provides) -> dict[str, list[str]]:
    """The needs ``provides`` lacks, by label (``app gimp``), each with its causes (``config[1] launch: gimp``)."""
    return {
        need.label: [found.why for found in causes]
        for need, causes in causes_by_need(needs).items()
        if not provides.has(need)
    }


def sandbox_lacks(task: Task, provides: Provides) -> dict[str, list[str]]:
    """What the sandbox lacks of ``task``'s needs, with causes; empty when it has them all or is unknown.

    The one comparison behind both ``tasks support --sandbox NAME`` and the run's skips.
    """
    return missing_needs(task_needs(task), provides) if provides.known else {}


def unrunnable_reason(task: Task, provides: Provides) -> str | None:
    """The skip reason of a task the sandbox lacks needs of, or None:
    ``unsupported on desktop: lacks app gimp (related app 0: gimp, config[1] launch: gimp)``."""
    lacks = sandbox_lacks(task, provides)
    if not lacks:
        return None
    listed = "; ".join(f"{label} ({', '.join(causes)})" for label, causes in lacks.items())
    return f"unsupported on {provides.sandbox}: lacks {listed}"


def support_report(
    entries: Iterable[Any],
    settings: Settings,
    assets: AssetCache | None = None,
    provides: Provides | None = None,
) -> dict[str, Any]:
    """Per domain: tasks, fully supported tasks and (with ``provides``) tasks runnable on that sandbox;
    what is missing, with task counts; what the sandbox lacks, by cause; cache coverage."""
    cache = assets or AssetCache.from_settings(settings)
    known = provides is not None and provides.known
    domains: dict[str, dict[str, int]] = defaultdict(lambda: {"tasks": 0, "supported": 0, "runnable": 0})
    missing: Counter[str] = Counter()
    lacking: dict[str, Counter[str]] = defaultdict(Counter)  # need label -> cause kind -> tasks
    lacking_tasks: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    per_task: dict[str, dict[str, Any]] = {}
    with_urls = uncached_tasks = live_tasks = 0
    urls: set[str] = set()
    uncached_urls: set[str] = set()
    for entry in entries:
        task_gaps = gaps(entry.task, settings, cache)
        row = domains[entry.domain]
        row["tasks"] += 1
        reason = task_gaps.reason()
        if reason is None:
            row["supported"] += 1
        else:
            reasons[entry.key] = reason
        missing.update(task_gaps.labels())
        if provides is not None:
            needs = task_needs(entry.task)
            absent = sandbox_lacks(entry.task, provides)
            runnable = (reason is None and not absent) if known else None
            row["runnable"] += bool(runnable)
            for label in absent:  # per need, each cause kind counts a task once
                lacking_tasks[label] += 1
                kinds = {found.cause for found in needs if found.need.label == label}
                lacking[label].update(kinds)
            per_task[entry.key] = {
                "runnable": runnable,
                "engine": task_gaps.labels(),
                "lacks": absent,
            }
        live_tasks += bool(live_sites(entry.task))
        task_url_list = task_urls(entry.task)
        if task_url_list:
            with_urls += 1
            urls.update(task_url_list)
            absent_urls = [u for u in task_url_list if not cache.contains(u)]
            uncached_urls.update(absent_urls)
            uncached_tasks += bool(absent_urls)
    total = sum(r["tasks"] for r in domains.values())
    supported = sum(r["supported"] for r in domains.values())
    report: dict[str, Any] = {
        "total": total,
        "supported": supported,
        "fraction": supported / total if total else 0.0,
        "offline": settings.tasks.offline,
        "domains": {d: _domain_row(domains[d], provides) for d in sorted(domains)},
        "missing": dict(sorted(missing.items(), key=lambda kv: (-kv[1], kv[0]))),
        "asset_cache": {
            "root": str(cache.root),
            "tasks_with_downloads": with_urls,
            "tasks_not_cached": uncached_tasks,
            "urls": len(urls),
            "urls_not_cached": len(uncached_urls),
        },
        "live_web": {"tasks": live_tasks},
        "unsupported": dict(sorted(reasons.items())),
    }
    if provides is not None:
        report["sandbox"] = provides.to_json()
        report["runnable"] = sum(r["runnable"] for r in domains.values()) if known else None
        report["sandbox_lacks"] = {
            label: {
                "tasks": lacking_tasks[label],
                "causes": {kind: lacking[label][kind] for kind in CAUSE_KINDS if lacking[label][kind]},
            }
            for label in sorted(lacking_tasks, key=lambda name: (-lacking_tasks[name], name))
        }
        report["tasks"] = dict(sorted(per_task.items()))
    return report


def _domain_row(row: dict[str, int], provides: Provides | None) -> dict[str, Any]:
    if provides is None:
        return {"tasks": row["tasks"], "supported": row["supported"]}
    return {**row, "runnable": row["runnable"] if provides.known else None}


def format_report(report: dict[str, Any]) -> str:
    sandbox = report.get("sandbox")
    column = f"runnable on {sandbox['name']}" if sandbox else ""
    width = len(column) + 2 if column else 0

    def runnable(value: Any) -> str:
        return f"{'?' if value is None else value:>{width}}" if column else ""

    lines = [f"{'domain':<22}{'tasks':>7}{'supported':>11}{column:>{width}}"]
    for domain, row in report["domains"].items():
        lines.append(f"{domain:<22}{row['tasks']:>7}{row['supported']:>11}{runnable(row.get('runnable'))}")
    lines.append(
        f"{'total':<22}{report['total']:>7}{report['supported']:>11}{runnable(report.get('runnable'))}"
        f"  ({report['fraction']:.1%} supported)"
    )
    if report["missing"]:
        lines.append("")
        lines.append("missing (tasks):")
        lines.extend(f"  {name} ({count})" for name, count in report["missing"].items())
    if sandbox:
        lines.append("")
        lines.extend(_sandbox_lines(report, sandbox))
    cache = report["asset_cache"]
    lines.append("")
    if cache["tasks_with_downloads"]:
        mode = "offline: such tasks are skipped" if report["offline"] else "online: they are downloaded when needed"
        lines.append(
            f"asset cache {cache['root']}: {cache['tasks_not_cached']} of {cache['tasks_with_downloads']} tasks that "
            f"fetch files are not fully cached ({cache['urls_not_cached']} of {cache['urls']} URLs; {mode}); "
            "fill it with: pytest-osworld assets prefetch INPUT"
        )
    else:
        lines.append("no task fetches files from the network")
    live = report["live_web"]["tasks"]
    if live:
        mode = (
            "offline: counted as not runnable, and skipped by an offline run"
            if report["offline"]
            else "online: the guest must reach them, or their setup fails"
        )
        lines.append(f"{live} task(s) need live web sites ({mode}); select them away with -m 'not needs_network'")
    if sandbox:
        lines.extend(_task_lines(report, sandbox))
        if sandbox["known"]:
            lines.append(f"runnable on {sandbox['name']}: {report['runnable']} of {report['total']}")
        else:
            lines.append(f"runnable on {sandbox['name']}: unknown, of {report['total']} ({sandbox['problem']})")
    return "\n".join(lines)


def _sandbox_lines(report: dict[str, Any], sandbox: dict[str, Any]) -> list[str]:
    name = sandbox["name"]
    if not sandbox["known"]:
        return [f"sandbox {name}: what it provides is unknown: {sandbox['problem']}"]
    commands = "commands not checked" if sandbox["commands"] is None else f"{sandbox['commands']} commands"
    lines = [f"sandbox {name}: {sandbox['source']}: apps {', '.join(sandbox['apps']) or '(none)'}; {commands}"]
    lacks = report["sandbox_lacks"]
    if lacks:
        lines.append(f"missing on {name} (tasks, by cause):")
        for label, row in lacks.items():
            causes = ", ".join(f"{kind} {count}" for kind, count in row["causes"].items())
            lines.append(f"  {label}: {row['tasks']} ({causes})")
    return lines


def _task_lines(report: dict[str, Any], sandbox: dict[str, Any]) -> list[str]:
    if not sandbox["known"]:
        return []
    not_runnable = {key: row for key, row in report["tasks"].items() if not row["runnable"]}
    if not not_runnable:
        return [""]
    lines = ["", f"not runnable on {sandbox['name']}:"]
    for key, row in not_runnable.items():
        parts = []
        if row["engine"]:
            parts.append("engine: " + ", ".join(row["engine"]))
        if row["lacks"]:
            parts.append(f"{sandbox['name']} lacks: " + ", ".join(row["lacks"]))
        lines.append(f"  {key}: {'; '.join(parts)}")
    return lines


def support_command(args: argparse.Namespace) -> int:
    """``pytest-osworld tasks support INPUT [--json] [--offline] [--sandbox NAME] [--build-image] [--profile YAML]``."""
    from pytest_osworld.tasks.readers import read_input

    entries = read_input(Path(args.input))
    profile_path = getattr(args, "profile", None)
    profile = read_profile(profile_path) if profile_path else None
    overrides: dict[str, Any] = {}
    if getattr(args, "asset_cache", None):
        overrides["asset_cache"] = Path(args.asset_cache)
    if getattr(args, "offline", False):
        overrides["offline"] = True
    if getattr(args, "sandbox", None):
        overrides["sandbox"] = args.sandbox
    settings = merge(cli=overrides, profile=profile, profile_path=profile_path, invocation_dir=Path.cwd())
    provides = sandbox_provides(settings, build=getattr(args, "build_image", False))
    report = support_report(entries, settings, provides=provides)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
