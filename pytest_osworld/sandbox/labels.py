"""The labels the project writes on every container (and volume) it makes, and who they name as owner.

Labels are how a container is found again: by its run for teardown and the leftover sweep, by its
role to tell a sandbox from the short-lived helpers around it. Every container with
``LABEL_MANAGED`` is the project's, whatever its role.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pytest_osworld.procs import hostname, own_identity

LABEL_PREFIX = "io.pytest-osworld."
LABEL_MANAGED = LABEL_PREFIX + "managed"
LABEL_RUN_ID = LABEL_PREFIX + "run-id"
LABEL_WORKER = LABEL_PREFIX + "worker"
LABEL_TASK = LABEL_PREFIX + "task"
LABEL_PID = LABEL_PREFIX + "pid"
LABEL_HOSTNAME = LABEL_PREFIX + "hostname"
# Extensions: which process owns the run (the xdist controller, or the plain pytest process), and
# start identities of the two processes so a reused pid is not mistaken for a live run.
LABEL_PROCESS_START = LABEL_PREFIX + "process-start"
LABEL_RUN_PID = LABEL_PREFIX + "run-pid"
LABEL_RUN_PROCESS_START = LABEL_PREFIX + "run-process-start"
LABEL_PROFILE = LABEL_PREFIX + "profile"
LABEL_ROLE = LABEL_PREFIX + "role"
LABEL_SERVICE = LABEL_PREFIX + "service"  # a shared service's name (role service)
# A sandbox started ahead by a warm pool (value: the pool's key), and the Ray node whose agent started it.
LABEL_POOL = LABEL_PREFIX + "pool"
LABEL_NODE = LABEL_PREFIX + "node"

# Values of LABEL_ROLE: what a container (or volume) is there for.
ROLE_SANDBOX = "sandbox"  # one test's sandbox
ROLE_PROBE = "probe"  # a short check run on an environment host before a session
ROLE_VM_STATE = "vm-state"  # the vm provider's VM booted once to save its state
ROLE_VM_BUILD = "vm-build"  # the container that assembles the VM image
ROLE_VM_STORE = "vm-store"  # the volume holding VM images and saved states
ROLE_SERVICE = "service"  # a shared service of a run (a website, a forge) beside its sandboxes, or its network
ROLES = frozenset({ROLE_SANDBOX, ROLE_PROBE, ROLE_VM_STATE, ROLE_VM_BUILD, ROLE_VM_STORE, ROLE_SERVICE})


@dataclass(frozen=True)
class Owner:
    """Who starts sandboxes: written on every container as labels, read back by the leftover report."""

    run_id: str
    worker_id: str | None = None
    run_pid: int | None = None  # the process that owns the run; this one when None
    run_process_start: str | None = None

    def labels(self) -> dict[str, str]:
        pid = os.getpid()
        me = own_identity()
        return {
            LABEL_MANAGED: "1",
            LABEL_RUN_ID: self.run_id,
            LABEL_WORKER: self.worker_id or "main",
            LABEL_PID: str(pid),
            LABEL_PROCESS_START: me,
            LABEL_HOSTNAME: hostname(),
            LABEL_RUN_PID: str(self.run_pid or pid),
            LABEL_RUN_PROCESS_START: self.run_process_start or me,
        }
