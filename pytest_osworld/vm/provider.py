"""The ``vm`` sandbox: one QEMU VM per sandbox, each in its own container of the runner image.

The container publishes the guest's ports (forwarded by QEMU's user-mode network to the same
container ports) and QEMU's monitor on the environment host's loopback, at ports the engine
picks. With ``reset: snapshot`` (the default) the first sandbox of a configuration on a host
boots a VM and saves its state (``snapshot``); every sandbox then starts from that state on a
fresh overlay of its own, and the guest clock is set to the host's before setup runs. A restore
that fails (QEMU dies, no answer within the deadline, a corrupt state) falls back to one cold
boot, and the sandbox's ``describe()`` says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shlex
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

import docker
import docker.errors
import docker.types
import httpx
import requests.exceptions

from pytest_osworld.errors import OsworldError
from pytest_osworld.locks import engine_lock
from pytest_osworld.sandbox import (
    API_PORT,
    GUEST_PORTS,
    KVM_DEVICE,
    LABEL_PROFILE,
    LABEL_ROLE,
    LABEL_TASK,
    ROLE_PROBE,
    ROLE_SANDBOX,
    ROLE_VM_STATE,
    ContainerBackedSandbox,
    Containers,
    EngineHost,
    NotReady,
    Owner,
    Progress,
    Provides,
    RunningContainer,
    SandboxConfigError,
    SandboxError,
    SandboxProvider,
    host_pool,
    pick_host,
    provider_class,
    unknown,
    wait_ready,
)
from pytest_osworld.vm import config as vm_config
from pytest_osworld.vm import image as vm_image
from pytest_osworld.vm import kvm_probe, runner_image, snapshot, store
from pytest_osworld.vm.config import PROFILE, VmConfig
from pytest_osworld.vm.qemu_args import OVMF_VARS, QMP_PORT, DiskBoot, KernelBoot, MachineSpec, state_key
from pytest_osworld.vm.qmp import QmpClient, QmpError

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings

log = logging.getLogger("pytest_osworld.sandbox.vm")

BASE_TARGET = "/base/disk.qcow2"  # where a vm_qcow2 base is mounted (read-only) in the runner
READY_PATH = "/screenshot"
_SAVE_DEADLINE = 300.0  # writing a few GB of RAM state to the store


class RestoreFailed(OsworldError):
    """A sandbox could not be started from a saved state (it falls back to a cold boot).

    ``state_bad``: QEMU refused or died on the state (corrupt, or not loadable by this QEMU), so the
    state is dropped; a restore that was merely too slow keeps it.
    """

    def __init__(self, message: str, *, state_bad: bool) -> None:
        super().__init__(message)
        self.state_bad = state_bad


class _VmExited(SandboxError):
    """QEMU ended while the sandbox was starting."""


class VmSandbox(ContainerBackedSandbox):
    """A VM sandbox: QEMU in a runner container, whose PID 1 (tini) ends when QEMU ends."""

    def __init__(
        self,
        provider: VmProvider,
        vm: RunningContainer,
        *,
        task_key: str,
        ready_seconds: float,
        reset: str,
        fallback: str | None,
        state: str | None,
    ) -> None:
        super().__init__(provider.containers, vm, task_key=task_key)
        self._provider = provider
        self._urls = vm.urls(GUEST_PORTS)
        self.qmp_address = vm.addresses[QMP_PORT]
        self.ready_seconds = ready_seconds
        self.reset = reset
        self.fallback = fallback
        self.state = state

    def url(self, guest_port: int = API_PORT) -> str:
        try:
            return self._urls[guest_port]
        except KeyError:
            raise SandboxError(
                f"sandbox {self.name}: guest port {guest_port} is not forwarded (the vm profile forwards "
                f"{sorted(self._urls)})"
            ) from None

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "name": self.name,
            "container_id": self.container_id,
            "profile": PROFILE,
            "image": runner_image.LATEST,
            "image_id": self._provider.runner_id,
            "host": self._provider.host.display,
            "base": self._provider.base_identity,
            "accel": self._provider.config.accel,
            "reset": self.reset,
            "ready_seconds": round(self.ready_seconds, 3),
        }
        if self.state:
            info["state"] = self.state
        if self.fallback:
            info["fallback"] = self.fallback
        return info


class VmProvider(SandboxProvider):
    """Starts VM sandboxes of one configuration on one environment host."""

    def __init__(
        self,
        config: VmConfig,
        host: EngineHost,
        owner: Owner,
        *,
        progress: Progress | None = None,
        client: docker.DockerClient | None = None,
    ) -> None:
        self.config = config
        self.host = host
        self.owner = owner
        self._progress = progress or (lambda line: log.info("%s", line))
        self.containers = Containers(host, owner, kind="VM sandbox", serial_prefix="vm", client=client)
        self._prepared = False
        self.runner_id: str | None = None
        self.spec: MachineSpec | None = None
        self.base_identity: str = ""
        self._backing = ""  # the base disk as the runner sees it
        self.key: str = ""
        # The state found or saved last: asking the store again costs a container per sandbox.
        self._state: snapshot.SavedState | None = None
        self._save_failed: str | None = None

    @property
    def client(self) -> docker.DockerClient:
        return self.containers.client

    # --- the provider class
    @classmethod
    def from_settings(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> Self:
        pool = host_pool(settings)
        return cls(vm_config.resolve(settings), pick_host(pool, owner.worker_id), owner, progress=progress)

    @classmethod
    def check(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
        check_pool(vm_config.resolve(settings), host_pool(settings), owner, progress=progress)

    @classmethod
    def provides(cls, settings: Settings, *, build: bool = False, progress: Progress | None = None) -> Provides:
        """The VM boots the desktop image's filesystem (its manifest included): what that image provides.

        A base disk of the user's own (``vm_qcow2``) is not read: unknown.
        """
        if settings.vm.qcow2 is not None:
            return unknown(
                PROFILE,
                f"vm_qcow2 {settings.vm.qcow2}",
                "the vm sandbox boots a base disk of your own (vm_qcow2), which declares nothing; for OSWorld's "
                "Ubuntu.qcow2 report with --sandbox osworld-vm, whose contents are declared",
            )
        # The project's own desktop image, whatever sandbox_profiles.desktop says: the VM is built from it.
        desktop = settings.replace(sandbox="desktop", sandbox_profiles={**settings.sandbox.profiles, "desktop": {}})
        found = provider_class("desktop", desktop).provides(desktop, build=build, progress=progress)
        return dataclasses.replace(found, sandbox=PROFILE, source=f"{found.source} (the VM boots its filesystem)")

    @classmethod
    def describe_pool(cls, settings: Settings, owner: Owner) -> dict[str, Any]:
        """The run manifest's ``sandbox`` entry for the vm profile (no engine is asked)."""
        config = vm_config.resolve(settings)
        return {
            "profile": PROFILE,
            "accel": config.accel,
            "reset": config.reset,
            "memory_mib": config.memory_mib,
            "cpus": config.cpus,
            "qcow2": config.qcow2,
            "hosts": [{"host": host.display, "capacity": host.capacity} for host in host_pool(settings)],
        }

    # --- preparation, once per provider
    def prepare(self) -> None:
        """Make the runner image and the VM image present, check the accelerator, compute the state key."""
        if self._prepared:
            return
        labels = self._labels(ROLE_PROBE)
        try:
            self.runner_id = runner_image.ensure_runner_image(self.client, self._progress)
            if self.config.qcow2 is None:
                built = vm_image.ensure_vm_image(self.client, labels=labels, progress=self._progress)
                boot: KernelBoot | DiskBoot = KernelBoot(built.kernel, built.initrd, self.config.screen)
                self._backing = built.disk
                self.base_identity = f"pytest-osworld-vm:{built.hash}"
            else:
                boot = DiskBoot(firmware=self.config.firmware)
                self._backing = BASE_TARGET
                self.base_identity = _qcow2_identity(self.client, self.runner_id, self.config.qcow2, labels)
        except OsworldError as exc:
            raise SandboxConfigError(f"the vm sandbox cannot be prepared on {self.host.display}: {exc}") from None
        if self.config.accel == "kvm":
            report = kvm_probe.probe_boot(self.client, self.runner_id, labels=labels)
            if not report.booted:
                raise SandboxConfigError(report.problem(self.host.display))
        self.spec = MachineSpec(self.config.memory_mib, self.config.cpus, self.config.accel, boot)
        self.key = state_key(self.spec, base_identity=self.base_identity, runner_identity=self.runner_id)
        self._prepared = True

    def _labels(self, role: str, task_key: str | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        labels = {**(extra or {}), **self.owner.labels(), LABEL_PROFILE: PROFILE, LABEL_ROLE: role}
        if task_key is not None:
            labels[LABEL_TASK] = task_key
        return labels

    # --- sandboxes
    def start(self, *, task_key: str, labels: Mapping[str, str] | None = None) -> VmSandbox:
        try:
            self.prepare()
        except SandboxConfigError as exc:
            raise SandboxError(str(exc)) from None
        all_labels = self._labels(ROLE_SANDBOX, task_key, labels)
        if self.config.reset == "boot":
            return self._cold(task_key, all_labels, fallback=None)
        started = time.monotonic()
        if self._save_failed is not None:  # saving failed in this process already: do not pay for it per test
            return self._cold(task_key, all_labels, fallback=f"no saved state: {self._save_failed}")
        try:
            state = self.ensure_state()
        except (snapshot.StateError, SandboxError) as exc:
            self._save_failed = str(exc)
            return self._cold(task_key, all_labels, fallback=f"no saved state: {exc}")
        try:
            return self._restore(state, task_key, all_labels, started)
        except RestoreFailed as exc:
            self._state = None
            if exc.state_bad:  # dropped: the next sandbox saves a fresh one
                with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                    snapshot.invalidate(self.client, self._runner, state, self._labels(ROLE_PROBE))
            self._progress(f"restore from saved state {state.key[:12]} failed ({exc}); cold boot instead")
            return self._cold(task_key, all_labels, fallback=f"restore failed: {exc}")

    @property
    def _runner(self) -> str:
        assert self.runner_id is not None
        return self.runner_id

    @property
    def _spec(self) -> MachineSpec:
        assert self.spec is not None
        return self.spec

    def _cold(self, task_key: str, labels: dict[str, str], *, fallback: str | None) -> VmSandbox:
        started = time.monotonic()
        vm = self._run(labels, backing=self._backing)
        with self.containers.removed_on_failure(vm):
            self._wait_ready(vm, started + self.config.boot_timeout, "boot")
        return VmSandbox(
            self,
            vm,
            task_key=task_key,
            ready_seconds=time.monotonic() - started,
            reset="boot",
            fallback=fallback,
            state=None,
        )

    def _restore(self, state: snapshot.SavedState, task_key: str, labels: dict[str, str], started: float) -> VmSandbox:
        begun = time.monotonic()
        try:
            vm = self._run(
                labels,
                backing=state.disk,
                incoming=state.incoming,
                vars_from=state.vars if self._spec.uses_vars else None,
            )
        except SandboxError as exc:
            raise RestoreFailed(str(exc), state_bad=False) from None
        with self.containers.removed_on_failure(vm):
            try:
                deadline = begun + self.config.restore_timeout
                self._resume(vm, deadline)
                # The first answer of the guest API is the clock being set: no separate readiness probe.
                self._set_clock(vm, deadline)
            except SandboxError as exc:
                raise RestoreFailed(str(exc), state_bad=isinstance(exc, _VmExited) or not vm.running()) from None
        return VmSandbox(
            self,
            vm,
            task_key=task_key,
            ready_seconds=time.monotonic() - started,
            reset="snapshot",
            fallback=None,
            state=state.key,
        )

    # --- the saved state
    def ensure_state(self) -> snapshot.SavedState:
        """The saved state of this configuration, made first when there is none (one process at a time)."""
        self.prepare()
        if self._state is not None:
            return self._state
        labels = self._labels(ROLE_PROBE)
        found = snapshot.find(self.client, self._runner, self.key, labels)
        if not found:
            # Workers of this machine take turns; on a shared remote engine, renames in the store keep
            # other machines from seeing half a state (at worst they save one twice).
            with engine_lock(self.host.display, f"vm-state-{self.key}"):
                found = snapshot.find(self.client, self._runner, self.key, labels) or self._save_state(labels)
        self._state = found
        return found

    def _save_state(self, labels: dict[str, str]) -> snapshot.SavedState:
        partial, token = snapshot.partial_dir(self.key)
        self._progress(f"saving a VM state for snapshot reset (key {self.key[:12]}): booting the VM once")
        started = time.monotonic()
        vm = self._run(
            self._labels(ROLE_VM_STATE),
            backing=self._backing,
            overlay=f"{partial}/disk.qcow2",
            vars_from=OVMF_VARS if self._spec.uses_vars else None,
            vars_copy=f"{partial}/vars.fd" if self._spec.uses_vars else None,
            writable_store=True,
        )
        try:
            self._wait_ready(vm, started + self.config.boot_timeout, "boot")
            boot_seconds = time.monotonic() - started
            deadline = time.monotonic() + _SAVE_DEADLINE
            try:
                with QmpClient.connect(*vm.addresses[QMP_PORT], deadline=time.monotonic() + 30) as qmp:
                    save_seconds = snapshot.save(qmp, f"{partial}/ram.state", deadline=deadline)
                    with contextlib.suppress(QmpError):
                        qmp.execute("quit")
            except QmpError as exc:
                raise snapshot.StateError(f"QEMU's monitor failed while saving: {exc}") from None
            try:
                vm.container.wait(timeout=60)
            except requests.exceptions.RequestException:
                raise snapshot.StateError("QEMU did not exit after saving the state") from None
            meta = {
                "key": self.key,
                "token": token,
                "base": self.base_identity,
                "runner": self.runner_id,
                "machine": self._spec.describe(),
                "saved_at": time.time(),
                "boot_seconds": round(boot_seconds, 1),
                "save_seconds": round(save_seconds, 1),
            }
            size = snapshot.publish(self.client, self._runner, partial, self.key, meta, labels)
            self._progress(
                f"saved VM state {self.key[:12]}: booted in {boot_seconds:.0f} s, RAM state {size} MiB "
                f"written in {save_seconds:.1f} s"
            )
            return snapshot.SavedState(key=self.key, token=token, meta=meta)
        except BaseException:
            with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                snapshot.discard(self.client, self._runner, partial, labels)
            raise
        finally:
            self.containers.remove(vm, quiet=True)

    # --- containers
    def _run(
        self,
        labels: dict[str, str],
        *,
        backing: str,
        incoming: str | None = None,
        overlay: str | None = None,
        vars_from: str | None = None,
        vars_copy: str | None = None,
        writable_store: bool = False,
    ) -> RunningContainer:
        """Start a runner container (a VM); its ports are read back, readiness is the caller's."""
        store.ensure_volume(self.client)
        env = {"VM_BACKING": backing}
        if overlay:
            env["VM_OVERLAY"] = overlay
        if vars_from:
            env["VM_VARS"] = vars_from
        if vars_copy:
            env["VM_VARS_COPY"] = vars_copy
        mounts = [store.mount(read_only=not writable_store)]
        if self.config.qcow2:
            # A Mount, not a volume bind: a missing source must fail, not become an empty folder.
            mounts.append(docker.types.Mount(target=BASE_TARGET, source=self.config.qcow2, type="bind", read_only=True))
        args: dict[str, Any] = {
            "image": self._runner,
            "command": self._spec.argv(incoming=incoming),
            "labels": labels,
            "environment": env,
            "mounts": mounts,
        }
        if self.config.accel == "kvm":
            args["devices"] = [KVM_DEVICE]
        if self.config.container_cpus:
            args["nano_cpus"] = int(self.config.container_cpus * 1e9)
        if self.config.container_memory:
            args["mem_limit"] = args["memswap_limit"] = self.config.container_memory
        return self.containers.start(args, ports=[*GUEST_PORTS, QMP_PORT], refused="a vm sandbox")

    def _wait_ready(self, vm: RunningContainer, deadline: float, what: str) -> None:
        """Poll the guest API until it answers; a container that stops meanwhile fails at once."""

        def explain(why: NotReady) -> SandboxError:
            if why.cause == "removed":
                return SandboxError(f"sandbox {why.name} (vm) was removed during its {what}")
            if why.cause == "ended":
                return _VmExited(f"QEMU in {why.name} exited during the {what}{why.state}")
            return SandboxError(
                f"the guest in {why.name} did not answer GET {READY_PATH} within "
                f"{why.waited:.0f} s of its {what} (last: {why.last}){why.state}"
                f"; a slow host may need --osworld-sandbox-start-timeout or --osworld-vm-restore-timeout"
            )

        wait_ready(vm, vm.urls([API_PORT])[API_PORT] + READY_PATH, deadline=deadline, explain=explain)

    def _resume(self, vm: RunningContainer, deadline: float) -> None:
        """Wait for QEMU to load the state, then run the guest.

        The state was saved from a paused VM, and QEMU keeps a VM that arrives paused paused.
        """
        try:
            with QmpClient.connect(*vm.addresses[QMP_PORT], deadline=deadline) as qmp:
                while True:
                    status = qmp.execute("query-status").get("status")
                    if status == "running":
                        return
                    if status in ("paused", "postmigrate", "prelaunch"):
                        qmp.execute("cont")
                        return
                    if status != "inmigrate":
                        raise SandboxError(f"QEMU in {vm.name} is {status!r} after loading the state")
                    if time.monotonic() >= deadline:
                        raise SandboxError(f"QEMU in {vm.name} was still loading the state at the deadline")
                    time.sleep(0.02)  # poll interval while the state loads (a local monitor: cheap to ask)
        except QmpError as exc:
            # A monitor that closes mid-load is QEMU exiting; its container needs a moment to stop too.
            if _stops_within(vm, 5.0):
                raise _VmExited(f"QEMU in {vm.name} exited while loading the state{vm.state_and_logs()}") from None
            raise SandboxError(f"{exc}{vm.state_and_logs()}") from None

    def _set_clock(self, vm: RunningContainer, deadline: float) -> None:
        """A restored guest's clock stands at the moment of the save: set it to the host's time.

        Sent until the guest API answers (it does within a second of the resume); passwordless sudo
        first (the project's image), else the guest user's password to ``sudo -S`` (OSWorld's image).
        """
        url = vm.urls([API_PORT])[API_PORT] + "/execute"
        delay = 0.02
        last = "no answer yet"
        with httpx.Client(trust_env=False) as http:
            while True:
                quick = ["sudo", "-n", "date", "-u", "-s", f"@{time.time():.3f}"]
                try:
                    answer = http.post(
                        url, json={"command": quick, "shell": False}, timeout=httpx.Timeout(30, connect=2)
                    )
                    if answer.status_code == 200:
                        break
                    last = f"answered {answer.status_code}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                if not vm.running():
                    raise _VmExited(f"QEMU in {vm.name} exited after the restore{vm.state_and_logs()}")
                if time.monotonic() >= deadline:
                    raise SandboxError(f"the guest API in {vm.name} did not answer after the restore (last: {last})")
                time.sleep(delay)  # poll interval until the guest's network answers
                delay = min(delay * 1.5, 0.1)
            if _returncode(answer) == 0:
                return
            date = f"date -u -s @{time.time():.3f} >/dev/null"
            password = shlex.quote(self.config.client_password)
            try:
                answer = http.post(
                    url,
                    json={"command": f"printf '%s\\n' {password} | sudo -S -p '' {date}", "shell": True},
                    timeout=30,
                )
            except httpx.HTTPError as exc:
                raise SandboxError(f"setting the guest clock after the restore failed: {exc}") from None
        if _returncode(answer) != 0:
            raise SandboxError(f"setting the guest clock after the restore failed: {answer.text[:200]}")

    # --- identity and the end
    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "profile": PROFILE,
            "host": self.host.display,
            "accel": self.config.accel,
            "reset": self.config.reset,
            "memory_mib": self.config.memory_mib,
            "cpus": self.config.cpus,
            "qcow2": self.config.qcow2,
        }
        if self._prepared:
            info.update({"runner_image_id": self.runner_id, "base": self.base_identity, "state_key": self.key})
        return info

    def sweep(self, run_id: str, *, pid: int | None = None) -> int:
        return self.containers.sweep(run_id, pid=pid)

    def close(self) -> None:
        self.containers.close()


def _qcow2_identity(client: docker.DockerClient, runner: str, path: str, labels: dict[str, str]) -> str:
    """``path|size|mtime`` of a base qcow2 on the environment host (hashing 25 GB per run is too slow)."""
    mount = docker.types.Mount(target=BASE_TARGET, source=path, type="bind", read_only=True)
    script = f"[ -f {BASE_TARGET} ] || exit 3; echo \"$(stat -c '%s %Y' {BASE_TARGET}) $(head -c 3 {BASE_TARGET})\""
    result = store.run(client, runner, script, labels=labels, extra_mounts=[mount], timeout=60)
    words = result.output.split()
    if not result.ran or result.exit_code != 0 or len(words) < 2:
        raise SandboxConfigError(
            f"the base qcow2 {path} cannot be read on the environment host ({result.output.strip()[:160]}); "
            f"download OSWorld's Ubuntu.qcow2 there and point --osworld-vm-qcow2 at it"
        )
    if len(words) < 3 or words[2] != "QFI":
        raise SandboxConfigError(f"{path} on the environment host is not a qcow2 image (is it still the .zip?)")
    return f"{path}|{words[0]}|{words[1]}"


def _returncode(answer: httpx.Response) -> int | None:
    try:
        return int(answer.json().get("returncode"))
    except (ValueError, TypeError, AttributeError):
        return None


def _stops_within(vm: RunningContainer, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while vm.running():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # poll interval while the container ends
    return True


def check_pool(config: VmConfig, pool: list[EngineHost], owner: Owner, *, progress: Progress | None = None) -> None:
    """The check before a session: on every host, the images are made and the accelerator can boot a guest.

    Raises :class:`SandboxConfigError` naming every problem, so no test starts on a host that cannot
    run a VM (e.g. KVM asked for where it cannot boot one).
    """
    problems = []
    for host in pool:
        try:
            provider = VmProvider(config, host, owner, progress=progress)
        except SandboxConfigError as exc:
            problems.append(str(exc))
            continue
        try:
            provider.prepare()
        except SandboxConfigError as exc:
            problems.append(str(exc))
        finally:
            provider.close()
    if problems:
        raise SandboxConfigError(
            f"the sandbox profile '{PROFILE}' cannot run here; no test was started:\n  - " + "\n  - ".join(problems)
        )
