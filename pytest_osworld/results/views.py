"""Each record's status, and the figures of a view (a rule for which episodes count in the denominator)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pytest_osworld.record import TaskResult

ANSWER_CHARS = 600  # of a model's last answer on the live page and the final page

Status = Literal["passed", "failed", "masked", "skipped"]
ViewName = Literal["all", "valid", "no_gdrive"]
VIEWS: tuple[ViewName, ...] = ("all", "valid", "no_gdrive")
GDRIVE_MARKER = "needs_gdrive"
# The marker of a task skipped because the chosen sandbox lacks an app or command it needs: it counts in
# the all view's denominator (as a non-success), as a task a full benchmark could not run would.
UNRUNNABLE_MARKER = "unrunnable"
# unrunnable: the sandbox lacks what the task needs (counted in all); unsupported: any other skip
# (this engine, credentials, offline, V2), in no denominator.
SkipKind = Literal["unrunnable", "unsupported"]


def status_of(record: TaskResult) -> Status:
    """passed: a full score; failed: a valid lower score; skipped: could not run here; masked: anything else."""
    if record.skipped:
        return "skipped"
    if record.valid:
        return "passed" if record.success else "failed"
    return "masked"  # a mask, or a record that claims an ending but carries no score


def skip_kind(record: TaskResult) -> SkipKind | None:
    """Which kind of skip a record is (from its markers), or None when it is no skip."""
    if not record.skipped:
        return None
    return "unrunnable" if UNRUNNABLE_MARKER in record.markers else "unsupported"


def mask_reason(record: TaskResult) -> str:
    if record.masked:
        return record.termination.value
    return f"{record.termination.value}_without_score"


@dataclass(frozen=True)
class Entry:
    """What a view needs of one episode: its status, score, whether it needs Google Drive, and for a
    skip its kind."""

    key: str
    status: Status
    score: float | None
    needs_gdrive: bool = False
    skip_kind: SkipKind | None = None

    @property
    def unrunnable(self) -> bool:
        return self.status == "skipped" and self.skip_kind == "unrunnable"


@dataclass(frozen=True)
class ViewFigures:
    episodes: int  # the denominator
    successes: int
    success_rate: float | None  # successes / episodes; None with no episode
    score_sum: float
    raw_rate: float | None  # score_sum / episodes (mean score, masks as 0 where they count)
    passed: int
    failed: int
    masked: int  # masks inside the denominator (0 in the valid view)
    masked_apart: int  # masks left out of the denominator
    skipped: int  # skips left out of the denominator (every skip in the valid view)
    unrunnable: int  # skips inside the denominator, counted as 0: the sandbox lacks what the task needs

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def in_view(entry: Entry, view: ViewName) -> bool:
    """Whether an episode is in a view's denominator."""
    if view == "valid":
        return entry.status in ("passed", "failed")
    if entry.status == "skipped" and not entry.unrunnable:
        return False
    return not (view == "no_gdrive" and entry.needs_gdrive)


def figures(entries: Iterable[Entry], view: ViewName) -> ViewFigures:
    entries = list(entries)
    if view == "no_gdrive":
        entries = [e for e in entries if not e.needs_gdrive]
    counted = [e for e in entries if in_view(e, view)]
    successes = sum(1 for e in counted if e.status == "passed")
    score_sum = round(sum(e.score or 0.0 for e in counted if e.status in ("passed", "failed")), 10)
    n = len(counted)
    masked_total = sum(1 for e in entries if e.status == "masked")
    masked_in = sum(1 for e in counted if e.status == "masked")
    return ViewFigures(
        episodes=n,
        successes=successes,
        success_rate=successes / n if n else None,
        score_sum=score_sum,
        raw_rate=score_sum / n if n else None,
        passed=successes,
        failed=sum(1 for e in counted if e.status == "failed"),
        masked=masked_in,
        masked_apart=masked_total - masked_in,
        skipped=sum(1 for e in entries if e.status == "skipped" and not in_view(e, view)),
        unrunnable=sum(1 for e in counted if e.unrunnable),
    )
