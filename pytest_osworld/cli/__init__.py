"""The ``pytest-osworld`` command: one sub-command group per module.

Each group module exposes ``register(subparsers)`` which adds its parser and sets
``func`` on it; ``func(args) -> int`` is the exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# Imported for its registration: a profile's services: keys are checked against the service registry.
import pytest_osworld.services  # noqa: F401
from pytest_osworld.errors import OsworldError

GROUPS = ("tasks", "image", "assets", "report", "cleanup", "sandboxes")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-osworld", description="Tools around the pytest-osworld plugin.")
    sub = parser.add_subparsers(dest="group", metavar="COMMAND")
    import importlib

    for name in GROUPS:
        try:
            module = importlib.import_module(f"pytest_osworld.cli.{name}")
        except ModuleNotFoundError as exc:  # a group not built yet
            if exc.name != f"pytest_osworld.cli.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except OsworldError as exc:
        print(f"pytest-osworld: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pytest-osworld: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
