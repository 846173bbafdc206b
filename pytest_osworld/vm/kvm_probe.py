"""Can an environment host really boot a VM with KVM? Asked by booting one there.

Opening /dev/kvm proves little: a host (often itself a VM without nested virtualization) can
have a /dev/kvm that opens and still fails to run a stock kernel. So the probe does what a
sandbox will do: in a container of the QEMU image, given /dev/kvm as sandboxes get it, QEMU
boots Debian's kernel with a tiny initramfs whose init prints a marker on the serial console and
powers off. KVM counts as usable only when the marker appears within the deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import docker

from pytest_osworld.sandbox import KVM_DEVICE, run_probe

MARKER = "PYTEST-OSWORLD-GUEST-BOOTED"
_PROBE_DIR = "/usr/local/lib/pytest-osworld/probe"
FIX = (
    "fix: run on a host where KVM works (bare metal with VT-x/AMD-V enabled, or a VM with nested "
    "virtualization), or emulate with --osworld-vm-accel tcg (slow: minutes per boot, fine for the "
    "project's own image and snapshot reset)"
)


@dataclass(frozen=True)
class BootProbe:
    booted: bool
    seconds_allowed: float
    detail: str  # the last console lines or QEMU's error, for the message

    def problem(self, host_display: str) -> str:
        return (
            f"KVM cannot boot a guest on environment host {host_display}: a test VM given /dev/kvm did not reach "
            f"its boot marker (deadline {self.seconds_allowed:g} s: {self.detail}); {FIX}"
        )


def _script(accel: Literal["kvm", "tcg"], deadline: float, silence: float | None) -> str:
    """Boot in the background and watch the console. With ``silence``, a console that stays still that
    long ends the probe early: a guest on broken KVM prints its decompressor's first lines and then hangs
    without a word, while a kernel booting under KVM never pauses for seconds. (TCG may; it has only
    the deadline.)"""
    accel_args = "-accel kvm -cpu host" if accel == "kvm" else "-accel tcg -cpu max"
    ticks = int(silence * 5) if silence else 0  # the console is looked at every 0.2 s
    return (
        f"[ {accel} = tcg ] || [ -c /dev/kvm ] || {{ echo 'no /dev/kvm in the container'; exit 3; }}\n"
        f"out=$(mktemp)\n"
        f"timeout -s KILL {int(deadline)} qemu-system-x86_64 {accel_args} -m 128 -smp 1 -nodefaults "
        f"-no-user-config -display none -serial stdio -no-reboot "
        f"-kernel {_PROBE_DIR}/vmlinuz -initrd {_PROBE_DIR}/initrd.gz "
        f"-append 'console=ttyS0 earlyprintk=ttyS0 panic=-1' </dev/null >\"$out\" 2>&1 &\n"
        f"pid=$!\n"
        f"last=-1; still=0\n"
        f"while [ {ticks} -gt 0 ] && kill -0 $pid 2>/dev/null; do\n"
        f'  size=$(wc -c <"$out")\n'
        f'  if [ "$size" = "$last" ]; then still=$((still + 1)); else still=0; last=$size; fi\n'
        f"  if [ $still -ge {ticks} ]; then\n"
        f'    kill -KILL $pid; wait $pid; cat "$out"\n'
        f"    echo 'the console stayed silent for {silence or 0:g} s: the guest is not booting'; exit 6\n"
        f"  fi\n"
        f"  sleep 0.2\n"
        f"done\n"
        f"wait $pid; code=$?\n"
        f'cat "$out"\n'
        f'echo "qemu exit $code"\n'
    )


def probe_boot(
    client: docker.DockerClient,
    qemu_image: str,
    *,
    labels: dict[str, str],
    accel: Literal["kvm", "tcg"] = "kvm",
    deadline: float = 60.0,
    silence: float = 15.0,
) -> BootProbe:
    """Boot the probe guest with ``accel`` on the engine's host; ``booted`` when the marker was seen."""
    result = run_probe(
        client,
        qemu_image,
        _script(accel, deadline, silence if accel == "kvm" else None),
        labels=labels,
        devices=[KVM_DEVICE] if accel == "kvm" else [],
        timeout=deadline + 30,
    )
    output = result.output
    if result.ran and MARKER in output:
        return BootProbe(True, deadline, "booted")
    if not result.ran:
        detail = f"the probe container did not run: {output.strip()[:200]}"
    else:
        lines = [line for line in output.strip().splitlines() if line.strip()]
        detail = " | ".join(lines[-3:])[:300] or "no output"
    return BootProbe(False, deadline, detail)
