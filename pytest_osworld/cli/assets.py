"""``pytest-osworld assets ...``: fill and check the asset cache that setup and cloud_file read."""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_osworld.errors import OsworldError
from pytest_osworld.settings import Settings
from pytest_osworld.setup.assets import AssetCache, task_urls
from pytest_osworld.setup.errors import AssetError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("assets", help="fill and check the cache of task files (downloads, cloud_file)")
    assets_sub = group.add_subparsers(dest="assets_command", metavar="ACTION", required=True)

    def cache_option(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--asset-cache",
            type=Path,
            default=None,
            metavar="DIR",
            help=f"the cache folder (default: {Settings().tasks.asset_cache})",
        )

    pre = assets_sub.add_parser("prefetch", help="download every file the tasks of INPUT fetch into the cache")
    pre.add_argument("input", type=Path, metavar="INPUT", help="a JSONL task file or an upstream split file")
    cache_option(pre)
    pre.add_argument(
        "--rewrite",
        action="append",
        default=[],
        metavar="FROM=TO",
        help="fetch URLs starting with FROM from TO instead (a mirror); repeatable",
    )
    pre.add_argument("-j", "--jobs", type=int, default=4, help="downloads at once (default: 4)")
    pre.set_defaults(func=_prefetch)

    add = assets_sub.add_parser("add", help="store a local FILE as the content of URL (air-gapped hosts)")
    add.add_argument("url", metavar="URL")
    add.add_argument("file", type=Path, metavar="FILE")
    cache_option(add)
    add.set_defaults(func=_add)

    ver = assets_sub.add_parser("verify", help="re-hash every cached file and report the damaged ones")
    cache_option(ver)
    ver.set_defaults(func=_verify)


def _cache(args: argparse.Namespace, rewrite: dict[str, str] | None = None) -> AssetCache:
    return AssetCache(args.asset_cache or Settings().tasks.asset_cache, rewrite=rewrite)


def _parse_rewrites(values: list[str]) -> dict[str, str]:
    rewrite = {}
    for value in values:
        source, sep, target = value.partition("=")
        if not sep or not source or not target:
            raise OsworldError(f"--rewrite {value!r}: expected FROM=TO, e.g. https://huggingface.co/=http://mirror/hf/")
        rewrite[source] = target
    return rewrite


def _prefetch(args: argparse.Namespace) -> int:
    from pytest_osworld.tasks.readers import read_input

    cache = _cache(args, _parse_rewrites(args.rewrite))
    urls = list(dict.fromkeys(url for entry in read_input(args.input) for url in task_urls(entry.task)))
    todo = [u for u in urls if not cache.contains(u)]
    print(f"{len(urls)} URLs in {args.input}; {len(urls) - len(todo)} already in {cache.root}; fetching {len(todo)}")

    def fetch(url: str) -> str | None:
        try:
            cache.path(url)
            return None
        except AssetError as exc:
            return str(exc)

    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for url, problem in zip(todo, pool.map(fetch, todo)):
            if problem:
                failed += 1
                print(f"FAILED {problem}", file=sys.stderr)
            else:
                print(f"ok     {url}")
    print(f"{len(todo) - failed} fetched, {failed} failed")
    return 1 if failed else 0


def _add(args: argparse.Namespace) -> int:
    if not args.file.is_file():
        raise OsworldError(f"{args.file}: no such file")
    entry = _cache(args).put_file(args.url, args.file)
    print(f"stored {args.url} ({entry.size} bytes, sha256 {entry.sha256[:12]})")
    return 0


def _verify(args: argparse.Namespace) -> int:
    cache = _cache(args)
    bad = total = 0
    for entry in cache.entries():
        total += 1
        if not cache.verify(entry.url):
            bad += 1
            print(f"DAMAGED {entry.url}: missing or changed; fetch it again with prefetch", file=sys.stderr)
    print(f"{total} cached URLs, {bad} damaged")
    return 1 if bad else 0
