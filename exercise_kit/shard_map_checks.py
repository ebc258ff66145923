"""What chapter 5's checks are made of: inputs on a mesh, and what is compared.

The checking side of :mod:`solutions.shard_map`, which registers the exercises;
this module holds none. Every answer takes its arrays and then ``mesh``, a
one-axis ``Auto`` mesh built by :func:`jaxcourse.collectives.line_mesh` (axis
``"i"``, or ``"batch"`` for the gradients), so each input builder here
(:func:`vector_inputs`, :func:`matmul_inputs`, :func:`rows_inputs`,
:func:`regression_inputs`) returns the arrays already placed on a mesh of
``n`` devices, then the mesh. :func:`standard_cases` makes the cases most
exercises share: the values on meshes of 8 and 4 devices (a device count
written into the code fails), where the result lives (:func:`layout`) and,
for the exercises about communication, which collectives XLA compiled into
the program (:func:`collectives_present`). How close the values must be is
derived from float32's rounding (:func:`mean_tolerance`,
:func:`product_tolerance`, :func:`gradient_tolerance`); data that is only
moved compares exactly.

:func:`linear_loss` is the model of ``data_parallel_grads``, whose reference
and known mistakes differentiate it; the notebooks import it and
:func:`place` from :mod:`solutions.shard_map`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse.collectives import line_mesh
from jaxcourse.exercises import Case
from jaxcourse.exercises.widgets.explorers_sharding import (
    COLLECTIVES,
    collective_counts,
)
from jaxcourse.numerics import sum_tolerance

#: An input builder: ``inputs(rng)`` returns the arguments of one case.
Inputs = Callable[[np.random.Generator], tuple]

# --------------------------------------------------------------------------
# Helpers shared by the checks and the notebooks
# --------------------------------------------------------------------------


def layout(array: jax.Array) -> np.ndarray:
    """Return where each piece of ``array`` lives, as an int array.

    Shape ``(devices, ndim, 2)``: for device ``d`` (in id order) and dimension
    ``k``, the start and stop of the slice device ``d`` holds. A replicated
    scalar on 8 devices is ``(8, 0, 2)``; on one device, ``(1, 0, 2)``.
    """
    if not isinstance(array, jax.Array):
        raise TypeError(f"got a {type(array).__name__}, not a jax.Array on the "
                        "mesh: return what jax.shard_map returns")
    index_map = array.sharding.devices_indices_map(array.shape)
    rows = []
    for device in sorted(index_map, key=lambda d: d.id):
        index = index_map[device]
        rows.append([s.indices(n)[:2] for s, n in zip(index, array.shape, strict=True)])
    return np.array(rows, dtype=np.int32).reshape(len(rows), array.ndim, 2)


def place(array: np.ndarray, mesh: jax.sharding.Mesh, spec: P) -> jax.Array:
    """Put a NumPy array on ``mesh`` with ``spec``."""
    return jax.device_put(array, NamedSharding(mesh, spec))


def linear_loss(params: dict, inputs: jax.Array, targets: jax.Array) -> jax.Array:
    """Mean over the examples of the squared error of a linear model."""
    predictions = inputs @ params["w"] + params["b"]
    return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))


# --------------------------------------------------------------------------
# What is compared: extracts and a runner
# --------------------------------------------------------------------------


def leaf_values(out: Any) -> tuple:
    """Extract: the values of every leaf of ``out``, as NumPy arrays."""
    return tuple(np.asarray(leaf) for leaf in jax.tree.leaves(out))


def leaf_layouts(out: Any) -> tuple:
    """Extract: the :func:`layout` of every leaf of ``out``."""
    return tuple(layout(leaf) for leaf in jax.tree.leaves(out))


def has_shard_map(jaxpr: Any) -> bool:
    """Whether a jaxpr, or one nested in its equations, calls ``shard_map``."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "shard_map":
            return True
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns") and has_shard_map(inner):
                return True
    return False


def collectives_present(function: Callable, *args: Any) -> dict:
    """Runner: which collectives XLA compiles into ``function(*arrays, mesh)``.

    ``collectives``: one 0/1 entry per name in COLLECTIVES, presence, not
    counts, so an answer that XLA happens to compile into two all-gathers
    instead of one still passes. ``shard_map``: 1 if the function's program
    has a ``jax.shard_map`` in it. The exercises ask for the per-device
    program: ``jnp.mean(x)`` on a split ``x`` compiles to the same all-reduce,
    and only this tells the learner that the technique is missing.
    """
    *arrays, mesh = args

    def call(*a: Any) -> Any:
        return function(*a, mesh)

    counts = collective_counts(call, *arrays)
    return {"collectives": (counts > 0).astype(np.int32),
            **shard_map_used(function, *args)}


def shard_map_used(function: Callable, *args: Any) -> dict:
    """Runner: whether ``function(*arrays, mesh)``'s program has a ``jax.shard_map``.

    Alone, for the exercises where the per-device program is advice, not the
    point (their cases with ``advice=True``); within
    :func:`collectives_present` for those where it is the point.
    """
    *arrays, mesh = args
    try:
        jaxpr = jax.make_jaxpr(lambda *a: function(*a, mesh))(*arrays).jaxpr
        found = has_shard_map(jaxpr)
    except Exception:  # runs only outside jit (jax.set_mesh): not wrong
        found = True
    return {"shard_map": np.array(int(found), np.int32)}


def only_collectives(*names: str) -> str:
    """Describe the case of :func:`collectives_present` that expects ``names``."""
    return "the compiled program contains " + " and ".join(names) + \
        " and no other collective (of " + ", ".join(COLLECTIVES) + \
        "), and it comes from your jax.shard_map"


# --------------------------------------------------------------------------
# Inputs on a mesh of n devices
# --------------------------------------------------------------------------


def vector_inputs(n: int, length: int) -> Inputs:
    """Build inputs: a vector of ``length`` entries split over ``"i"``, the mesh."""
    def make(rng: np.random.Generator) -> tuple:
        mesh = line_mesh(n)
        x = rng.normal(size=length).astype(np.float32)
        return place(x, mesh, P("i")), mesh

    return make


def matmul_inputs(n: int, m: int, k: int, f: int, lhs_spec: P) -> Inputs:
    """Build inputs: ``lhs`` (m, k) laid out by ``lhs_spec``, ``rhs`` (k, f) by rows."""
    def make(rng: np.random.Generator) -> tuple:
        mesh = line_mesh(n)
        lhs = rng.normal(size=(m, k)).astype(np.float32)
        rhs = rng.normal(size=(k, f)).astype(np.float32)
        return place(lhs, mesh, lhs_spec), place(rhs, mesh, P("i", None)), mesh

    return make


def rows_inputs(n: int, rows: int, cols: int) -> Inputs:
    """Build inputs: a (rows, cols) matrix split by rows over ``"i"``, the mesh."""
    def make(rng: np.random.Generator) -> tuple:
        mesh = line_mesh(n)
        x = rng.normal(size=(rows, cols)).astype(np.float32)
        return place(x, mesh, P("i", None)), mesh

    return make


def regression_inputs(n: int, examples: int, features: int, outputs: int) -> Inputs:
    """Build inputs: replicated :func:`linear_loss` parameters, a split batch.

    The batch is ``inputs`` (examples, features) and ``targets`` (examples,
    outputs), split over axis ``"batch"``; the mesh comes last.
    """
    def make(rng: np.random.Generator) -> tuple:
        mesh = line_mesh(n, "batch")
        params = {"w": rng.normal(size=(features, outputs)).astype(np.float32),
                  "b": rng.normal(size=(outputs,)).astype(np.float32)}
        inputs = rng.normal(size=(examples, features)).astype(np.float32)
        targets = rng.normal(size=(examples, outputs)).astype(np.float32)
        return (place(params, mesh, P()), place(inputs, mesh, P("batch")),
                place(targets, mesh, P("batch")), mesh)

    return make


# --------------------------------------------------------------------------
# How close two float32 results must be (jaxcourse.numerics)
# --------------------------------------------------------------------------

#: Moved data (a ring shift, positions counted in int32) is compared bit for bit.
EXACT = {"rtol": 0.0, "atol": 0.0}


def mean_tolerance(length: int) -> dict[str, float]:
    """Return the ``rtol`` and ``atol`` of two float32 means of ``length`` draws.

    Any order of the sum (per device, then across devices) is within
    ``gamma_length`` of exact, relative to ``sum |x|``; dividing by the length
    (once, or per device and then by the device count) rounds twice at most,
    each within ``u`` of the mean. So each mean is within ``gamma_(length + 2)``
    of ``max |x|``, below 4 for :func:`vector_inputs` (standard normal draws:
    2.3 in the cases, at most 3.6 over 200 seeds), and two differ by twice that.
    """
    return {"rtol": 0.0, "atol": 2 * sum_tolerance(length + 2) * 4}


def product_tolerance(inner: int) -> dict[str, float]:
    """Return the ``rtol`` and ``atol`` of two float32 products ``lhs @ rhs``.

    However the ``inner`` products are split between devices and summed, each
    entry is within ``gamma_inner`` of exact, relative to ``|lhs| @ |rhs|``
    (:func:`jaxcourse.numerics.product_error_bound`): below 48 for
    :func:`matmul_inputs`'s standard normal draws (32 and 24 in the cases, at
    most 42 over 200 seeds). Two products differ by twice that.
    """
    return {"rtol": 0.0, "atol": 2 * sum_tolerance(inner) * 48}


def gradient_tolerance(features: int, examples: int) -> dict[str, float]:
    """Return the ``rtol`` and ``atol`` of two float32 gradients of :func:`linear_loss`.

    A residual sums ``features`` products, the bias and the target; the
    gradient sums over the ``examples`` (per device, then across devices: one
    sum in some order). To first order each gradient is within
    ``gamma_(features + 2 + examples)`` of exact, relative to its terms
    ``2 / examples * |x| @ (|x| @ |w| + |b| + |t|)``: below 32 for
    :func:`regression_inputs` (11 and 7.8 in the cases, at most 23 over 200
    seeds). Two gradients differ by twice that.
    """
    return {"rtol": 0.0,
            "atol": 2 * sum_tolerance(features + 2 + examples) * 32}


def standard_cases(sizes: tuple[str, str], make8: Inputs, make4: Inputs,
                   spec_text: str, communication: str | None,
                   tolerances: tuple[dict, dict] = (EXACT, EXACT)) -> list[Case]:
    """Return the cases most of chapter 5's exercises share.

    Parameters
    ----------
    sizes : (str, str)
        What the inputs of ``make8`` and ``make4`` are, for the descriptions.
    make8, make4 : callable
        Input builders on meshes of 8 and 4 devices.
    spec_text : str
        The layout the result must have, e.g. ``"P('i', None) (rows split)"``.
    communication : str or None
        The description of the case of :func:`collectives_present` (see
        :func:`only_collectives`); None for no such case.
    tolerances : (dict, dict)
        The ``rtol`` and ``atol`` of the values on 8 and on 4 devices; by
        default :data:`EXACT`, for data that is only moved.
    """
    cases = [
        Case(f"values on a mesh of 8 devices ({sizes[0]})", make8,
             extract=leaf_values, **tolerances[0]),
        Case(f"values on a mesh of 4 devices ({sizes[1]})", make4,
             extract=leaf_values, **tolerances[1]),
        Case(f"the result is laid out as {spec_text} (the slice each device "
             "holds, 8 devices)", make8, extract=leaf_layouts),
    ]
    if communication:
        cases.append(Case(communication, make8, runner=collectives_present))
    return cases
