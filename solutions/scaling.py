"""Reference code for chapter 6's exercises: memory, communication and layouts.

Importing this module registers eight exercises with :mod:`jaxcourse.exercises`,
in the chapter's order: ``state_bytes_per_device`` (the training state one
device holds), ``step_memory`` (a compiled step's state and XLA's peak, without
and with donation), ``remat_policy`` (the cheapest policy whose residuals fit),
``fsdp_specs`` (FSDP's specs for any tree, 8 devices), ``tp_mlp`` (Megatron's
block in ``shard_map`` with one all-reduce, 8 devices), ``layout_bytes`` (what
a device sends in a step), ``best_layout`` (the layout that fits and sends the
least) and ``critical_batch`` (the batch per chip above which a layout is
compute-bound, pass by pass).

The formulas are those of :mod:`jaxcourse.scaling`, which the chapter and the
explorer share; the references restate them so that the shown solution is the
reasoning, not a call. The rules (which spec, which policy, which layout, which
batch) are checked on at least 20 random cases each, keyed by the call that
gave each output, so that a rule fitted to the shown cases fails on a case it
can name. How the cases are built is
:mod:`exercise_kit.scaling_checks`'s part; the known wrong answers are in
:mod:`exercise_kit.scaling_mistakes` (the memory exercises' in
:mod:`exercise_kit.scaling_memory_mistakes`).
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import PartitionSpec as P

from exercise_kit import scaling_mistakes as wrong
from exercise_kit.scaling_cases import (
    best_layout_calls,
    critical_calls,
    layout_bytes_calls,
    remat_calls,
    state_calls,
)
from exercise_kit.scaling_checks import (
    MESHES,
    REMAT_POLICIES,
    best_case,
    compiled_call,
    compiled_kinds,
    critical_case,
    inputs_deleted,
    layout_choice,
    memory_case,
    memory_inputs,
    mlp_inputs,
    numbers,
    params_inputs,
    placed_shards,
    program_has_shard_map,
    random_trees,
    remat_case,
    remat_choice,
    result_layout,
    specs_case,
    state_case,
    tp_tolerance,
    tree_rule_codes,
    values,
)
from exercise_kit.scaling_memory_mistakes import (
    MEMORY_MISTAKES,
    REMAT_MISTAKES,
    STATE_MISTAKES,
)
from jaxcourse import scaling
from jaxcourse.exercises import Case, Exercise, Mistake, each_call, register
from jaxcourse.numerics import FLOAT32_ROUNDOFF
from jaxcourse.scaling import LAYOUTS, Size

# MESHES and REMAT_POLICIES live with the checks' helpers, where the exercise
# notebook imports them from (a learner imports no module that holds an
# answer); they stay importable from here too.
__all__ = ["MESHES", "REMAT_POLICIES", "best_layout", "critical_batch",
           "fsdp_specs", "layout_bytes", "remat_policy", "state_bytes_per_device",
           "step_memory", "tp_mlp"]

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


def step_memory(step: Any, params: Any, opt_state: Any, x: jax.Array,
                y: jax.Array) -> dict[str, int]:
    """Return the training state's bytes and XLA's peak, without and with donation."""
    args = (params, opt_state, x, y)
    # Compiled, not run: the memory analysis is a property of the program.
    plain = jax.jit(step).lower(*args).compile().memory_analysis()
    donating = jax.jit(step, donate_argnums=(0, 1)).lower(*args).compile()
    # What lives between two steps: parameters, Adam's moments and step count
    # (the gradients are made and used up inside the step).
    state = sum(leaf.nbytes for leaf in jax.tree.leaves((params, opt_state)))
    return {"state": state, "peak": plain.peak_memory_in_bytes,
            "donated_peak": donating.memory_analysis().peak_memory_in_bytes}


def remat_policy(size: Size, batch: int, budget_bytes: float) -> str | None:
    """Return the first policy, in order of FLOPs, whose residuals fit the budget."""
    rows = batch * size.layers  # one (batch, ...) array per block, per kind kept
    # Kept by every policy: each block's float32 output (the next block's
    # input; the last one's is the loss's difference), rows * d * 4 bytes.
    outputs = rows * size.width * 4
    kept = {
        # relu's output and the zeros its gradient selects from (float32), and
        # its mask (bool): 9 bytes per hidden unit.
        "no remat": outputs + rows * size.hidden * 9,
        "checkpoint_dots": outputs + rows * size.hidden * 4,  # x @ w_in only
        "full remat": outputs,
    }
    return next((name for name in REMAT_POLICIES if kept[name] <= budget_bytes), None)


def fsdp_specs(params: Any, n: int) -> Any:
    """Return FSDP's specs: each array's first dimension that n divides, over "data"."""
    def spec(weight: Any) -> P:
        for axis, length in enumerate(weight.shape):
            if length % n == 0:
                return P(*[None] * axis, "data")
        return P()  # no dimension splits evenly: keep it whole on every device

    return jax.tree.map(spec, params)


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


def layout_bytes(size: Size, layout: str, batch: int, data: int, model: int,
                 regather: bool = False) -> float:
    """Return the bytes one device sends in a float32 training step of ``layout``."""
    def ring(kind: str, nbytes: float, n: int) -> float:
        share = nbytes * (n - 1) / n  # n - 1 steps, each one piece of 1/n
        return 2 * share if kind == "all-reduce" else share

    weight = size.width * size.hidden * 4  # one matrix, float32
    weights = 2 * size.layers
    sent = ring("all-reduce", 4, data)  # the loss: each group's sum, summed
    if layout == "data parallel":
        sent += weights * ring("all-reduce", weight, data)
    if layout in ("FSDP", "FSDP + TP"):
        piece = weight / (model if layout == "FSDP + TP" else 1)
        gathers = 2 if regather else 1  # ZeRO-3 gathers again for the backward
        sent += weights * (gathers * ring("all-gather", piece, data)
                           + ring("reduce-scatter", piece, data))
    if layout in ("tensor parallel", "FSDP + TP"):
        activation = batch / data * size.width * 4
        # One all-reduce per block forward, one per block but the first backward.
        sent += (2 * size.layers - 1) * ring("all-reduce", activation, model)
        if layout == "tensor parallel":
            sent += weights * ring("all-reduce", weight / model, data)
    return sent


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


def critical_batch(layout: str, size: Size, data: int, model: int, flops: float,
                   axis_bandwidth: float, itemsize: int) -> float:
    """Return the batch per chip above which both passes of a step are compute-bound."""
    alpha = flops / axis_bandwidth  # FLOPs a chip does per byte it sends
    if layout == "data parallel":
        # The all-reduce, 2 (n-1)/n W, only hides behind the backward pass:
        # 4 W b / itemsize FLOPs per chip for b examples.
        return (data - 1) / data * itemsize * alpha / 2
    # The forward pass (the backward one has twice the FLOPs and at most twice
    # the bytes): 2 P b FLOPs per chip against the gather of this chip's
    # 1/model of the weights, which does not grow with b, and the all-reduces
    # of the activations over "model", which do.
    weights = (data - 1) / data * itemsize * alpha / (2 * model)
    activations = (model - 1) * itemsize * alpha / (8 * size.width)
    if activations >= 1:
        return float("inf")  # the activations alone outrun the FLOPs
    return weights / (1 - activations)


# ---- the exercises -------------------------------------------------------

SMALL, WIDE, DEEP = Size(64, 2), Size(256, 4), Size(1024, 8)


H100, V5E = scaling.HARDWARE["H100 SXM"], scaling.HARDWARE["TPU v5e"]


#: Said of the random cases: what is compared, and that the case is named.
RANDOM = "the first wrong one is named by its call"
#: Where a rule's mistakes are named: on its random case, the last, where only
#: the slip itself gives every answer (one shown choice fits many slips).
ON_RANDOM = (-1,)


register(
    Exercise(
        id="scaling.state_bytes_per_device",
        title="What one device holds: parameters, gradients, Adam",
        chapter=CHAPTER,
        reference=state_bytes_per_device,
        cases=[
            state_case(WIDE, "data parallel", 8, 1),
            state_case(WIDE, "FSDP", 8, 1),
            state_case(DEEP, "tensor parallel", 4, 2),
            state_case(DEEP, "FSDP + TP", 2, 4),
            Case("24 random sizes, layouts and meshes of 8; " + RANDOM,
                 state_calls(), runner=each_call(), dtype="any", rtol=0.0,
                 atol=0.0),
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
        mistakes=STATE_MISTAKES,
    ),
    Exercise(
        id="scaling.step_memory",
        title="Read a compiled step's memory: the state, the peak, donation",
        chapter=CHAPTER,
        reference=step_memory,
        cases=[
            memory_case(Size(64, 2), 32),
            memory_case(Size(128, 3), 256),
            memory_case(Size(96, 1), 8),
            Case("the arrays handed to step_memory are still there after it "
                 "returns: nothing ran that deleted them (advice)",
                 memory_inputs(Size(64, 2), 32), runner=inputs_deleted,
                 advice=True),
        ],
        hints=[
            "jax.jit(step).lower(*args).compile() gives the program XLA will run; "
            "its memory_analysis() answers without running anything. Which of its "
            "fields is XLA's own peak?",
            "The state is what must survive from one step to the next. List the "
            "arrays in params and opt_state: are the gradients among them?",
            "Donation is a property of the compiled program: compile the step a "
            "second time, telling jit which arguments it may overwrite (both the "
            "parameters and the optimizer's state).",
        ],
        mistakes=MEMORY_MISTAKES,
    ),
    Exercise(
        id="scaling.remat_policy",
        title="Which remat policy fits a memory budget?",
        chapter=CHAPTER,
        reference=remat_policy,
        cases=[
            remat_case(Size(256, 4), 512, 20_971_520),
            remat_case(Size(256, 4), 512, 12e6),
            remat_case(Size(256, 4), 512, 10_485_760),
            remat_case(Size(256, 4), 512, 2_097_152),
            remat_case(Size(256, 4), 512, 1e6),
            Case("24 random sizes, batches and budgets; " + RANDOM, remat_calls(),
                 runner=each_call(remat_choice), dtype="any"),
        ],
        hints=[
            "Read the chapter's residual lists again: per block and per example, "
            "which arrays does each policy keep, of which shape and dtype? "
            "scaling.saved_residuals shows them for any size you try.",
            "Some residuals are kept whatever the policy: the arrays that pass "
            "from one block to the next. Count them once, then what each policy "
            "adds.",
            "Go through REMAT_POLICIES in order (fewest FLOPs first) and stop at "
            "the first whose bytes are within the budget.",
        ],
        mistakes=REMAT_MISTAKES,
    ),
    Exercise(
        id="scaling.fsdp_specs",
        title="FSDP's PartitionSpecs for any tree of arrays",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=fsdp_specs,
        cases=[
            specs_case(SMALL, 8),
            Case("placed on an 8 × 1 mesh (n = 8): device 0's block of each weight "
                 "and the number of distinct blocks",
                 lambda rng: (*params_inputs(SMALL)(rng), 8),
                 runner=placed_shards(8, 1)),
            Case("placed on a 4 × 2 mesh (n = 4), Size(width=32, layers=3)",
                 lambda rng: (*params_inputs(Size(32, 3))(rng), 4),
                 runner=placed_shards(4, 2)),
            Case("8 random trees of arrays of rank 0 to 3 and n = 2, 4 or 8: each "
                 "array's spec, keyed by n and its shape; the first wrong "
                 "one is named", random_trees(), runner=tree_rule_codes),
        ],
        hints=[
            "The answer has the same shape as params, with a PartitionSpec "
            "where each array was: jax.tree.map keeps a tree's structure.",
            "Decide for one array at a time, from its shape and n alone: go "
            "through its dimensions in order and stop at the first one that can "
            "be cut into n equal pieces.",
            "A PartitionSpec names one mesh axis (or None) per dimension, in "
            "order: to split the third dimension, the first two entries are "
            "None. An array with no such dimension (a scalar, a bias of odd "
            "length) stays whole: P().",
        ],
        mistakes=[
            Mistake("the first dimension is split even where n does not divide it: "
                    "split the first dimension that n divides, or keep the array "
                    "whole", wrong.specs_first_always, cases=ON_RANDOM),
            Mistake("the largest dimension n divides was split: FSDP here splits "
                    "the first one", wrong.specs_largest, cases=ON_RANDOM),
            Mistake("the last dimension n divides was split: go through the "
                    "dimensions from the first", wrong.specs_last, cases=ON_RANDOM),
            Mistake("only the first dimension was tried: when n does not divide "
                    "it, try the next ones before keeping the array whole",
                    wrong.specs_first_only, cases=ON_RANDOM),
            Mistake("a dimension at least n long is not enough: n must divide it, "
                    "or the pieces are not equal", wrong.specs_at_least_n,
                    cases=ON_RANDOM),
            Mistake("n is an argument: these specs were chosen for 8 devices "
                    "whatever n is", wrong.specs_fixed_eight, cases=ON_RANDOM),
            Mistake("a PartitionSpec's entries follow the dimensions in order: to "
                    "split dimension k, put k Nones before 'data'",
                    wrong.specs_without_leading_nones, cases=ON_RANDOM),
            Mistake("the weights are split over 'model': FSDP shards over the "
                    "'data' axis, the one the batch is split over",
                    wrong.specs_over_model, cases=ON_RANDOM),
            Mistake("every weight is replicated: this is data parallelism, each "
                    "device holds everything", wrong.specs_replicated, cases=ON_RANDOM),
        ],
    ),
    Exercise(
        id="scaling.tp_mlp",
        title="Megatron's MLP block with one all-reduce",
        chapter=CHAPTER,
        devices=DEVICES,
        reference=tp_mlp,
        # Each mesh's first case compiles the function once (fresh); the
        # other cases on the 2 × 4 mesh read that program, so a Check
        # compiles two (scaling_checks.program).
        cases=[
            Case("values on a 2 × 4 mesh (x (16, 32), w_in (32, 128), w_out "
                 "(128, 32))", mlp_inputs(2, 4, 16, 32),
                 runner=compiled_call(fresh=True), extract=values,
                 rtol=0.0, atol=tp_tolerance(32)),
            Case("values on a 1 × 4 mesh (x (6, 24), hidden 96)",
                 mlp_inputs(1, 4, 6, 24), runner=compiled_call(fresh=True),
                 extract=values, rtol=0.0, atol=tp_tolerance(24)),
            Case("the result is split by rows over 'data', P('data', None): device "
                 "0's block and the number of distinct blocks (2 × 4 mesh)",
                 mlp_inputs(2, 4, 16, 32), runner=compiled_call(),
                 extract=result_layout),
            Case("the compiled program's collectives, counted by kind ("
                 + ", ".join(scaling.KINDS) + "): exactly one all-reduce",
                 mlp_inputs(2, 4, 16, 32), runner=compiled_kinds),
            Case("the per-device program is a jax.shard_map (advice)",
                 mlp_inputs(2, 4, 16, 32), runner=program_has_shard_map,
                 advice=True),
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
            Mistake(wrong.UNSUMMED_OVER_MODEL, wrong.tp_sum_over_data,
                    raises="out_specs which require replication"),
            Mistake(wrong.GATHERED_WEIGHTS, wrong.tp_gathered_weights),
            Mistake(wrong.GATHERED_WEIGHTS, wrong.tp_gathered_weights_then_summed),
            Mistake("each device returned its own partial product: the partial "
                    "products over 'model' must be summed",
                    wrong.tp_without_sum),
            # After the missing sum: on a 1 × 4 mesh a sum over 'data' is none.
            Mistake(wrong.SUMMED_OVER_DATA, wrong.tp_sum_over_both_axes),
            Mistake(wrong.SUMMED_OVER_DATA, wrong.tp_sum_over_data_unchecked),
            Mistake("relu was applied after the sum: it belongs to the hidden "
                    "units, before the second product", wrong.tp_relu_after_sum),
            Mistake("the partial products were averaged (pmean): they are terms of "
                    "a sum, add them with psum", wrong.tp_pmean),
            Mistake("a reduce-scatter then an all-gather is an all-reduce in two "
                    "steps: one psum says it in one", wrong.tp_scatter_then_gather),
        ],
    ),
    Exercise(
        id="scaling.layout_bytes",
        title="What one device sends in a step of each layout",
        chapter=CHAPTER,
        reference=layout_bytes,
        cases=[
            Case("FSDP, Size(width=256, layers=4), batch 64 on 8 × 1, no re-gather",
                 numbers(WIDE, "FSDP", 64, 8, 1, False), dtype="any"),
            Case("tensor parallel, Size(width=256, layers=4), batch 64 on 4 × 2",
                 numbers(WIDE, "tensor parallel", 64, 4, 2, False), dtype="any"),
            Case("24 random sizes, layouts, meshes of 8, batches and re-gathers; "
                 + RANDOM, layout_bytes_calls(), runner=each_call(), dtype="any"),
        ],
        hints=[
            "List each layout's collectives in one step, operand by operand, as "
            "the chapter's section on communication reasons them out: which "
            "arrays, over which mesh axis, with how many devices?",
            "Price each collective on a ring: a device sends (n - 1)/n of the "
            "operand for an all-gather or a reduce-scatter, twice that for an "
            "all-reduce, and nothing when its axis has one device.",
            "Do not forget the small and the conditional ones: the loss summed "
            "over 'data', the backward pass's second gather with regather, and "
            "the weight pieces' gradients when tensor parallelism also splits "
            "the batch.",
        ],
        mistakes=[
            Mistake("with regather=True FSDP gathers each weight again for the "
                    "backward pass (ZeRO-3): count its all-gathers twice",
                    wrong.layout_bytes_no_regather, cases=ON_RANDOM),
            Mistake("an all-reduce sends twice what an all-gather does: a "
                    "reduce-scatter, then an all-gather",
                    wrong.layout_bytes_all_reduce_once, cases=ON_RANDOM),
            Mistake("each device sends (n - 1)/n of an operand, not all of it: it "
                    "already holds its own piece", wrong.layout_bytes_whole,
                    cases=ON_RANDOM),
            Mistake("the backward pass needs no all-reduce in the first block (no "
                    "gradient for the inputs): 2 L - 1 activations, not 2 L",
                    wrong.layout_bytes_2l, cases=ON_RANDOM),
            Mistake("when tensor parallelism also splits the batch (data > 1), each "
                    "weight piece's gradient is all-reduced over 'data'",
                    wrong.layout_bytes_no_tp_grads, cases=ON_RANDOM),
            Mistake("every layout that splits the batch sums the loss: an "
                    "all-reduce of 4 bytes over 'data'", wrong.layout_bytes_no_loss,
                    cases=ON_RANDOM),
        ],
    ),
    Exercise(
        id="scaling.best_layout",
        title="Pick a layout: fit the budget, send the least",
        chapter=CHAPTER,
        reference=best_layout,
        cases=[
            best_case(DEEP, 64, 2e9),
            best_case(WIDE, 4096, 40e6),
            best_case(WIDE, 4096, 10e6),
            best_case(WIDE, 16384, 40e6),
            best_case(WIDE, 16384, 6e6),
            Case("24 random sizes, batches and budgets; " + RANDOM,
                 best_layout_calls(), runner=each_call(layout_choice), dtype="any"),
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
                    wrong.best_ignoring_budget, cases=ON_RANDOM),
            Mistake("you picked the layout that holds the least; among those that "
                    "fit, pick the one that sends the fewest bytes",
                    wrong.best_least_memory, cases=ON_RANDOM),
            Mistake("a layout without tensor parallelism on a mesh with a 'model' "
                    "axis leaves devices idle (data parallel on 1 × 8 sends nothing "
                    "because it splits nothing): only the meshes the layout uses",
                    wrong.best_every_mesh, cases=ON_RANDOM),
            Mistake("you added up the operands' sizes: price each collective with "
                    "ring_bytes, what one device sends", wrong.best_operand_bytes,
                    cases=ON_RANDOM),
            Mistake("ties go to the first candidate, in the order of LAYOUTS and "
                    "then of MESHES", wrong.best_last_of_ties, cases=ON_RANDOM),
            Mistake("when no layout fits, the answer is None, not the one that "
                    "holds the least", wrong.best_never_none, cases=ON_RANDOM),
            Mistake("the bytes were priced with the re-gather: price "
                    "predicted_collectives as the text gives it (regather=False)",
                    wrong.best_with_regather, cases=ON_RANDOM),
        ],
    ),
    Exercise(
        id="scaling.critical_batch",
        title="When is each layout compute-bound, per chip and per pass?",
        chapter=CHAPTER,
        reference=critical_batch,
        cases=[
            critical_case(H100, "data parallel", 8, 1),
            critical_case(V5E, "FSDP", 8, 1),
            critical_case(V5E, "FSDP", 16, 1),
            critical_case(H100, "FSDP", 64, 1, across=True),
            critical_case(H100, "FSDP + TP", 2, 4),
            Case("24 random layouts, meshes, models and chips; " + RANDOM,
                 critical_calls(), runner=each_call(), dtype="any",
                 rtol=2 * 12 * FLOAT32_ROUNDOFF),
        ],
        hints=[
            "Take one pass at a time, per chip, for b examples per chip: its "
            "FLOPs (2 per parameter per example forward, 4 backward) against the "
            "bytes it sends, each over its axis's bandwidth. Communication can "
            "only hide behind the FLOPs of its own pass.",
            "Bytes of weights do not grow with the batch; bytes of activations "
            "do, as the FLOPs do. Write each pass as compute >= fixed + growing, "
            "with the chip's share of the weights in the fixed part.",
            "Solve for b where the two sides meet, and keep the larger of the two "
            "passes. When the growing part alone is at least the FLOPs, no batch "
            "is enough (float('inf')); when nothing is fixed, any batch is (0).",
        ],
        mistakes=[
            Mistake("data parallelism's all-reduce can only hide behind the "
                    "backward pass (4 of the 6 FLOPs per parameter and example): "
                    "per pass, it needs the same batch as FSDP",
                    wrong.critical_whole_step, cases=ON_RANDOM),
            Mistake("this is per data-parallel group: per chip, divide by the "
                    "'model' axis as well", wrong.critical_per_group, cases=ON_RANDOM),
            Mistake("tensor parallelism's all-reduces of activations grow with the "
                    "batch and eat into the FLOPs: they belong in the growing part",
                    wrong.critical_without_activations, cases=ON_RANDOM),
            Mistake("each collective sends (n - 1)/n of the weights, not all of "
                    "them", wrong.critical_without_ring_factor, cases=ON_RANDOM),
            Mistake("the ratio is upside down: more FLOP/s per byte of bandwidth "
                    "needs a larger batch", wrong.critical_inverted, cases=ON_RANDOM),
        ],
    ),
)
