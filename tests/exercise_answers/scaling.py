"""Answers to chapter 6's exercises (topic ``scaling``), as learners write them.

What checking each must give is in ``scaling.toml``. ``fsdp_specs`` and
``tp_mlp`` need 8 devices: the contract checks them in a process that asks for
8 devices before it imports this module (nothing here touches a device).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import scaling
from jaxcourse.scaling import LAYOUTS, Size
from solutions.scaling import MESHES


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


# -- exercise 2: fsdp_specs
def specs_columns(params):
    return jax.tree.map(lambda w: P(None, "data"), params)


def specs_model_axis(params):
    return [{k: P("model") for k in block} for block in params]


def specs_all_replicated(params):
    return jax.tree.map(lambda w: P(), params)


def specs_both(params):
    return jax.tree.map(lambda w: P("data", "model"), params)


def specs_flat_list(params):  # one spec per weight, but the tree is lost
    return [P("data", None) for _ in jax.tree.leaves(params)]


def specs_short(params):  # correct: trailing None may be left out
    return jax.tree.map(lambda w: P("data"), params)


def specs_comprehension(params):  # correct
    return [{"w_in": P("data", None), "w_out": P("data", None)} for _ in params]


def specs_by_rank(params):  # correct: one entry per dimension
    return jax.tree.map(lambda w: P("data", *([None] * (w.ndim - 1))), params)


# -- exercise 3: tp_mlp
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


# -- exercise 4: collective_bytes
def bytes_no_two(kind, nbytes, n):
    return nbytes * (n - 1) / n


def bytes_whole(kind, nbytes, n):
    if n == 1:
        return 0
    return 2 * nbytes if kind == "all-reduce" else nbytes


def bytes_each_other(kind, nbytes, n):
    times = 2 if kind == "all-reduce" else 1
    return times * nbytes * (n - 1)


def bytes_inverted(kind, nbytes, n):
    if n == 1:
        return 0.0
    times = 2 if kind == "all-reduce" else 1
    return times * nbytes * n / (n - 1)


def bytes_module(kind, nbytes, n):  # correct: the chapter's function
    return scaling.ring_bytes(kind, nbytes, n)


def bytes_steps(kind, nbytes, n):  # correct: n - 1 steps of one piece
    steps = (n - 1) * (2 if kind == "all-reduce" else 1)
    return steps * (nbytes / n)


def bytes_table(kind, nbytes, n):  # correct
    factor = {"all-reduce": 2.0, "all-gather": 1.0, "reduce-scatter": 1.0}[kind]
    return factor * nbytes * (1 - 1 / n)


# -- exercise 5: best_layout
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
    return min(fit, key=lambda c: scaling.state_bytes(size, c[0], *c[1])["total"])


def best_any_mesh(size, batch, budget_bytes):
    fit = [c for c in _candidates(every=True) if _fits(size, *c, budget_bytes)]
    return min(fit, key=lambda c: round(_sent(size, c[0], batch, c[1])))


def best_operands(size, batch, budget_bytes):
    fit = [c for c in _candidates() if _fits(size, *c, budget_bytes)]
    return min(fit, key=lambda c: sum(
        x.nbytes for x in scaling.predicted_collectives(size, c[0], batch, *c[1])))


def best_last_tie(size, batch, budget_bytes):
    best = None
    for c in _candidates():
        if _fits(size, *c, budget_bytes):
            sent = round(_sent(size, c[0], batch, c[1]))
            if best is None or sent <= best[0]:
                best = (sent, c)
    return best[1]


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
    layout, mesh = best_loop(size, batch, budget_bytes)
    return [layout, list(mesh)]


# -- exercise 6: critical_batch
def critical_two_passes(hw_flops, link_bandwidth, itemsize, n):
    return 2 * (n - 1) / n * itemsize / link_bandwidth * hw_flops / 6


def critical_no_ring(hw_flops, link_bandwidth, itemsize, n):
    return 3 * itemsize * hw_flops / (6 * link_bandwidth)


def critical_two_flops(hw_flops, link_bandwidth, itemsize, n):
    return 3 * (n - 1) / n * itemsize * hw_flops / (2 * link_bandwidth)


def critical_upside_down(hw_flops, link_bandwidth, itemsize, n):
    return 3 * (n - 1) / n * itemsize * link_bandwidth / (6 * hw_flops)


def critical_simplified(hw_flops, link_bandwidth, itemsize, n):  # correct
    return (n - 1) / n * itemsize * hw_flops / (2 * link_bandwidth)


def critical_solved(hw_flops, link_bandwidth, itemsize, n):  # correct, P kept
    params = 1e9
    comm_time = 3 * (n - 1) / n * params * itemsize / link_bandwidth
    flops_per_example = 6 * params
    return comm_time * hw_flops / flops_per_example


def critical_from_module(hw_flops, link_bandwidth, itemsize, n):  # correct
    hw = scaling.Hardware("mine", hw_flops, 0.0, 0.0, link_bandwidth, "")
    size = Size(4096, 16)
    # The chapter's function counts the loss's all-reduce too: a few bytes.
    found = scaling.critical_batch(size, "FSDP", hw, data=n, itemsize=itemsize)
    loss = 2 * (n - 1) / n * itemsize / link_bandwidth * hw_flops \
        / (6 * scaling.param_count(size))
    return found - loss
