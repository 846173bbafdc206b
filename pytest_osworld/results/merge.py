"""Join the run folders of shards into one run folder with its own manifest and summary."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from pytest_osworld.record import TaskResult
from pytest_osworld.results.manifest import RunManifest, Selection, read_manifest
from pytest_osworld.results.store import MANIFEST, RunStore, StoreError, copy_task_dir
from pytest_osworld.results.summary import build_summary, write_summary


class MergeError(StoreError):
    """Shards that cannot be joined (overlapping, from different inputs, not run folders)."""


@dataclass
class _Source:
    path: Path
    manifest: RunManifest
    records: dict[str, TaskResult]
    problems: list[str]

    @property
    def selected(self) -> set[str]:
        return set(self.manifest.selected.ids)

    @property
    def input_sha(self) -> str | None:
        return self.manifest.input.input_sha256


@dataclass
class MergeReport:
    out: Path
    summary: dict[str, Any]
    missing: list[str]
    missing_shards: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _load(path: Path) -> _Source:
    path = Path(path)
    if not path.is_dir():
        raise MergeError(f"{path}: no such run folder")
    manifest = read_manifest(path)
    if manifest is None:
        raise MergeError(
            f"{path}: not a run folder (no {MANIFEST}); give the <report_dir>/<run_id> folder of each shard"
        )
    store = RunStore(path)
    records = store.load_results()
    return _Source(path, manifest, records, [str(p) for p in store.problems])


def _examples(keys: set[str]) -> str:
    shown = sorted(keys)[:5]
    return ", ".join(shown) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")


def _check(sources: list[_Source]) -> None:
    shas = {s.input_sha for s in sources}
    if len(shas) > 1:
        lines = "; ".join(f"{s.path}: {str(s.input_sha)[:12]}" for s in sources)
        raise MergeError(
            f"the runs come from different task inputs (input SHA-256 {lines}); merge only the shards of one task input"
        )
    repeats = {s.manifest.repeat for s in sources}
    if len(repeats) > 1:
        raise MergeError(
            "the runs used different --osworld-repeat values ("
            + ", ".join(f"{s.path}: {s.manifest.repeat}" for s in sources)
            + "); merge only runs of one design"
        )
    for a, b in combinations(sources, 2):
        if a.path.resolve() == b.path.resolve():
            raise MergeError(f"{a.path} is given twice")
        overlap = (a.selected | set(a.records)) & (b.selected | set(b.records))
        if overlap:
            raise MergeError(
                f"{a.path} and {b.path} overlap: {len(overlap)} tasks are in both ({_examples(overlap)}); "
                "merge disjoint shards only (each from its own --osworld-shard I/N)"
            )


def _missing_shards(sources: list[_Source]) -> list[str]:
    specs = [s.manifest.shard for s in sources]
    if not specs or any(not spec for spec in specs):
        return []
    counts = {int(str(spec).split("/")[1]) for spec in specs}
    if len(counts) != 1:
        return []
    count = counts.pop()
    have = {int(str(spec).split("/")[0]) for spec in specs}
    return [f"{i}/{count}" for i in range(1, count + 1) if i not in have]


def _manifest(sources: list[_Source], out: Path, keys: list[str]) -> RunManifest:
    first = sources[0].manifest
    return RunManifest(
        run_id=out.name,
        repeat=first.repeat,
        input=first.input.model_copy(
            update={"sources": sorted({src for s in sources for src in s.manifest.input.sources})}
        ),
        selected=Selection.of(set(keys), {k for s in sources for k in s.manifest.selected.needs_gdrive}),
        versions=first.versions,
        sandbox=first.sandbox,
        merged_from=[
            {
                "dir": str(s.path),
                "run_id": s.manifest.run_id,
                "shard": s.manifest.shard,
                "selected": len(s.selected),
                "recorded": len(s.records),
            }
            for s in sources
        ],
    )


def merge_runs(dirs: list[Path], out: Path) -> MergeReport:
    """Copy every shard's task folders into ``out`` (which must be new or empty) and summarize them.

    The shards are left untouched; ``out`` appears whole or not at all.
    """
    if not dirs:
        raise MergeError("give at least one run folder to merge")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MergeError(f"{out}: already exists and is not empty; choose a new output folder")
    sources = [_load(Path(d)) for d in dirs]
    _check(sources)
    keys = sorted(set().union(*(s.selected | set(s.records) for s in sources)))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.merging-", dir=out.parent))
    try:
        records: dict[str, TaskResult] = {}
        for source in sources:
            src_store, dst_store = RunStore(source.path), RunStore(staging)
            for key, record in source.records.items():
                target = dst_store.path_of(key)
                target.parent.mkdir(parents=True, exist_ok=True)
                copy_task_dir(src_store.path_of(key), target)
                records[key] = record
        manifest = _manifest(sources, out, keys)
        manifest.write(staging)
        problems = [p for s in sources for p in s.problems]
        summary = build_summary(records, manifest, run_id=out.name, problems=problems)
        write_summary(staging, summary)
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return MergeReport(
        out=out,
        summary=summary,
        missing=summary["integrity"]["missing"],
        missing_shards=_missing_shards(sources),
        problems=problems,
    )
