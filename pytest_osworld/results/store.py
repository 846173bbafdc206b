"""The run store: one folder per run, one folder per task episode, every file written atomically.

Layout (upstream's files beside the project's record)::

    <report_dir>/<run_id>/
        manifest.json                  what was selected (written at collection)
        summary.json                   the figures (written at the end, from the records)
        <domain>/<task_id>/            repeat 1
            result.json                the record (TaskResult), written the moment the task ends
            result.txt                 the float score, only when there is a valid score
            traj.jsonl                 one StepRecord a line, appended as steps happen
            step_<n>.png               the screenshot the agent saw at step n (keep_screenshots)
            final.png                  the screen when the agent loop ended
            model_io.jsonl             full model requests and answers (keep_model_io)
            recording.mp4              the episode's video (keep_video)
        <domain>/<task_id>#r<K>/       repeat K > 1, a sibling folder so upstream's tools see one episode each
        _superseded/<domain>/<folder>/<n>/   earlier attempts of a task that ran again (resume), kept, not read
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from pytest_osworld.errors import OsworldError
from pytest_osworld.fsutil import atomic_write_bytes, atomic_write_text
from pytest_osworld.record import StepRecord, TaskResult
from pytest_osworld.sanitize import scrub

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings

RESULT_JSON = "result.json"
RESULT_TXT = "result.txt"
TRAJ = "traj.jsonl"
FINAL_PNG = "final.png"
MODEL_IO = "model_io.jsonl"
VIDEO = "recording.mp4"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
SUPERSEDED = "_superseded"


class StoreError(OsworldError):
    """A run folder or a key is unusable; the message says which and what to do."""


class ResultFileWarning(UserWarning):
    """A result file was unreadable and skipped; the task counts as having no record."""


@dataclass(frozen=True)
class TaskKey:
    """``domain/task_id`` or ``domain/task_id#rK`` (K > 1), the run key of one episode."""

    domain: str
    task_id: str
    repeat: int = 1

    @classmethod
    def parse(cls, key: str) -> TaskKey:
        domain, sep, rest = key.partition("/")
        if not sep or not domain or not rest:
            raise StoreError(f"bad task key {key!r}: expected domain/task_id or domain/task_id#rK")
        task_id, repeat = rest, 1
        head, hash_r, tail = rest.rpartition("#r")
        if hash_r and head and tail.isdigit() and int(tail) > 1:
            task_id, repeat = head, int(tail)
        _check_name(domain, key, reserved=(".", "_"))
        _check_name(task_id, key, reserved=(".",))
        return cls(domain, task_id, repeat)

    @property
    def folder(self) -> str:
        return self.task_id if self.repeat == 1 else f"{self.task_id}#r{self.repeat}"

    def __str__(self) -> str:
        return f"{self.domain}/{self.folder}"


def _check_name(part: str, key: str, reserved: tuple[str, ...]) -> None:
    # Keys become paths: nothing in one may climb out of the run folder, hide in it, or take the name of
    # the run's own folders (a domain starting with "_").
    if (
        not part
        or part in (".", "..")
        or part.startswith(reserved)
        or any(c in part for c in "/\\\0")
        or part.strip() != part
    ):
        raise StoreError(
            f"task key {key!r} cannot name a folder (part {part!r}); "
            "task ids and domains must be plain names without '/' or '\\', not starting with '.' (nor a domain with '_')"
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class LoadProblem:
    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}; the task counts as having no record (run it again with --osworld-resume)"


@dataclass
class RunStore:
    """Reads and writes one run folder. Safe to share between xdist workers: each key has one writer."""

    run_dir: Path
    keep_screenshots: bool = True
    keep_model_io: bool = False
    keep_video: bool = False
    secrets: tuple[str, ...] = ()
    problems: list[LoadProblem] = field(default_factory=list)

    @classmethod
    def for_settings(cls, run_dir: Path, settings: Settings, secrets: Iterable[str] = ()) -> RunStore:
        return cls(
            run_dir=Path(run_dir),
            keep_screenshots=settings.reports.keep_screenshots,
            keep_model_io=settings.reports.keep_model_io,
            keep_video=settings.reports.keep_video,
            secrets=tuple(secrets),
        )

    # --- paths ------------------------------------------------------------------------------------

    def path_of(self, key: str) -> Path:
        """The task folder of a key, without creating it."""
        k = TaskKey.parse(key)
        return self.run_dir / k.domain / k.folder

    def task_dir(self, key: str) -> Path:
        """The task folder of a key, created when missing."""
        path = self.path_of(key)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def begin(self, key: str) -> Path | None:
        """Make the key's folder fresh for a new attempt; an earlier attempt moves under ``_superseded``.

        Returns where the earlier attempt went, or None when there was none.
        """
        path = self.path_of(key)
        if not path.is_dir() or not any(path.iterdir()):
            return None
        # Its writer is gone (an earlier session, or a worker that died): a write it left half-done (a
        # run killed while it wrote) is cleared, so what is kept of it parses.
        self.discard_unfinished(key)
        k = TaskKey.parse(key)
        parent = self.run_dir / SUPERSEDED / k.domain / k.folder
        parent.mkdir(parents=True, exist_ok=True)
        attempt = 1 + max((int(p.name) for p in parent.iterdir() if p.name.isdigit()), default=0)
        target = parent / str(attempt)
        os.replace(path, target)
        return target

    def discard_unfinished(self, key: str) -> list[str]:
        """Clear what a writer that died left half-done in the key's folder: the temporary files of its
        atomic writes, and a torn last line of an appended file (its steps before it stay). Only for a
        folder whose writer is gone. Returns what was cleared (names relative to the folder)."""
        folder = self.path_of(key)
        if not folder.is_dir():
            return []
        cleared = []
        for path in folder.iterdir():
            if path.is_file() and path.name.startswith(".") and path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)
                cleared.append(path.name)
        for name in (TRAJ, MODEL_IO):
            if _cut_torn_line(folder / name):
                cleared.append(f"{name} (its torn last line)")
        return cleared

    # --- writing (the episode) ---------------------------------------------------------------------

    @contextmanager
    def _writing(self, key: str) -> Iterator[None]:
        """A write the file system refused (a full disk, no permission) as an error naming the run."""
        try:
            yield
        except OSError as exc:
            raise StoreError(
                f"could not write {key}'s files in {self.run_dir}: {exc.strerror or exc}; give the report folder "
                f"room and run the tasks without a record again with --osworld-resume {self.run_dir}"
            ) from exc

    def write_step(self, key: str, step: StepRecord, screenshot_png: bytes | None = None) -> str | None:
        """Append one step to ``traj.jsonl`` (and keep its screenshot). Returns the screenshot's file name."""
        with self._writing(key):
            return self._write_step(key, step, screenshot_png)

    def _write_step(self, key: str, step: StepRecord, screenshot_png: bytes | None) -> str | None:
        folder = self.task_dir(key)
        name: str | None = None
        if screenshot_png is not None and self.keep_screenshots:
            name = f"step_{step.step_num}.png"
            atomic_write_bytes(folder / name, screenshot_png)
        line = scrub(step.model_dump(mode="json"), self.secrets)
        line["screenshot_file"] = name
        _append_line(folder / TRAJ, json.dumps(line, ensure_ascii=False))
        return name

    def write_final_screenshot(self, key: str, png: bytes) -> str:
        with self._writing(key):
            atomic_write_bytes(self.task_dir(key) / FINAL_PNG, png)
        return FINAL_PNG

    def write_model_io(self, key: str, obj: Any) -> str | None:
        """Append one model exchange (request and answer) when ``keep_model_io``; secrets are redacted."""
        if not self.keep_model_io:
            return None
        with self._writing(key):
            _append_line(
                self.task_dir(key) / MODEL_IO, json.dumps(scrub(obj, self.secrets), ensure_ascii=False, default=str)
            )
        return MODEL_IO

    def write_video(self, key: str, mp4: bytes) -> str | None:
        if not self.keep_video:
            return None
        with self._writing(key):
            atomic_write_bytes(self.task_dir(key) / VIDEO, mp4)
        return VIDEO

    def write_result(self, result: TaskResult) -> Path:
        """Write the record (and ``result.txt`` for a valid score) at once; returns the record's path."""
        with self._writing(result.key):
            return self._write_result(result)

    def _write_result(self, result: TaskResult) -> Path:
        folder = self.task_dir(result.key)
        record = result.model_copy(deep=True)
        if record.message:
            record.message = scrub(record.message, self.secrets)
        record.model = scrub(record.model, self.secrets)
        record.sandbox = scrub(record.sandbox, self.secrets)
        # A failed step's note quotes its command's output, which may hold a filled service token.
        record.setup_steps = scrub(record.setup_steps, self.secrets)
        record.finished_at = record.finished_at or _now()
        record.artifacts = {**_artifacts(folder), **record.artifacts}
        text_path = folder / RESULT_TXT
        if record.valid:
            # Upstream writes the float as Python prints it, e.g. "1.0" or "0.5".
            atomic_write_text(text_path, f"{float(record.score or 0.0)}\n")
        else:
            text_path.unlink(missing_ok=True)  # a crash leaves none upstream: resume tools rely on it
        path = folder / RESULT_JSON
        atomic_write_text(path, record.model_dump_json(indent=2) + "\n")
        return path

    # --- reading ------------------------------------------------------------------------------------

    def load_results(self) -> dict[str, TaskResult]:
        """Every readable record of the run by key; unreadable ones are skipped with a warning."""
        self.problems = []
        found: dict[str, TaskResult] = {}
        if not self.run_dir.is_dir():
            return found
        for path in sorted(self.run_dir.glob(f"*/*/{RESULT_JSON}")):
            domain_dir = path.parent.parent.name
            if domain_dir.startswith((".", "_")):
                continue
            record = self._read_record(path)
            if record is None:
                continue
            expected = f"{domain_dir}/{path.parent.name}"
            if record.key != expected:
                self._problem(path, f"the record is for {record.key}, not for its folder {expected}")
                continue
            found[record.key] = record
        return found

    def valid_keys(self) -> set[str]:
        """Keys with a valid score: what ``--osworld-resume`` does not run again."""
        return {key for key, record in self.load_results().items() if record.valid}

    def read_traj(self, key: str) -> list[dict[str, Any]]:
        """The steps of ``traj.jsonl``; a torn last line (a crash mid-append) is left out."""
        path = self.path_of(key) / TRAJ
        steps: list[dict[str, Any]] = []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return steps
        for line in lines:
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                steps.append(value)
        return steps

    def _read_record(self, path: Path) -> TaskResult | None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self._problem(path, f"cannot read it ({exc.__class__.__name__})")
            return None
        if not text.strip():
            self._problem(path, "the file is empty (a write was cut short)")
            return None
        try:
            return TaskResult.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "the record"
            kind = "not valid JSON" if first["type"] == "json_invalid" else f"{where}: {first['msg']}"
            self._problem(path, f"not a result record ({kind})")
            return None

    def _problem(self, path: Path, problem: str) -> None:
        found = LoadProblem(path, problem)
        self.problems.append(found)
        warnings.warn(ResultFileWarning(str(found)), stacklevel=3)


def _append_line(path: Path, line: str) -> None:
    """Append one line with a single write, so concurrent readers see whole lines or a torn last one.

    A write the disk cuts short (full) is taken back: the file ends with its last whole line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (line.replace("\n", " ") + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size  # each key has one writer: nobody appends meanwhile
        written = 0
        try:
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        except OSError:
            if written:
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def _cut_torn_line(path: Path) -> bool:
    """Truncate ``path`` after its last newline when it does not end with one; whether it did."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if not data or data.endswith(b"\n"):
        return False
    with path.open("r+b") as handle:
        handle.truncate(data.rfind(b"\n") + 1)
    return True


def _artifacts(folder: Path) -> dict[str, Any]:
    """The files of a task folder, by role, relative to it."""
    names = {p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}
    found: dict[str, Any] = {}
    for role, name in (("traj", TRAJ), ("final_screenshot", FINAL_PNG), ("model_io", MODEL_IO), ("video", VIDEO)):
        if name in names:
            found[role] = name
    steps = sorted((n for n in names if n.startswith("step_") and n.endswith(".png")), key=_step_number)
    if steps:
        found["step_screenshots"] = steps
    return found


def _step_number(name: str) -> int:
    digits = name.removeprefix("step_").removesuffix(".png")
    return int(digits) if digits.isdigit() else 0


def copy_task_dir(source: Path, target: Path) -> None:
    """Copy a task folder (merge): the target must not exist yet."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".*.tmp"))
