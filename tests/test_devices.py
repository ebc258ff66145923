"""The device helper, each case in a fresh interpreter (JAX starts only once)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_gives_the_devices_asked_for() -> None:
    proc = run_python("""
        import os
        import jax
        from jaxcourse.devices import use_cpu_devices
        devices = use_cpu_devices(8)
        print(len(devices), len(jax.devices()), os.environ["XLA_FLAGS"])
        # Re-running a notebook calls it again: harmless.
        print(len(use_cpu_devices(8)), len(use_cpu_devices(2)))
    """)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("8 8 ")
    assert "--xla_force_host_platform_device_count=8" in first
    assert second == "8 8"


def test_too_late_is_a_clear_error() -> None:
    proc = run_python("""
        import jax.numpy as jnp
        from jaxcourse.devices import DeviceSetupError, use_cpu_devices
        jnp.ones(3)  # JAX starts here, with one CPU device
        try:
            use_cpu_devices(8)
        except DeviceSetupError as err:
            print(err)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "JAX already started with 1 CPU device," in proc.stdout
    assert "Restart the kernel" in proc.stdout
    assert "use_cpu_devices(8)" in proc.stdout


@pytest.mark.parametrize("bad", ["0", "-2", "2.5", "True"])
def test_rejects_nonsense(bad: str) -> None:
    proc = run_python(f"""
        from jaxcourse.devices import use_cpu_devices
        try:
            use_cpu_devices({bad})
        except ValueError as err:
            print(err)
    """)
    assert "n must be a positive integer" in proc.stdout, proc.stderr


def test_xla_flags_sets_the_device_count_and_keeps_the_rest() -> None:
    # The one place that writes the flag, for use_cpu_devices and the launcher.
    from jaxcourse.devices import xla_flags

    flag = "--xla_force_host_platform_device_count"
    assert xla_flags(4, "") == f"{flag}=4"
    assert (
        xla_flags(2, f"--xla_dump_to=out {flag}=8 --xla_cpu_enable_fast_math=false")
        == f"--xla_dump_to=out --xla_cpu_enable_fast_math=false {flag}=2"
    )
    for bad in (0, -1, 2.5, True, "4"):
        with pytest.raises(ValueError, match="device_count must be a positive"):
            xla_flags(bad, "")
