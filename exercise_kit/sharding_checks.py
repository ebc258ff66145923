"""What chapter 4's checks are made of: meshes, layouts, and compiled programs.

The checking side of :mod:`solutions.sharding`, which registers the
exercises; this module holds none of their reference functions (only
:data:`TARGET`, the layout that the first exercise draws for the learner to
read, says what that one returns). The notebooks import
their helpers from here through :mod:`solutions.sharding`:
:func:`auto_mesh` and :func:`explicit_mesh` build meshes whose axes are all
``Auto`` or all ``Explicit``, :func:`draw_target` draws the layout that
``spec_for_target`` must produce, and :func:`compiled_two_layers` measures a
layout of ``collective_free_specs`` as its check does.

A layout is compared as plain data: for every device, in id order, the
``(start, stop)`` of the slice it holds in each dimension (:func:`layout`).
Two shardings with the same layout are the same answer, however the
``PartitionSpec`` is spelled (``P("a")`` and ``P("a", None)`` agree). The
last two exercises are judged on the compiled program: which collectives it
holds and the share of the work one device does
(:func:`compiled_two_layers`), the bytes one device sends
(:func:`compiled_bytes`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse.devices import mesh_devices
from jaxcourse.exercises.widgets.explorers_sharding import (
    COLLECTIVES,
    collective_counts,
    compiled_collective_counts,
)
from jaxcourse.scaling import collective_summary, compiled_collectives

#: An input builder: ``inputs(rng)`` returns the arguments of one case.
Inputs = Callable[[np.random.Generator], tuple]

# --------------------------------------------------------------------------
# Helpers shared by the checks (and the notebook)
# --------------------------------------------------------------------------


def _mesh_devices(shape: tuple[int, ...]) -> list:
    """Return the devices for a mesh of ``shape``; say clearly if JAX has too few."""
    return mesh_devices(int(np.prod(shape)), "this exercise")


def auto_mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> jax.sharding.Mesh:
    """Build a mesh whose axes are all ``Auto`` (the compiler picks shardings)."""
    return jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape),
                         devices=_mesh_devices(shape))


def explicit_mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> jax.sharding.Mesh:
    """Build a mesh whose axes are all ``Explicit`` (shardings in the types)."""
    return jax.make_mesh(shape, names, axis_types=(AxisType.Explicit,) * len(shape),
                         devices=_mesh_devices(shape))


def layout(array: jax.Array) -> np.ndarray:
    """Return where each piece of ``array`` lives, as an int array.

    Shape ``(devices, ndim, 2)``: for device ``d`` (in id order) and dimension
    ``k``, the start and stop of the slice device ``d`` holds.
    """
    if not isinstance(array, jax.Array):
        raise TypeError(f"got a {type(array).__name__}, not a jax.Array placed on "
                        "the mesh: use jax.device_put with a NamedSharding")
    sharding = array.sharding
    index_map = sharding.devices_indices_map(array.shape)
    rows = []
    for device in sorted(index_map, key=lambda d: d.id):
        index = index_map[device]
        # slice(None) means "all of it": indices() turns it into (0, n, 1).
        rows.append([s.indices(n)[:2] for s, n in zip(index, array.shape, strict=True)])
    return np.array(rows, dtype=np.int32).reshape(len(rows), array.ndim, 2)


def values(out) -> tuple:
    """Extract: every leaf of ``out``, as NumPy arrays."""
    return tuple(np.asarray(leaf) for leaf in jax.tree.leaves(out))


# ---- spec_for_target: the drawn layout -----------------------------------------

#: The layout the exercise asks for, as the notebook draws it: rows 2 ways
#: over "b", columns 4 ways over "a" of the 4x2 mesh ("a", "b").
TARGET = P("b", "a")


def mesh_2d(names: tuple[str, str] = ("a", "b")) -> jax.sharding.Mesh:
    """Return the chapter's 4x2 ``Auto`` mesh, axes ``names``."""
    return auto_mesh((4, 2), names)


def placed(spec_shape: tuple[int, int]) -> Callable:
    """Extract: the layout of a spec_shape array placed with the returned spec."""
    def extract(spec):
        if not isinstance(spec, P):
            raise TypeError(f"expected a PartitionSpec, got {type(spec).__name__}")
        mesh = mesh_2d()
        array = jax.device_put(np.zeros(spec_shape, np.float32),
                               NamedSharding(mesh, spec))
        return {"layout": layout(array)}

    return extract


def draw_target(shape: tuple[int, int] = (8, 8)) -> None:
    """Draw the layout ``spec_for_target`` must produce on the 4x2 mesh."""
    array = jax.device_put(np.zeros(shape, np.float32),
                           NamedSharding(mesh_2d(), TARGET))
    jax.debug.visualize_array_sharding(array)


# ---- shard_mlp_2d: an MLP's parameters and batch, placed -------------------------

MP_SIZES, MP_BATCH = [12, 16, 16, 8, 4], 16
MP_SIZES_2X4, MP_BATCH_2X4 = [6, 8, 12, 4, 2], 10


def mlp(sizes: list[int], n: int) -> Inputs:
    """Return inputs: an MLP's ``(W, b)`` pairs of layer ``sizes``, a batch of ``n``."""
    def make(rng: np.random.Generator) -> tuple:
        params = [
            (rng.normal(size=(m, k)).astype(np.float32),
             rng.normal(size=(k,)).astype(np.float32))
            for m, k in zip(sizes[:-1], sizes[1:], strict=True)
        ]
        batch = (rng.normal(size=(n, sizes[0])).astype(np.float32),
                 rng.normal(size=(n, sizes[-1])).astype(np.float32))
        return params, batch

    return make


def with_mesh(make: Inputs, shape: tuple[int, ...], names: tuple[str, ...]) -> Inputs:
    """Return inputs: those of ``make``, then an ``Auto`` mesh of ``shape``."""
    return lambda rng: (*make(rng), auto_mesh(shape, names))


def param_layouts(out) -> dict:
    """Extract: the layout of every weight and bias of ``(params, batch)``."""
    params, _ = out
    layouts = tuple(layout(leaf) for leaf in jax.tree.leaves(params))
    return {"parameters": {"layout": layouts}}


def batch_layouts(out) -> dict:
    """Extract: the layout of the inputs and targets of ``(params, batch)``."""
    _, batch = out
    return {"batch": {"layout": tuple(layout(leaf) for leaf in jax.tree.leaves(batch))}}


def all_layouts(out) -> dict:
    """Extract: :func:`param_layouts` and :func:`batch_layouts` together."""
    return {**param_layouts(out), **batch_layouts(out)}


# ---- make_hidden_layer: the layer it returns, run and compiled ---------------------

HIDDEN_IN, HIDDEN_OUT, HIDDEN_BATCH = 12, 8, 16


def _hidden_inputs(shape: tuple[int, int] = (4, 2)):
    rng = np.random.default_rng(4)
    mesh = auto_mesh(shape, ("batch", "model"))
    x = jax.device_put(rng.normal(size=(HIDDEN_BATCH, HIDDEN_IN)).astype(np.float32),
                       NamedSharding(mesh, P("batch", None)))
    w = jax.device_put(rng.normal(size=(HIDDEN_IN, HIDDEN_OUT)).astype(np.float32),
                       NamedSharding(mesh, P()))
    return x, w


def hidden_values(layer) -> np.ndarray:
    """Extract: the values of ``layer(x, w)`` on the 4x2 mesh."""
    return np.asarray(layer(*_hidden_inputs()))


def hidden_layout(layer) -> dict:
    """Extract: the layout of ``layer(x, w)`` on the 4x2 mesh."""
    return {"layout": layout(layer(*_hidden_inputs()))}


def hidden_collectives(layer) -> dict:
    """Extract: the collectives compiled into ``layer`` on the 4x2 mesh."""
    return {"collectives": collective_counts(layer, *_hidden_inputs())}


def hidden_jitted(layer) -> dict:
    """Extract: whether ``layer`` is compiled with ``jax.jit`` (1 or 0)."""
    # jax.jit's functions can be lowered; a plain one cannot.
    return {"jitted": np.array(int(hasattr(layer, "lower")), np.int32)}


def hidden_mesh(rng: np.random.Generator) -> tuple:
    """Return the inputs: the 4x2 mesh ("batch", "model")."""
    return (mesh_2d(("batch", "model")),)


def hidden_mesh_2x4(rng: np.random.Generator) -> tuple:
    """Return the inputs: a 2x4 mesh ("batch", "model")."""
    return (auto_mesh((2, 4), ("batch", "model")),)


def hidden_on_2x4(layer) -> tuple:
    """Extract: the values and layout of ``layer(x, w)`` on a 2x4 mesh."""
    out = layer(*_hidden_inputs((2, 4)))
    return np.asarray(out), {"layout": layout(out)}


# ---- collective_free_specs: judged on the compiled program ------------------

FREE_SIZES = (32, 16, 64, 8)        # batch, inputs, hidden, outputs
FREE_SIZES_2X4 = (16, 24, 32, 12)   # a second program, on a 2x4 mesh


def two_layers(x, w1, w2):
    """Compute two layers, no biases: the program of ``collective_free_specs``."""
    return jax.nn.relu(x @ w1) @ w2


def free_inputs(shape: tuple[int, int], names: tuple[str, str]) -> Inputs:
    """Return inputs: an ``Auto`` mesh of ``shape``, axes ``names``."""
    def make(rng: np.random.Generator) -> tuple:
        return (auto_mesh(shape, names),)

    return make


def _free_arrays(sizes: tuple[int, int, int, int]) -> tuple[np.ndarray, ...]:
    n, d, h, k = sizes
    rng = np.random.default_rng(7)
    return tuple(rng.normal(size=s).astype(np.float32)
                 for s in ((n, d), (d, h), (h, k)))


@functools.cache
def _flops_alone(sizes: tuple[int, int, int, int]) -> float:
    """Return the floating-point operations of :func:`two_layers` on one device.

    The same program for every layout tried on ``sizes``: compiled once.
    """
    alone = jax.jit(two_layers).lower(*_free_arrays(sizes)).compile()
    return alone.cost_analysis()["flops"]


def compiled_two_layers(specs, mesh, sizes=FREE_SIZES):
    """Compile :func:`two_layers` on inputs placed with ``specs``.

    Returns
    -------
    counts : numpy.ndarray
        How many of each collective (:data:`COLLECTIVES`) the program holds.
    share : float
        The floating-point operations of one device's program, as a share of
        the same program compiled for one device (XLA's ``cost_analysis``).
    """
    if not isinstance(specs, (tuple, list)) or len(specs) != 3 or not all(
            isinstance(s, P) for s in specs):
        raise TypeError("expected three PartitionSpecs, for x, w1 and w2, got "
                        f"{type(specs).__name__}")
    arrays = _free_arrays(sizes)
    placed_arrays = [jax.device_put(a, NamedSharding(mesh, s))
                     for a, s in zip(arrays, specs, strict=True)]
    compiled = jax.jit(two_layers).lower(*placed_arrays).compile()
    counts = compiled_collective_counts(compiled)
    share = compiled.cost_analysis()["flops"] / _flops_alone(tuple(sizes))
    return counts, share


def free_runner(sizes: tuple[int, int, int, int]) -> Callable:
    """Runner: the collectives and work share of the specs ``function(mesh)``."""
    def run(function, mesh):
        counts, share = compiled_two_layers(function(mesh), mesh, sizes)
        # Rounded: XLA counts a few elementwise operations per layout.
        return {"collectives": counts, "work_share": np.round(share, 3)}

    return run


# ---- cheaper_product: judged on the bytes it sends ---------------------------

PRODUCT_SMALL_BATCH = (8, 256, 256)    # x is the smaller operand
PRODUCT_LARGE_BATCH = (512, 64, 64)    # w is
PRODUCT_ON_4 = (16, 32, 128)           # x is, on a 4-device mesh


# Small whole numbers: every product and sum is exact in float32, so the
# values agree to the bit whichever order the devices add them in.
def product_operands(devices: int, name: str, sizes: tuple[int, int, int]) -> Inputs:
    """Return inputs: x split by rows, w by columns, over a one-axis Explicit mesh."""
    m, k, n = sizes

    def make(rng: np.random.Generator) -> tuple:
        mesh = explicit_mesh((devices,), (name,))
        x = rng.integers(-3, 4, size=(m, k)).astype(np.float32)
        w = rng.integers(-3, 4, size=(k, n)).astype(np.float32)
        with jax.set_mesh(mesh):
            return (jax.device_put(x, P(name, None)), jax.device_put(w, P(None, name)))

    return make


def compiled_bytes(function, x, w) -> tuple[jax.Array, float]:
    """Compile ``function(x, w)`` under x's mesh; return its output and bytes.

    The bytes are those one device sends over a ring for every collective in
    the compiled program (:func:`jaxcourse.scaling.collective_summary`).
    """
    with jax.set_mesh(x.sharding.mesh):
        compiled = jax.jit(function).lower(x, w).compile()
        out = compiled(x, w)
    return out, float(collective_summary(compiled_collectives(compiled))["bytes"])


def least_bytes(x, w) -> float:
    """Return what gathering the smaller operand sends per device (a ring)."""
    n = x.sharding.mesh.size
    return min(x.nbytes, w.nbytes) * (n - 1) / n


def product_runner(function, x, w):
    """Runner: the product ``function(x, w)`` and the bytes it sends per device."""
    out, sent = compiled_bytes(function, x, w)
    if not isinstance(out, jax.Array):
        raise TypeError(f"returned a {type(out).__name__}, expected a jax.Array")
    # Sending less than the least is as good as the least (the check asks for
    # "no more than"): a cleverer program is not wrong.
    return {"product": np.asarray(out), "bytes_sent": max(sent, least_bytes(x, w))}


#: The random products' shapes, in turns: each (m, k, n) has a batch of m on
#: one side of a boundary a rule fitted to the shown cases may draw and the
#: other side of the true one (x.size <= w.size, that is m <= n).
_PRODUCT_TURNS = (
    # m > k but m < n: comparing the batch with the contracted dimension
    # gathers w, the larger.
    lambda r: (8 * r(5, 13), 8 * r(1, 5), 8 * r(14, 33)),
    # m >= 100 but m < n: a threshold of 100 rows gathers w, the larger.
    lambda r: (8 * r(13, 25), 8 * r(2, 17), 8 * r(26, 41)),
    # m < 100 but m > n: the same threshold gathers x, the larger.
    lambda r: (8 * r(6, 13), 8 * r(2, 17), 8 * r(1, 5)),
    # m < k but m > n: the batch against the contracted dimension gathers x.
    lambda r: (8 * r(3, 9), 8 * r(10, 33), 8 * r(1, 3)),
)


def random_products(count: int = 8) -> Inputs:
    """Return inputs: ``count`` random products on an 8-device Explicit mesh 'X'.

    The shapes take turns across the boundaries a wrong rule draws (see
    :data:`_PRODUCT_TURNS`): the batch against the contracted dimension, a
    fixed number of rows (100); x and w are split as in the shown cases.
    """
    def make(rng: np.random.Generator) -> tuple:
        mesh = explicit_mesh((8,), ("X",))
        calls = []
        for turn in range(count):
            m, k, n = _PRODUCT_TURNS[turn % len(_PRODUCT_TURNS)](
                lambda lo, hi: int(rng.integers(lo, hi)))
            x = rng.integers(-3, 4, size=(m, k)).astype(np.float32)
            w = rng.integers(-3, 4, size=(k, n)).astype(np.float32)
            with jax.set_mesh(mesh):
                calls.append((f"x ({m}, {k}), w ({k}, {n})",
                              jax.device_put(x, P("X", None)),
                              jax.device_put(w, P(None, "X"))))
        return (calls,)

    return make


def products_runner(function, calls) -> dict[str, dict[str, float]]:
    """Runner: the bytes ``function(x, w)`` sends per device, for each random call.

    Only the bytes: the shown cases check the values, and the rule (which
    operand to gather) is what the random shapes try.
    """
    found = {}
    for label, x, w in calls:
        _, sent = compiled_bytes(function, x, w)
        found[label] = {"bytes_sent": max(sent, least_bytes(x, w))}
    return found


COLLECTIVES_TEXT = ", ".join(COLLECTIVES)
