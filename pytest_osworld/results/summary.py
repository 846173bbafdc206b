"""A run's figures, computed from the records on disk and the manifest: ``<run_dir>/summary.json``.

Every figure is defined in docs/results.md; the code and that page change together.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_osworld.fsutil import write_json
from pytest_osworld.record import TaskResult, Termination, Usage
from pytest_osworld.results.manifest import RunManifest, read_manifest
from pytest_osworld.results.repeats import repeat_summary
from pytest_osworld.results.store import SUMMARY, RunStore, StoreError, TaskKey
from pytest_osworld.results.views import GDRIVE_MARKER, VIEWS, Entry, figures, mask_reason, skip_kind, status_of

SUMMARY_KIND = "pytest-osworld/summary"
SUMMARY_VERSION = 1
# Sandbox identity keys collected from the records into the run identity.
_SANDBOX_IDENTITY = ("profile", "image", "image_id", "image_digest", "digest", "qcow2_sha256")


def _entry(key: str, record: TaskResult, gdrive: set[str]) -> Entry:
    return Entry(
        key=key,
        status=status_of(record),
        score=record.score if record.valid else None,
        needs_gdrive=GDRIVE_MARKER in record.markers or key in gdrive,
        skip_kind=skip_kind(record),
    )


def _rate_table(entries: list[Entry]) -> dict[str, Any]:
    return {view: figures(entries, view).to_json() for view in VIEWS}


def _duplicates(records: Mapping[str, TaskResult]) -> list[str]:
    """Episodes (task id and repeat) recorded under more than one domain."""
    where: dict[str, list[str]] = defaultdict(list)
    for key, record in records.items():
        where[TaskKey(record.domain, record.task_id, record.repeat).folder].append(key)
    return sorted(k for keys in where.values() if len(keys) > 1 for k in keys)


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def usage_totals(usages: Iterable[Usage]) -> dict[str, Any]:
    """The summary's ``usage``: tokens and cost added up (also the live page's cost so far)."""
    total = Usage()
    for usage in usages:
        total = total.add(usage)
    return {
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "cost": round(total.cost, 6) if total.cost is not None else None,
    }


def _model_calls(records: list[TaskResult], field: str) -> dict[str, Any] | None:
    """The OSWorld-V2 judge's (or simulated user's) calls over the records, apart from the agent's usage;
    None when no record made one."""
    counted = [(r, c) for r in records if (c := getattr(r, field)) is not None and c.calls]
    if not counted:
        return None
    total = Usage()
    for _, calls in counted:
        total = total.add(calls.usage)
    return {
        "tasks": len(counted),
        "calls": sum(c.calls for _, c in counted),
        "failed": sum(c.failed for _, c in counted),
        "seconds": round(sum(c.seconds for _, c in counted), 3),
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "cost": round(total.cost, 6) if total.cost is not None else None,
    }


def _durations(records: list[TaskResult]) -> dict[str, Any]:
    phases: dict[str, Any] = {}
    for phase in ("sandbox_ready", "setup", "agent", "evaluation", "total"):
        values = [getattr(r.durations, phase) for r in records if getattr(r.durations, phase) is not None]
        phases[phase] = {
            "sum_seconds": round(sum(values), 3),
            "mean_seconds": round(sum(values) / len(values), 3) if values else None,
            "episodes": len(values),
        }
    starts = [t for r in records if (t := _parse_time(r.started_at))]
    ends = [t for r in records if (t := _parse_time(r.finished_at))]
    wall = round((max(ends) - min(starts)).total_seconds(), 3) if starts and ends else None
    return {"phases": phases, "wall_seconds": wall}


def percentile(values: list[float], p: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least ``p`` % of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _sandboxes(records: list[TaskResult]) -> dict[str, Any] | None:
    """How the episodes got their sandboxes and where they ran: claim time percentiles (the time a task
    waited for its sandbox), warm claims, and sandboxes per node (the Ray node, else the environment
    host). A record without a placement (a local sandbox without a pool) counts as a cold start of
    ``ready_seconds`` on its host. None when no record says."""
    claims: list[tuple[float, bool | None, float, str, str | None]] = []
    for record in records:
        placement = record.placement
        if placement is not None:
            claims.append(
                (
                    placement.claim_seconds,
                    placement.warm,
                    placement.pool_wait_seconds,
                    placement.node,
                    placement.node_address,
                )
            )
        elif isinstance(record.sandbox.get("ready_seconds"), int | float):
            host = str(record.sandbox.get("host") or "?")
            claims.append((float(record.sandbox["ready_seconds"]), None, 0.0, host, host))
    if not claims:
        return None
    seconds = [c[0] for c in claims]
    pooled = [c for c in claims if c[1] is not None]
    nodes: dict[str, dict[str, Any]] = {}
    for _, _, _, node, address in claims:
        entry = nodes.setdefault(node, {"address": address, "sandboxes": 0})
        entry["sandboxes"] += 1
    return {
        "claims": len(claims),
        "claim_seconds": {
            "p50": round(percentile(seconds, 50) or 0.0, 4),
            "p95": round(percentile(seconds, 95) or 0.0, 4),
            "max": round(max(seconds), 4),
        },
        "pooled": len(pooled),
        "warm": sum(1 for c in pooled if c[1]),
        "pool_wait_seconds": round(sum(c[2] for c in claims), 3),
        "nodes": dict(sorted(nodes.items(), key=lambda item: (-item[1]["sandboxes"], item[0]))),
    }


# A service_error mask's message begins with the service it names ("service echo is down: ...").
_SERVICE_NAMED = re.compile(
    r"^(?:masked \(service_error\): )?service ([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?![a-z0-9-])"
)


def failed_service(record: TaskResult) -> str | None:
    """The service a ``service_error`` mask names, or None (another ending, or no name in its message)."""
    if record.termination is not Termination.SERVICE_ERROR:
        return None
    found = _SERVICE_NAMED.match(record.message or "")
    return found[1] if found else None


def _services(records: list[TaskResult]) -> dict[str, Any]:
    """Per shared service of the run: its starts (distinct containers), restarts, failures (service_error
    masks naming it), the episodes that used it and, for an exclusive one, the time waited for turns.
    Empty when no record used or named a service."""
    used: dict[str, list[Any]] = defaultdict(list)
    for record in records:
        for name, use in (record.services or {}).items():
            used[name].append(use)
    failures = Counter(failed for r in records if (failed := failed_service(r)) is not None)
    table: dict[str, Any] = {}
    for name in sorted(set(used) | set(failures)):
        uses = used.get(name, [])
        figures: dict[str, Any] = {
            "images": sorted({u.image for u in uses}),
            "exclusive": any(u.exclusive for u in uses),
            "tasks": len(uses),
            "starts": len({u.id for u in uses}),
            "restarts": sum(1 for u in uses if u.restarted),
            "failures": failures.get(name, 0),
        }
        if figures["exclusive"]:
            waits = [u.waited_seconds for u in uses if u.exclusive]
            figures["waited_seconds"] = {"total": round(sum(waits), 3), "longest": round(max(waits, default=0.0), 3)}
        table[name] = figures
    return table


def _loop(records: list[TaskResult]) -> dict[str, Any] | None:
    """Which agent loop the episodes ran (osworld-compat or the project's), and the knobs that differ
    from OSWorld's run script with every value seen; None when no record says (older records)."""
    loops = [r.loop for r in records if r.loop is not None]
    if not loops:
        return None
    modes = Counter(loop.mode for loop in loops)
    differs: dict[str, dict[str, Any]] = {}
    for loop in loops:
        for knob, values in sorted(loop.differs.items()):
            seen = differs.setdefault(knob, {"values": [], "osworld": values.get("osworld")})
            if values.get("value") not in seen["values"]:
                seen["values"].append(values.get("value"))
    return {"mode": next(iter(modes)) if len(modes) == 1 else "mixed", "modes": dict(modes), "differs": differs}


def _identity(run_id: str | None, manifest: RunManifest | None, records: list[TaskResult]) -> dict[str, Any]:
    sandbox: dict[str, list[Any]] = {}
    for key in _SANDBOX_IDENTITY:
        values = sorted({json.dumps(r.sandbox[key], sort_keys=True) for r in records if r.sandbox.get(key) is not None})
        if values:
            sandbox[key] = [json.loads(v) for v in values]
    models = sorted({json.dumps(r.model, sort_keys=True) for r in records if r.model})
    return {
        "run_id": run_id or (manifest.run_id if manifest else None),
        "input_sha256": manifest.input.input_sha256 if manifest else None,
        "input_count": manifest.input.count if manifest else None,
        "ids_sha256": manifest.selected.ids_sha256 if manifest else None,
        "shard": manifest.shard if manifest else None,
        "repeat": manifest.repeat if manifest else None,
        "sandbox": manifest.sandbox if manifest else None,
        "record_sandboxes": sandbox,
        "runner": sorted({r.runner for r in records if r.runner}),
        "action_space": sorted({r.action_space for r in records if r.action_space}),
        "model": [json.loads(v) for v in models],
        "loop": _loop(records),
        "versions": manifest.versions.model_dump(mode="json") if manifest else None,
        "merged_from": manifest.merged_from if manifest else None,
    }


def build_summary(
    records: Mapping[str, TaskResult],
    manifest: RunManifest | Mapping[str, Any] | None,
    *,
    run_id: str | None = None,
    problems: list[str] | None = None,
) -> dict[str, Any]:
    """The figures of a run. ``records`` maps run keys to records; ``manifest`` (a :class:`RunManifest`
    or its JSON) gives what was selected."""
    if isinstance(manifest, Mapping):
        manifest = RunManifest.model_validate(manifest)
    gdrive = set(manifest.selected.needs_gdrive) if manifest else set()
    entries = [_entry(key, record, gdrive) for key, record in sorted(records.items())]
    by_key = {e.key: e for e in entries}
    all_records = [records[k] for k in sorted(records)]

    selected_set = set(manifest.selected.ids) if manifest else None
    missing = sorted(selected_set - set(records)) if selected_set is not None else []
    unexpected = sorted(set(records) - selected_set) if selected_set is not None else []
    statuses = Counter(e.status for e in entries)

    domains: dict[str, Any] = {}
    for domain in sorted({r.domain for r in all_records}):
        domain_entries = [by_key[k] for k, r in sorted(records.items()) if r.domain == domain]
        domains[domain] = _rate_table(domain_entries)

    tasks = {
        e.key: {
            "status": e.status,
            "score": e.score,
            "termination": records[e.key].termination.value,
            "domain": records[e.key].domain,
            "needs_gdrive": e.needs_gdrive,
            **({"reason": mask_reason(records[e.key])} if e.status == "masked" else {}),
            **({"skip_kind": e.skip_kind} if e.status == "skipped" else {}),
        }
        for e in entries
    }
    return {
        "kind": SUMMARY_KIND,
        "schema_version": SUMMARY_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "identity": _identity(run_id, manifest, all_records),
        "views": _rate_table(entries),
        "masks": dict(sorted(Counter(mask_reason(records[e.key]) for e in entries if e.status == "masked").items())),
        "skips": dict(
            sorted(
                Counter(records[e.key].message or "no reason given" for e in entries if e.status == "skipped").items()
            )
        ),
        "domains": domains,
        "integrity": {
            "selected": len(selected_set) if selected_set is not None else None,
            "recorded": len(records),
            "finished": statuses["passed"] + statuses["failed"] + statuses["masked"],
            "passed": statuses["passed"],
            "failed": statuses["failed"],
            "masked": statuses["masked"],
            "skipped": statuses["skipped"],
            "unrunnable": sum(1 for e in entries if e.unrunnable),
            "missing": missing,
            "unexpected": unexpected,
            "duplicates": _duplicates(records),
            "resumed": sorted(manifest.resume.resumed) if manifest and manifest.resume else [],
            "unreadable": list(problems or []),
            "complete": selected_set is not None and not missing and not _duplicates(records),
        },
        "repeats": repeat_summary(tasks, manifest.repeat if manifest else None),
        "usage": usage_totals(r.usage for r in all_records),
        # OSWorld-V2's LLM judge and simulated user: their tokens and cost apart from the agent's.
        "judge": _model_calls(all_records, "judge"),
        "user_sim": _model_calls(all_records, "user_sim"),
        "durations": _durations(all_records),
        "services": _services(all_records),
        "sandboxes": _sandboxes(all_records),
        "tasks": tasks,
    }


def summarize_run(run_dir: Path, *, store: RunStore | None = None) -> dict[str, Any]:
    """Recompute a run folder's summary from its records and manifest (nothing is written)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise StoreError(f"{run_dir}: no such run folder; give <report_dir>/<run_id>")
    manifest = read_manifest(run_dir)
    store = store or RunStore(run_dir)
    records = store.load_results()
    if manifest is None and not records:
        raise StoreError(f"{run_dir}: not a run folder (no manifest.json and no result records)")
    run_id = manifest.run_id if manifest else run_dir.name
    return build_summary(records, manifest, run_id=run_id, problems=[str(p) for p in store.problems])


def write_summary(run_dir: Path, summary: Mapping[str, Any]) -> Path:
    path = Path(run_dir) / SUMMARY
    write_json(path, dict(summary))
    return path


def load_summary(path: Path) -> dict[str, Any]:
    """A summary.json, or the one of a run folder; errors name the file and the fix."""
    path = Path(path)
    if path.is_dir():
        candidate = path / SUMMARY
        if not candidate.is_file():
            raise StoreError(
                f"{path}: the run folder has no {SUMMARY}; write it with `pytest-osworld report summarize {path} --write`"
            )
        path = candidate
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{path}: no such file; give a summary.json or a run folder") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: not a readable summary ({exc})") from None
    if not isinstance(value, dict) or value.get("kind") != SUMMARY_KIND:
        raise StoreError(f"{path}: not a pytest-osworld summary (kind {SUMMARY_KIND!r} expected)")
    return value
