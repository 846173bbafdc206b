"""Files: from the guest (vm_file), from the web through the asset cache (cloud_file), from the task's cache."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from typing import Any

from pytest_osworld.errors import OsworldError
from pytest_osworld.guest.client import GuestRequestError
from pytest_osworld.setup.context import TaskContext

from ._registry import getter


def _pairs(config: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``path``/``dest`` as parallel lists: one pair, or the lists of the ``multi`` form."""
    if config.get("multi", False):
        paths, dests = list(config["path"]), list(config["dest"])
        if len(paths) != len(dests):
            raise ValueError(f"'path' has {len(paths)} entries but 'dest' has {len(dests)}")
        return paths, dests
    return [config["path"]], [config["dest"]]


def _gives(paths: list[Any], config: dict[str, Any]) -> Any:
    """Upstream's shape: one value when ``gives`` picks one file, else the list."""
    return paths[0] if len(paths) == 1 else paths


def fetch_vm_file(ctx: TaskContext, path: str, dest: str) -> str | None:
    """Copy a guest file into the task's cache; None when the guest has no such readable file."""
    try:
        data = ctx.guest.file(path)
    except GuestRequestError as exc:
        if exc.status >= 500:
            raise
        data = None  # upstream reads any refusal as "no file"
    if data is None:
        return None
    target = ctx.cache_path(dest)
    target.write_bytes(data)
    return str(target)


@getter("vm_file")
def get_vm_file(ctx: TaskContext, config: dict[str, Any]) -> Any:
    paths, dests = _pairs(config)
    if not config.get("multi", False) and config.get("time_suffix", False):
        stamp = datetime.now().strftime(config.get("time_format", "%Y%m%d_%H%M%S"))
        dests = [f"{os.path.splitext(d)[0]}_{stamp}{os.path.splitext(d)[1]}" for d in dests]
    gives = set(config.get("gives", [0]))
    found: list[str | None] = []
    for i, (path, dest) in enumerate(zip(paths, dests)):
        local = fetch_vm_file(ctx, path, dest)
        if i in gives:
            found.append(local)
    return _gives(found, config)


@getter("cloud_file")
def get_cloud_file(ctx: TaskContext, config: dict[str, Any]) -> Any:
    urls, dests = _pairs(config)
    gives = set(config.get("gives", [0]))
    found: list[str] = []
    for i, (url, dest) in enumerate(zip(urls, dests)):
        target = ctx.cache_path(dest)
        if not target.exists():  # upstream keeps a file already in the task's cache
            shutil.copyfile(ctx.assets.path(url), target)
        if i in gives:
            found.append(str(target))
    return _gives(found, config)


class CacheFileMissing(OsworldError, RuntimeError):
    """A ``cache_file`` getter names a file no setup step wrote: the task or the engine is wrong."""


@getter("cache_file")
def get_cache_file(ctx: TaskContext, config: dict[str, Any]) -> str:
    path = ctx.cache_path(config["path"])
    if not path.exists():
        raise CacheFileMissing(
            f"cache file {config['path']!r} does not exist in {ctx.cache_dir}: no setup step saved it "
            "(an execute step's 'stdout' or 'stderr' writes it)"
        )
    return str(path)


@getter("content_from_vm_file", requires=(("pandas", "pandas"), ("openpyxl", "openpyxl")))
def get_content_from_vm_file(ctx: TaskContext, config: dict[str, Any]) -> Any:
    path = config["path"]
    file_type, content = config["file_type"], config["file_content"]
    if file_type != "xlsx":
        raise NotImplementedError(f"content_from_vm_file: file_type {file_type!r} is not supported (only xlsx)")
    local = fetch_vm_file(ctx, path, os.path.basename(path))
    if local is None:
        raise FileNotFoundError(path)
    if content != "last_row":
        return None  # upstream returns nothing for other contents
    import pandas as pd

    frame = pd.read_excel(local)
    return frame.iloc[-1].astype(str).tolist()
