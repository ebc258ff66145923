"""Answers to chapter 6's exercises (topic ``scaling``), as learners write them.

What checking each must give is in ``scaling.toml``. ``fsdp_specs`` and
``tp_mlp`` need 8 devices: the contract checks them in a process that asks for
8 devices before it imports this module (nothing here touches a device).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from exercise_kit.scaling_checks import MESHES
from jaxcourse import scaling
from jaxcourse.scaling import LAYOUTS, Size


# -- exercise 1: state_bytes_per_device
def state_params_and_grads(size, layout, data, model):
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": data * model}[layout]
    return 2 * scaling.param_count(size) * 4 // pieces


def state_tp_divided_by_all(size, layout, data, model):
    pieces = 1 if layout == "data parallel" else data * model
    return 4 * scaling.param_count(size) * 4 // pieces


def state_no_grads(size, layout, data, model):
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": data * model}[layout]
    return (1 + 2) * scaling.param_count(size) * 4 // pieces


def state_eight_devices(size, layout, data, model):  # the mesh size written in
    pieces = {"data parallel": 1, "FSDP": 8, "tensor parallel": 8,
              "FSDP + TP": 8}[layout]
    return 16 * scaling.param_count(size) // pieces


def state_fsdp_by_every_device(size, layout, data, model):
    devices = data * model
    pieces = {"data parallel": 1, "FSDP": devices, "tensor parallel": model,
              "FSDP + TP": devices}[layout]
    return 16 * scaling.param_count(size) // pieces


def state_hybrid_by_data(size, layout, data, model):
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": data}[layout]
    return 16 * scaling.param_count(size) // pieces


def state_with_adam_count(size, layout, data, model):  # the step count added back
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": data * model}[layout]
    return 16 * scaling.param_count(size) // pieces + 4


def state_hybrid_by_model(size, layout, data, model):
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": model}[layout]
    return 16 * scaling.param_count(size) // pieces


def state_params_split_only(size, layout, data, model):  # grads, moments whole
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": data * model}[layout]
    weights = scaling.param_count(size) * 4
    return weights / pieces + 2 * weights + weights


def state_from_module(size, layout, data, model):  # correct: the chapter's formula
    return scaling.state_bytes(size, layout, data, model)["total"]


def state_by_parts(size, layout, data, model):  # correct
    weights = size.layers * (size.width * size.hidden + size.hidden * size.width)
    if layout == "FSDP":
        weights /= data
    elif layout == "tensor parallel":
        weights /= model
    elif layout == "FSDP + TP":
        weights /= data * model
    params = grads = weights * 4
    adam = 2 * weights * 4
    return int(params + grads + adam)


def state_float(size, layout, data, model):  # correct: a float is fine
    split = data ** (layout in ("FSDP", "FSDP + TP")) * \
        model ** (layout in ("tensor parallel", "FSDP + TP"))
    return 16.0 * scaling.param_count(size) / split


# -- exercise 2: step_memory
def _analyses(step, params, opt_state, x, y, donate=(0, 1)):
    plain = jax.jit(step).lower(params, opt_state, x, y).compile()
    donated = jax.jit(step, donate_argnums=donate).lower(
        params, opt_state, x, y).compile()
    return plain.memory_analysis(), donated.memory_analysis()


def memory_sixteen_bytes(step, params, opt_state, x, y):  # the chapter's 16 / param
    plain, donated = _analyses(step, params, opt_state, x, y)
    count = sum(w.size for w in jax.tree.leaves(params))
    return {"state": 16 * count, "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes}


def memory_everything_added(step, params, opt_state, x, y):
    plain, donated = _analyses(step, params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves([params, opt_state]))

    def total(m):
        return (m.argument_size_in_bytes + m.output_size_in_bytes
                + m.temp_size_in_bytes - m.alias_size_in_bytes)
    return {"state": state, "peak": total(plain), "donated_peak": total(donated)}


def memory_params_donated(step, params, opt_state, x, y):
    plain, donated = _analyses(step, params, opt_state, x, y, donate=0)
    state = sum(a.nbytes for a in jax.tree.leaves([params, opt_state]))
    return {"state": state, "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes}


def memory_same_program(step, params, opt_state, x, y):  # donation not compiled
    compiled = jax.jit(step).lower(params, opt_state, x, y).compile()
    peak = compiled.memory_analysis().peak_memory_in_bytes
    state = sum(a.nbytes for a in jax.tree.leaves([params, opt_state]))
    return {"state": state, "peak": peak, "donated_peak": peak}


def memory_moments_without_count(step, params, opt_state, x, y):  # mu, nu, params
    plain, donated = _analyses(step, params, opt_state, x, y)
    weights = sum(a.nbytes for a in jax.tree.leaves(params))
    return {"state": weights * 3, "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes}


def memory_params_are_the_state(step, params, opt_state, x, y):
    plain, donated = _analyses(step, params, opt_state, x, y)
    return {"state": sum(a.nbytes for a in jax.tree.leaves(params)),
            "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes}


def memory_inputs_plus_outputs(step, params, opt_state, x, y):
    plain, donated = _analyses(step, params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves([params, opt_state]))
    return {"state": state,
            "peak": plain.argument_size_in_bytes + plain.output_size_in_bytes,
            "donated_peak": donated.argument_size_in_bytes
            + donated.output_size_in_bytes}


def memory_arguments_are_the_state(step, params, opt_state, x, y):
    plain, donated = _analyses(step, params, opt_state, x, y)
    return {"state": plain.argument_size_in_bytes, "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes}


def memory_half_when_donated(step, params, opt_state, x, y):  # a guess, not read
    plain, _ = _analyses(step, params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves([params, opt_state]))
    return {"state": state, "peak": plain.peak_memory_in_bytes,
            "donated_peak": plain.peak_memory_in_bytes / 2}


def memory_run_donated(step, params, opt_state, x, y):  # correct: runs it too
    peak = jax.jit(step).lower(params, opt_state, x, y).compile() \
        .memory_analysis().peak_memory_in_bytes
    state = sum(a.nbytes for a in jax.tree.leaves([params, opt_state]))
    donating = jax.jit(step, donate_argnums=(0, 1))
    compiled = donating.lower(params, opt_state, x, y).compile()
    compiled(params, opt_state, x, y)  # deletes the donated arrays (copies here)
    return {"state": state, "peak": peak,
            "donated_peak": compiled.memory_analysis().peak_memory_in_bytes}


def memory_from_arguments(step, params, opt_state, x, y):  # correct: args - batch
    plain, donated = _analyses(step, params, opt_state, x, y)
    return {"state": plain.argument_size_in_bytes - x.nbytes - y.nbytes,
            "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes}


def memory_alias(step, params, opt_state, x, y):  # correct: the alias is the state
    plain, donated = _analyses(step, params, opt_state, x, y)
    return {"peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes,
            "state": donated.alias_size_in_bytes}


def memory_jnp_sizes(step, params, opt_state, x, y):  # correct: sizes and itemsizes
    plain, donated = _analyses(step, params, opt_state, x, y)
    state = sum(int(np.prod(a.shape)) * a.dtype.itemsize
                for a in jax.tree.leaves((params, opt_state)))
    return dict(state=state, peak=int(plain.peak_memory_in_bytes),
                donated_peak=int(donated.peak_memory_in_bytes))


# -- exercise 3: remat_policy
def _kept(size, batch, per_hidden, per_width=4):
    return batch * size.layers * (size.width * per_width + size.hidden * per_hidden)


def remat_always_full(size, batch, budget_bytes):
    if _kept(size, batch, 0) <= budget_bytes:
        return "full remat"
    return None


def remat_mask_four_bytes(size, batch, budget_bytes):
    for name, per_hidden in (("no remat", 12), ("checkpoint_dots", 4),
                             ("full remat", 0)):
        if _kept(size, batch, per_hidden) <= budget_bytes:
            return name
    return None


def remat_hidden_only(size, batch, budget_bytes):
    for name, per_hidden in (("no remat", 9), ("checkpoint_dots", 4),
                             ("full remat", 0)):
        if _kept(size, batch, per_hidden, per_width=0) <= budget_bytes:
            return name
    return None


def remat_eight_bytes(size, batch, budget_bytes):  # relu's output and zeros only
    for name, per_hidden in (("no remat", 8), ("checkpoint_dots", 4),
                             ("full remat", 0)):
        if _kept(size, batch, per_hidden) <= budget_bytes:
            return name
    return None


def remat_strictly_below(size, batch, budget_bytes):
    for name, per_hidden in (("no remat", 9), ("checkpoint_dots", 4),
                             ("full remat", 0)):
        if _kept(size, batch, per_hidden) < budget_bytes:
            return name
    return None


def remat_per_block(size, batch, budget_bytes):  # one block's residuals
    per_block = {"no remat": 9, "checkpoint_dots": 4, "full remat": 0}
    for name, per_hidden in per_block.items():
        if batch * (4 * size.width + per_hidden * size.hidden) <= budget_bytes:
            return name
    return None


def remat_fixed_thresholds(size, batch, budget_bytes):  # fits the shown size only
    if budget_bytes >= 20e6:
        return "no remat"
    if budget_bytes >= 10e6:
        return "checkpoint_dots"
    return "full remat" if budget_bytes >= 2e6 else None


def remat_inputs_of_next_blocks(size, batch, budget_bytes):  # L - 1 outputs
    outputs = (size.layers - 1) * batch * size.width * 4
    for name, per_hidden in (("no remat", 9), ("checkpoint_dots", 4),
                             ("full remat", 0)):
        if outputs + _kept(size, batch, per_hidden, per_width=0) <= budget_bytes:
            return name
    return None


def remat_never_none(size, batch, budget_bytes):  # full remat as the last resort
    for name, per_hidden in (("no remat", 9), ("checkpoint_dots", 4)):
        if _kept(size, batch, per_hidden) <= budget_bytes:
            return name
    return "full remat"


def remat_per_example(size, batch, budget_bytes):  # the batch left out
    for name, per_hidden in (("no remat", 9), ("checkpoint_dots", 4),
                             ("full remat", 0)):
        if _kept(size, 1, per_hidden) <= budget_bytes:
            return name
    return None


def remat_relu_width_d(size, batch, budget_bytes):  # relu's arrays (batch, d)
    for name, per_width in (("no remat", 13), ("checkpoint_dots", 8),
                            ("full remat", 4)):
        if _kept(size, batch, 0, per_width=per_width) <= budget_bytes:
            return name
    return None


def remat_dots_and_mask(size, batch, budget_bytes):  # dots keeps the mask too
    for name, per_hidden in (("no remat", 9), ("checkpoint_dots", 5),
                             ("full remat", 0)):
        if _kept(size, batch, per_hidden) <= budget_bytes:
            return name
    return None


def remat_formula(size, batch, budget_bytes):  # correct
    per_example = size.layers * (4 * size.width + 9 * size.hidden)
    if batch * per_example <= budget_bytes:
        return "no remat"
    if batch * size.layers * 4 * (size.width + size.hidden) <= budget_bytes:
        return "checkpoint_dots"
    if batch * size.layers * 4 * size.width <= budget_bytes:
        return "full remat"
    return None


_PER_UNIT = {}


def remat_measured(size, batch, budget_bytes):  # correct: measured once, scaled
    # Every residual is (batch, d) or (batch, 4d) per block: measure one block
    # of width 1 and one example once, then scale by width, batch and blocks.
    policies = {"no remat": False,
                "checkpoint_dots": jax.checkpoint_policies.checkpoint_dots,
                "full remat": True}
    if not _PER_UNIT:
        one = Size(1, 1)
        params = scaling.init_params(jax.random.key(0), one)
        x, y = scaling.make_batch(jax.random.key(1), one, 1)
        for name, remat in policies.items():
            rows = scaling.saved_residuals(
                lambda p, remat=remat: scaling.loss(p, x, y, remat=remat), params)
            _PER_UNIT[name] = scaling.residual_bytes(
                [r for r in rows if not r[1].startswith("from")])
    for name in policies:
        if _PER_UNIT[name] * size.width * batch * size.layers <= budget_bytes:
            return name
    return None


def remat_table(size, batch, budget_bytes):  # correct: a table of bytes per unit
    per_hidden = {"no remat": 4 + 4 + 1, "checkpoint_dots": 4, "full remat": 0}
    for name in ("no remat", "checkpoint_dots", "full remat"):
        need = batch * size.layers * (4 * size.width + per_hidden[name] * size.hidden)
        if need <= budget_bytes:
            return name
    return None


# -- exercise 4: fsdp_specs
def specs_columns(params, n):
    return jax.tree.map(lambda w: P(None, "data"), params)


def specs_model_axis(params, n):
    return [{k: P("model") for k in block} for block in params]


def specs_all_replicated(params, n):
    return jax.tree.map(lambda w: P(), params)


def specs_first_dim(params, n):  # the chapter's weights only
    return jax.tree.map(lambda w: P("data", None), params)


def specs_flat_list(params, n):  # one spec per weight, but the tree is lost
    return [P("data", None) for _ in jax.tree.leaves(params)]


def specs_largest_dim(params, n):
    def spec(w):
        fits = [a for a in range(w.ndim) if w.shape[a] % n == 0]
        if not fits:
            return P()
        axis = max(fits, key=lambda a: w.shape[a])
        return P(*([None] * axis), "data")
    return jax.tree.map(spec, params)


def specs_loop(params, n):  # correct: a loop, trailing None left out
    def spec(w):
        for i, length in enumerate(w.shape):
            if length % n == 0:
                entries = [None] * w.ndim
                entries[i] = "data"
                return P(*entries)
        return P()
    return jax.tree.map(spec, params)


def specs_next(params, n):  # correct: next() over the dimensions
    def spec(w):
        axis = next((i for i, d in enumerate(np.shape(w)) if d % n == 0), None)
        return P() if axis is None else P(*(None,) * axis, "data")
    return jax.tree_util.tree_map(spec, params)


def specs_full_rank(params, n):  # correct: one entry per dimension, always
    def spec(w):
        entries = [None] * len(w.shape)
        for i, length in enumerate(w.shape):
            if length % n == 0:
                entries[i] = "data"
                break
        return P(*entries)
    return jax.tree.map(spec, params)


# -- exercise 5: tp_mlp
SPECS = dict(in_specs=(P("data", None), P(None, "model"), P("model", None)),
             out_specs=P("data", None))


def tp_all_gather(x, w_in, w_out, mesh):
    def f(x, a, b):
        a = jax.lax.all_gather(a, "model", axis=1, tiled=True)
        b = jax.lax.all_gather(b, "model", axis=0, tiled=True)
        return jax.nn.relu(x @ a) @ b
    return jax.shard_map(f, mesh=mesh, check_vma=False, **SPECS)(x, w_in, w_out)


def tp_gather_then_token_psum(x, w_in, w_out, mesh):  # gathers, then hides it
    def f(x, a, b):
        a = jax.lax.all_gather(a, "model", axis=1, tiled=True)
        b = jax.lax.all_gather(b, "model", axis=0, tiled=True)
        total = jax.lax.psum(jax.nn.relu(x @ a) @ b, "model")
        return total / jax.lax.axis_size("model")
    return jax.shard_map(f, mesh=mesh, **SPECS)(x, w_in, w_out)


def tp_reshard_weights(x, w_in, w_out, mesh):  # XLA inserts the gathers
    whole = NamedSharding(mesh, P())
    w_in, w_out = jax.reshard(w_in, whole), jax.reshard(w_out, whole)

    def f(x, a, b):
        total = jax.lax.psum(jax.nn.relu(x @ a) @ b, "model")
        return total / jax.lax.axis_size("model")
    return jax.shard_map(f, mesh=mesh, in_specs=(P("data", None), P(), P()),
                         out_specs=P("data", None))(x, w_in, w_out)


def tp_no_psum(x, w_in, w_out, mesh):
    return jax.shard_map(lambda x, a, b: jax.nn.relu(x @ a) @ b, mesh=mesh,
                         check_vma=False, **SPECS)(x, w_in, w_out)


def tp_relu_last(x, w_in, w_out, mesh):
    def f(x, a, b):
        return jax.nn.relu(jax.lax.psum(x @ a @ b, "model"))
    return jax.shard_map(f, mesh=mesh, **SPECS)(x, w_in, w_out)


def tp_averaged(x, w_in, w_out, mesh):
    def f(x, a, b):
        return jax.lax.pmean(jax.nn.relu(x @ a) @ b, "model")
    return jax.shard_map(f, mesh=mesh, **SPECS)(x, w_in, w_out)


def tp_two_steps(x, w_in, w_out, mesh):
    def f(x, a, b):
        part = jax.lax.psum_scatter(jax.nn.relu(x @ a) @ b, "model",
                                    scatter_dimension=1, tiled=True)
        return jax.lax.all_gather(part, "model", axis=1, tiled=True)
    return jax.shard_map(f, mesh=mesh, check_vma=False, **SPECS)(x, w_in, w_out)


def tp_unchecked_promise(x, w_in, w_out, mesh):  # out_specs on a varying value
    return jax.shard_map(lambda x, a, b: jax.nn.relu(x @ a) @ b, mesh=mesh,
                         **SPECS)(x, w_in, w_out)


def tp_psum_over_data(x, w_in, w_out, mesh):  # the wrong axis: shard_map raises
    def f(x, a, b):
        return jax.lax.psum(jax.nn.relu(x @ a) @ b, "data")
    return jax.shard_map(f, mesh=mesh, **SPECS)(x, w_in, w_out)


def tp_psum_over_both(x, w_in, w_out, mesh):  # adds other examples' rows in
    def f(x, a, b):
        return jax.lax.psum(jax.nn.relu(x @ a) @ b, ("data", "model"))
    return jax.shard_map(f, mesh=mesh, **SPECS)(x, w_in, w_out)


def tp_gather_without_psum(x, w_in, w_out, mesh):  # gathered, check on: raises
    def f(x, a, b):
        a = jax.lax.all_gather(a, "model", axis=1, tiled=True)
        b = jax.lax.all_gather(b, "model", axis=0, tiled=True)
        return jax.nn.relu(x @ a) @ b
    return jax.shard_map(f, mesh=mesh, **SPECS)(x, w_in, w_out)


def tp_decorated(x, w_in, w_out, mesh):  # correct
    @partial(jax.shard_map, mesh=mesh, **SPECS)
    def f(x, a, b):
        return jax.lax.psum(jnp.maximum(x @ a, 0) @ b, "model")
    return f(x, w_in, w_out)


def tp_einsum_jit(x, w_in, w_out, mesh):  # correct
    def f(x, a, b):
        h = jax.nn.relu(jnp.einsum("bd,df->bf", x, a))
        return jax.lax.psum(jnp.einsum("bf,fd->bd", h, b), "model")
    return jax.jit(jax.shard_map(f, mesh=mesh, **SPECS))(x, w_in, w_out)


def tp_axis_from_mesh(x, w_in, w_out, mesh):  # correct: names read from the mesh
    data, model = mesh.axis_names

    def f(x, a, b):
        return jax.lax.psum(jax.nn.relu(x @ a) @ b, model)
    return jax.shard_map(f, mesh=mesh, in_specs=(P(data, None), P(None, model),
                                                 P(model, None)),
                         out_specs=P(data, None))(x, w_in, w_out)


# -- exercise 6: layout_bytes
def _ring(kind, nbytes, n):
    return (2 if kind == "all-reduce" else 1) * nbytes * (n - 1) / n


def bytes_one_gather(size, layout, batch, data, model, regather=False):
    return layout_bytes_module(size, layout, batch, data, model, False)


def bytes_no_loss(size, layout, batch, data, model, regather=False):
    return layout_bytes_module(size, layout, batch, data, model, regather) \
        - _ring("all-reduce", 4, data)


def bytes_two_l(size, layout, batch, data, model, regather=False):
    extra = 0.0
    if layout in ("tensor parallel", "FSDP + TP"):
        extra = _ring("all-reduce", batch // data * size.width * 4, model)
    return layout_bytes_module(size, layout, batch, data, model, regather) + extra


def bytes_whole_operands(size, layout, batch, data, model, regather=False):
    return sum((2 if c.kind == "all-reduce" else 1) * c.nbytes for c in
               scaling.predicted_collectives(size, layout, batch, data, model,
                                             regather=regather) if c.group > 1)


def layout_bytes_module(size, layout, batch, data, model, regather=False):  # correct
    return sum(scaling.ring_bytes(c.kind, c.nbytes, c.group) for c in
               scaling.predicted_collectives(size, layout, batch, data, model,
                                             regather=regather))


def bytes_by_axis(size, layout, batch, data, model, regather=False):  # correct
    w = 4 * size.width * size.hidden
    over_data, over_model = 4.0 * 2, 0.0  # the loss, all-reduced
    if layout == "data parallel":
        over_data += 2 * size.layers * 2 * w
    elif layout == "FSDP" or layout == "FSDP + TP":
        piece = w / model if layout == "FSDP + TP" else w
        over_data += 2 * size.layers * (3 if regather else 2) * piece
    if layout in ("tensor parallel", "FSDP + TP"):
        over_model += (2 * size.layers - 1) * 2 * (batch / data) * size.width * 4
        if layout == "tensor parallel":
            over_data += 2 * size.layers * 2 * w / model
    return over_data * (data - 1) / data + over_model * (model - 1) / model


def bytes_jnp(size, layout, batch, data, model, regather=False):  # correct: float32
    return jnp.float32(bytes_by_axis(size, layout, batch, data, model, regather))


# -- exercise 7: best_layout
def _candidates(every=False):
    for layout in LAYOUTS:
        for data, model in MESHES:
            tp = layout in ("tensor parallel", "FSDP + TP")
            if every or (tp == (model > 1) and not (layout == "FSDP + TP"
                                                     and data == 1)):
                yield layout, (data, model)


def _sent(size, layout, batch, mesh):
    return sum(scaling.ring_bytes(c.kind, c.nbytes, c.group) for c in
               scaling.predicted_collectives(size, layout, batch, *mesh))


def _fits(size, layout, mesh, budget):
    return scaling.state_bytes(size, layout, *mesh)["total"] <= budget


def best_no_budget(size, batch, budget_bytes):
    return min(_candidates(), key=lambda c: round(_sent(size, c[0], batch, c[1])))


def best_smallest(size, batch, budget_bytes):
    fit = [c for c in _candidates() if _fits(size, *c, budget_bytes)]
    return min(fit, key=lambda c: scaling.state_bytes(size, c[0], *c[1])["total"],
               default=None)


def best_any_mesh(size, batch, budget_bytes):
    fit = [c for c in _candidates(every=True) if _fits(size, *c, budget_bytes)]
    return min(fit, key=lambda c: round(_sent(size, c[0], batch, c[1])), default=None)


def best_operands(size, batch, budget_bytes):
    fit = [c for c in _candidates() if _fits(size, *c, budget_bytes)]
    return min(fit, key=lambda c: sum(
        x.nbytes for x in scaling.predicted_collectives(size, c[0], batch, *c[1])),
        default=None)


def best_last_tie(size, batch, budget_bytes):
    best = None
    for c in _candidates():
        if _fits(size, *c, budget_bytes):
            sent = round(_sent(size, c[0], batch, c[1]))
            if best is None or sent <= best[0]:
                best = (sent, c)
    return best and best[1]


def best_sorted(size, batch, budget_bytes):  # correct: sorted is stable
    fit = [c for c in _candidates() if _fits(size, *c, budget_bytes)]
    ranked = sorted(fit, key=lambda c: round(_sent(size, c[0], batch, c[1])))
    return ranked[0] if ranked else None


def best_loop(size, batch, budget_bytes):  # correct: strictly fewer replaces
    best, fewest = None, float("inf")
    for layout in LAYOUTS:
        for mesh in MESHES:
            if (layout in ("tensor parallel", "FSDP + TP")) != (mesh[1] > 1):
                continue
            if layout == "FSDP + TP" and mesh[0] == 1:
                continue
            if not _fits(size, layout, mesh, budget_bytes):
                continue
            sent = round(_sent(size, layout, batch, mesh))
            if sent < fewest:
                best, fewest = (layout, mesh), sent
    return best


def best_list_answer(size, batch, budget_bytes):  # correct: a list is a sequence
    found = best_loop(size, batch, budget_bytes)
    return None if found is None else [found[0], list(found[1])]


# -- exercise 8: critical_batch
def critical_whole_step_dp(layout, size, data, model, flops, axis_bandwidth,
                           itemsize):
    if layout == "data parallel":  # the all-reduce spread over the whole step
        return 2 * (data - 1) / data * itemsize * flops / axis_bandwidth / 6
    return critical_closed_form(layout, size, data, model, flops, axis_bandwidth,
                                itemsize)


def critical_per_group(layout, size, data, model, flops, axis_bandwidth, itemsize):
    return model * critical_closed_form(layout, size, data, model, flops,
                                        axis_bandwidth, itemsize)


def critical_weights_only(layout, size, data, model, flops, axis_bandwidth,
                          itemsize):
    return (data - 1) / data * itemsize * flops / axis_bandwidth / (2 * model)


def critical_old_formula(layout, size, data, model, flops, axis_bandwidth,
                         itemsize):  # chapter 6's old FSDP answer, for every layout
    n = data * model
    return 3 * (n - 1) / n * itemsize / axis_bandwidth * flops / 6


def critical_closed_form(layout, size, data, model, flops, axis_bandwidth,
                         itemsize):  # correct
    alpha = flops / axis_bandwidth
    if layout == "data parallel":
        return (data - 1) / data * itemsize * alpha / 2
    weights = (data - 1) / data * itemsize * alpha / (2 * model)
    activations = (model - 1) * itemsize * alpha / (8 * size.width)
    return weights / (1 - activations) if activations < 1 else float("inf")


def critical_per_pass(layout, size, data, model, flops, axis_bandwidth,
                      itemsize):  # correct: both passes solved, the larger kept
    params = scaling.param_count(size)
    w = params * itemsize / model  # this chip's share of the weights
    # A chip's b examples are b * model of its group's batch / data: an
    # all-reduce of their (., d) activations sends 2 (model - 1) d per example.
    act = 2 * (model - 1) * size.width * itemsize
    ring = (data - 1) / data
    passes = []
    for flops_per, gathers, blocks in ((2, 1, size.layers),
                                       (4, 2, size.layers - 1)):
        compute = flops_per * params / flops  # seconds per example, per chip
        if layout == "data parallel":
            fixed = 2 * ring * w / axis_bandwidth if flops_per == 4 else 0.0
            grow = 0.0
        else:
            fixed = gathers * ring * w / axis_bandwidth
            grow = blocks * act / axis_bandwidth
        if fixed == 0 and grow <= compute:
            passes.append(0.0)
        elif grow >= compute:
            passes.append(float("inf"))
        else:
            passes.append(fixed / (compute - grow))
    return max(passes)


def critical_from_module(layout, size, data, model, flops, axis_bandwidth,
                         itemsize):  # correct: the chapter's function, on a line
    hw = scaling.Hardware("mine", flops, 0.0, 0.0, axis_bandwidth, "")
    return scaling.critical_batch(size, layout, hw, data, model, itemsize)
