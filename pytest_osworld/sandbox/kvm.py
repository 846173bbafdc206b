"""Whether KVM works for containers on an environment host, asked of that host by a probe container.

A device node is not enough: a machine can have /dev/kvm and still be unable to boot a stock
kernel with it (a VM whose CPU does not expose VT-x/AMD-V). The probe passes /dev/kvm to a
container exactly as the sandbox will get it, opens it read-write there, and looks for the CPU
virtualization flags that QEMU (and OSWorld's image, which checks the same) needs.

``KVM_DEVICE`` is how every container that needs KVM gets it: a profile with ``kvm``, the vm
provider's QEMU containers and its boot probe.
"""

from __future__ import annotations

from dataclasses import dataclass

import docker

from pytest_osworld.sandbox.probe import run_probe

KVM_DEVICE = "/dev/kvm:/dev/kvm:rwm"  # the device as docker run --device takes it

_SCRIPT = r"""
[ -e /dev/kvm ] || { echo missing; exit 3; }
[ -c /dev/kvm ] || { echo not-a-device; exit 3; }
( : <>/dev/kvm ) 2>/dev/null || { echo cannot-open; exit 4; }
grep -qwE 'vmx|svm' /proc/cpuinfo || { echo no-cpu-virtualization; exit 5; }
echo ok
"""

_FIX_NO_KVM = "or run QEMU without KVM (very slow): --osworld-no-upstream-vm-kvm (KVM=N)"


@dataclass(frozen=True)
class KvmReport:
    usable: bool
    problem: str = ""  # what is wrong and how to fix it, when not usable


def probe_kvm(client: docker.DockerClient, image: str, host_display: str, labels: dict[str, str]) -> KvmReport:
    result = run_probe(client, image, _SCRIPT, labels=labels, devices=[KVM_DEVICE], timeout=60)
    word = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    if result.exit_code == 0 and word == "ok":
        return KvmReport(True)
    if not result.ran:
        if "/dev/kvm" in result.output or "no such file" in result.output.lower():
            return KvmReport(
                False,
                (
                    f"no KVM on environment host {host_display}: it has no /dev/kvm ({result.output.strip()[:160]}); "
                    f"fix: enable virtualization (VT-x/AMD-V) in its firmware and load kvm_intel or kvm_amd, "
                    f"or on a VM host enable nested virtualization; {_FIX_NO_KVM}"
                ),
            )
        return KvmReport(
            False,
            (
                f"cannot check KVM on environment host {host_display}: the probe container did not run "
                f"({result.output.strip()[:200]})"
            ),
        )
    reasons = {
        "missing": "a container given /dev/kvm does not see it",
        "not-a-device": "/dev/kvm there is not a character device",
        "cannot-open": "/dev/kvm cannot be opened read-write from a container (check its permissions and "
        "that the engine allows devices)",
        "no-cpu-virtualization": "/dev/kvm exists but the CPU shows no hardware virtualization (no vmx or svm "
        "flag in /proc/cpuinfo), so QEMU cannot boot the VM with it; typical of a VM without nested "
        "virtualization. Fix: use a host whose CPU exposes VT-x/AMD-V",
    }
    reason = reasons.get(word, f"the probe said {result.output.strip()[:160]!r} (exit {result.exit_code})")
    return KvmReport(False, f"no usable KVM on environment host {host_display}: {reason}; {_FIX_NO_KVM}")
