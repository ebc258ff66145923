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

How the cases are built and measured, and the helpers the notebooks use
(meshes, :func:`draw_target`, :func:`compiled_two_layers`), are
:mod:`exercise_kit.sharding_checks`'s part, re-exported here; the known wrong
answers are in :mod:`exercise_kit.sharding_mistakes`.
"""

from __future__ import annotations

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from exercise_kit import sharding_mistakes as wrong
from exercise_kit.sharding_checks import (
    COLLECTIVES_TEXT,
    FREE_SIZES,
    FREE_SIZES_2X4,
    HIDDEN_BATCH,
    HIDDEN_IN,
    HIDDEN_OUT,
    MP_BATCH,
    MP_BATCH_2X4,
    MP_SIZES,
    MP_SIZES_2X4,
    PRODUCT_LARGE_BATCH,
    PRODUCT_ON_4,
    PRODUCT_SMALL_BATCH,
    all_layouts,
    auto_mesh,
    batch_layouts,
    compiled_bytes,
    compiled_two_layers,
    draw_target,
    explicit_mesh,
    free_inputs,
    free_runner,
    hidden_collectives,
    hidden_jitted,
    hidden_layout,
    hidden_mesh,
    hidden_mesh_2x4,
    hidden_on_2x4,
    hidden_values,
    layout,
    least_bytes,
    mlp,
    param_layouts,
    placed,
    product_operands,
    product_runner,
    products_runner,
    random_products,
    two_layers,
    values,
    with_mesh,
)
from jaxcourse.exercises import Case, Exercise, Mistake, register

#: The notebooks' and tests' helpers (from :mod:`exercise_kit.sharding_checks`)
#: are importable from here too, as they always were.
__all__ = [
    "FREE_SIZES", "FREE_SIZES_2X4", "HIDDEN_BATCH", "HIDDEN_IN", "HIDDEN_OUT",
    "MP_BATCH", "MP_BATCH_2X4", "MP_SIZES", "MP_SIZES_2X4", "PRODUCT_LARGE_BATCH",
    "PRODUCT_ON_4", "PRODUCT_SMALL_BATCH", "auto_mesh", "cheaper_product",
    "collective_free_specs", "compiled_bytes", "compiled_two_layers", "draw_target",
    "explicit_mesh", "layout", "least_bytes", "make_hidden_layer", "shard_mlp_2d",
    "spec_for_target", "two_layers",
]

CHAPTER = "04_sharding"
DEVICES = 8


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
                 lambda rng: (), extract=placed((8, 8))),
            Case("a (16, 32) array placed with your spec has the target layout",
                 lambda rng: (), extract=placed((16, 32))),
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
                 with_mesh(mlp(MP_SIZES, MP_BATCH), (4, 2), ("batch", "model")),
                 extract=values),
            Case("the weights and biases have the layouts of the 4x2 scheme",
                 with_mesh(mlp(MP_SIZES, MP_BATCH), (4, 2), ("batch", "model")),
                 extract=param_layouts),
            Case("inputs and targets are split by rows over 'batch' (4 ways) and "
                 "replicated over 'model'",
                 with_mesh(mlp(MP_SIZES, MP_BATCH), (4, 2), ("batch", "model")),
                 extract=batch_layouts),
            Case(f"on a 2x4 mesh ('batch', 'model'), MLP {MP_SIZES_2X4}, batch "
                 f"{MP_BATCH_2X4}: the same scheme, 2-way over 'batch' and 4-way "
                 "over 'model' (slices per device of every leaf)",
                 with_mesh(mlp(MP_SIZES_2X4, MP_BATCH_2X4), (2, 4),
                            ("batch", "model")),
                 extract=all_layouts, seed=1),
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
                    "split by columns, layer 2 by rows", wrong.SWAPPED),
            Mistake("layer 1's bias is replicated: it belongs to the columns of W, "
                    "so split it with them, P('model')", wrong.BIAS_REPLICATED),
            Mistake("no weight is split: that replicates the model instead of "
                    "sharding it (data parallelism only)", wrong.MODEL_REPLICATED),
            Mistake("the batch is split over the wrong mesh axis: 'model' instead "
                    "of 'batch'", wrong.BATCH_OVER_MODEL),
            Mistake("the batch is split over both mesh axes (8 ways); here it is "
                    "split 4 ways over 'batch' only", wrong.BATCH_OVER_BOTH),
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
                 hidden_mesh, extract=hidden_values),
            Case("its output is laid out as P('batch', 'model') "
                 "(slices per device)",
                 hidden_mesh, extract=hidden_layout),
            Case("the compiled program has no collectives (counts of "
                 f"{COLLECTIVES_TEXT})",
                 hidden_mesh, extract=hidden_collectives),
            Case("on a 2x4 mesh ('batch', 'model'): the same values, laid out as "
                 "P('batch', 'model') (2 ways by rows, 4 by columns)",
                 hidden_mesh_2x4, extract=hidden_on_2x4),
            Case("the layer it returns is compiled with jax.jit (advice)",
                 hidden_mesh, extract=hidden_jitted, advice=True),
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
                    wrong.layer_with()),
            Mistake("the constraint's spec looks transposed: rows over 'batch', "
                    "columns over 'model'",
                    wrong.layer_with(h_spec=P("model", "batch"))),
            Mistake("the constraint replicates the output (P()), which costs an "
                    "all-gather", wrong.layer_with(h_spec=P())),
            Mistake("you split x's columns, the contracted dimension of x @ w: the "
                    "partial products then need an all-reduce",
                    wrong.layer_with(x_spec=P("batch", "model"))),
            Mistake("you split w's rows, the contracted dimension of x @ w: that "
                    "makes the compiler move data between devices",
                    wrong.layer_with(w_spec=P("model", None),
                                     h_spec=P("batch", "model"))),
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
                 free_inputs((4, 2), ("data", "model")),
                 runner=free_runner(FREE_SIZES)),
            Case("on a 2x4 mesh ('rows', 'cols'), for x "
                 f"{FREE_SIZES_2X4[:2]}, w1 {FREE_SIZES_2X4[1:3]}, w2 "
                 f"{FREE_SIZES_2X4[2:]}: no collectives, 1/8 of the work per "
                 "device",
                 free_inputs((2, 4), ("rows", "cols")),
                 runner=free_runner(FREE_SIZES_2X4)),
            Case("on a 2x2 mesh of 4 devices ('rows', 'cols'), the same sizes: "
                 "no collectives, 1/4 of the work per device",
                 free_inputs((2, 2), ("rows", "cols")),
                 runner=free_runner(FREE_SIZES_2X4)),
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
                    "all-reduce adds the partial sums", wrong.megatron),
            Mistake("nothing is split: no collective, but every device does all "
                    "of the work (share 1)", wrong.nothing_split),
            Mistake("the batch is split over one mesh axis only: the devices "
                    "along the other axis repeat each other's work; split the "
                    "batch over both axes",
                    wrong.batch_first_axis),
            Mistake("w2 split by columns: no collective, but the first layer is "
                    "computed again on every device along that axis; only the "
                    "batch can be split all the way", wrong.last_columns),
            Mistake("x's columns and w1's rows are split: that cuts the sum of "
                    "x @ w1, and an all-reduce has to add the parts",
                    wrong.contracted_x),
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
                 product_operands(8, "X", PRODUCT_SMALL_BATCH),
                 runner=product_runner),
            Case("x (512, 64) and w (64, 64), the same layouts: the values, and "
                 "at most the bytes of gathering the smaller operand (7/8 of w: "
                 "14,336 bytes)",
                 product_operands(8, "X", PRODUCT_LARGE_BATCH),
                 runner=product_runner, seed=1),
            Case("on a 4-device Explicit mesh 'devices', x (16, 32) and w "
                 "(32, 128): the values, and at most 3/4 of the smaller operand "
                 "(1,536 bytes)",
                 product_operands(4, "devices", PRODUCT_ON_4),
                 runner=product_runner, seed=2),
            Case("8 random shapes on the 8-device mesh 'X', batches from 24 to "
                 "192 rows on both sides of w's columns: at most the bytes of "
                 "gathering the smaller operand; the first call that sends more "
                 "is named", random_products(), runner=products_runner, seed=3),
        ],
        hints=[
            "Run x @ w first and read the error: the product would be split by "
            "rows (from x) and by columns (from w) over the same mesh axis, and "
            "one axis cannot split two dimensions. The simplest way out makes one "
            "of the two operands whole on every device before the product.",
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
                    "bytes", wrong.gather_w),
            Mistake("you gather x every time: right when x is the smaller "
                    "operand, but here w is smaller and gathering it sends fewer "
                    "bytes", wrong.gather_x),
            Mistake("both operands are gathered (or the product is replicated): "
                    "one whole operand is enough", wrong.gather_both),
            Mistake("you gather the larger operand: compare the sizes the other "
                    "way round", wrong.larger_gathered),
            Mistake("you compared the batch with the contracted dimension "
                    "(x's two dimensions): the operands are m × k and k × n, so "
                    "the batch m is to be weighed against w's columns n "
                    "(x.size against w.size)", wrong.batch_against_contracted,
                    cases=(-1,)),
            Mistake("a fixed number of rows decides here: which operand is "
                    "smaller depends on both shapes, x.size against w.size, "
                    "whatever the batch", wrong.hundred_rows, cases=(-1,)),
            Mistake("moving w to a split by rows is an all-to-all, and the "
                    "product then still gathers w: gather the smaller operand "
                    "once instead", wrong.w_by_rows),
        ],
    ),
)
