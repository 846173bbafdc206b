"""The run's final state as one self-contained HTML page in the run folder: ``live.html``.

Written at the end of every run from what the run left on disk (its records, ``traj.jsonl`` files and
screenshots) and its summary: every task with its state (passed, failed with its score, masked with its
reason, skipped with its reason, not run), its worker, sandbox, time, steps and the model's last answer
(truncated), its last screenshot (a small copy embedded, linked to the file beside the page) and its
video when one was recorded; the run's counts, both rates with their denominators, the masks by reason
and the cost. Nothing is loaded from elsewhere: the page opens from the folder, or anywhere as one file
(only the links to the full screenshots and videos need the folder beside it).

The live page of a run (``--osworld-live``) shows the same while the run lasts; this is its last state,
readable without a server, and the one writer of ``live.html`` whether the live page was on or not
(the live page names this file at the end). Every text here comes from sanitized records or is
sanitized again.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from PIL import Image

from pytest_osworld.fsutil import atomic_write_text
from pytest_osworld.record import TaskResult
from pytest_osworld.results.gate import pct
from pytest_osworld.results.store import RunStore
from pytest_osworld.results.task_page import last_screenshot
from pytest_osworld.results.views import ANSWER_CHARS, mask_reason, status_of
from pytest_osworld.sanitize import sanitize

FINAL_PAGE = "live.html"
THUMBNAIL_WIDTH = 320


@dataclass(frozen=True)
class TaskRow:
    """One task of the page."""

    key: str
    state: str  # passed | failed | masked | skipped | not run
    detail: str  # the score, the mask's or the skip's reason
    score: float | None = None
    steps: int | None = None
    worker: str | None = None
    sandbox: str | None = None
    seconds: float | None = None
    last_answer: str | None = None
    screenshot: Path | None = None  # relative to the run folder
    thumbnail: str | None = None  # a data: URL
    video: Path | None = None  # relative to the run folder
    kept: str | None = None  # why its sandbox was kept for a look (--osworld-keep-failed)


def task_rows(store: RunStore, records: Mapping[str, TaskResult], missing: Iterable[str] = ()) -> list[TaskRow]:
    """The page's rows: one per record, then one per selected task that has none (not run)."""
    rows = [_row(store, key, record) for key, record in sorted(records.items())]
    rows += [TaskRow(key=key, state="not run", detail="") for key in sorted(missing)]
    return rows


def _row(store: RunStore, key: str, record: TaskResult) -> TaskRow:
    status = status_of(record)
    if status == "masked":
        detail = mask_reason(record)
    elif status == "skipped":
        detail = sanitize(record.message or "")
    else:
        detail = f"score {record.score:g}" if record.score is not None else ""
    task_dir = store.path_of(key)
    shot = last_screenshot(task_dir, record)
    video = record.artifacts.get("recording")
    kept = record.sandbox.get("kept")
    return TaskRow(
        key=key,
        state=status,
        detail=detail,
        score=record.score if record.valid else None,
        steps=record.steps,
        worker=record.worker,
        sandbox=str(record.sandbox.get("name")) if record.sandbox.get("name") else None,
        seconds=record.durations.total,
        last_answer=_last_answer(store, key),
        screenshot=shot.relative_to(store.run_dir) if shot is not None else None,
        thumbnail=_thumbnail(shot) if shot is not None else None,
        video=(task_dir / video).relative_to(store.run_dir)
        if isinstance(video, str) and video and (task_dir / video).is_file()
        else None,
        kept=str(kept.get("why")) if isinstance(kept, dict) and kept.get("why") else None,
    )


def _last_answer(store: RunStore, key: str) -> str | None:
    for step in reversed(store.read_traj(key)):
        answer = step.get("response")
        if isinstance(answer, str) and answer.strip():
            text = " ".join(sanitize(answer).split())
            return text if len(text) <= ANSWER_CHARS else text[: ANSWER_CHARS - 1] + "…"
    return None


def _thumbnail(path: Path) -> str | None:
    """A small JPEG of a screenshot as a data: URL (the page stays small with hundreds of tasks)."""
    try:
        with Image.open(path) as image:
            image.thumbnail((THUMBNAIL_WIDTH, THUMBNAIL_WIDTH * 4))
            buffer = io.BytesIO()
            image.convert("RGB").save(buffer, format="JPEG", quality=70)
    except Exception:  # noqa: BLE001 - Pillow raises many kinds for a broken file (SyntaxError too): no thumbnail
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; } th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left;
  vertical-align: top; } th { background: #f4f4f4; }
.passed { color: #17692a; } .failed { color: #a31515; } .masked { color: #8a5a00; } .skipped, .not-run { color: #666; }
td.answer { max-width: 28em; font-size: 12px; } img { max-width: 320px; border: 1px solid #ccc; }
.figures td { border: none; padding: 2px 12px 2px 0; }
"""


def render(summary: Mapping[str, Any], rows: list[TaskRow], *, title: str) -> str:
    """The page's HTML (links are relative to the run folder, where the page is written)."""
    integrity = summary.get("integrity") or {}
    views = summary.get("views") or {}
    counts = [
        (name, integrity.get(name))
        for name in ("selected", "passed", "failed", "masked", "skipped")
        if integrity.get(name) is not None
    ]
    counts.append(("not run", len(integrity.get("missing") or [])))
    figures = "".join(f"<tr><th>{html.escape(name)}</th><td>{value}</td></tr>" for name, value in counts)
    rates = "".join(_rate_row(name, views[name]) for name in ("all", "valid", "no_gdrive") if name in views)
    masks = summary.get("masks") or {}
    mask_rows = "".join(f"<tr><td>{html.escape(str(r))}</td><td>{n}</td></tr>" for r, n in masks.items())
    identity = summary.get("identity") or {}
    models = ", ".join(str(m.get("name")) for m in identity.get("model") or [] if isinstance(m, dict) and m.get("name"))
    runner = ", ".join(str(r) for r in identity.get("runner") or [])
    created = html.escape(str(summary.get("created") or datetime.now().isoformat(timespec="seconds")))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>The run's final state, written {created}; runner {html.escape(runner or '-')}, "
        f"model {html.escape(sanitize(models) or '-')}.</p>"
        f'<table class="figures">{figures}</table>'
        "<h2>Rates</h2><table><tr><th>view</th><th>success</th><th>rate</th><th>raw</th><th>rate</th></tr>"
        f"{rates}</table>"
        f"<h2>Cost</h2><p>{_cost(summary)}</p>"
        + (f"<h2>Masks</h2><table><tr><th>reason</th><th>tasks</th></tr>{mask_rows}</table>" if masks else "")
        + "<h2>Tasks</h2><table><tr><th>task</th><th>state</th><th>steps</th><th>worker / sandbox</th>"
        "<th>time</th><th>last answer</th><th>last screenshot</th></tr>"
        + "".join(_task_row(row) for row in rows)
        + "</table></body></html>\n"
    )


def _rate_row(name: str, view: Mapping[str, Any]) -> str:
    n = view.get("episodes", 0)
    return (
        f"<tr><td>{html.escape(name)}</td><td>{view.get('successes', 0)}/{n}</td>"
        f"<td>{pct(view.get('success_rate'))}</td><td>{round(float(view.get('score_sum') or 0.0), 3):g}/{n}</td>"
        f"<td>{pct(view.get('raw_rate'))}</td></tr>"
    )


def _cost(summary: Mapping[str, Any]) -> str:
    parts = []
    for label, usage in (
        ("agent", summary.get("usage")),
        ("judge", summary.get("judge")),
        ("user", summary.get("user_sim")),
    ):
        if not isinstance(usage, Mapping):
            continue
        cost = usage.get("cost")
        tokens = f"{usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} completion tokens"
        parts.append(f"{label}: {tokens}, cost {'-' if cost is None else f'{cost:g}'}")
    return html.escape("; ".join(parts) or "-")


def _link(path: Path) -> str:
    return html.escape(quote(path.as_posix()))


def _task_row(row: TaskRow) -> str:
    state = html.escape(row.state + (f": {row.detail}" if row.detail else ""))
    if row.kept:
        state += f"<br><small>sandbox kept for a look ({html.escape(row.kept)})</small>"
    where = " / ".join(html.escape(part) for part in (row.worker or "-", row.sandbox or "-"))
    seconds = "" if row.seconds is None else f"{row.seconds:.1f} s"
    shot = ""
    if row.screenshot is not None:
        inner = f'<img src="{row.thumbnail}" alt="last screenshot">' if row.thumbnail else "last screenshot"
        shot = f'<a href="{_link(row.screenshot)}">{inner}</a>'
    if row.video is not None:
        shot += f'<br><a href="{_link(row.video)}">video</a>'
    css = row.state.replace(" ", "-")
    return (
        f'<tr id="{html.escape(row.key)}"><td>{html.escape(row.key)}</td><td class="{css}">{state}</td>'
        f"<td>{'' if row.steps is None else row.steps}</td><td>{where}</td><td>{seconds}</td>"
        f'<td class="answer">{html.escape(row.last_answer or "")}</td><td>{shot}</td></tr>'
    )


def write_final_page(run_dir: Path, summary: Mapping[str, Any], *, store: RunStore | None = None) -> Path:
    """Write ``<run_dir>/live.html`` from the run's records and ``summary``; returns its path."""
    store = store or RunStore(Path(run_dir))
    records = store.load_results()
    missing = list((summary.get("integrity") or {}).get("missing") or [])
    run_id = (summary.get("identity") or {}).get("run_id") or Path(run_dir).name
    page = render(summary, task_rows(store, records, missing), title=f"pytest-osworld run {run_id}")
    path = Path(run_dir) / FINAL_PAGE
    atomic_write_text(path, page)
    return path
