"""Cold boot versus snapshot reset of the project's VM image, in one run.

    python benchmarks/vm_reset.py                    # 3 cold boots, 5 restores, TCG unless KVM boots
    python benchmarks/vm_reset.py -c 5 -r 10 --accel kvm

Each sample is one sandbox started by the vm provider, timed from the call until the guest API
answers (and, for a restore, the guest clock is set): a cold boot on a fresh overlay of the base
image, or a restore from the saved state on a fresh overlay of the state's disk. The saved state
is made (or found) first and is not timed. Target: the snapshot median at least 10x faster.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from typing import Literal

from pytest_osworld.errors import OsworldError
from pytest_osworld.plugin.run import new_run_id
from pytest_osworld.sandbox import EngineHost, Owner
from pytest_osworld.settings import merge
from pytest_osworld.vm import config as vm_config
from pytest_osworld.vm import kvm_probe, qemu_image
from pytest_osworld.vm.provider import VmProvider

TARGET_RATIO = 10.0


def _accel(choice: str, provider: VmProvider) -> str:
    if choice != "auto":
        return choice
    qemu_image_id = qemu_image.ensure_qemu_image(provider.client, print)
    report = kvm_probe.probe_boot(provider.client, qemu_image_id, labels=provider.owner.labels())
    return "kvm" if report.booted else "tcg"


def _samples(provider: VmProvider, reset: Literal["boot", "snapshot"], count: int) -> list[float]:
    provider.config = dataclasses.replace(provider.config, reset=reset)
    found = []
    for index in range(count):
        started = time.monotonic()
        sandbox = provider.start(task_key=f"bench/{reset}/{index}")
        seconds = time.monotonic() - started
        info = sandbox.describe()
        sandbox.stop()
        if info["reset"] != reset:
            raise OsworldError(f"a {reset} sample came back as {info['reset']}: {info.get('fallback')}")
        found.append(seconds)
        print(f"  {reset:8} {index + 1}/{count}: {seconds:6.2f} s", flush=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", "--cold", type=int, default=3, help="cold boots to time")
    parser.add_argument("-r", "--restores", type=int, default=5, help="snapshot restores to time")
    parser.add_argument(
        "--accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="auto: KVM when a test guest boots with it here, else TCG",
    )
    args = parser.parse_args()
    run_id = new_run_id()
    owner = Owner(run_id=f"bench-{run_id}")
    provider = VmProvider(vm_config.resolve(merge(cli={"sandbox": "vm"})), EngineHost(), owner, progress=print)
    try:
        accel = _accel(args.accel, provider)
        provider.config = dataclasses.replace(provider.config, accel="kvm" if accel == "kvm" else "tcg")
        print(f"vm reset benchmark: accel {accel}, {provider.config.memory_mib} MiB, {provider.config.cpus} vCPUs")
        provider.prepare()
        state = provider.ensure_state()
        print(f"saved state {state.key[:12]} ready (made in a boot of {state.meta.get('boot_seconds', '?')} s)")
        cold = _samples(provider, "boot", args.cold)
        snap = _samples(provider, "snapshot", args.restores)
    except OsworldError as exc:
        print(f"vm_reset: {exc}", file=sys.stderr)
        return 1
    finally:
        provider.sweep(owner.run_id)
        provider.close()
    cold_median, snap_median = statistics.median(cold), statistics.median(snap)
    ratio = cold_median / snap_median
    print(f"cold boot median:  {cold_median:6.2f} s over {len(cold)} boots")
    print(f"snapshot median:   {snap_median:6.2f} s over {len(snap)} restores")
    print(
        f"ratio:             {ratio:6.1f}x (target >= {TARGET_RATIO:g}x): {'met' if ratio >= TARGET_RATIO else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
