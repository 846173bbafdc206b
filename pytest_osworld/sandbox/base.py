"""The sandbox interface: one fresh desktop, owned by one test for its whole life, and its provider.

A provider class is what ``--osworld-sandbox NAME`` picks (see ``registry``). Its classmethods
work from the settings alone, so the registry never asks which kind of provider it holds:
``from_settings`` builds the provider of this process, ``check`` looks at the whole host pool
before a session, ``describe_pool`` says what the run ran on without starting anything.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pytest_osworld.errors import OsworldError, SandboxError, SandboxLost

if TYPE_CHECKING:
    # Annotations only: the interface names them, its implementations import them.
    from pytest_osworld.sandbox.labels import Owner
    from pytest_osworld.sandbox.leftovers import Managed
    from pytest_osworld.sandbox.provides import Provides
    from pytest_osworld.settings import Settings

# Guest ports every sandbox exposes (the guest API, DevTools, the VNC live view, VLC's HTTP interface).
API_PORT = 5000
DEVTOOLS_PORT = 9222
VNC_PORT = 8006
VLC_PORT = 8080
GUEST_PORTS = (API_PORT, DEVTOOLS_PORT, VNC_PORT, VLC_PORT)

Progress = Callable[[str], None]  # one line of progress for the user (an image build, a state save)


class SandboxConfigError(OsworldError):
    """A sandbox profile cannot work on this host at all (no image, no qcow2, no KVM): stop before any test."""


class Sandbox(ABC):
    """A running desktop whose guest ports are reachable from the host."""

    #: Seconds from the start of its creation until its guest answered (the episode records it).
    ready_seconds: float = 0.0

    @property
    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def url(self, guest_port: int = API_PORT) -> str:
        """Base URL on the host side of a guest port, e.g. ``http://127.0.0.1:49153``."""

    @property
    def api_url(self) -> str:
        return self.url(API_PORT)

    @abstractmethod
    def alive(self) -> bool:
        """Whether the sandbox is still running (cheap; asks the engine, not the guest)."""

    @abstractmethod
    def logs(self, tail: int = 50) -> str: ...

    def lost(self, what: str) -> SandboxLost:
        """The error for this sandbox gone or silent (``what`` says how it was noticed).

        A provider's sandbox adds what it knows of the end: its state and last log lines.
        """
        return SandboxLost(f"sandbox {self.name} was lost ({what})")

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Identity for the result record: profile, image, image id or digest, host."""

    @abstractmethod
    def stop(self) -> None:
        """Remove the sandbox and what it holds. Idempotent; never raises for an already gone sandbox."""

    def mark_kept(self, mark: str) -> str:
        """Mark the sandbox as kept after its task (``--osworld-keep-failed``): ``mark`` goes after its
        name, so listings say why and a process's own sweep leaves it to the run's end. Returns its new
        name. Only a provider with ``keeps_sandboxes`` can; the others raise :class:`SandboxError`."""
        raise SandboxError(f"sandbox {self.name} ({type(self).__name__}) cannot be kept after its task")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SandboxProvider(ABC):
    """Starts sandboxes of one kind; one provider per pytest process.

    Registered by name in ``registry`` (built in, or through the ``pytest_osworld.sandboxes`` entry
    point group); a provider class needs nothing but the settings and the owner to be built.
    """

    #: The provider keeps a warm pool of its own (``warm_pool``, e.g. per node on Ray); the registry
    #: puts any other provider behind a pool of the process (``sandbox.pooled``).
    pools_itself: ClassVar[bool] = False
    #: Its sandboxes can be kept running after a failed task until the run ends (``--osworld-keep-failed``):
    #: each is a container of the run that ``Sandbox.mark_kept`` renames.
    keeps_sandboxes: ClassVar[bool] = False

    # --- the provider class: from the settings, before and beside any provider object
    @classmethod
    @abstractmethod
    def from_settings(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> Self:
        """The provider of this process (its worker's host). Raises :class:`SandboxConfigError`."""

    @classmethod
    @abstractmethod
    def check(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
        """The check before a session, on every host; raises :class:`SandboxConfigError` naming every problem."""

    @classmethod
    @abstractmethod
    def describe_pool(cls, settings: Settings, owner: Owner) -> dict[str, Any]:
        """The run manifest's ``sandbox`` entry, without starting a sandbox."""

    @classmethod
    def end_run(cls, settings: Settings, owner: Owner) -> int | None:
        """The run's end, in the process that owns the run (the xdist controller or the plain pytest
        process), after every test: remove what the run left wherever it ran; returns how many.

        None (the default): the provider holds nothing beyond containers, and the registry sweeps the
        run's containers on every environment host.
        """
        return None

    @classmethod
    def run_leftovers(cls, settings: Settings, owner: Owner) -> list[Managed] | None:
        """What ended runs left where this provider runs sandboxes, reported before a session;
        None (the default): the registry looks on every environment host."""
        return None

    @classmethod
    def provides(cls, settings: Settings, *, build: bool = False, progress: Progress | None = None) -> Provides:
        """What this sandbox has (OSWorld apps, commands), without starting one; unknown unless declared.

        ``build``: the user asked to build a missing or stale image first (never done otherwise).
        """
        from pytest_osworld.sandbox.provides import unknown

        return unknown(
            settings.sandbox.name,
            f"sandbox {settings.sandbox.name!r}",
            f"the provider {cls.__name__} does not declare what its sandbox provides (its classmethod provides)",
        )

    # --- one provider
    @abstractmethod
    def start(self, *, task_key: str, labels: Mapping[str, str] | None = None) -> Sandbox:
        """A started sandbox whose guest API answers; raises :class:`SandboxError` otherwise."""

    def start_on_network(self, *, task_key: str, network: str, labels: Mapping[str, str] | None = None) -> Sandbox:
        """A started sandbox that is also on the Docker network ``network`` (the run's shared services:
        their hostnames resolve inside it). Only a provider whose sandbox is a container can; the others
        say so, and the task is masked instead of running without its services."""
        raise SandboxError(
            f"the {type(self).__name__} sandbox cannot join the shared services' network {network}: "
            "run tasks that need services with a container sandbox (desktop, osworld-vm or a profile's own)"
        )

    def describe(self) -> dict[str, Any]:
        """Identity for the run manifest (image digests, qcow2 identity)."""
        return {}

    @abstractmethod
    def sweep(self, run_id: str, *, pid: int | None = None) -> int:
        """Remove what is left of a run (of one process of it, when ``pid`` is given); returns how many.

        The last resort on the way out (a start cut short by an interrupt has no handle to remove):
        an engine that does not answer removes nothing and raises nothing.
        """

    def close(self) -> None:  # noqa: B027 - optional: a subclass that holds nothing needs none
        """Release what the provider holds (clients, shared state)."""
