"""Reference code for chapter 6's exercises: memory, communication and layouts.

Importing this module registers six exercises with :mod:`jaxcourse.exercises`:

* ``scaling.state_bytes_per_device``: the training state one device holds;
* ``scaling.fsdp_specs``: the ``PartitionSpec`` tree of FSDP (8 devices);
* ``scaling.tp_mlp``: Megatron's MLP block in ``shard_map``, with one
  all-reduce (8 devices);
* ``scaling.collective_bytes``: what one device sends on a ring;
* ``scaling.best_layout``: the layout and mesh that fit a memory budget and
  send the fewest bytes;
* ``scaling.critical_batch``: the batch per device above which an FSDP step
  is compute-bound.

The formulas are those of :mod:`jaxcourse.scaling`, which the chapter and the
explorer share; the references restate them so that the shown solution is the
reasoning, not a call. How the cases are built is
:mod:`solutions.scaling_checks`'s part; the known wrong answers are in
:mod:`solutions.scaling_mistakes`.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import PartitionSpec as P

from jaxcourse import scaling
from jaxcourse.exercises import Case, Exercise, Mistake, register
from jaxcourse.numerics import FLOAT32_ROUNDOFF, sum_tolerance
from jaxcourse.scaling import LAYOUTS, Size
from solutions import scaling_mistakes as wrong
from solutions.scaling_checks import (
    MESHES,
    compiled_kinds,
    layout_choice,
    mlp_inputs,
    params_inputs,
    placed_shards,
    result_layout,
    spec_codes,
    values,
)
from solutions.shard_map_checks import shard_map_used

__all__ = ["MESHES", "best_layout", "collective_bytes", "critical_batch",
           "fsdp_specs", "state_bytes_per_device", "tp_mlp"]

CHAPTER = "06_scaling"
DEVICES = 8


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def state_bytes_per_device(size: Size, layout: str, data: int, model: int) -> int:
    """Return the bytes of parameters, gradients and Adam's moments one device holds."""
    params = size.layers * 2 * size.width * size.hidden  # w_in and w_out per block
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": data * model}[layout]
    per_copy = params * 4 // pieces  # float32; each copy is split the same way
    return 4 * per_copy  # parameters, gradients, Adam's first and second moments


def fsdp_specs(params: Any) -> Any:
    """Return FSDP's specs: every weight's first dimension split over "data"."""
    return jax.tree.map(lambda weight: P("data", None), params)


def tp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Any) -> jax.Array:
    """Return relu(x @ w_in) @ w_out with the hidden units split over "model"."""
    def per_device(x, w_in_cols, w_out_rows):
        hidden = jax.nn.relu(x @ w_in_cols)  # this device's hidden units, whole
        partial = hidden @ w_out_rows  # their share of every output
        return jax.lax.psum(partial, "model")  # the one all-reduce

    return jax.shard_map(per_device, mesh=mesh,
                         in_specs=(P("data", None), P(None, "model"),
                                   P("model", None)),
                         out_specs=P("data", None))(x, w_in, w_out)


def collective_bytes(kind: str, nbytes: float, n: int) -> float:
    """Return the bytes one device sends for a collective on a ring of ``n``."""
    if n <= 1:
        return 0.0
    share = nbytes * (n - 1) / n  # n - 1 steps, each one piece of 1/n
    if kind == "all-reduce":
        return 2 * share  # a reduce-scatter, then an all-gather
    return share  # all-gather, reduce-scatter


def best_layout(size: Size, batch: int,
                budget_bytes: float) -> tuple[str, tuple[int, int]] | None:
    """Return the (layout, (data, model)) that fits and sends the fewest bytes."""
    candidates = []
    for layout in LAYOUTS:
        for data, model in MESHES:
            uses_model = layout in ("tensor parallel", "FSDP + TP")
            if uses_model != (model > 1) or (layout == "FSDP + TP" and data == 1):
                continue  # every device must do something the layout needs
            if scaling.state_bytes(size, layout, data, model)["total"] > budget_bytes:
                continue
            sent = sum(scaling.ring_bytes(c.kind, c.nbytes, c.group) for c in
                       scaling.predicted_collectives(size, layout, batch, data, model))
            candidates.append((round(sent), layout, (data, model)))
    if not candidates:
        return None
    fewest = min(sent for sent, _, _ in candidates)
    _, layout, mesh = next(c for c in candidates if c[0] == fewest)  # first of ties
    return layout, mesh


def critical_batch(hw_flops: float, link_bandwidth: float, itemsize: int,
                   n: int) -> float:
    """Return the batch per device above which FSDP on n devices is compute-bound."""
    # Per device and per parameter P (it cancels): compute 6 * b / hw_flops;
    # communication: gather, re-gather, reduce-scatter, each (n-1)/n of P.
    sent_per_param = 3 * (n - 1) / n * itemsize
    return sent_per_param / link_bandwidth * hw_flops / 6


# ---- the exercises -------------------------------------------------------

SMALL, WIDE, DEEP = Size(64, 2), Size(256, 4), Size(1024, 8)


def tp_tolerance(width: int) -> float:
    """Return how far two float32 evaluations of one MLP block may differ.

    Each output sums ``d`` then ``4 d`` terms, so to first order it is within
    ``gamma_{5d}`` of exact, relative to ``(|x| @ |w_in|) @ |w_out|``; for the
    cases' unit-variance inputs that magnitude stays below 64 (at most 55 over
    200 seeds of both shapes), and two evaluations differ by at most twice that.
    """
    return 2 * sum_tolerance(5 * width) * 64
H100, V5E = scaling.HARDWARE["H100 SXM"], scaling.HARDWARE["TPU v5e"]
# Said of every answer that gathers the weights, whatever it adds to them.
GATHERED_WEIGHTS = ("you gathered the weights whole onto every device (two "
                    "all-gathers of weights, and no memory saved): keep them split "
                    "and sum the partial outputs with one psum over 'model'")


def _numbers(*args: Any) -> Any:
    return lambda rng: args


def _state_case(size: Size, layout: str, data: int, model: int) -> Case:
    article = "an" if data == 8 else "a"
    return Case(f"{layout} on {article} {data} × {model} mesh, "
                f"Size(width={size.width}, layers={size.layers})",
                _numbers(size, layout, data, model), dtype="any")


def _bytes_case(kind: str, nbytes: int, n: int) -> Case:
    # The cases' device counts are powers of two and their byte counts below
    # 2**23: every step (nbytes / n, (n - 1) / n, 1 - 1 / n, the products) is
    # exact, even in float32, so every correct order gives the same number.
    devices = "1 device" if n == 1 else f"{n} devices"
    return Case(f"{kind} of {nbytes:,} bytes over {devices}",
                _numbers(kind, nbytes, n), dtype="any", rtol=0.0, atol=0.0)


def _best_case(size: Size, batch: int, budget: float) -> Case:
    return Case(f"Size(width={size.width}, layers={size.layers}), batch {batch}, "
                f"budget {budget / 1e6:g} MB (compared as [index in LAYOUTS, data, "
                "model])", _numbers(size, batch, budget), extract=layout_choice,
                dtype="any")


def _critical_case(hw: scaling.Hardware, itemsize: int, n: int) -> Case:
    # A product and quotient of the inputs: an answer computed in float32 (with
    # jnp) rounds each of the two inputs and at most six operations, within u
    # each; in float64, far less. The nearest wrong formula is off by a third.
    return Case(f"{hw.name}, {itemsize}-byte numbers, {n} devices",
                _numbers(hw.flops, scaling.axis_bandwidth(hw), itemsize, n),
                dtype="any",
                rtol=2 * 8 * FLOAT32_ROUNDOFF)


register(
    Exercise(
        id="scaling.state_bytes_per_device",
        title="What one device holds: parameters, gradients, Adam",
        chapter=CHAPTER,
        reference=state_bytes_per_device,
        cases=[
            _state_case(WIDE, "data parallel", 8, 1),
            _state_case(WIDE, "FSDP", 8, 1),
            _state_case(DEEP, "tensor parallel", 4, 2),
            _state_case(DEEP, "FSDP + TP", 2, 4),
        ],
        hints=[
            "Count the parameters first: each block has two matrices, and you know "
            "their shapes from the width and the hidden width.",
            "Training with Adam keeps more than the parameters: list every array of "
            "the same shape as the weights that lives between two steps.",
            "Each layout cuts every weight into some number of pieces, and the "
            "gradients and moments are cut the same way. Which mesh axes does each "
            "layout cut along?",
        ],
        mistakes=[
            Mistake("this is parameters and gradients only: Adam keeps two moments "
                    "per parameter as well, four copies in all",
                    wrong.state_without_adam),
            Mistake("three copies counted: parameters, gradients and Adam's two "
                    "moments make four", wrong.state_without_grads),
            Mistake("tensor parallelism splits the weights over 'model' only; on a "
                    "4 × 2 mesh each weight is in 2 pieces, not 8",
                    wrong.state_tp_over_all_devices),
            Mistake("the matrices of a block are d × 4d and 4d × d, not d × d",
                    wrong.state_square_matrices),
            Mistake("the state is not divided: a layout that shards the weights "
                    "shards their gradients and moments too", wrong.state_not_divided),
        ],
    ),
    Exercise(
        id="scaling.fsdp_specs",
        title="FSDP as a tree of PartitionSpecs",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=fsdp_specs,
        cases=[
            Case("the specs, one per weight, padded to its rank (0: None, 1: "
                 "'data', 2: 'model'), Size(width=64, layers=2)",
                 params_inputs(SMALL), runner=spec_codes),
            Case("placed on an 8 × 1 mesh: device 0's block of each weight and the "
                 "number of distinct blocks", params_inputs(SMALL),
                 runner=placed_shards(8, 1)),
            Case("placed on a 4 × 2 mesh, Size(width=32, layers=3)",
                 params_inputs(Size(32, 3)), runner=placed_shards(4, 2)),
        ],
        hints=[
            "The answer has the same shape as params: a list with one dict per "
            "block, whose values are PartitionSpecs instead of arrays.",
            "jax.tree.map applies a function to every leaf of a tree and keeps "
            "the tree's structure.",
            "A PartitionSpec names one mesh axis (or None) per dimension of the "
            "array, in order; FSDP only uses one of the two axes.",
        ],
        mistakes=[
            Mistake("the columns are split (the second dimension): FSDP splits "
                    "every weight's first dimension", wrong.specs_by_columns),
            Mistake("the weights are split over 'model': FSDP shards over the "
                    "'data' axis, the one the batch is split over",
                    wrong.specs_over_model),
            Mistake("every weight is replicated: this is data parallelism, each "
                    "device holds everything", wrong.specs_replicated),
            Mistake("the weights are split over both axes (FSDP + TP): FSDP "
                    "uses 'data' only", wrong.specs_both_axes),
        ],
    ),
    Exercise(
        id="scaling.tp_mlp",
        title="Megatron's MLP block with one all-reduce",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=tp_mlp,
        cases=[
            Case("values on a 2 × 4 mesh (x (16, 32), w_in (32, 128), w_out "
                 "(128, 32))", mlp_inputs(2, 4, 16, 32), extract=values,
                 rtol=0.0, atol=tp_tolerance(32)),
            Case("values on a 1 × 4 mesh (x (6, 24), hidden 96)",
                 mlp_inputs(1, 4, 6, 24), extract=values, rtol=0.0,
                 atol=tp_tolerance(24)),
            Case("the result is split by rows over 'data', P('data', None): device "
                 "0's block and the number of distinct blocks (2 × 4 mesh)",
                 mlp_inputs(2, 4, 16, 32), extract=result_layout),
            Case("the compiled program's collectives, counted by kind ("
                 + ", ".join(scaling.KINDS) + "): exactly one all-reduce",
                 mlp_inputs(2, 4, 16, 32), runner=compiled_kinds),
            Case("the per-device program is a jax.shard_map (advice)",
                 mlp_inputs(2, 4, 16, 32), runner=shard_map_used, advice=True),
        ],
        hints=[
            "Write down what one device holds: its rows of x with every column, "
            "some columns of w_in and the same-numbered rows of w_out.",
            "relu acts on each hidden unit alone, so a device can apply it to the "
            "hidden units it computed without seeing the others. What is missing "
            "after the second product?",
            "The second product contracts over the hidden units, which are split: "
            "each device has one term of a sum, and the output must be complete "
            "on every device of a 'model' group.",
        ],
        mistakes=[
            Mistake(GATHERED_WEIGHTS, wrong.tp_gathered_weights),
            Mistake(GATHERED_WEIGHTS, wrong.tp_gathered_weights_then_summed),
            Mistake("each device returned its own partial product: the partial "
                    "products over 'model' must be summed",
                    wrong.tp_without_sum),
            Mistake("relu was applied after the sum: it belongs to the hidden "
                    "units, before the second product", wrong.tp_relu_after_sum),
            Mistake("the partial products were averaged (pmean): they are terms of "
                    "a sum, add them with psum", wrong.tp_pmean),
            Mistake("a reduce-scatter then an all-gather is an all-reduce in two "
                    "steps: one psum says it in one", wrong.tp_scatter_then_gather),
        ],
    ),
    Exercise(
        id="scaling.collective_bytes",
        title="What a ring collective sends",
        chapter=CHAPTER,
        reference=collective_bytes,
        cases=[
            _bytes_case("all-gather", 4096, 4),
            _bytes_case("reduce-scatter", 1_000_000, 8),
            _bytes_case("all-reduce", 1_000_000, 8),
            _bytes_case("all-reduce", 65536, 2),
            _bytes_case("all-gather", 4096, 1),
        ],
        hints=[
            "On a ring of n devices the operand is cut into n pieces, and in each "
            "step every device sends one piece to its neighbour.",
            "Count the steps of an all-gather: after how many does every device "
            "hold every piece? It already held one of them.",
            "An all-reduce can be built from two of the other collectives, one "
            "after the other. With one device there is no one to send to.",
        ],
        mistakes=[
            Mistake("an all-reduce sends twice what an all-gather does: a "
                    "reduce-scatter, then an all-gather", wrong.bytes_no_factor_two),
            Mistake("each device sends (n - 1)/n of the operand, not all of it: it "
                    "already holds its own piece", wrong.bytes_whole_operand),
            Mistake("on a ring each device sends to one neighbour, a piece at a "
                    "time, not the whole operand to each of the others",
                    wrong.bytes_to_every_other),
            Mistake("the fraction is upside down: (n - 1)/n, less than one",
                    wrong.bytes_n_over_n_minus_1),
        ],
    ),
    Exercise(
        id="scaling.best_layout",
        title="Pick a layout: fit the budget, send the least",
        chapter=CHAPTER,
        reference=best_layout,
        cases=[
            _best_case(DEEP, 64, 2e9),
            _best_case(WIDE, 4096, 40e6),
            _best_case(WIDE, 4096, 10e6),
            _best_case(WIDE, 16384, 40e6),
            _best_case(WIDE, 16384, 6e6),
        ],
        hints=[
            "Build the list of candidates first: each layout with each mesh shape "
            "on which every device does something the layout needs.",
            "Throw away the candidates whose state does not fit, then price what "
            "each remaining one sends in a step, with the functions of "
            "jaxcourse.scaling.",
            "Several candidates can send exactly as much; keep the one that comes "
            "first in the order you built the list (min does so).",
        ],
        mistakes=[
            Mistake("this candidate does not fit the budget: drop those whose "
                    "state_bytes total is larger before comparing",
                    wrong.best_ignoring_budget),
            Mistake("you picked the layout that holds the least; among those that "
                    "fit, pick the one that sends the fewest bytes",
                    wrong.best_least_memory),
            Mistake("a layout without tensor parallelism on a mesh with a 'model' "
                    "axis leaves devices idle (data parallel on 1 × 8 sends nothing "
                    "because it splits nothing): only the meshes the layout uses",
                    wrong.best_every_mesh),
            Mistake("you added up the operands' sizes: price each collective with "
                    "ring_bytes, what one device sends", wrong.best_operand_bytes),
            Mistake("ties go to the first candidate, in the order of LAYOUTS and "
                    "then of MESHES", wrong.best_last_of_ties),
        ],
    ),
    Exercise(
        id="scaling.critical_batch",
        title="When does FSDP become compute-bound?",
        chapter=CHAPTER,
        reference=critical_batch,
        cases=[
            _critical_case(H100, 2, 8),
            _critical_case(H100, 4, 8),
            _critical_case(V5E, 2, 4),
            _critical_case(V5E, 2, 2),
        ],
        hints=[
            "Write the time of the compute and the time of the communication of "
            "one step on one device, for b examples per device and P parameters.",
            "Count the passes over the weights in FSDP: the forward pass needs "
            "them, the backward pass needs them again, and the gradients must go "
            "back split. Each pass is priced like a ring collective.",
            "Set the two times equal and solve for b: P should cancel.",
        ],
        mistakes=[
            Mistake("the backward pass gathers the weights again (ZeRO-3): three "
                    "passes over the weights, not two",
                    wrong.critical_without_regather),
            Mistake("each collective sends (n - 1)/n of the weights, not all of "
                    "them", wrong.critical_without_ring_factor),
            Mistake("a training step costs 6 FLOPs per parameter per example "
                    "(forward 2, backward 4), not 2", wrong.critical_forward_flops),
            Mistake("the ratio is upside down: more FLOP/s per byte of bandwidth "
                    "needs a larger batch", wrong.critical_inverted),
        ],
    ),
)
