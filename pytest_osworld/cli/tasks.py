"""``pytest-osworld tasks ...``: task inputs."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_osworld.tasks.importer import import_split


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("tasks", help="import task inputs and report on them")
    tasks_sub = group.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)

    imp = tasks_sub.add_parser("import", help="write an upstream split as one JSONL task file")
    imp.add_argument(
        "examples_root",
        type=Path,
        metavar="EVAL_EXAMPLES_DIR",
        help="OSWorld's evaluation_examples folder (holds examples/ and the split files)",
    )
    imp.add_argument("--split", default="test_all.json", help="split file name or path (default: test_all.json)")
    imp.add_argument("-o", "--output", type=Path, required=True, help="the JSONL file to write")
    imp.set_defaults(func=_import)

    sup = tasks_sub.add_parser(
        "support", help="which tasks this engine and a sandbox can run, per domain, and what is missing"
    )
    sup.add_argument("input", type=Path, metavar="INPUT", help="a JSONL task file or an upstream split file")
    sup.add_argument("--json", action="store_true", help="print the report as JSON")
    sup.add_argument(
        "--asset-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="the asset cache to count cached downloads in (default: the settings' default)",
    )
    sup.add_argument(
        "--offline",
        action="store_true",
        help=(
            "count as unsupported, as an offline run would, a task whose downloads are not cached or that "
            "needs live web sites (its tabs, browser or getters open internet pages)"
        ),
    )
    sup.add_argument(
        "--sandbox",
        default=None,
        metavar="NAME",
        help="the sandbox to count runnable tasks on: desktop, osworld-vm, vm or a profile (default: the "
        "settings' sandbox, desktop); its image's manifest says which apps and commands it has",
    )
    sup.add_argument(
        "--build-image",
        action="store_true",
        help="build the desktop image first when it is missing or stale (otherwise the report says how)",
    )
    sup.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="YAML",
        help="a YAML profile of settings, as the run's --osworld-profile: its sandbox, its sandbox_profiles "
        "(a profile's declared apps included) and its asset cache",
    )
    sup.set_defaults(func=_support)


def _import(args: argparse.Namespace) -> int:
    result = import_split(args.examples_root, args.split, args.output)
    ident = result.identity
    domains = ", ".join(f"{d} {n}" for d, n in ident["domains"].items())
    print(f"wrote {ident['count']} tasks to {result.jsonl} ({domains})")
    print(
        f"manifest: {result.manifest} (input sha256 {ident['input_sha256'][:12]}, ids sha256 {ident['ids_sha256'][:12]})"
    )
    return 0


def _support(args: argparse.Namespace) -> int:
    from pytest_osworld.runnable import support_command

    return support_command(args)
