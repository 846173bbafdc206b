"""The host-side asset cache: task files downloaded once, shared by every worker, verified.

Layout under the cache root::

    objects/<aa>/<sha256>     the bytes, named by their SHA-256 (one copy per content)
    urls/<sha256 of url>.json  the index: url -> sha256, size, where it was fetched from
    locks/<sha256 of url>.lock a file lock per URL, so xdist workers fetch a URL once
    tmp/                       downloads under way (renamed into objects/ when complete)

Writes are atomic (temporary file, then rename) and the index is written after the object, so a
reader sees either nothing or a complete, verified file. The index is keyed by the URL the task
names; ``url_rewrite`` only changes where the bytes are fetched from (a mirror).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from pytest_osworld.fsutil import write_json
from pytest_osworld.settings import Settings
from pytest_osworld.setup.errors import AssetError, AssetMissing
from pytest_osworld.tasks.model import Task

CHUNK = 1 << 20
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})

# update_browse_history starts from upstream's empty Chrome History database, fetched from this URL.
HISTORY_EMPTY_URL = (
    "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
    "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true"
)


@dataclass(frozen=True)
class AssetEntry:
    url: str
    sha256: str
    size: int
    source: str  # the URL the bytes came from (after a rewrite), or "file:..." when added by hand
    stored: str  # ISO time


def url_key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


class AssetCache:
    """Content-addressed store of task files, keyed by URL."""

    def __init__(
        self,
        root: Path,
        *,
        offline: bool = False,
        rewrite: Mapping[str, str] | None = None,
        timeout: float = 300.0,
        attempts: int = 3,
    ) -> None:
        self.root = Path(root)
        self.offline = offline
        self.rewrite = dict(rewrite or {})
        self.timeout = timeout
        self.attempts = attempts

    @classmethod
    def from_settings(cls, settings: Settings) -> AssetCache:
        return cls(settings.tasks.asset_cache, offline=settings.tasks.offline, rewrite=settings.tasks.url_rewrite)

    # --- paths --------------------------------------------------------------------------------

    def _object(self, sha256: str) -> Path:
        return self.root / "objects" / sha256[:2] / sha256

    def _index(self, url: str) -> Path:
        return self.root / "urls" / f"{url_key(url)}.json"

    @contextlib.contextmanager
    def _locked(self, url: str) -> Iterator[None]:
        lock_dir = self.root / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        with open(lock_dir / f"{url_key(url)}.lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when the handle closes
            yield

    def source_url(self, url: str) -> str:
        """Where ``url`` is fetched from: the longest matching ``url_rewrite`` prefix replaced."""
        best = max((p for p in self.rewrite if url.startswith(p)), key=len, default=None)
        return url if best is None else self.rewrite[best] + url[len(best) :]

    # --- reading ------------------------------------------------------------------------------

    def lookup(self, url: str) -> AssetEntry | None:
        """The index entry of ``url`` when its object is present and of the recorded size."""
        try:
            data = json.loads(self._index(url).read_text(encoding="utf-8"))
            entry = AssetEntry(**data)
        except (OSError, ValueError, TypeError):
            return None
        try:
            if self._object(entry.sha256).stat().st_size != entry.size:
                return None
        except OSError:
            return None
        return entry

    def contains(self, url: str) -> bool:
        return self.lookup(url) is not None

    def path(self, url: str) -> Path:
        """The cached file of ``url``, downloading it first unless offline.

        Offline, a miss raises :class:`AssetMissing` naming the URL and the prefetch command.
        """
        entry = self.lookup(url)
        if entry is not None:
            return self._object(entry.sha256)
        if self.offline:
            raise AssetMissing(url, str(self.root))
        with self._locked(url):
            entry = self.lookup(url)  # another worker may have fetched it while we waited
            if entry is None:
                entry = self._download(url)
        return self._object(entry.sha256)

    def verify(self, url: str) -> bool:
        """Re-hash the object of ``url``; False when it is missing or its bytes changed."""
        entry = self.lookup(url)
        return entry is not None and file_sha256(self._object(entry.sha256)) == entry.sha256

    def entries(self) -> Iterator[AssetEntry]:
        for index in sorted((self.root / "urls").glob("*.json")):
            try:
                yield AssetEntry(**json.loads(index.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError):
                continue

    # --- writing ------------------------------------------------------------------------------

    def put_bytes(self, url: str, data: bytes, source: str = "bytes") -> AssetEntry:
        tmp = self._tmp_file()
        try:
            tmp.write_bytes(data)
            with self._locked(url):
                return self._commit(url, tmp, source)
        finally:
            tmp.unlink(missing_ok=True)

    def put_file(self, url: str, path: Path) -> AssetEntry:
        """Add a local file as the content of ``url`` (seeding an air-gapped cache)."""
        tmp = self._tmp_file()
        try:
            shutil.copyfile(path, tmp)
            with self._locked(url):
                return self._commit(url, tmp, f"file:{Path(path).resolve()}")
        finally:
            tmp.unlink(missing_ok=True)

    def _tmp_file(self) -> Path:
        tmp_dir = self.root / "tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=tmp_dir, prefix="part-")
        os.close(fd)
        return Path(name)

    def _commit(self, url: str, tmp: Path, source: str, sha256: str | None = None) -> AssetEntry:
        """Move ``tmp`` into the store under its hash, then write the index entry."""
        sha256 = sha256 or file_sha256(tmp)
        size = tmp.stat().st_size
        target = self._object(sha256)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not (target.exists() and target.stat().st_size == size):
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)  # the same content has the same name: a race writes the same bytes
        entry = AssetEntry(
            url=url,
            sha256=sha256,
            size=size,
            source=source,
            stored=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        write_json(self._index(url), asdict(entry))
        return entry

    def _download(self, url: str) -> AssetEntry:
        source = self.source_url(url)
        shown = url if source == url else f"{url} (from {source})"
        if not source.startswith(("http://", "https://")):
            raise AssetError(f"cannot download {shown}: only http(s) URLs can be fetched")
        problem = ""
        for attempt in range(1, self.attempts + 1):
            tmp = self._tmp_file()
            try:
                sha256, retry, problem = self._fetch_into(source, tmp)
                if sha256 is not None:
                    return self._commit(url, tmp, source, sha256)
            finally:
                tmp.unlink(missing_ok=True)
            if not retry:
                break
            if attempt < self.attempts:
                time.sleep(2 ** (attempt - 1))  # backoff before the next attempt
        raise AssetError(
            f"download of {shown} failed: {problem}; check the URL and the network, map it to a mirror "
            "with url_rewrite in the profile, or add the file by hand: pytest-osworld assets add URL FILE"
        )

    def _fetch_into(self, source: str, tmp: Path) -> tuple[str | None, bool, str]:
        """Stream ``source`` into ``tmp``: (sha256 or None, worth retrying, the problem)."""
        digest = hashlib.sha256()
        try:
            with httpx.stream(
                "GET", source, follow_redirects=True, timeout=httpx.Timeout(self.timeout, connect=30.0)
            ) as response:
                if response.status_code >= 400:
                    return None, response.status_code in RETRYABLE_STATUSES, f"HTTP {response.status_code}"
                expected = response.headers.get("content-length")
                encoded = "content-encoding" in response.headers
                size = 0
                with open(tmp, "wb") as out:
                    for block in response.iter_raw(CHUNK) if not encoded else response.iter_bytes(CHUNK):
                        out.write(block)
                        digest.update(block)
                        size += len(block)
                if expected is not None and not encoded and int(expected) != size:
                    return None, True, f"got {size} of {expected} bytes"
        except httpx.HTTPError as exc:
            return None, True, f"{type(exc).__name__}: {exc}"
        return digest.hexdigest(), False, ""


# --- which URLs a task needs ----------------------------------------------------------------


def _getter_urls(config: Mapping[str, Any]) -> list[str]:
    if config.get("type") != "cloud_file":
        return []
    path = config.get("path")
    if isinstance(path, list):
        return [p for p in path if isinstance(p, str)]
    return [path] if isinstance(path, str) else []


def task_urls(task: Task) -> list[str]:
    """Every URL the task's setup and evaluator fetch on the host, in order, without duplicates."""
    urls: list[str] = []
    for step in task.all_steps():
        if step.type == "download":
            urls.extend(f.url for f in step.parameters.files)
        elif step.type == "update_browse_history":
            urls.append(HISTORY_EMPTY_URL)
    for getter in task.evaluator.getters():
        urls.extend(_getter_urls(getter.to_json()))
    return list(dict.fromkeys(urls))
