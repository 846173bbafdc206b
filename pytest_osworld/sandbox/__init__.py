"""Where episodes run: the sandbox interface, the providers' registry, one shared container lifecycle.

This module is the sandbox layer's public interface: a provider (``providers/``, ``pytest_osworld.vm``,
a third party's) and the rest of the project import from here, not from the modules behind it.

- the interface (``base``): :class:`Sandbox`, :class:`SandboxProvider`, the errors, the guest ports;
- the registry (``registry``): a provider class by sandbox name, and what it does from the settings;
- the owner and labels of every container (``labels``), the environment hosts (``hosts``);
- the container lifecycle (``containers``): start, ports, readiness, removal; the leftover sweep
  (``leftovers``); short probe containers (``probe``) and the KVM device (``kvm``);
- what a sandbox provides (``provides``): OSWorld apps and commands, from an image manifest;
- sandboxes kept after a failed task (``kept``): their names, the run's ledger, the wait at its end;
- warm pools (``pool``, ``pooled``) and where a sandbox ran (``placement``); the ``ray`` provider
  (``sandbox/ray``) is loaded by the registry only when chosen.
"""

from pytest_osworld.errors import SandboxError, SandboxLost
from pytest_osworld.procs import own_identity
from pytest_osworld.record import Placement
from pytest_osworld.sandbox.base import (
    API_PORT,
    DEVTOOLS_PORT,
    GUEST_PORTS,
    VLC_PORT,
    VNC_PORT,
    Progress,
    Sandbox,
    SandboxConfigError,
    SandboxProvider,
)
from pytest_osworld.sandbox.containers import (
    ContainerBackedSandbox,
    Containers,
    NotReady,
    PortAccess,
    RunningContainer,
    container_logs,
    container_name,
    remove_container,
    state_and_logs,
    wait_ready,
)
from pytest_osworld.sandbox.hosts import EngineHost, host_pool, parse_hosts, pick_host, redact
from pytest_osworld.sandbox.kept import (
    KEPT_MARK,
    KeepFailedError,
    KeepLedger,
    KeptName,
    KeptSandbox,
    KeptWhy,
    is_kept,
    read_kept_name,
)
from pytest_osworld.sandbox.kvm import KVM_DEVICE
from pytest_osworld.sandbox.labels import (
    LABEL_HOSTNAME,
    LABEL_MANAGED,
    LABEL_NODE,
    LABEL_PID,
    LABEL_POOL,
    LABEL_PREFIX,
    LABEL_PROCESS_START,
    LABEL_PROFILE,
    LABEL_ROLE,
    LABEL_RUN_ID,
    LABEL_RUN_PID,
    LABEL_RUN_PROCESS_START,
    LABEL_SERVICE,
    LABEL_TASK,
    LABEL_WORKER,
    ROLE_PROBE,
    ROLE_SANDBOX,
    ROLE_SERVICE,
    ROLE_VM_BUILD,
    ROLE_VM_STATE,
    ROLE_VM_STORE,
    ROLES,
    Owner,
)
from pytest_osworld.sandbox.leftovers import (
    Managed,
    find_leftovers,
    list_managed,
    remove_managed,
    remove_run_networks,
    summary_line,
    sweep_pool,
    sweep_run,
)
from pytest_osworld.sandbox.probe import ProbeResult, find_image, probe_image, run_probe
from pytest_osworld.sandbox.provides import Provides, declared, from_manifest, unknown
from pytest_osworld.sandbox.registry import (
    check_pool,
    describe_pool,
    end_run,
    make_provider,
    provider_class,
    run_leftovers,
    sandbox_names,
)
from pytest_osworld.sandbox.signals import SigtermAsInterrupt, held_interrupts

__all__ = [
    "API_PORT",
    "DEVTOOLS_PORT",
    "GUEST_PORTS",
    "KEPT_MARK",
    "KVM_DEVICE",
    "LABEL_HOSTNAME",
    "LABEL_MANAGED",
    "LABEL_NODE",
    "LABEL_PID",
    "LABEL_POOL",
    "LABEL_PREFIX",
    "LABEL_PROCESS_START",
    "LABEL_PROFILE",
    "LABEL_ROLE",
    "LABEL_RUN_ID",
    "LABEL_RUN_PID",
    "LABEL_RUN_PROCESS_START",
    "LABEL_SERVICE",
    "LABEL_TASK",
    "LABEL_WORKER",
    "ROLES",
    "ROLE_PROBE",
    "ROLE_SANDBOX",
    "ROLE_SERVICE",
    "ROLE_VM_BUILD",
    "ROLE_VM_STATE",
    "ROLE_VM_STORE",
    "VLC_PORT",
    "VNC_PORT",
    "ContainerBackedSandbox",
    "Containers",
    "EngineHost",
    "KeepFailedError",
    "KeepLedger",
    "KeptName",
    "KeptSandbox",
    "KeptWhy",
    "Managed",
    "NotReady",
    "Owner",
    "Placement",
    "PortAccess",
    "ProbeResult",
    "Progress",
    "Provides",
    "RunningContainer",
    "Sandbox",
    "SandboxConfigError",
    "SandboxError",
    "SandboxLost",
    "SandboxProvider",
    "SigtermAsInterrupt",
    "check_pool",
    "container_logs",
    "container_name",
    "declared",
    "describe_pool",
    "end_run",
    "find_image",
    "find_leftovers",
    "from_manifest",
    "held_interrupts",
    "host_pool",
    "is_kept",
    "list_managed",
    "make_provider",
    "own_identity",
    "parse_hosts",
    "pick_host",
    "probe_image",
    "provider_class",
    "read_kept_name",
    "redact",
    "remove_container",
    "remove_managed",
    "remove_run_networks",
    "run_leftovers",
    "run_probe",
    "sandbox_names",
    "state_and_logs",
    "summary_line",
    "sweep_pool",
    "sweep_run",
    "unknown",
    "wait_ready",
]
