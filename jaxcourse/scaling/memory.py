"""Memory: the training state by formula, against XLA's own memory analysis.

:func:`state_bytes` counts what one device holds under a layout;
:func:`compiled_memory` reads a compiled program's ``memory_analysis()``;
:func:`compile_from_shapes` compiles a layout's step from shapes alone, so a
program too large to run can still be read; :func:`saved_residuals` lists
what a backward pass keeps, by name.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import print_saved_residuals
from jax.sharding import PartitionSpec as P

from .communication import shape_bytes
from .layouts import check_layout, make_step, spec_tree
from .model import DATA, F32, MODEL, Size, init_params, param_count

__all__ = ["compile_from_shapes", "compiled_memory", "residual_bytes",
           "saved_residuals", "state_bytes"]


def _shards(layout: str, data: int, model: int) -> int:
    """How many pieces each weight is cut into under ``layout``."""
    check_layout(layout)
    return {"data parallel": 1, "FSDP": data, "tensor parallel": model,
            "FSDP + TP": data * model}[layout]


def state_bytes(size: Size, layout: str, data: int = 1, model: int = 1,
                itemsize: int = F32) -> dict[str, int]:
    """Return each part of the training state held by one device, in bytes.

    Parameters
    ----------
    size : Size
        The model.
    layout : str
        One of :data:`LAYOUTS`.
    data, model : int
        The mesh's sizes along ``"data"`` and ``"model"``.
    itemsize : int
        Bytes per number.

    Returns
    -------
    dict
        ``params``, ``grads`` and ``adam`` (the two moments), and their
        ``total``. Adam's step count (4 bytes) is left out: it is too small
        to matter and the same everywhere.
    """
    per_device = param_count(size) * itemsize // _shards(layout, data, model)
    parts = {"params": per_device, "grads": per_device, "adam": 2 * per_device}
    parts["total"] = sum(parts.values())
    return parts


def compiled_memory(compiled: Any) -> dict[str, int]:
    """Return XLA's memory analysis of a compiled program, per device, in bytes.

    ``arguments`` and ``outputs`` are the buffers passed in and returned,
    ``temp`` the scratch space, ``alias`` the bytes of outputs written into
    donated arguments. ``peak`` is XLA's own figure (``peak_memory_in_bytes``):
    the most bytes its buffer assignment has live at one moment. ``sum`` is
    arguments + outputs + temp - alias, as if every buffer lived for the whole
    program: an upper bound, not the peak (XLA reuses memory a buffer no
    longer needs).
    """
    stats = compiled.memory_analysis()
    found = {
        "arguments": int(stats.argument_size_in_bytes),
        "outputs": int(stats.output_size_in_bytes),
        "temp": int(stats.temp_size_in_bytes),
        "alias": int(stats.alias_size_in_bytes),
        "peak": int(stats.peak_memory_in_bytes),
    }
    found["sum"] = (found["arguments"] + found["outputs"] + found["temp"]
                    - found["alias"])
    return found


def saved_residuals(fn: Callable, *args: Any) -> list[tuple[str, str, int]]:
    """Return what ``jax.grad(fn)`` keeps from its forward pass, grouped.

    ``jax.ad_checkpoint.print_saved_residuals`` names every residual: its
    type and where it comes from (an argument, a constant, or the output of
    a primitive in a function). Its lines are grouped here by type and origin,
    with the source file's location left out (it names this machine's paths).

    Returns
    -------
    list of (str, str, int)
        ``(type, origin, count)`` in the order first seen, e.g.
        ``("f32[512,1024]", "output of gt in block_fn", 4)``.
    """
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(fn, *args)
    counts: dict[tuple[str, str], int] = {}
    for line in out.getvalue().splitlines():
        kind, _, origin = line.strip().partition(" ")
        # "output of gt from /path/model.py:99:17 (forward.<locals>.block_fn)"
        # -> "output of gt in block_fn"
        where = re.search(r"\(([\w.<>]+)\)\s*$", origin)
        origin = re.sub(r"\s+from\s+\S+:\d+:\d+.*$", "", origin)
        if where:
            origin += " in " + where.group(1).rpartition(".")[2]
        counts[kind, origin] = counts.get((kind, origin), 0) + 1
    return [(kind, origin, n) for (kind, origin), n in counts.items()]


def residual_bytes(residuals: list[tuple[str, str, int]]) -> int:
    """Return the bytes of :func:`saved_residuals`' list (types ``dtype[dims]``)."""
    return sum(shape_bytes(kind) * count for kind, _, count in residuals)


def compile_from_shapes(size: Size, layout: str, batch: int, data: int = 1,
                        model: int = 1, optimizer: Any = None,
                        devices: Any = None) -> Any:
    """Compile ``layout``'s training step from shapes alone, allocating nothing.

    The parameters, Adam's state and the batch are given to ``jax.jit`` as
    ``jax.ShapeDtypeStruct`` with the layout's shardings on a ``data × model``
    mesh of the first ``data * model`` devices, so that a learner can read a
    large program's :func:`compiled_memory` and :func:`compiled_collectives`
    without the memory to run it. ``devices`` (by default ``jax.devices()``)
    may be a TPU slice's compile-only devices (:mod:`jaxcourse.slices`): the
    program is then the chip's, compiled by its own compiler.

    Raises
    ------
    ValueError
        If JAX has fewer than ``data * model`` devices, or the batch does not
        split over ``data``.
    """
    import optax
    from jax.sharding import AxisType, NamedSharding

    check_layout(layout)
    devices = list(jax.devices() if devices is None else devices)
    have = len(devices)
    if have < data * model:
        raise ValueError(f"a {data}×{model} mesh needs {data * model} devices; JAX has "
                         f"{have} (call jaxcourse.devices.use_cpu_devices first)")
    if batch % data:
        raise ValueError(f"a batch of {batch} does not split over {data} devices")
    optimizer = optimizer or optax.adam(1e-3)
    mesh = jax.make_mesh((data, model), (DATA, MODEL),
                         axis_types=(AxisType.Explicit, AxisType.Explicit),
                         devices=devices[:data * model])
    params = jax.eval_shape(lambda key: init_params(key, size), jax.random.key(0))
    opt_state = jax.eval_shape(optimizer.init, params)

    def shaped(tree: Any) -> Any:
        return jax.tree.map(
            lambda leaf, spec: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                                    sharding=NamedSharding(mesh, spec)),
            tree, spec_tree(tree, layout))

    batch_shape = jax.ShapeDtypeStruct((batch, size.width), jnp.float32,
                                       sharding=NamedSharding(mesh, P(DATA, None)))
    with jax.set_mesh(mesh):
        step = jax.jit(make_step(layout, optimizer))
        return step.lower(shaped(params), shaped(opt_state), batch_shape,
                          batch_shape).compile()
