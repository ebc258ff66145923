"""Compile-only TPU slices: the TPU compiler here, quietly, or a clear no.

libtpu admits several processes only if each started with ALLOW_MULTIPLE_LIBTPU_LOAD
(the Makefile exports it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import slices

ROOT = Path(__file__).resolve().parents[1]
needs_libtpu = pytest.mark.skipif(
    slices.libtpu_path() is None, reason="no libtpu (make setup unpacks it)")


def test_the_pinned_libtpu_is_the_one_the_course_loads():
    pins = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    line = next(x for x in pins.splitlines() if x.startswith("libtpu=="))
    assert line.split(";")[0].strip() == f"libtpu=={slices.LIBTPU_VERSION}"
    # The marker keeps `pip install -r requirements.txt` from installing it
    # into an environment (where every JAX start would try the TPU first).
    assert 'extra == "compile-only"' in line


def test_an_unknown_slice_is_named_with_the_known_ones():
    with pytest.raises(slices.SliceError) as error:
        slices.slice_devices("v5e 3x3")
    assert "'v5e 3x3'" in str(error.value) and "'v5p 4x4x4'" in str(error.value)


def test_no_libtpu_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv(slices.LIBTPU_ENV, str(tmp_path / "nowhere"))
    assert slices.libtpu_path() is None and slices.libtpu_version() is None
    with pytest.raises(slices.SliceError, match="make setup"):
        slices.slice_devices("v5e 2x4")


def test_the_course_libtpu_is_stored_with_its_version(monkeypatch, tmp_path):
    # The course's unpacked copy is no installed distribution: its version is
    # the pin it was unpacked from, which the stored compiles carry.
    monkeypatch.delenv(slices.LIBTPU_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    copy = tmp_path / ".jax-course" / "libtpu" / slices.LIBTPU_VERSION / "libtpu"
    copy.mkdir(parents=True)
    (copy / "libtpu.so").write_bytes(b"")
    assert slices.libtpu_path() == str(copy / "libtpu.so")
    assert slices.libtpu_version() == slices.LIBTPU_VERSION
    # Named by hand, a libtpu has no version a program can read.
    monkeypatch.setenv(slices.LIBTPU_ENV, str(copy))
    assert slices.libtpu_path() == str(copy / "libtpu.so")
    assert slices.libtpu_version() is None


def test_every_slice_has_its_chip_count_and_memory():
    for slice_ in slices.SLICES.values():
        # The published figure is rounded (v5p: "95 GB"; the compiler allows
        # 95.74 GiB, v6e 31.25 of 32); the two stay within 3 %.
        assert abs(slice_.usable_hbm / slice_.hbm - 1) < 0.03
        assert slice_.chips == {"2x4": 8, "4x4": 16, "16x16": 256, "2x2x2": 8,
                                "4x4x4": 64}[slice_.name.split()[1]]


@needs_libtpu
@pytest.mark.parametrize("name", ["v5e 2x4", "v5e 4x4", "v5p 2x2x2", "v6e 2x4"])
def test_a_slice_has_one_compile_only_device_per_chip(name):
    devices = slices.slice_devices(name)
    assert len(devices) == slices.SLICES[name].chips
    kind = {"v5e": "TPU v5 lite", "v5p": "TPU v5", "v6e": "TPU v6 lite"}
    assert {d.device_kind for d in devices} == {kind[name.split()[0]]}


@needs_libtpu
def test_a_program_compiles_for_a_slice_with_the_tpu_compiler():
    mesh = slices.slice_mesh("v5e 2x4", (4, 2), ("data", "model"))
    x = jax.ShapeDtypeStruct((4096, 4096), jnp.bfloat16,
                             sharding=NamedSharding(mesh, P("data", None)))
    w = jax.ShapeDtypeStruct((4096, 4096), jnp.bfloat16,
                             sharding=NamedSharding(mesh, P(None, "model")))
    compiled = jax.jit(lambda x, w: jnp.tanh(x @ w) * 2).lower(x, w).compile()
    stats = compiled.memory_analysis()
    # Per device: a quarter of x's rows (8 MiB) and half of w's columns (16 MiB).
    # A TPU stores each array in whole tiles, padding what does not fill them
    # (Adam's int32 count takes 512 B); these fill theirs, but the layout is
    # libtpu's choice, not a promise: a bound, at most a tile (4 KiB) an array.
    pieces = 4096 * 4096 * 2 // 4 + 4096 * 4096 * 2 // 2
    assert pieces <= stats.argument_size_in_bytes <= pieces + 2 * 4096
    # TPU's peak is its buffer assignment's high-water mark, temporaries included.
    assert stats.peak_memory_in_bytes >= stats.argument_size_in_bytes
    assert compiled.cost_analysis()["flops"] > 0
    # Still the CPU for running things.
    assert jax.devices()[0].platform == "cpu"


@needs_libtpu
def test_the_transformer_step_compiles_for_a_slice_donated_with_its_loss_in_chunks():
    from jaxcourse import transformer

    cfg = transformer.Config(vocab=256, d_model=128, layers=2, heads=4, kv_heads=2,
                             hidden=256)
    devices = slices.slice_devices("v5e 2x4")
    kept = transformer.compile_step(cfg, "FSDP", 8, 1, 8, 64, devices=devices)
    donated = transformer.compile_step(cfg, "FSDP", 8, 1, 8, 64, devices=devices,
                                       donate=True, loss_chunk=16)
    state = transformer.state_bytes(cfg, "FSDP", "mixed", 8)["total"]
    for compiled in (kept, donated):
        memory = transformer.compile_report(compiled)["memory"]
        # TPU pads each array to its tiles (Adam's int32 count to 512 B, this
        # tiny model's norms and biases likewise): the state's bytes are a
        # lower bound, here within 15 % (within bytes for LLaMA-3's arrays).
        tokens = 2 * 8 * 64 * 4 // 8
        assert state <= memory["arguments"] - tokens < 1.15 * state
    # Donated, the new state is written over the old: the outputs alias it.
    assert transformer.compile_report(kept)["memory"]["alias"] == 0
    assert transformer.compile_report(donated)["memory"]["alias"] >= state


@needs_libtpu
def test_a_mesh_must_cover_the_slice():
    with pytest.raises(slices.SliceError, match="has 6 devices"):
        slices.slice_mesh("v5e 2x4", (3, 2), ("data", "model"))


@needs_libtpu
@pytest.mark.parametrize("name", ["v5e 2x4", "v5p 2x2x2", "v6e 2x4"])
def test_usable_hbm_is_what_the_compiler_says(name):
    devices = slices.slice_devices(name)
    mesh = jax.sharding.Mesh(devices, ("x",),
                             axis_types=(jax.sharding.AxisType.Explicit,))
    huge = jax.ShapeDtypeStruct((len(devices) * 1024, 2**25), jnp.float32,
                                sharding=NamedSharding(mesh, P("x")))
    with pytest.raises(Exception, match="RESOURCE_EXHAUSTED") as error:
        jax.jit(lambda a: (a * 2, a + 1)).lower(huge).compile()
    available = re.search(r"available HBM \(([\d.]+)G\)", str(error.value))
    assert available, str(error.value)[:300]
    assert float(available.group(1)) == round(slices.SLICES[name].usable_hbm / 2**30, 2)


@needs_libtpu
def test_loading_the_compiler_prints_nothing():
    # libtpu logs its start on file descriptor 2; the course keeps it out of a
    # notebook's output. A plain JAX start never sees libtpu at all.
    code = ("import jax; jax.devices()\n"
            "from jaxcourse import slices\n"
            "print(len(slices.slice_devices('v5e 2x4')))\n")
    for program in (code, "import jax; print(jax.devices()[0].platform)"):
        done = subprocess.run([sys.executable, "-c", program], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stderr == "", done.stderr[-2000:]
