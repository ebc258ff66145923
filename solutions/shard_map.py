"""Reference code for chapter 5's exercises: per-device programs with shard_map.

Importing this module registers six exercises with :mod:`jaxcourse.exercises`:
``shard_map.global_mean`` (``psum``), ``shard_map.allgather_matmul``
(``all_gather``), ``shard_map.reduce_scatter_matmul`` (``psum_scatter``),
``shard_map.ring_shift`` (``ppermute``), ``shard_map.global_positions``
(``axis_index``) and ``shard_map.data_parallel_grads`` (the gradient of a
replicated parameter). Their cases need 8 devices (``use_cpu_devices(8)``
before JAX starts); importing does not.

Every function takes its arrays and then ``mesh``, a one-axis ``Auto`` mesh
built by :func:`jaxcourse.collectives.line_mesh` (axis ``"i"``, or
``"batch"`` for the gradients). The checks run each answer on meshes of 8 and
4 devices, so a device count written into the code fails, and compare the
values, where the result lives (its layout) and, for the exercises about
communication, which collectives XLA compiled into the program. How the cases
are built is :mod:`exercise_kit.shard_map_checks`'s part; the known wrong answers
are in :mod:`exercise_kit.shard_map_mistakes`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from exercise_kit import shard_map_mistakes as wrong
from exercise_kit.shard_map_checks import (
    gradient_tolerance,
    leaf_layouts,
    leaf_values,
    linear_loss,
    matmul_inputs,
    mean_tolerance,
    only_collectives,
    place,  # noqa: F401  the notebooks import it from here, with linear_loss
    product_tolerance,
    regression_inputs,
    rows_inputs,
    shard_map_used,
    standard_cases,
    vector_inputs,
)
from jaxcourse.collectives import ring_pairs
from jaxcourse.exercises import Case, Exercise, Mistake, register
from jaxcourse.exercises.widgets.explorers_sharding import COLLECTIVES

CHAPTER = "05_shard_map"
DEVICES = 8


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def global_mean(x, mesh):
    """Return the mean of all of ``x`` (split over "i"), replicated, with psum."""
    def per_device(block):
        return jax.lax.psum(block.sum(), "i") / x.size

    return jax.shard_map(per_device, mesh=mesh, in_specs=P("i"), out_specs=P())(x)


def allgather_matmul(lhs, rhs, mesh):
    """Return lhs @ rhs, rows split over "i", gathering rhs's row blocks."""
    def per_device(lhs_block, rhs_block):
        rhs_full = jax.lax.all_gather(rhs_block, "i", tiled=True)
        return lhs_block @ rhs_full

    return jax.shard_map(per_device, mesh=mesh,
                         in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def reduce_scatter_matmul(lhs, rhs, mesh):
    """Return lhs @ rhs, rows split over "i": psum_scatter the partial products."""
    def per_device(lhs_block, rhs_block):
        partial = lhs_block @ rhs_block
        return jax.lax.psum_scatter(partial, "i", scatter_dimension=0, tiled=True)

    return jax.shard_map(per_device, mesh=mesh,
                         in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def ring_shift(x, mesh):
    """Send every device's row block to the next device on the ring."""
    n = mesh.shape["i"]

    def per_device(block):
        return jax.lax.ppermute(block, "i", perm=ring_pairs(n))

    return jax.shard_map(per_device, mesh=mesh, in_specs=P("i", None),
                         out_specs=P("i", None))(x)


def global_positions(x, mesh):
    """Return the global index of every entry of ``x``, computed where it lives."""
    def per_device(block):
        start = jax.lax.axis_index("i") * block.shape[0]
        return start + jnp.arange(block.shape[0], dtype=jnp.int32)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P("i"),
                         out_specs=P("i"))(x)


def data_parallel_grads(params, inputs, targets, mesh):
    """Gradient of the global mean loss; batch split over "batch", params replicated."""
    def per_device(params, inputs, targets):
        def global_loss(p):
            return jax.lax.pmean(linear_loss(p, inputs, targets), "batch")

        return jax.grad(global_loss)(params)

    return jax.shard_map(per_device, mesh=mesh,
                         in_specs=(P(), P("batch"), P("batch")),
                         out_specs=P())(params, inputs, targets)


# ---- the exercises -------------------------------------------------------

MATMUL_8 = dict(n=8, m=16, k=32, f=8)
MATMUL_4 = dict(n=4, m=12, k=20, f=6)

register(
    Exercise(
        id="shard_map.global_mean",
        title="The mean of a split vector, with psum",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=global_mean,
        cases=standard_cases(("x of 32 entries", "x of 24 entries"),
                             vector_inputs(8, 32), vector_inputs(4, 24),
                             "P() (a replicated scalar)",
                             only_collectives("an all-reduce"),
                             (mean_tolerance(32), mean_tolerance(24))),
        hints=[
            "Inside shard_map each device sees only its block of x. What single "
            "number could each device contribute so that adding them up over 'i' "
            "gives something useful?",
            "jax.lax.psum(value, 'i') adds one value per device and gives every "
            "device the total; the mean divides a total by a count, and the count "
            "is the length of the whole x, not of a block.",
            "The result is the same on every device, so out_specs can promise "
            "replication with P(); the varying-manual-axes check accepts that only "
            "after a psum (or pmean).",
        ],
        mistakes=[
            Mistake("this is the mean of device 0's block only: the devices never "
                    "combined their results (add them with a psum over 'i')",
                    wrong.mean_of_device_0),
            Mistake("the sum of the per-device means is (number of devices) times "
                    "the mean: divide by the number of devices, or use pmean",
                    wrong.sum_of_means),
            Mistake("you averaged the per-device sums: divide the total by the "
                    "number of entries of x, not by the number of devices",
                    wrong.mean_of_sums),
            Mistake("one mean per device is returned: combine them into one "
                    "number with a collective, and return it with out_specs P()",
                    wrong.means_per_device),
            Mistake("you gathered all of x onto every device (an all-gather, "
                    "n - 1 blocks sent per device); a psum of one number per "
                    "device is enough", wrong.gathered_mean),
        ],
    ),
    Exercise(
        id="shard_map.allgather_matmul",
        title="A collective matmul: all-gather one operand",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=allgather_matmul,
        cases=standard_cases(("lhs (16, 32) and rhs (32, 8), both split by rows",
                              "lhs (12, 20) and rhs (20, 6)"),
                             matmul_inputs(**MATMUL_8, lhs_spec=P("i", None)),
                             matmul_inputs(**MATMUL_4, lhs_spec=P("i", None)),
                             "P('i', None) (rows split)",
                             only_collectives("an all-gather"),
                             (product_tolerance(MATMUL_8["k"]),
                              product_tolerance(MATMUL_4["k"]))),
        hints=[
            "Write down the shapes each device sees: its rows of lhs with every "
            "column, and a block of rhs's rows. Which operand is missing pieces "
            "for the local product?",
            "jax.lax.all_gather(block, 'i', tiled=True) concatenates every "
            "device's block along the first axis, so every device ends up with "
            "the whole operand.",
            "Each device's rows of the product depend only on its rows of lhs, so "
            "the output stays split by rows: in_specs and out_specs are the same "
            "row spec.",
        ],
        mistakes=[
            Mistake("each device multiplied only the block of rhs it holds by the "
                    "matching columns of lhs: the other terms of the sum are "
                    "missing (gather all of rhs first)", wrong.diagonal_block_only),
            Mistake("the output is replicated: every device computed its own rows, "
                    "so keep them split with out_specs P('i', None) (gathering them "
                    "costs a second all-gather)", wrong.gathered_output),
            Mistake("you assembled rhs with a psum (an all-reduce) of zero-padded "
                    "blocks, which moves far more data: jax.lax.all_gather does it "
                    "directly", wrong.gather_by_psum),
            Mistake("out_specs concatenates the blocks along the columns: each "
                    "device holds rows of the product, P('i', None)",
                    wrong.allgather_columns_out),
        ],
    ),
    Exercise(
        id="shard_map.reduce_scatter_matmul",
        title="A collective matmul: reduce-scatter the partial products",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=reduce_scatter_matmul,
        cases=standard_cases(("lhs (16, 32) split by columns, rhs (32, 8) split "
                              "by rows", "lhs (12, 20) and rhs (20, 6)"),
                             matmul_inputs(**MATMUL_8, lhs_spec=P(None, "i")),
                             matmul_inputs(**MATMUL_4, lhs_spec=P(None, "i")),
                             "P('i', None) (rows split)",
                             only_collectives("a reduce-scatter"),
                             (product_tolerance(MATMUL_8["k"]),
                              product_tolerance(MATMUL_4["k"]))),
        hints=[
            "Both operands are split along the contracted dimension. What does the "
            "product of a device's two blocks give: a piece of the result, or a "
            "term of a sum?",
            "The full product is the sum over devices of the local products. "
            "Which collective sums over 'i' but leaves each device only one piece "
            "of the sum?",
            "jax.lax.psum_scatter takes scatter_dimension (which axis of the sum is "
            "cut into pieces) and tiled=True (cut it into blocks, rather than "
            "removing an axis of size n).",
        ],
        mistakes=[
            Mistake("each device kept its rows of its own partial product: the "
                    "partial products of all devices must be summed",
                    wrong.own_rows_unsummed),
            Mistake("psum then slicing sends the whole sum to every device (an "
                    "all-reduce) before throwing most of it away; psum_scatter "
                    "sums and splits in one step", wrong.psum_then_slice),
            Mistake("psum leaves the whole sum on every device (an all-reduce), "
                    "and the output is replicated: psum_scatter leaves each device "
                    "only its rows", wrong.psum_replicated),
            Mistake("the sum is split by columns (scatter_dimension=1): split its "
                    "rows, so the output is P('i', None)", wrong.scatter_columns),
        ],
    ),
    Exercise(
        id="shard_map.ring_shift",
        title="A ring shift with ppermute",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=ring_shift,
        cases=standard_cases(("x (16, 3) split by rows", "x (12, 5)"),
                             rows_inputs(8, 16, 3), rows_inputs(4, 12, 5),
                             "P('i', None) (rows split)",
                             only_collectives("a collective-permute")),
        hints=[
            "ppermute's perm is a list of (source, destination) pairs, one per "
            "device that sends. Write it out by hand for 4 devices first.",
            "The number of devices is not always 8: read it from the mesh you are "
            "given or, inside the per-device function, ask the axis for its size "
            "(jax.lax.axis_size), and build the pairs from it.",
            "On a ring the last device's neighbour is device 0: modular arithmetic "
            "closes the ring.",
        ],
        mistakes=[
            Mistake("the blocks went to the previous device, not the next: perm "
                    "pairs read (source, destination)", wrong.SHIFT_BACKWARDS),
            Mistake("device 0 received nothing (zeros): the last device must send "
                    "its block around the ring to device 0", wrong.SHIFT_WITHOUT_WRAP),
            Mistake("you gathered every block onto every device (an all-gather, "
                    "n - 1 blocks sent per device) to pick one; ppermute sends each "
                    "block once", wrong.shift_by_gather),
            Mistake("you rolled the rows inside each device's block: the blocks "
                    "themselves must move between devices", wrong.roll_inside_block),
        ],
    ),
    Exercise(
        id="shard_map.global_positions",
        title="Where am I? Global positions with axis_index",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=global_positions,
        cases=standard_cases(("x of 32 entries", "x of 20 entries"),
                             vector_inputs(8, 32), vector_inputs(4, 20),
                             "P('i') (split like x)", "the compiled program contains "
                             "no collective (of " + ", ".join(COLLECTIVES) + ")"),
        hints=[
            "Inside shard_map, jax.lax.axis_index('i') is the position of this "
            "device along the mesh axis: 0, 1, 2, ...",
            "A device's block starts where the blocks of the devices before it end. "
            "How many entries do those devices hold together?",
            "Positions are integers: build them with jnp.arange(..., dtype=jnp.int32) "
            "and shift them by the block's start.",
        ],
        mistakes=[
            Mistake("every device counted from 0: add the global position of the "
                    "block's first entry", wrong.COUNT_FROM_ZERO),
            Mistake("you added the device's index; the block starts at (device "
                    "index) × (block length)", wrong.OFFSET_BY_INDEX),
            Mistake("the offset uses the length of all of x; a block starts at "
                    "(device index) × (length of one block)", wrong.OFFSET_BY_TOTAL),
            Mistake("the positions are computed on one device, not where x's "
                    "entries live: compute them inside shard_map with axis_index",
                    wrong.positions_on_one_device),
        ],
    ),
    Exercise(
        id="shard_map.data_parallel_grads",
        title="The gradient of a replicated parameter",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=data_parallel_grads,
        compiled_calls=True,
        cases=[
            Case("gradients on a mesh of 8 devices (w (5, 3), b (3,), 32 "
                 "examples split over 'batch')", regression_inputs(8, 32, 5, 3),
                 extract=leaf_values, **gradient_tolerance(5, 32)),
            Case("gradients on a mesh of 4 devices (w (4, 2), b (2,), 24 "
                 "examples)", regression_inputs(4, 24, 4, 2), extract=leaf_values,
                 **gradient_tolerance(4, 24)),
            Case("the gradients are replicated like the parameters, P()",
                 regression_inputs(8, 32, 5, 3), extract=leaf_layouts),
            Case("the per-device program is a jax.shard_map (advice)",
                 regression_inputs(8, 32, 5, 3), runner=shard_map_used, advice=True),
        ],
        hints=[
            "The loss to differentiate is the mean over the whole batch, which is "
            "the mean over devices of each device's mean loss.",
            "Inside shard_map the parameters are the same on every device; the "
            "varying-manual-axes check makes their gradient the same everywhere "
            "too, which means the devices' contributions are already summed.",
            "So: either differentiate a loss that is already averaged over 'batch' "
            "(pmean inside the differentiated function), or account for the sum "
            "that the gradient already contains.",
        ],
        mistakes=[
            Mistake("the gradient is (number of devices) times too large: in "
                    "shard_map the gradient of a replicated parameter is already "
                    "summed over the devices, so the pmean after it averages "
                    "equal values (or you differentiated a psum of the losses)",
                    wrong.PMEAN_OF_SUMMED),
            Mistake("the gradient is (number of devices)² times too large: the "
                    "gradient was already summed over the devices, then summed "
                    "again", wrong.PSUM_OF_SUMMED),
            Mistake("this is device 0's gradient of its own examples only: with "
                    "check_vma=False the gradients are not combined, so average "
                    "them over 'batch' yourself", wrong.DEVICE_0_ONLY),
        ],
    ),
)
