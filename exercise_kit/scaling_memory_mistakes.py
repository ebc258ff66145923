"""Named wrong answers of chapter 6's three memory exercises, and their tables.

``state_bytes_per_device``, ``step_memory`` and ``remat_policy``: each
function is a slip as a learner writes it (taking the exercise's
arguments), each :class:`~jaxcourse.exercises.Mistake` of the tables
(:data:`STATE_MISTAKES`, :data:`MEMORY_MISTAKES`, :data:`REMAT_MISTAKES`)
the message a learner reads when an answer gives the same output.
:mod:`solutions.scaling` registers the exercises with them; the other
exercises' slips are in :mod:`exercise_kit.scaling_mistakes`.
"""

from __future__ import annotations

import jax

from jaxcourse import scaling
from jaxcourse.exercises import Mistake

#: Where a rule's mistakes are named: on its random case, the last, where only
#: the slip itself gives every answer (one shown choice fits many slips).
ON_RANDOM = (-1,)

# ---- state_bytes_per_device ----------------------------------------------


def _weights_bytes(size: scaling.Size) -> int:
    return scaling.param_count(size) * scaling.F32


def _shards(layout: str, data: int, model: int) -> int:
    return {"data parallel": 1, "FSDP": data, "tensor parallel": model,
            "FSDP + TP": data * model}[layout]


def state_without_adam(size, layout, data, model):
    """Parameters and gradients only: Adam's two moments forgotten."""
    return 2 * _weights_bytes(size) // _shards(layout, data, model)


def state_tp_over_all_devices(size, layout, data, model):
    """Tensor parallelism divided by every device, not by the "model" axis."""
    split = data * model if layout != "data parallel" else 1
    return 4 * _weights_bytes(size) // split


def state_without_grads(size, layout, data, model):
    """Parameters and Adam's moments, but no gradients."""
    return 3 * _weights_bytes(size) // _shards(layout, data, model)


def state_square_matrices(size, layout, data, model):
    """Each block's matrices counted as d × d, not d × 4d and 4d × d."""
    square = size.layers * 2 * size.width * size.width * scaling.F32
    return 4 * square // _shards(layout, data, model)


def state_not_divided(size, layout, data, model):
    """Keep the whole training state on every device, whatever the layout."""
    return 4 * _weights_bytes(size)


def state_fsdp_over_all_devices(size, layout, data, model):
    """FSDP divided by every device, not by the "data" axis alone."""
    pieces = data * model if layout == "FSDP" else _shards(layout, data, model)
    return 4 * _weights_bytes(size) // pieces


def state_fsdp_tp_over_data(size, layout, data, model):
    """FSDP + TP divided by the "data" axis alone."""
    pieces = data if layout == "FSDP + TP" else _shards(layout, data, model)
    return 4 * _weights_bytes(size) // pieces


def state_fsdp_tp_over_model(size, layout, data, model):
    """FSDP + TP divided by the "model" axis alone, as tensor parallelism."""
    pieces = model if layout == "FSDP + TP" else _shards(layout, data, model)
    return 4 * _weights_bytes(size) // pieces


def state_fsdp_tp_added(size, layout, data, model):
    """FSDP + TP divided by data + model, not data × model."""
    pieces = data + model if layout == "FSDP + TP" else _shards(layout, data, model)
    return 4 * _weights_bytes(size) // pieces


def state_one_block(size, layout, data, model):
    """Count one block's two matrices, not every layer's."""
    one = 2 * size.width * size.hidden * scaling.F32
    return 4 * one // _shards(layout, data, model)


def state_only_weights_split(size, layout, data, model):
    """Split the parameters alone: their gradients and Adam's moments kept whole."""
    return _weights_bytes(size) // _shards(layout, data, model) \
        + 3 * _weights_bytes(size)


def state_with_step_count(size, layout, data, model):
    """Add Adam's 4-byte step count, which the exercise leaves out."""
    return 4 * _weights_bytes(size) // _shards(layout, data, model) + 4


# ---- step_memory ---------------------------------------------------------


def _memory(step, params, opt_state, x, y, donate=(0, 1)):
    args = (params, opt_state, x, y)
    plain = jax.jit(step).lower(*args).compile().memory_analysis()
    donated = jax.jit(step, donate_argnums=donate).lower(*args).compile()
    state = sum(leaf.nbytes for leaf in jax.tree.leaves((params, opt_state)))
    return {"state": state, "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.memory_analysis().peak_memory_in_bytes}, plain


def memory_state_with_grads(step, params, opt_state, x, y):
    """Count the state as 16 bytes per parameter (gradients included)."""
    found, _ = _memory(step, params, opt_state, x, y)
    return {**found, "state": 16 * scaling.param_count(_size_of(params))}


def _size_of(params):
    width, hidden = params[0]["w_in"].shape
    return scaling.Size(width, len(params))


def _peaks_as(total, step, params, opt_state, x, y):
    """Each peak (plain, then donated) read as ``total`` of XLA's memory analysis."""
    args = (params, opt_state, x, y)
    found, _ = _memory(step, *args)
    totals = []
    for donate in ((), (0, 1)):
        m = jax.jit(step, donate_argnums=donate).lower(*args).compile() \
            .memory_analysis()
        totals.append(total(m))
    return {**found, "peak": totals[0], "donated_peak": totals[1]}


def memory_peak_as_sum(step, params, opt_state, x, y):
    """Take each peak as arguments + outputs + temporaries - aliases."""
    return _peaks_as(lambda m: m.argument_size_in_bytes + m.output_size_in_bytes
                     + m.temp_size_in_bytes - m.alias_size_in_bytes,
                     step, params, opt_state, x, y)


def memory_without_step_count(step, params, opt_state, x, y):
    """Count the parameters and Adam's two moments, not its step count."""
    found, _ = _memory(step, params, opt_state, x, y)
    return {**found, "state": 3 * sum(leaf.nbytes for leaf in jax.tree.leaves(params))}


def memory_state_params_only(step, params, opt_state, x, y):
    """Count the parameters alone as the state."""
    found, _ = _memory(step, params, opt_state, x, y)
    return {**found, "state": sum(leaf.nbytes for leaf in jax.tree.leaves(params))}


def memory_peak_args_outputs(step, params, opt_state, x, y):
    """Take each peak as arguments + outputs, as if nothing else lived."""
    return _peaks_as(lambda m: m.argument_size_in_bytes + m.output_size_in_bytes,
                     step, params, opt_state, x, y)


def memory_state_with_batch(step, params, opt_state, x, y):
    """Take every argument, the batch too, for the state."""
    found, plain = _memory(step, params, opt_state, x, y)
    return {**found, "state": plain.argument_size_in_bytes}


def memory_peak_as_plain_sum(step, params, opt_state, x, y):
    """Take each peak as arguments + outputs + temporaries."""
    return _peaks_as(lambda m: m.argument_size_in_bytes + m.output_size_in_bytes
                     + m.temp_size_in_bytes, step, params, opt_state, x, y)


def memory_peak_as_temp(step, params, opt_state, x, y):
    """Take the peak as the temporaries alone."""
    found, plain = _memory(step, params, opt_state, x, y)
    return {**found, "peak": plain.temp_size_in_bytes}


def memory_donated_shifted(step, params, opt_state, x, y):
    """Count arguments from 1: donate_argnums=(1, 2), opt_state and x."""
    found, _ = _memory(step, params, opt_state, x, y, donate=(1, 2))
    return found


def memory_donated_params_only(step, params, opt_state, x, y):
    """Donate the parameters only (donate_argnums=0)."""
    found, _ = _memory(step, params, opt_state, x, y, donate=(0,))
    return found


def memory_not_donated(step, params, opt_state, x, y):
    """Read the donated peak from the program compiled without donation."""
    found, _ = _memory(step, params, opt_state, x, y)
    return {**found, "donated_peak": found["peak"]}


def memory_donation_halves(step, params, opt_state, x, y):
    """Take the donated peak as half the peak, without compiling the donating step."""
    found, _ = _memory(step, params, opt_state, x, y)
    return {**found, "donated_peak": found["peak"] // 2}


def memory_run_donated(step, params, opt_state, x, y):
    """Run the donating step (deleting its arguments), then read its analysis."""
    found, _ = _memory(step, params, opt_state, x, y)
    jax.jit(step, donate_argnums=(0, 1))(params, opt_state, x, y)
    return found


# ---- remat_policy ---------------------------------------------------------

_POLICIES = ("no remat", "checkpoint_dots", "full remat")


def _remat(size, batch, budget, mask=1, outputs=True, weights=0, order=_POLICIES,
           layers=True, strict=False, zeros=4, inputs=0, last_output=True,
           hidden=None, dots=4):
    rows = batch * (size.layers if layers else 1)
    hidden = size.hidden if hidden is None else hidden
    kept_outputs = rows - (0 if last_output else batch)
    base = kept_outputs * size.width * 4 * outputs \
        + weights * scaling.param_count(size) + inputs * batch * size.width
    kept = {"no remat": base + rows * hidden * (4 + zeros + mask),
            "checkpoint_dots": base + rows * hidden * dots, "full remat": base}
    fits = (lambda n: n < budget) if strict else (lambda n: n <= budget)
    return next((name for name in order if fits(kept[name])), None)


def remat_least_memory(size, batch, budget_bytes):
    """Full remat whenever it fits: the least memory, not the fewest FLOPs."""
    return _remat(size, batch, budget_bytes, order=_POLICIES[::-1])


def remat_mask_as_float(size, batch, budget_bytes):
    """Count the ReLU's mask as float32 (12 bytes per hidden unit)."""
    return _remat(size, batch, budget_bytes, mask=4)


def remat_without_outputs(size, batch, budget_bytes):
    """Leave the blocks' outputs out of every policy."""
    return _remat(size, batch, budget_bytes, outputs=False)


def remat_with_weights(size, batch, budget_bytes):
    """Count the float32 weights in with the residuals."""
    return _remat(size, batch, budget_bytes, weights=4)


def remat_without_zeros(size, batch, budget_bytes):
    """Keep relu's output and mask, not the zeros: 5 bytes per hidden unit."""
    return _remat(size, batch, budget_bytes, zeros=0)


def remat_with_weights_and_input(size, batch, budget_bytes):
    """Count the float32 weights and the input in with the residuals."""
    return _remat(size, batch, budget_bytes, weights=4, inputs=4)


def remat_chapter_thresholds(size, batch, budget_bytes):
    """Take the chapter's table (20, 10 and 2 MiB) for fixed thresholds."""
    for name, mib in zip(_POLICIES, (20, 10, 2), strict=True):
        if budget_bytes >= mib * 2**20:
            return name
    return None


def remat_without_mask(size, batch, budget_bytes):
    """Keep relu's output and zeros, not its mask: 8 bytes per hidden unit."""
    return _remat(size, batch, budget_bytes, mask=0)


def remat_strict_budget(size, batch, budget_bytes):
    """Take a policy only below the budget, not at it."""
    return _remat(size, batch, budget_bytes, strict=True)


def remat_one_block(size, batch, budget_bytes):
    """Count one block's residuals, not every block's."""
    return _remat(size, batch, budget_bytes, layers=False)


def remat_without_last_output(size, batch, budget_bytes):
    """Keep L - 1 block outputs (the next blocks' inputs), not the last one's."""
    return _remat(size, batch, budget_bytes, last_output=False)


def remat_full_when_none_fits(size, batch, budget_bytes):
    """Fall back to full remat when no policy fits, not None."""
    return _remat(size, batch, budget_bytes) or "full remat"


def remat_one_example(size, batch, budget_bytes):
    """Count one example's residuals, not the batch's."""
    return _remat(size, 1, budget_bytes)


def remat_hidden_as_width(size, batch, budget_bytes):
    """Take relu's arrays as (batch, d), not (batch, 4d)."""
    return _remat(size, batch, budget_bytes, hidden=size.width)


def remat_dots_keep_mask(size, batch, budget_bytes):
    """Let checkpoint_dots keep relu's mask too: 5 bytes per hidden unit."""
    return _remat(size, batch, budget_bytes, dots=5)


# ---- the tables ------------------------------------------------------------

STATE_MISTAKES = [
    Mistake("this is half the state: parameters and gradients only (Adam "
            "keeps two moments per parameter as well, four copies in all), "
            "or four copies of 2-byte numbers (the state is float32, 4 "
            "bytes)", state_without_adam, cases=ON_RANDOM),
    Mistake("three copies counted: parameters, gradients and Adam's two "
            "moments make four", state_without_grads, cases=ON_RANDOM),
    Mistake("tensor parallelism splits the weights over 'model' only; on a "
            "4 × 2 mesh each weight is in 2 pieces, not 8",
            state_tp_over_all_devices, cases=ON_RANDOM),
    Mistake("the matrices of a block are d × 4d and 4d × d, not d × d "
            "(or only the parameters were counted: the gradients and "
            "Adam's two moments have their shape too, four copies in all)",
            state_square_matrices, cases=ON_RANDOM),
    Mistake("the state is not divided: a layout that shards the weights "
            "shards their gradients and moments too",
            state_not_divided, cases=ON_RANDOM),
    Mistake("FSDP splits the weights over 'data' alone: the devices "
            "along 'model' hold the same pieces",
            state_fsdp_over_all_devices, cases=ON_RANDOM),
    Mistake("FSDP + TP splits each weight over both axes: data × model "
            "pieces, not data", state_fsdp_tp_over_data, cases=ON_RANDOM),
    Mistake("FSDP + TP splits each weight over both axes: data × model "
            "pieces, not model", state_fsdp_tp_over_model,
            cases=ON_RANDOM),
    Mistake("the two axes' pieces multiply: FSDP + TP cuts each weight "
            "into data × model pieces, not data + model",
            state_fsdp_tp_added,
            cases=ON_RANDOM),
    Mistake("every block has its own two matrices: multiply one block's "
            "bytes by the number of layers", state_one_block,
            cases=ON_RANDOM),
    Mistake("4 bytes too many: Adam's step count is left out here, as the "
            "text says; count the four copies of the weights alone",
            state_with_step_count, cases=ON_RANDOM),
    Mistake("only the parameters were divided: a weight's gradient and its "
            "two moments have its shape, and a layout cuts them into the "
            "same pieces", state_only_weights_split, cases=ON_RANDOM),
]

MEMORY_MISTAKES = [
    Mistake("the state between two steps is the parameters and Adam's "
            "moments and step count, 12 bytes per parameter and 4: the "
            "gradients are made and used up inside the step",
            memory_state_with_grads),
    Mistake("this is arguments + outputs + temporaries, as if every buffer "
            "lived for the whole step: XLA's peak is the memory analysis's "
            "peak_memory_in_bytes", memory_peak_as_sum),
    Mistake("Adam's state holds a step count too (an int32, 4 bytes): "
            "count every leaf of params and opt_state",
            memory_without_step_count),
    Mistake("the state is more than the parameters: Adam's moments and "
            "step count (opt_state) live from one step to the next too",
            memory_state_params_only),
    Mistake("arguments + outputs is not the peak: the temporaries live "
            "in between, and an output may reuse an argument's buffer; "
            "read XLA's own peak_memory_in_bytes",
            memory_peak_args_outputs),
    Mistake("x and y are the batch, not the state: a new batch comes "
            "every step; the state is every array of params and opt_state",
            memory_state_with_batch),
    Mistake("this is arguments + outputs + temporaries, as if every buffer "
            "lived for the whole step: XLA's peak is the memory analysis's "
            "peak_memory_in_bytes", memory_peak_as_plain_sum),
    Mistake("the temporaries are only part of the peak: read "
            "peak_memory_in_bytes", memory_peak_as_temp),
    Mistake("only the parameters were donated: Adam's moments are replaced "
            "every step too, donate_argnums=(0, 1)",
            memory_donated_params_only),
    Mistake("donate_argnums counts from 0: the parameters and the "
            "optimizer state are arguments 0 and 1, donate_argnums=(0, 1)",
            memory_donated_shifted),
    Mistake("the donated peak is that of the same program: compile a second "
            "one with donate_argnums", memory_not_donated),
    Mistake("the donated peak is XLA's figure for another program, not a "
            "fraction of the first one's: compile the donating step and read "
            "its own analysis", memory_donation_halves),
    Mistake("the donated step was run: in a notebook the arrays it was "
            "given are now deleted. Compiling is enough: memory_analysis() "
            "needs no run", memory_run_donated, cases=(-1,)),
]

REMAT_MISTAKES = [
    Mistake("full remat fits whenever any policy does, but asks for the most "
            "FLOPs: take the first policy, in order of FLOPs, that fits",
            remat_least_memory, cases=ON_RANDOM),
    Mistake("the ReLU's mask is a bool, 1 byte per hidden unit, not 4",
            remat_mask_as_float, cases=ON_RANDOM),
    Mistake("each block's output is kept too, whatever the policy: it is "
            "the next block's input (and the loss's)",
            remat_without_outputs, cases=ON_RANDOM),
    Mistake("the weights are kept whatever the policy: compare the "
            "residuals (activations) alone with the budget",
            remat_with_weights, cases=ON_RANDOM),
    Mistake("the weights and the input are kept whatever the policy: "
            "compare the residuals (activations) alone with the budget",
            remat_with_weights_and_input, cases=ON_RANDOM),
    Mistake("no remat keeps the zeros relu's gradient selects from too "
            "(float32, 4 bytes per hidden unit), besides its output and "
            "mask: 9 bytes per hidden unit", remat_without_zeros,
            cases=ON_RANDOM),
    Mistake("the budgets of the chapter's table are not thresholds: "
            "compute each policy's bytes for the size and batch given",
            remat_chapter_thresholds, cases=ON_RANDOM),
    Mistake("no remat keeps relu's mask too (a bool, 1 byte per hidden "
            "unit) besides its float32 output and zeros: 9 bytes per "
            "hidden unit, not 8", remat_without_mask, cases=ON_RANDOM),
    Mistake("a policy whose residuals take exactly the budget fits: "
            "within the budget is at most, not below",
            remat_strict_budget, cases=ON_RANDOM),
    Mistake("every block keeps its own residuals: multiply one block's "
            "bytes by the number of layers", remat_one_block,
            cases=ON_RANDOM),
    Mistake("the last block's output is kept too, though no block follows "
            "it: the loss's backward pass needs it. Every block's output "
            "counts", remat_without_last_output, cases=ON_RANDOM),
    Mistake("when not even full remat fits, no policy does: the answer is "
            "None", remat_full_when_none_fits, cases=ON_RANDOM),
    Mistake("every example of the batch keeps its own residuals: the bytes "
            "grow with the batch", remat_one_example, cases=ON_RANDOM),
    Mistake("relu acts on the hidden layer, which is 4d wide, not d: its "
            "arrays are (batch, hidden)", remat_hidden_as_width,
            cases=ON_RANDOM),
    Mistake("checkpoint_dots keeps what the matrix products return, and "
            "nothing else: relu's mask is recomputed from it, cheaply",
            remat_dots_keep_mask, cases=ON_RANDOM),
]
