"""The servers that run inside service containers of the desktop image: ``echo``, ``website``,
``forge`` and ``proxy`` (docs/services.md).

They run on the image's python3 (Debian's), not on the host's: ``guest/build.py`` copies this package
into the image as ``osworld_servers`` and a service starts one with ``python3 -m
osworld_servers.<name>`` (``services/builtin.py``). So every module here uses the standard library
and relative imports only, never the host package (``tests/servers/test_standalone.py`` checks it).
Each server makes its one state object at start and hands it to its handlers through the server
(``base.Server.app``); nothing is kept in a module's globals.
"""

# Where the desktop image holds this package, and its name there (guest/build.py, image/Dockerfile).
IMAGE_PACKAGE = "osworld_servers"
IMAGE_PATH = "/usr/local/lib/pytest-osworld"


def image_command(module: str) -> list[str]:
    """The command that starts the server ``module`` (``echo``, ``forge``, ...) in a container of the
    desktop image: ``python3 -m osworld_servers.<module>``, with the package on ``PYTHONPATH``."""
    return ["env", f"PYTHONPATH={IMAGE_PATH}", "python3", "-m", f"{IMAGE_PACKAGE}.{module}"]
