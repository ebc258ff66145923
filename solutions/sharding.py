"""Reference code for chapter 4's exercises: layouts on a mesh of 8 devices.

Importing this module registers the exercises ``sharding.spec_for_target``,
``sharding.shard_batch``, ``sharding.shard_mlp_2d``,
``sharding.make_hidden_layer`` (Auto mode) and ``sharding.explicit_product``
(Explicit mode) with :mod:`jaxcourse.exercises`. Their cases
need 8 devices (``use_cpu_devices(8)`` before JAX starts); importing does not.

A layout is compared as plain data: for every device, in id order, the
``(start, stop)`` of the slice it holds in each dimension (:func:`layout`).
Two shardings with the same layout are the same answer, however the
``PartitionSpec`` is spelled (``P("a")`` and ``P("a", None)`` agree).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse.devices import mesh_devices
from jaxcourse.exercises import Case, Exercise, Mistake, register
from jaxcourse.exercises.explorers_sharding import COLLECTIVES, collective_counts

CHAPTER = "04_sharding"
DEVICES = 8


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


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def spec_for_target():
    """Return the target's spec: rows 2 ways over "b", columns 4 ways over "a"."""
    return P("b", "a")


def shard_batch(params, batch, mesh):
    """Split the batch by rows over "batch" and replicate the parameters."""
    params = jax.device_put(params, NamedSharding(mesh, P()))
    batch = jax.device_put(batch, NamedSharding(mesh, P("batch")))
    return params, batch


def shard_mlp_2d(params, batch, mesh):
    """Lay an MLP out for 4x2 data + model parallelism on ("batch", "model")."""
    specs = [
        (P(), P()),                      # first layer: replicated
        (P(None, "model"), P("model")),  # split by columns, bias with them
        (P("model", None), P()),         # split by rows
        (P(), P()),                      # last layer: replicated
    ]
    params = [
        (jax.device_put(w, NamedSharding(mesh, w_spec)),
         jax.device_put(b, NamedSharding(mesh, b_spec)))
        for (w, b), (w_spec, b_spec) in zip(params, specs, strict=True)
    ]
    batch = jax.device_put(batch, NamedSharding(mesh, P("batch")))
    return params, batch


def make_hidden_layer(mesh):
    """Return a jitted relu(x @ w) whose output is split over both mesh axes."""
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(
            h, NamedSharding(mesh, P("batch", "model")))

    return hidden_layer


def explicit_product(x, y, spec):
    """Return ``x @ y`` laid out as ``spec``, on the Explicit mesh in context.

    ``x``'s columns and ``y``'s rows (the contracted dimension) are split over
    the same mesh axis, so JAX cannot tell where the product should live.
    """
    return jnp.matmul(x, y, out_sharding=spec)


# --------------------------------------------------------------------------
# Checker specs
# --------------------------------------------------------------------------


def _mesh_2d(names: tuple[str, str] = ("a", "b")) -> jax.sharding.Mesh:
    return auto_mesh((4, 2), names)


def _placed(spec_shape: tuple[int, int]):
    """Extract: the layout of a spec_shape array placed with the returned spec."""
    def extract(spec):
        if not isinstance(spec, P):
            raise TypeError(f"expected a PartitionSpec, got {type(spec).__name__}")
        mesh = _mesh_2d()
        array = jax.device_put(np.zeros(spec_shape, np.float32),
                               NamedSharding(mesh, spec))
        return layout(array)

    return extract


def draw_target(shape: tuple[int, int] = (8, 8)) -> None:
    """Draw the layout ``spec_for_target`` must produce on the 4x2 mesh."""
    array = jax.device_put(np.zeros(shape, np.float32),
                           NamedSharding(_mesh_2d(), spec_for_target()))
    jax.debug.visualize_array_sharding(array)


def _mlp(sizes: list[int], n: int):
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


def _with_mesh(make, shape: tuple[int, ...], names: tuple[str, ...]):
    return lambda rng: (*make(rng), auto_mesh(shape, names))


def _values(out) -> tuple:
    return tuple(np.asarray(leaf) for leaf in jax.tree.leaves(out))


def _param_layouts(out) -> tuple:
    params, _ = out
    return tuple(layout(leaf) for leaf in jax.tree.leaves(params))


def _batch_layouts(out) -> tuple:
    _, batch = out
    return tuple(layout(leaf) for leaf in jax.tree.leaves(batch))


DP_SIZES, DP_BATCH = [16, 8, 8], 32
DP_SIZES_4, DP_BATCH_4 = [10, 6, 3], 12   # a second model, batch and mesh size
MP_SIZES, MP_BATCH = [12, 16, 16, 8, 4], 16
MP_SIZES_2X4, MP_BATCH_2X4 = [6, 8, 12, 4, 2], 10


def _shard_all(params, batch, mesh):
    everything = NamedSharding(mesh, P("batch"))
    return jax.device_put(params, everything), jax.device_put(batch, everything)


def _replicate_all(params, batch, mesh):
    everywhere = NamedSharding(mesh, P())
    return jax.device_put(params, everywhere), jax.device_put(batch, everywhere)


def _batch_by_columns(params, batch, mesh):
    return (jax.device_put(params, NamedSharding(mesh, P())),
            jax.device_put(batch, NamedSharding(mesh, P(None, "batch"))))


def _mlp_2d_with(specs, batch_spec):
    def place(params, batch, mesh):
        params = [
            (jax.device_put(w, NamedSharding(mesh, ws)),
             jax.device_put(b, NamedSharding(mesh, bs)))
            for (w, b), (ws, bs) in zip(params, specs, strict=True)
        ]
        return params, jax.device_put(batch, NamedSharding(mesh, batch_spec))

    return place


_REPLICATED = (P(), P())
_SWAPPED = _mlp_2d_with(
    [_REPLICATED, (P("model", None), P()), (P(None, "model"), P("model")),
     _REPLICATED], P("batch"))
_BIAS_REPLICATED = _mlp_2d_with(
    [_REPLICATED, (P(None, "model"), P()), (P("model", None), P()), _REPLICATED],
    P("batch"))
_MODEL_REPLICATED = _mlp_2d_with([_REPLICATED] * 4, P("batch"))
_BATCH_OVER_MODEL = _mlp_2d_with(
    [_REPLICATED, (P(None, "model"), P("model")), (P("model", None), P()),
     _REPLICATED], P("model"))
_BATCH_OVER_BOTH = _mlp_2d_with(
    [_REPLICATED, (P(None, "model"), P("model")), (P("model", None), P()),
     _REPLICATED], P(("batch", "model")))


HIDDEN_IN, HIDDEN_OUT, HIDDEN_BATCH = 12, 8, 16


def _hidden_inputs(shape: tuple[int, int] = (4, 2)):
    rng = np.random.default_rng(4)
    mesh = auto_mesh(shape, ("batch", "model"))
    x = jax.device_put(rng.normal(size=(HIDDEN_BATCH, HIDDEN_IN)).astype(np.float32),
                       NamedSharding(mesh, P("batch", None)))
    w = jax.device_put(rng.normal(size=(HIDDEN_IN, HIDDEN_OUT)).astype(np.float32),
                       NamedSharding(mesh, P()))
    return x, w


def _hidden_values(layer) -> np.ndarray:
    return np.asarray(layer(*_hidden_inputs()))


def _hidden_layout(layer) -> np.ndarray:
    return layout(layer(*_hidden_inputs()))


def _hidden_collectives(layer) -> np.ndarray:
    return collective_counts(layer, *_hidden_inputs())


def _layer_with(x_spec=None, w_spec=None, h_spec=None):
    def make(mesh):
        def hidden_layer(x, w):
            if x_spec is not None:
                x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, x_spec))
            if w_spec is not None:
                w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, w_spec))
            h = jax.nn.relu(x @ w)
            if h_spec is not None:
                h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, h_spec))
            return h

        return jax.jit(hidden_layer)

    return make


def _hidden_mesh(rng: np.random.Generator) -> tuple:
    return (_mesh_2d(("batch", "model")),)


def _hidden_mesh_2x4(rng: np.random.Generator) -> tuple:
    return (auto_mesh((2, 4), ("batch", "model")),)


def _hidden_on_2x4(layer) -> tuple:
    out = layer(*_hidden_inputs((2, 4)))
    return np.asarray(out), layout(out)


def _all_layouts(out) -> tuple:
    return _param_layouts(out), _batch_layouts(out)


def _product_inputs(mesh_shape: tuple[int, int], names: tuple[str, str],
                    sizes: tuple[int, int, int], spec: P):
    """Make x (m, k) and y (k, n), k split over ``names[0]`` in both, and the spec."""
    m, k, n = sizes
    contracted = names[0]

    def make(rng: np.random.Generator) -> tuple:
        mesh = explicit_mesh(mesh_shape, names)
        x = rng.normal(size=(m, k)).astype(np.float32)
        y = rng.normal(size=(k, n)).astype(np.float32)
        return (jax.device_put(x, NamedSharding(mesh, P(None, contracted))),
                jax.device_put(y, NamedSharding(mesh, P(contracted, None))), spec)

    return make


def _in_mesh(function, x, y, spec):
    """Call as the notebook does: with x's mesh set by ``jax.set_mesh``."""
    with jax.set_mesh(x.sharding.mesh):
        return function(x, y, spec)


def _jitted_in_mesh(function, x, y, spec):
    with jax.set_mesh(x.sharding.mesh):
        return jax.jit(function, static_argnums=2)(x, y, spec)


def _pieces_in_type(array: jax.Array) -> np.ndarray:
    """How many pieces each dimension is cut into, according to the *type*."""
    typed = jax.typeof(array).sharding
    spec = tuple(typed.spec) + (None,) * (array.ndim - len(typed.spec))
    sizes = dict(zip(typed.mesh.axis_names, typed.mesh.axis_sizes, strict=True))
    counts = []
    for entry in spec:
        names = () if entry is None else (entry,) if isinstance(entry, str) else entry
        counts.append(int(np.prod([sizes[name] for name in names])))
    return np.array(counts, dtype=np.int32)


def _typed_layout(out) -> tuple:
    return layout(out), _pieces_in_type(out)


def _product_spec_fixed(x, y, spec):
    return jnp.matmul(x, y, out_sharding=P("X", None))


def _product_replicated(x, y, spec):
    return jnp.matmul(x, y, out_sharding=P())


def _product_spec_swapped(x, y, spec):
    return jnp.matmul(x, y, out_sharding=P(*reversed(tuple(spec))))


PRODUCT_4X2 = ((4, 2), ("X", "Y"))
PRODUCT_2X4 = ((2, 4), ("cols", "rows"))

COLLECTIVES_TEXT = ", ".join(COLLECTIVES)

register(
    Exercise(
        id="sharding.spec_for_target",
        title="The PartitionSpec of a drawn layout",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=spec_for_target,
        cases=[
            Case("an (8, 8) array placed with your spec on the 4x2 mesh "
                 "('a', 'b') has the target layout (slices per device)",
                 lambda rng: (), extract=_placed((8, 8))),
            Case("a (16, 32) array placed with your spec has the target layout",
                 lambda rng: (), extract=_placed((16, 32))),
        ],
        hints=[
            "Read the drawing: how many pieces do the rows fall into, and how "
            "many the columns? Mesh axis 'a' has 4 devices, 'b' has 2.",
            "The first entry of a PartitionSpec is about the rows (dimension 0), "
            "the second about the columns; each entry names the mesh axis that "
            "dimension is split over.",
            "Match the counts: the mesh axis with as many devices as there are "
            "row pieces goes in the first entry, the one with as many devices as "
            "column pieces in the second.",
        ],
        mistakes=[
            Mistake("the spec looks transposed: the first entry is about the rows, "
                    "the second about the columns", lambda: P("a", "b")),
            Mistake("every device holds the whole array: P() replicates instead of "
                    "sharding", lambda: P()),
            Mistake("only the columns are split: the rows must be split too",
                    lambda: P(None, "a")),
            Mistake("only the rows are split: the columns must be split too",
                    lambda: P("b", None)),
            Mistake("the rows are split over both mesh axes (8 ways); the target "
                    "splits rows 2 ways and columns 4 ways",
                    lambda: P(("a", "b"), None)),
        ],
    ),
    Exercise(
        id="sharding.shard_batch",
        title="Data parallelism: shard the batch, replicate the parameters",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=shard_batch,
        cases=[
            Case("shard_batch(params, batch, mesh) returns the same values "
                 f"(MLP {DP_SIZES}, batch {DP_BATCH}, 8-device mesh 'batch')",
                 _with_mesh(_mlp(DP_SIZES, DP_BATCH), (8,), ("batch",)),
                 extract=_values),
            Case("every weight and bias is replicated: each device holds all of it",
                 _with_mesh(_mlp(DP_SIZES, DP_BATCH), (8,), ("batch",)),
                 extract=_param_layouts),
            Case("inputs and targets are split by rows (examples), 4 per device",
                 _with_mesh(_mlp(DP_SIZES, DP_BATCH), (8,), ("batch",)),
                 extract=_batch_layouts),
            Case(f"on a mesh of 4 devices ('batch'), MLP {DP_SIZES_4}, batch "
                 f"{DP_BATCH_4}: parameters replicated, batch split by rows "
                 "(slices per device)",
                 _with_mesh(_mlp(DP_SIZES_4, DP_BATCH_4), (4,), ("batch",)),
                 extract=_all_layouts, seed=1),
        ],
        hints=[
            "jax.device_put accepts a whole pytree and one sharding for all of "
            "its leaves.",
            "An empty PartitionSpec replicates; a spec whose first entry names a "
            "mesh axis splits dimension 0 (here: the examples) over that axis.",
            "Which of the two must every device hold in full, and which is split "
            "by examples? Place each with its own NamedSharding on the mesh you "
            "are given, and return them in the order they came in.",
        ],
        mistakes=[
            Mistake("the parameters are split too: in data parallelism every "
                    "device holds all of them (P())", _shard_all),
            Mistake("the batch is replicated instead of sharded: every device "
                    "would process all examples", _replicate_all),
            Mistake("the batch is split by columns (features), not by rows "
                    "(examples): the spec looks transposed", _batch_by_columns),
        ],
    ),
    Exercise(
        id="sharding.shard_mlp_2d",
        title="4x2 data and model parallelism",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=shard_mlp_2d,
        cases=[
            Case("shard_mlp_2d(params, batch, mesh) returns the same values "
                 f"(MLP {MP_SIZES}, batch {MP_BATCH}, 4x2 mesh "
                 "('batch', 'model'))",
                 _with_mesh(_mlp(MP_SIZES, MP_BATCH), (4, 2), ("batch", "model")),
                 extract=_values),
            Case("the weights and biases have the layouts of the 4x2 scheme",
                 _with_mesh(_mlp(MP_SIZES, MP_BATCH), (4, 2), ("batch", "model")),
                 extract=_param_layouts),
            Case("inputs and targets are split by rows over 'batch' (4 ways) and "
                 "replicated over 'model'",
                 _with_mesh(_mlp(MP_SIZES, MP_BATCH), (4, 2), ("batch", "model")),
                 extract=_batch_layouts),
            Case(f"on a 2x4 mesh ('batch', 'model'), MLP {MP_SIZES_2X4}, batch "
                 f"{MP_BATCH_2X4}: the same scheme, 2-way over 'batch' and 4-way "
                 "over 'model' (slices per device of every leaf)",
                 _with_mesh(_mlp(MP_SIZES_2X4, MP_BATCH_2X4), (2, 4),
                            ("batch", "model")),
                 extract=_all_layouts, seed=1),
        ],
        hints=[
            "Place each leaf with its own NamedSharding: a list comprehension "
            "over the four (W, b) pairs and a list of four (W spec, b spec) "
            "pairs does it.",
            "Layer 1 (the second) is split by columns: which entry of W's spec "
            "names 'model'? Its bias has one entry per column of W, so it is "
            "split with them. Layer 2 is split by rows; its bias is added after "
            "the partial products are summed, so every device needs all of it.",
            "The batch is split over 'batch' only: P('batch'). Layers 0 and 3 "
            "stay replicated: P().",
        ],
        mistakes=[
            Mistake("layers 1 and 2 look swapped (transposed specs): layer 1 is "
                    "split by columns, layer 2 by rows", _SWAPPED),
            Mistake("layer 1's bias is replicated: it belongs to the columns of W, "
                    "so split it with them, P('model')", _BIAS_REPLICATED),
            Mistake("no weight is split: that replicates the model instead of "
                    "sharding it (data parallelism only)", _MODEL_REPLICATED),
            Mistake("the batch is split over the wrong mesh axis: 'model' instead "
                    "of 'batch'", _BATCH_OVER_MODEL),
            Mistake("the batch is split over both mesh axes (8 ways); here it is "
                    "split 4 ways over 'batch' only", _BATCH_OVER_BOTH),
        ],
    ),
    Exercise(
        id="sharding.make_hidden_layer",
        title="A sharding constraint inside jit",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=make_hidden_layer,
        cases=[
            Case(f"hidden_layer(x, w) = relu(x @ w) for x ({HIDDEN_BATCH}, "
                 f"{HIDDEN_IN}) split over 'batch' and a replicated w "
                 f"({HIDDEN_IN}, {HIDDEN_OUT})",
                 _hidden_mesh, extract=_hidden_values),
            Case("its output is laid out as P('batch', 'model') "
                 "(slices per device)",
                 _hidden_mesh, extract=_hidden_layout),
            Case("the compiled program has no collectives (counts of "
                 f"{COLLECTIVES_TEXT})",
                 _hidden_mesh, extract=_hidden_collectives),
            Case("on a 2x4 mesh ('batch', 'model'): the same values, laid out as "
                 "P('batch', 'model') (2 ways by rows, 4 by columns)",
                 _hidden_mesh_2x4, extract=_hidden_on_2x4),
        ],
        hints=[
            "Compute the layer as usual inside a jitted function, then state "
            "where its result must live with jax.lax.with_sharding_constraint.",
            "The constraint takes a NamedSharding on the mesh you are given: the "
            "rows of the result (examples) go over one mesh axis, its columns "
            "(hidden units) over the other. Which axis is which?",
            "Constrain only the result. Every device already holds its rows of x "
            "and all of w, so it can compute its block of h without any "
            "communication.",
        ],
        mistakes=[
            Mistake("the output keeps the layout the compiler chose: did you forget "
                    "the with_sharding_constraint (or not return its result)?",
                    _layer_with()),
            Mistake("the constraint's spec looks transposed: rows over 'batch', "
                    "columns over 'model'", _layer_with(h_spec=P("model", "batch"))),
            Mistake("the constraint replicates the output (P()), which costs an "
                    "all-gather", _layer_with(h_spec=P())),
            Mistake("you split x's columns, the contracted dimension of x @ w: the "
                    "partial products then need an all-reduce",
                    _layer_with(x_spec=P("batch", "model"))),
            Mistake("you split w's rows, the contracted dimension of x @ w: that "
                    "makes the compiler move data between devices",
                    _layer_with(w_spec=P("model", None), h_spec=P("batch", "model"))),
        ],
    ),
    Exercise(
        id="sharding.explicit_product",
        title="Explicit mode: choose where a product lives",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=explicit_product,
        cases=[
            Case("explicit_product(x, y, P('X', None)) for x (8, 16) and y (16, 8) "
                 "whose contracted dimension is split over 'X' (4x2 Explicit "
                 "mesh ('X', 'Y')): the values of x @ y",
                 _product_inputs(*PRODUCT_4X2, (8, 16, 8), P("X", None)),
                 runner=_in_mesh),
            Case("the same product: split by rows over 'X', in the layout and "
                 "in its type (jax.typeof(out).sharding)",
                 _product_inputs(*PRODUCT_4X2, (8, 16, 8), P("X", None)),
                 runner=_in_mesh, extract=_typed_layout),
            Case("explicit_product(x, y, P(None, 'X')) for x (8, 8) and y (8, 12): "
                 "split by columns, in the layout and the type",
                 _product_inputs(*PRODUCT_4X2, (8, 8, 12), P(None, "X")),
                 runner=_in_mesh, extract=_typed_layout, seed=1),
            Case("on a 2x4 Explicit mesh ('cols', 'rows'), x (4, 8) @ y (8, 8) "
                 "with the contracted dimension over 'cols', asked for "
                 "P('rows', 'cols'): values, layout and type",
                 _product_inputs(*PRODUCT_2X4, (4, 8, 8), P("rows", "cols")),
                 runner=_in_mesh, extract=lambda out: (out, *_typed_layout(out)),
                 seed=2),
            Case("jax.jit(explicit_product) with the spec static, "
                 "P('X', 'Y') on the 4x2 mesh: values, layout and type",
                 _product_inputs(*PRODUCT_4X2, (8, 16, 8), P("X", "Y")),
                 runner=_jitted_in_mesh,
                 extract=lambda out: (out, *_typed_layout(out)), seed=3),
        ],
        hints=[
            "Under an Explicit mesh, x @ y asks JAX to decide where the product "
            "lives, and when both operands split the summed dimension over the "
            "same mesh axis it refuses: any choice would be a different program. "
            "Which argument lets you decide instead?",
            "jnp.matmul, jnp.dot and jnp.einsum take an out_sharding keyword; "
            "with a mesh set by jax.set_mesh, a PartitionSpec is enough there.",
            "Use the spec you are given, not one written in: the check asks for "
            "rows, columns and both, on two meshes. jax.reshard can also move a "
            "result to a layout afterwards.",
        ],
        mistakes=[
            Mistake("the product comes out replicated (every device holds all of "
                    "it): ask for the requested layout instead of P()",
                    _product_replicated),
            Mistake("the layout does not change with the requested spec: did you "
                    "write P('X', None) in instead of using spec?",
                    _product_spec_fixed),
            Mistake("the layout looks transposed: the spec's first entry is about "
                    "the product's rows, the second about its columns",
                    _product_spec_swapped),
        ],
    ),
)
