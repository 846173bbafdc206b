"""`pytest-osworld image build|info`: the desktop image on the Docker engine at DOCKER_HOST."""

from __future__ import annotations

import argparse
import sys

import docker

from pytest_osworld.guest import build


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("image", help="build or inspect the desktop image", description=__doc__)
    actions = parser.add_subparsers(dest="image_action", metavar="ACTION", required=True)

    build_parser = actions.add_parser(
        "build",
        help="build the desktop image when missing or stale",
        description="Build pytest-osworld/desktop (and its debootstrap base when missing). "
        "Without --force nothing is done when the image is current.",
    )
    build_parser.add_argument("--force", action="store_true", help="rebuild every layer with fresh packages")
    build_parser.add_argument(
        "--vm",
        action="store_true",
        help="also build the bootable VM image (qcow2 + kernel) of the desktop for --osworld-sandbox vm, "
        "and the QEMU image",
    )
    build_parser.set_defaults(func=_build)

    info_parser = actions.add_parser("info", help="show the built image: id, size, build hash")
    info_parser.set_defaults(func=_info)


def _build(args: argparse.Namespace) -> int:
    client = build.connect()
    if args.vm:
        return _build_vm(client, force=args.force)
    if not args.force:
        current = build.image_info(client)
        if current is not None and current.build_hash == build.context_hash():
            print(f"{build.LATEST} is up to date")
            _print_info(current)
            return 0
    info = (
        build.build_image(client, force=True, progress=_say)
        if args.force
        else build.ensure_image(client, progress=_say)
    )
    _print_info(info)
    return 0


def _build_vm(client: docker.DockerClient, *, force: bool) -> int:
    from pytest_osworld.errors import OsworldError
    from pytest_osworld.vm import image as vm_image
    from pytest_osworld.vm import store

    try:
        built = vm_image.ensure_vm_image(client, labels={}, progress=_say, force=force)
    except OsworldError as exc:
        print(f"pytest-osworld: {exc}", file=sys.stderr)
        return 1
    print(f"vm image:   {built.hash[:12]} in Docker volume {store.VOLUME}")
    print(f"disk:       {built.disk}")
    print(f"kernel:     {built.kernel}")
    print(f"initrd:     {built.initrd}")
    return 0


def _info(_args: argparse.Namespace) -> int:
    client = build.connect()
    info = build.image_info(client)
    if info is None:
        print(
            f"pytest-osworld: {build.LATEST} is not built on this engine (fix: pytest-osworld image build)",
            file=sys.stderr,
        )
        return 1
    _print_info(info)
    if info.build_hash == build.context_hash():
        print("state:      current")
    else:
        print("state:      stale, the build context changed (fix: pytest-osworld image build)")
    return 0


def _print_info(info: build.ImageInfo) -> None:
    print(f"image id:   {info.id}")
    print(f"size:       {info.size / 1e9:.2f} GB ({info.size} bytes)")
    print(f"build hash: {info.build_hash or '(none: not built by pytest-osworld)'}")
    print(f"tags:       {', '.join(info.tags)}")
    if info.manifest is None:
        print("apps:       (unknown: built before image manifests; fix: pytest-osworld image build --force)")
        return
    print(f"debian:     {info.manifest.get('debian', '?')}")
    serves = info.serves or {}
    for name, version in info.applications.items():
        served = f" (serves {', '.join(serves[name])})" if serves.get(name) else ""
        print(f"app:        {name} {version}{served}")
    commands = info.commands
    if commands is None or info.serves is None:
        print("commands:   (unknown: built before the manifest listed them; fix: pytest-osworld image build)")
    else:
        print(f"commands:   {len(commands)} on PATH")


def _say(line: str) -> None:
    print(line, flush=True)
