"""Where noVNC's files are: the watch view's VNC client, from Debian's ``novnc`` package by default."""

from __future__ import annotations

from pathlib import Path

DEBIAN_NOVNC = Path("/usr/share/novnc")
RFB_MODULE = Path("core") / "rfb.js"


def find_novnc(configured: Path | None) -> tuple[Path | None, str | None]:
    """The folder of noVNC's files, or None and why it is missing (with the fix)."""
    folder = configured or DEBIAN_NOVNC
    if (folder / RFB_MODULE).is_file():
        return folder, None
    if configured is not None:
        return None, (
            f"--osworld-live-novnc {configured}: no noVNC there (it has no {RFB_MODULE}); give the folder that "
            "holds noVNC's core/ and vendor/ (Debian's novnc package: /usr/share/novnc)"
        )
    return None, (
        f"noVNC is not installed: {DEBIAN_NOVNC / RFB_MODULE} is missing; install it with "
        "`apt-get install novnc` (or give its folder with --osworld-live-novnc DIR), then watch links work"
    )
