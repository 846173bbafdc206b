"""The servers of the built-in services stand alone: they run on the desktop image's python3 (Debian's),
so they import the standard library and each other only, never the host package; the image holds them
and each built-in service starts its own with ``python3 -m osworld_servers.<name>`` (docs/services.md)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from pytest_osworld.guest import build
from pytest_osworld.services import BUILTIN
from tests.support.services import SERVERS, image_copy, server_process

# Imports every module named on the command line, then prints the top-level modules it has loaded.
_IMPORT_ALL = (
    "import importlib, json, sys\n"
    "for name in sys.argv[1:]:\n"
    "    importlib.import_module(name)\n"
    "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
)


def _modules(root: Path) -> dict[str, Path]:
    """Dotted name in the image (``osworld_servers.forge.app``) -> file, for every module under ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = ["osworld_servers", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _import_all(folder: Path, names: list[str]) -> subprocess.CompletedProcess[str]:
    """Import ``names`` as a server's container would: the package on PYTHONPATH, no site-packages."""
    args = server_process("echo", folder, {})  # the same interpreter, folder and PYTHONPATH as a server's
    return subprocess.run(
        [sys.executable, "-S", "-c", _IMPORT_ALL, *names],
        cwd=args["cwd"],
        env=args["env"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_servers_import_only_the_standard_library_and_each_other() -> None:
    outside = []
    for name, path in _modules(SERVERS).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                tops = [(node.module or "").split(".")[0]]
            else:
                continue  # relative: within the package (Python refuses one beyond its top)
            outside += [f"{name}: {top}" for top in tops if top not in sys.stdlib_module_names and top != "__future__"]
    assert outside == []


def test_every_server_module_imports_with_the_host_package_out_of_reach(tmp_path: Path) -> None:
    names = list(_modules(SERVERS))
    assert {"osworld_servers.echo", "osworld_servers.forge.__main__", "osworld_servers.website.app"} <= set(names)
    done = _import_all(tmp_path, names)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert "osworld_servers" in loaded
    assert loaded - {"osworld_servers", "__main__"} <= set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    # The same interpreter cannot reach the host package: an import of it would have failed above.
    reach = _import_all(tmp_path, ["pytest_osworld"])
    assert reach.returncode != 0 and "No module named 'pytest_osworld'" in reach.stderr


def test_a_server_module_that_imports_the_host_package_fails_to_import(tmp_path: Path) -> None:
    planted = image_copy(tmp_path) / "osworld_servers" / "planted.py"
    planted.write_text("from pytest_osworld.errors import OsworldError\n", encoding="utf-8")
    done = _import_all(tmp_path, ["osworld_servers.echo", "osworld_servers.planted"])
    assert done.returncode != 0 and "No module named 'pytest_osworld'" in done.stderr


def test_each_server_module_stays_small() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules(SERVERS).items()}
    assert {name: size for name, size in sizes.items() if size > 300} == {}


def test_the_image_holds_the_servers_and_each_builtin_service_starts_its_own() -> None:
    context = {item.name for item in build._context_files()}
    shipped = {f"osworld_servers/{path.relative_to(SERVERS).as_posix()}" for path in _modules(SERVERS).values()}
    assert shipped <= context
    dockerfile = (build.IMAGE_DIR / "Dockerfile").read_text(encoding="utf-8")
    assert "COPY osworld_servers/ /usr/local/lib/pytest-osworld/osworld_servers/\n" in dockerfile
    for name, service in BUILTIN.items():
        assert service.build == "desktop" and service.image is None
        assert service.entrypoint == [
            "env",
            "PYTHONPATH=/usr/local/lib/pytest-osworld",
            "python3",
            "-m",
            f"osworld_servers.{name}",
        ]
        assert (SERVERS / f"{name}.py").is_file() or (SERVERS / name / "__main__.py").is_file()
