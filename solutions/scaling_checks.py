"""What chapter 6's checks are made of: model sizes, meshes, and what is compared.

The checking side of :mod:`solutions.scaling`, which registers the exercises;
this module holds none. The formula exercises take plain numbers (a
:class:`jaxcourse.scaling.Size`, a layout name, mesh sizes) and need no
device. The two exercises about arrays on devices take a two-axis ``Auto``
mesh of ``data × model`` devices built by :func:`grid_mesh`:

* ``fsdp_specs`` is run by :func:`placed_shards`, which places the learner's
  specs on a mesh and reports the block of every weight each device holds;
* ``tp_mlp`` is compared on its values, its layout, and the collectives XLA
  compiled into it (:func:`compiled_kinds`, counting
  :func:`jaxcourse.scaling.compiled_collectives` by kind).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxcourse import scaling
from jaxcourse.devices import mesh_devices
from solutions.shard_map_checks import place

#: An input builder: ``inputs(rng)`` returns the arguments of one case.
Inputs = Callable[[np.random.Generator], tuple]
#: The mesh shapes of 8 devices, ``(data, model)``, in the chapter's order.
MESHES = ((8, 1), (4, 2), (2, 4), (1, 8))
#: What a spec's entry is written as in the checks' output: 0 none, 1 "data", 2 "model".
AXIS_CODES = {None: 0, scaling.DATA: 1, scaling.MODEL: 2}


def grid_mesh(data: int, model: int) -> jax.sharding.Mesh:
    """Return an ``Auto`` mesh of ``data × model`` devices, axes "data" and "model"."""
    from jax.sharding import AxisType

    return jax.make_mesh((data, model), (scaling.DATA, scaling.MODEL),
                         axis_types=(AxisType.Auto, AxisType.Auto),
                         devices=mesh_devices(data * model, first_cell=8))


def numpy_params(rng: np.random.Generator, size: scaling.Size) -> list[dict]:
    """Return a parameter tree shaped like :func:`jaxcourse.scaling.init_params`'s."""
    d, f = size.width, size.hidden
    return [{"w_in": (rng.normal(size=(d, f)) / np.sqrt(d)).astype(np.float32),
             "w_out": (rng.normal(size=(f, d)) / np.sqrt(f)).astype(np.float32)}
            for _ in range(size.layers)]


# --------------------------------------------------------------------------
# fsdp_specs: the specs a learner returns, placed
# --------------------------------------------------------------------------


def _matched_specs(params: Any, specs: Any) -> list[P]:
    """Return the learner's specs as a list, one per weight; check the tree's shape."""
    if jax.tree.structure(params) != jax.tree.structure(
            specs, is_leaf=lambda s: isinstance(s, P)):
        raise ValueError("the specs must be a tree shaped exactly like params (a "
                         "list of dicts with the same keys), one PartitionSpec per "
                         "weight")
    found = jax.tree.leaves(specs, is_leaf=lambda s: isinstance(s, P))
    for spec in found:
        if not isinstance(spec, P):
            raise TypeError(f"every leaf must be a PartitionSpec, not a "
                            f"{type(spec).__name__}")
    return found


def spec_codes(function: Callable, params: Any) -> list[np.ndarray]:
    """Runner: the specs ``function(params)`` returns, padded to each weight's rank.

    Each spec becomes an int array with one entry per dimension (see
    :data:`AXIS_CODES`): ``P("data")`` and ``P("data", None)`` both give
    ``[1, 0]`` for a matrix, since they mean the same.
    """
    specs = _matched_specs(params, function(params))
    codes = []
    for weight, spec in zip(jax.tree.leaves(params), specs, strict=True):
        entries = tuple(spec) + (None,) * (np.ndim(weight) - len(spec))
        codes.append(np.array([AXIS_CODES.get(e, 3) if not isinstance(e, tuple)
                               else 3 for e in entries], dtype=np.int32))
    return codes


def placed_shards(data: int, model: int) -> Callable[..., list[np.ndarray]]:
    """Return a runner: place params with the learner's specs on a data × model mesh.

    The runner returns, per weight, the shape of the block device 0 holds and
    how many distinct blocks there are across the mesh (1/n of a weight on
    each device means ``n`` distinct blocks of ``1/n`` of it).
    """
    def run(function: Callable, params: Any) -> list[np.ndarray]:
        mesh = grid_mesh(data, model)
        specs = _matched_specs(params, function(params))
        found = []
        for weight, spec in zip(jax.tree.leaves(params), specs, strict=True):
            placed = place(weight, mesh, spec)
            blocks = {tuple((s.start, s.stop) for s in index) for index in
                      placed.sharding.devices_indices_map(placed.shape).values()}
            found.append(np.array([*placed.sharding.shard_shape(placed.shape),
                                   len(blocks)], dtype=np.int32))
        return found

    return run


def params_inputs(size: scaling.Size) -> Inputs:
    """Build inputs: a NumPy parameter tree of ``size``."""
    def make(rng: np.random.Generator) -> tuple:
        return (numpy_params(rng, size),)

    return make


# --------------------------------------------------------------------------
# tp_mlp: values, layout, compiled collectives
# --------------------------------------------------------------------------


def mlp_inputs(data: int, model: int, batch: int, width: int) -> Inputs:
    """Build inputs for ``tp_mlp`` on a ``data × model`` mesh.

    ``x`` is split by rows over "data", ``w_in`` by columns and ``w_out`` by
    rows over "model"; the mesh comes last.
    """
    def make(rng: np.random.Generator) -> tuple:
        mesh = grid_mesh(data, model)
        hidden = 4 * width
        x = rng.normal(size=(batch, width)).astype(np.float32)
        w_in = (rng.normal(size=(width, hidden)) / np.sqrt(width)).astype(np.float32)
        w_out = (rng.normal(size=(hidden, width)) / np.sqrt(hidden)).astype(np.float32)
        return (place(x, mesh, P(scaling.DATA, None)),
                place(w_in, mesh, P(None, scaling.MODEL)),
                place(w_out, mesh, P(scaling.MODEL, None)), mesh)

    return make


def values(out: Any) -> np.ndarray:
    """Extract: the values, as a NumPy array."""
    return np.asarray(out)


def result_layout(out: Any) -> np.ndarray:
    """Extract: device 0's block shape, and how many distinct blocks there are."""
    if not isinstance(out, jax.Array):
        raise TypeError(f"got a {type(out).__name__}, not a jax.Array on the mesh: "
                        "return what jax.shard_map returns")
    blocks = {tuple((s.start, s.stop) for s in index) for index in
              out.sharding.devices_indices_map(out.shape).values()}
    return np.array([*out.sharding.shard_shape(out.shape), len(blocks)], np.int32)


def compiled_kinds(function: Callable, *args: Any) -> dict[str, np.ndarray]:
    """Runner: how many collectives of each kind XLA compiles into ``function``.

    ``{"collectives": counts}``, one count per kind of
    :data:`jaxcourse.scaling.KINDS`, from
    :func:`jaxcourse.scaling.compiled_collectives` on
    ``jax.jit(...).lower(...).compile()``; under that key a check says the
    counts in words ("1 all-reduce, 2 all-gather") rather than as numbers.
    """
    *arrays, mesh = args
    compiled = jax.jit(lambda *a: function(*a, mesh)).lower(*arrays).compile()
    found = scaling.compiled_collectives(compiled)
    return {"collectives": np.array(
        [sum(c.kind == kind for c in found) for kind in scaling.KINDS], dtype=np.int32)}


# --------------------------------------------------------------------------
# best_layout: an answer as numbers
# --------------------------------------------------------------------------


def layout_choice(out: Any) -> np.ndarray:
    """Extract: ``(layout, (data, model))`` as ``[index in LAYOUTS, data, model]``."""
    name, (data, model) = out
    if name not in scaling.LAYOUTS:
        raise ValueError(f"{name!r} is not one of {scaling.LAYOUTS}")
    return np.array([scaling.LAYOUTS.index(name), int(data), int(model)], np.int32)
