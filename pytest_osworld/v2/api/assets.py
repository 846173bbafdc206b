"""``asset(path)``: the URL of a task asset under ``OSWORLD_FILE_BASE_URL`` (upstream's public asset
dataset by default). A base that is a local folder gives a ``file://`` URL."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_osworld.v2.api.state import _CURRENT

DEFAULT_BASE = "https://huggingface.co/datasets/xlangai/osworld_v2_assets/resolve/main"
BASE_ENV = "OSWORLD_FILE_BASE_URL"


def file_base() -> str:
    runtime = _CURRENT.get()
    if runtime is not None and runtime.file_base:
        return runtime.file_base
    return os.environ.get(BASE_ENV) or DEFAULT_BASE


def asset(path: str) -> str:
    base = file_base()
    relative = path.lstrip("/")
    if "://" not in base:
        return (Path(base).expanduser().resolve() / relative).as_uri()
    return f"{base.rstrip('/')}/{relative}"
