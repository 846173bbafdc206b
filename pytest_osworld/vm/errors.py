"""Errors of the VM layer, each naming the problem and the fix."""

from __future__ import annotations

from pytest_osworld.errors import OsworldError


class VmBuildError(OsworldError):
    """The QEMU image or the VM image could not be built; the message ends with the last output."""
