"""The asset cache and `pytest-osworld assets`, over a real HTTP server on loopback."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_osworld.cli import main
from pytest_osworld.setup.assets import HISTORY_EMPTY_URL, AssetCache, task_urls
from pytest_osworld.setup.errors import AssetError, AssetMissing
from pytest_osworld.tasks.model import Task
from tests.support.desktop import FileServer, file_server
from tests.support.taskfactory import task as make_task
from tests.support.taskfactory import write_jsonl


@pytest.fixture
def served(tmp_path: Path) -> Iterator[FileServer]:
    root = tmp_path / "www"
    root.mkdir()
    (root / "data.bin").write_bytes(b"\x00\x01payload" * 5000)
    (root / "other.txt").write_text("other file\n")
    with file_server(root, "127.0.0.1") as server:
        yield server


def test_download_is_stored_by_content_and_fetched_once(tmp_path: Path, served: FileServer) -> None:
    cache = AssetCache(tmp_path / "cache")
    url = served.url("data.bin")
    path = cache.path(url)
    data = (served.root / "data.bin").read_bytes()
    assert path.read_bytes() == data
    assert path.name == hashlib.sha256(data).hexdigest()
    assert cache.path(url) == path
    assert served.hits == ["/data.bin"]
    assert cache.verify(url)
    index = json.loads(next((tmp_path / "cache" / "urls").glob("*.json")).read_text())
    assert index["url"] == url and index["size"] == len(data)
    assert not any((tmp_path / "cache" / "tmp").iterdir())


def _fetch(root: str, url: str) -> str:
    return str(AssetCache(Path(root)).path(url))


def test_workers_share_one_download(tmp_path: Path, served: FileServer) -> None:
    url = served.url("data.bin")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        paths = pool.starmap(_fetch, [(str(tmp_path / "cache"), url)] * 8)
    assert len(set(paths)) == 1
    assert served.hits == ["/data.bin"]


def test_offline_reads_only_the_cache(tmp_path: Path, served: FileServer) -> None:
    url = served.url("data.bin")
    offline = AssetCache(tmp_path / "cache", offline=True)
    with pytest.raises(AssetMissing) as info:
        offline.path(url)
    message = str(info.value)
    assert url in message and "pytest-osworld assets prefetch" in message
    assert served.hits == []
    AssetCache(tmp_path / "cache").path(url)
    assert offline.path(url).read_bytes() == (served.root / "data.bin").read_bytes()


def test_rewrite_fetches_from_a_mirror_but_keys_by_the_task_url(tmp_path: Path, served: FileServer) -> None:
    url = "https://files.example.invalid/osworld/other.txt"
    cache = AssetCache(
        tmp_path / "cache",
        rewrite={
            "https://files.example.invalid/": "http://127.0.0.1:1/never/",
            "https://files.example.invalid/osworld/": served.url(""),
        },
    )
    assert cache.path(url).read_text() == "other file\n"
    entry = cache.lookup(url)
    assert entry is not None and entry.source == served.url("other.txt")
    assert served.hits == ["/other.txt"]


def test_damaged_object_is_fetched_again(tmp_path: Path, served: FileServer) -> None:
    cache = AssetCache(tmp_path / "cache")
    url = served.url("other.txt")
    path = cache.path(url)
    path.write_text("cut")
    assert not cache.contains(url)
    assert cache.path(url).read_text() == "other file\n"
    assert len(served.hits) == 2


def test_failed_download_names_the_url_and_leaves_nothing(tmp_path: Path, served: FileServer) -> None:
    cache = AssetCache(tmp_path / "cache", attempts=1)
    url = served.url("missing.bin")
    with pytest.raises(AssetError) as info:
        cache.path(url)
    assert url in str(info.value) and "404" in str(info.value) and "url_rewrite" in str(info.value)
    assert not cache.contains(url)
    assert not any((tmp_path / "cache" / "tmp").iterdir())


def test_task_urls_cover_downloads_cloud_files_and_history() -> None:
    raw = make_task(
        "t1",
        config=[
            {"type": "download", "parameters": {"files": [{"url": "http://a/1", "path": "/tmp/1"}]}},
            {"type": "update_browse_history", "parameters": {"history": []}},
        ],
        evaluator={
            "func": ["compare_table", "compare_table"],
            "result": [{"type": "vm_file", "path": "/x", "dest": "x"}, {"type": "vm_file", "path": "/y", "dest": "y"}],
            "expected": [
                {"type": "cloud_file", "path": "http://a/2", "dest": "2"},
                {"type": "cloud_file", "multi": True, "path": ["http://a/3", "http://a/1"], "dest": ["3", "1"]},
            ],
            "postconfig": [{"type": "download", "parameters": {"files": [{"url": "http://a/4", "path": "/tmp/4"}]}}],
        },
    )
    assert task_urls(Task.model_validate(raw)) == [
        "http://a/1",
        HISTORY_EMPTY_URL,
        "http://a/4",
        "http://a/2",
        "http://a/3",
    ]


def test_prefetch_add_and_verify_commands(
    tmp_path: Path, served: FileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            make_task(
                "t1",
                config=[
                    {
                        "type": "download",
                        "parameters": {"files": [{"url": served.url("data.bin"), "path": "/tmp/data.bin"}]},
                    }
                ],
            ),
            make_task(
                "t2",
                evaluator={
                    "func": "compare_text_file",
                    "result": {"type": "vm_file", "path": "/tmp/o.txt", "dest": "o.txt"},
                    "expected": {
                        "type": "cloud_file",
                        "path": "https://mirror-me.example.invalid/other.txt",
                        "dest": "e.txt",
                    },
                },
            ),
        ],
    )
    cache_dir = tmp_path / "cache"
    code = main(
        [
            "assets",
            "prefetch",
            str(tasks),
            "--asset-cache",
            str(cache_dir),
            "--rewrite",
            f"https://mirror-me.example.invalid/={served.url('')}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 fetched, 0 failed" in out
    cache = AssetCache(cache_dir, offline=True)
    assert cache.path("https://mirror-me.example.invalid/other.txt").read_text() == "other file\n"

    local = tmp_path / "by-hand.txt"
    local.write_text("seeded\n")
    assert (
        main(["assets", "add", "https://nowhere.example.invalid/f.txt", str(local), "--asset-cache", str(cache_dir)])
        == 0
    )
    assert cache.path("https://nowhere.example.invalid/f.txt").read_text() == "seeded\n"
    assert main(["assets", "verify", "--asset-cache", str(cache_dir)]) == 0
    assert "3 cached URLs, 0 damaged" in capsys.readouterr().out

    cache.path("https://nowhere.example.invalid/f.txt").write_text("tampered")
    assert main(["assets", "verify", "--asset-cache", str(cache_dir)]) == 1


def test_prefetch_reports_failures(tmp_path: Path, served: FileServer, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            make_task(
                "t1",
                config=[
                    {"type": "download", "parameters": {"files": [{"url": served.url("absent.bin"), "path": "/tmp/a"}]}}
                ],
            ),
        ],
    )
    assert main(["assets", "prefetch", str(tasks), "--asset-cache", str(tmp_path / "c")]) == 1
    assert "absent.bin" in capsys.readouterr().err
