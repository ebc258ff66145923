"""Reference code for chapter 4's exercises: layouts on a mesh of 8 devices.

Importing this module registers the exercises ``sharding.spec_for_target``,
``sharding.shard_mlp_2d``, ``sharding.make_hidden_layer``,
``sharding.collective_free_specs`` (Auto mode) and
``sharding.cheaper_product`` (Explicit mode) with :mod:`jaxcourse.exercises`.
Their cases need 8 devices (``use_cpu_devices(8)`` before JAX starts);
importing does not. The last two are judged on the compiled program: which
collectives it holds, the share of the work one device does, the bytes one
device sends.

A layout is compared as plain data: for every device, in id order, the
``(start, stop)`` of the slice it holds in each dimension (:func:`layout`).
Two shardings with the same layout are the same answer, however the
``PartitionSpec`` is spelled (``P("a")`` and ``P("a", None)`` agree).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse.devices import mesh_devices
from jaxcourse.exercises import Case, Exercise, Mistake, register
from jaxcourse.exercises.explorers_sharding import (
    COLLECTIVES,
    collective_counts,
    compiled_collective_counts,
)
from jaxcourse.scaling import collective_summary, compiled_collectives

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


def two_layers(x, w1, w2):
    """Compute two layers, no biases: the program of ``collective_free_specs``."""
    return jax.nn.relu(x @ w1) @ w2


def collective_free_specs(mesh):
    """Return specs for ``(x, w1, w2)`` that split the work 8 ways, silently.

    Splitting any dimension a product sums over (x's columns, w1's rows, and
    w1's columns, which become the rows summed by ``@ w2``) leaves partial
    sums to add up across devices. What is left is the batch: split it over
    every mesh axis and give every device all the weights.
    """
    return P(tuple(mesh.axis_names)), P(), P()


def cheaper_product(x, w):
    """Return ``x @ w`` for x split by rows and w by columns over one axis.

    Both split dimensions survive into the product, over the same mesh axis,
    which a sharding cannot say, so one operand must be gathered first.
    Gathering sends (n - 1)/n of that operand's bytes from each device: pick
    the smaller one.
    """
    if x.size <= w.size:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())


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
        return {"layout": layout(array)}

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


def _param_layouts(out) -> dict:
    params, _ = out
    layouts = tuple(layout(leaf) for leaf in jax.tree.leaves(params))
    return {"parameters": {"layout": layouts}}


def _batch_layouts(out) -> dict:
    _, batch = out
    return {"batch": {"layout": tuple(layout(leaf) for leaf in jax.tree.leaves(batch))}}


MP_SIZES, MP_BATCH = [12, 16, 16, 8, 4], 16
MP_SIZES_2X4, MP_BATCH_2X4 = [6, 8, 12, 4, 2], 10


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


def _hidden_layout(layer) -> dict:
    return {"layout": layout(layer(*_hidden_inputs()))}


def _hidden_collectives(layer) -> dict:
    return {"collectives": collective_counts(layer, *_hidden_inputs())}


def _hidden_jitted(layer) -> dict:
    # jax.jit's functions can be lowered; a plain one cannot.
    return {"jitted": np.array(int(hasattr(layer, "lower")), np.int32)}


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
    return np.asarray(out), {"layout": layout(out)}


def _all_layouts(out) -> dict:
    return {**_param_layouts(out), **_batch_layouts(out)}


# ---- collective_free_specs: judged on the compiled program ------------------

FREE_SIZES = (32, 16, 64, 8)        # batch, inputs, hidden, outputs
FREE_SIZES_2X4 = (16, 24, 32, 12)   # a second program, on a 2x4 mesh


def _free_inputs(shape: tuple[int, int], names: tuple[str, str]):
    def make(rng: np.random.Generator) -> tuple:
        return (auto_mesh(shape, names),)

    return make


def _free_arrays(sizes: tuple[int, int, int, int]) -> tuple[np.ndarray, ...]:
    n, d, h, k = sizes
    rng = np.random.default_rng(7)
    return tuple(rng.normal(size=s).astype(np.float32)
                 for s in ((n, d), (d, h), (h, k)))


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
    placed = [jax.device_put(a, NamedSharding(mesh, s))
              for a, s in zip(arrays, specs, strict=True)]
    compiled = jax.jit(two_layers).lower(*placed).compile()
    alone = jax.jit(two_layers).lower(*arrays).compile()
    counts = compiled_collective_counts(compiled)
    share = compiled.cost_analysis()["flops"] / alone.cost_analysis()["flops"]
    return counts, share


def _free_runner(sizes):
    def run(function, mesh):
        counts, share = compiled_two_layers(function(mesh), mesh, sizes)
        # Rounded: XLA counts a few elementwise operations per layout.
        return {"collectives": counts, "work_share": np.round(share, 3)}

    return run


def _nothing_split(mesh):
    return P(), P(), P()


def _first_axis(mesh) -> str:
    return mesh.axis_names[0]


def _megatron(mesh):
    batch, model = mesh.axis_names
    return P(batch), P(None, model), P(model)


def _batch_first_axis(mesh):
    return P(_first_axis(mesh)), P(), P()


def _last_columns(mesh):
    batch, model = mesh.axis_names
    return P(batch), P(), P(None, model)


def _contracted_x(mesh):
    batch, model = mesh.axis_names
    return P(batch, model), P(model), P()


# ---- cheaper_product: judged on the bytes it sends ---------------------------

# Small whole numbers: every product and sum is exact in float32, so the
# values agree to the bit whichever order the devices add them in.
def _product_operands(devices: int, name: str, sizes: tuple[int, int, int]):
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


def _product_runner(function, x, w):
    out, sent = compiled_bytes(function, x, w)
    if not isinstance(out, jax.Array):
        raise TypeError(f"returned a {type(out).__name__}, expected a jax.Array")
    # Sending less than the least is as good as the least (the check asks for
    # "no more than"): a cleverer program is not wrong.
    return {"product": np.asarray(out), "bytes_sent": max(sent, least_bytes(x, w))}


def _gather_w(x, w):
    return x @ jax.reshard(w, P())


def _gather_x(x, w):
    return jax.reshard(x, P()) @ w


def _gather_both(x, w):
    return jax.reshard(x, P()) @ jax.reshard(w, P())


def _w_by_rows(x, w):
    axis = jax.typeof(w).sharding.spec[1]  # the axis w's columns are split over
    return x @ jax.reshard(w, P(axis, None))


def _larger_gathered(x, w):
    if x.size > w.size:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())


PRODUCT_SMALL_BATCH = (8, 256, 256)    # x is the smaller operand
PRODUCT_LARGE_BATCH = (512, 64, 64)    # w is
PRODUCT_ON_4 = (16, 32, 128)           # x is, on a 4-device mesh


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
            Case("the layer it returns is compiled with jax.jit (advice)",
                 _hidden_mesh, extract=_hidden_jitted, advice=True),
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
        id="sharding.collective_free_specs",
        title="Layouts that need no communication",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=collective_free_specs,
        cases=[
            Case("two_layers(x, w1, w2) = relu(x @ w1) @ w2 on the 4x2 mesh "
                 f"('data', 'model'), x {FREE_SIZES[:2]}, w1 {FREE_SIZES[1:3]} and "
                 f"w2 {FREE_SIZES[2:]} placed with your specs: no collective in "
                 "the compiled program, and one device does 1/8 of the work "
                 "(cost_analysis, against the program on one device)",
                 _free_inputs((4, 2), ("data", "model")),
                 runner=_free_runner(FREE_SIZES)),
            Case("on a 2x4 mesh ('rows', 'cols'), for x "
                 f"{FREE_SIZES_2X4[:2]}, w1 {FREE_SIZES_2X4[1:3]}, w2 "
                 f"{FREE_SIZES_2X4[2:]}: no collectives, 1/8 of the work per "
                 "device",
                 _free_inputs((2, 4), ("rows", "cols")),
                 runner=_free_runner(FREE_SIZES_2X4)),
            Case("on a 2x2 mesh of 4 devices ('rows', 'cols'), the same sizes: "
                 "no collectives, 1/4 of the work per device",
                 _free_inputs((2, 2), ("rows", "cols")),
                 runner=_free_runner(FREE_SIZES_2X4)),
        ],
        hints=[
            "A device can compute its part of a product alone only if it holds "
            "every term of the sums it makes: which dimensions of x, w1 and w2 "
            "are summed over, in x @ w1 and then in (...) @ w2?",
            "Splitting w1 by columns looks free for the first product, but "
            "those columns are the rows that the second product sums over. "
            "What is left that can be split without cutting a sum?",
            "To give each of the n devices 1/n of the work, the dimension you "
            "split must be split over both mesh axes at once: a PartitionSpec "
            "entry can name a tuple of axes. Use the names of the mesh you are "
            "given (mesh.axis_names).",
        ],
        mistakes=[
            Mistake("w1 split by columns and w2 by rows (tensor parallelism): the "
                    "second product then sums over a split dimension, and an "
                    "all-reduce adds the partial sums", _megatron),
            Mistake("nothing is split: no collective, but every device does all "
                    "of the work (share 1)", _nothing_split),
            Mistake("the batch is split over one mesh axis only: the devices "
                    "along the other axis repeat each other's work; split the "
                    "batch over both axes",
                    _batch_first_axis),
            Mistake("w2 split by columns: no collective, but the first layer is "
                    "computed again on every device along that axis; only the "
                    "batch can be split all the way", _last_columns),
            Mistake("x's columns and w1's rows are split: that cuts the sum of "
                    "x @ w1, and an all-reduce has to add the parts",
                    _contracted_x),
        ],
    ),
    Exercise(
        id="sharding.cheaper_product",
        title="Explicit mode: a product JAX refuses, made cheaply",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=cheaper_product,
        cases=[
            Case("cheaper_product(x, w) for x (8, 256) split by rows and w "
                 "(256, 256) by columns over 'X' (an 8-device Explicit mesh): the "
                 "values of x @ w, in any layout, and at most the bytes of "
                 "gathering the smaller operand (7/8 of x: 7,168 per device)",
                 _product_operands(8, "X", PRODUCT_SMALL_BATCH),
                 runner=_product_runner),
            Case("x (512, 64) and w (64, 64), the same layouts: the values, and "
                 "at most the bytes of gathering the smaller operand (7/8 of w: "
                 "14,336 bytes)",
                 _product_operands(8, "X", PRODUCT_LARGE_BATCH),
                 runner=_product_runner, seed=1),
            Case("on a 4-device Explicit mesh 'devices', x (16, 32) and w "
                 "(32, 128): the values, and at most 3/4 of the smaller operand "
                 "(1,536 bytes)",
                 _product_operands(4, "devices", PRODUCT_ON_4),
                 runner=_product_runner, seed=2),
        ],
        hints=[
            "Run x @ w first and read the error: the product would be split by "
            "rows (from x) and by columns (from w) over the same mesh axis, and "
            "one axis cannot split two dimensions. One of the two operands must "
            "be whole on every device before the product.",
            "jax.reshard(a, P()) makes a whole on every device (an all-gather); "
            "each device then receives the (n - 1)/n of a it did not hold. "
            "Gathering x and gathering w both give the right values: which "
            "sends fewer bytes?",
            "Compare the operands' sizes (x.size, w.size: known while tracing, "
            "so a Python if is fine under jit) and gather the smaller one. The "
            "check tries a small batch and a large one.",
        ],
        mistakes=[
            Mistake("you gather w every time: right when w is the smaller "
                    "operand, but here x is smaller and gathering it sends fewer "
                    "bytes", _gather_w),
            Mistake("you gather x every time: right when x is the smaller "
                    "operand, but here w is smaller and gathering it sends fewer "
                    "bytes", _gather_x),
            Mistake("both operands are gathered (or the product is replicated): "
                    "one whole operand is enough", _gather_both),
            Mistake("you gather the larger operand: compare the sizes the other "
                    "way round", _larger_gathered),
            Mistake("moving w to a split by rows is an all-to-all, and the "
                    "product then still gathers w: gather the smaller operand "
                    "once instead", _w_by_rows),
        ],
    ),
)
