"""Scaling a model: its training state, its layouts, their communication and cost.

Chapter 6 asks the questions of a first large training run (does the model
fit, what does each device hold, which layout sends the fewest bytes, when
does communication set the step time) and answers each twice: by a formula,
and by reading the program XLA compiled. This module holds both halves, so
the chapter, its exercises and its explorer share one definition:

* the model: :class:`Size` and a stack of residual MLP blocks
  (:func:`init_params`, :func:`forward`, :func:`loss`), trained with Adam;
* the layouts (:data:`LAYOUTS`): where each parameter lives
  (:func:`param_specs`) and a training step written with shardings
  (:func:`make_step`), or per device with ``shard_map``
  (:func:`fsdp_step_shard_map`, :func:`tp_step_shard_map`);
* memory: :func:`state_bytes` (the formula) against
  :func:`compiled_memory` (XLA's ``memory_analysis()``);
* communication: :func:`predicted_collectives` (from the layout) against
  :func:`compiled_collectives` (from the compiled HLO), both priced by
  :func:`ring_bytes`;
* the roofline: :data:`HARDWARE`, :func:`step_flops`,
  :func:`step_time` and :func:`critical_batch`.

The model is deliberately plain, a deep MLP with the transformer's block shape
(width ``d``, hidden ``4 d``, a residual connection), so that every byte can be
counted by hand. Its size is one number, the width; the depth is fixed per
chapter. Everything is float32 here; real runs keep parameters in bfloat16 or
float32 and the formulas take the item size as an argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

__all__ = [
    "HARDWARE",
    "LAYOUTS",
    "Collective",
    "Hardware",
    "Size",
    "collective_steps",
    "collective_summary",
    "compile_from_shapes",
    "compiled_collectives",
    "compiled_memory",
    "critical_batch",
    "fsdp_step_shard_map",
    "forward",
    "init_params",
    "loss",
    "make_batch",
    "make_step",
    "param_count",
    "param_specs",
    "predicted_collectives",
    "ring_bytes",
    "state_bytes",
    "step_flops",
    "spec_tree",
    "step_time",
    "tp_step_shard_map",
]

#: The four layouts, by the names the chapter uses.
LAYOUTS = ("data parallel", "FSDP", "tensor parallel", "FSDP + TP")
#: Bytes per float32 number.
F32 = 4
#: The mesh axes: the batch is split over "data", the MLP's hidden units over "model".
DATA, MODEL = "data", "model"


class Size(NamedTuple):
    """The model's shape.

    Attributes
    ----------
    width : int
        ``d``: the size of the residual stream (each block's input and output).
    layers : int
        The number of MLP blocks.
    """

    width: int
    layers: int

    @property
    def hidden(self) -> int:
        """The hidden width of each block, ``4 d`` as in a transformer's MLP."""
        return 4 * self.width


def param_count(size: Size) -> int:
    """Return the number of parameters: two ``d × 4d`` matrices per block."""
    return size.layers * 2 * size.width * size.hidden


def init_params(key: jax.Array, size: Size) -> list[dict[str, jax.Array]]:
    """Return one ``{"w_in", "w_out"}`` dict per block, scaled for unit variance."""
    keys = jax.random.split(key, 2 * size.layers)
    d, f = size.width, size.hidden
    return [
        {"w_in": jax.random.normal(keys[2 * i], (d, f)) / np.sqrt(d),
         "w_out": jax.random.normal(keys[2 * i + 1], (f, d)) / np.sqrt(f)}
        for i in range(size.layers)
    ]


def make_batch(key: jax.Array, size: Size, batch: int) -> tuple[jax.Array, jax.Array]:
    """Return inputs and regression targets of shape ``(batch, d)``."""
    k_x, k_y = jax.random.split(key)
    return (jax.random.normal(k_x, (batch, size.width)),
            jax.random.normal(k_y, (batch, size.width)))


def _identity(w: jax.Array) -> jax.Array:
    return w


def forward(params: Sequence[dict[str, jax.Array]], x: jax.Array,
            use: Callable[[jax.Array], jax.Array] = _identity,
            out_sharding: Any = None, remat: bool = False) -> jax.Array:
    """Run the blocks ``x + relu(x @ w_in) @ w_out``.

    Parameters
    ----------
    params : sequence of dict
        The blocks' weights, as :func:`init_params` makes them.
    x : jax.Array
        Inputs ``(batch, d)``.
    use : callable
        Applied to each weight before it is used: the identity, or the
        all-gather of a fully sharded weight (FSDP).
    out_sharding : PartitionSpec or None
        The layout of ``h @ w_out``; tensor parallelism names it, since the
        product sums over the split hidden units (one all-reduce per block).
    remat : bool
        Wrap each block in ``jax.checkpoint``: its backward pass recomputes
        the block's inside (the hidden activations, and any gathered weight)
        from its input instead of keeping them.
    """
    def block_fn(block, x):
        hidden = jax.nn.relu(x @ use(block["w_in"]))
        return x + jnp.matmul(hidden, use(block["w_out"]), out_sharding=out_sharding)

    if remat:
        block_fn = jax.checkpoint(block_fn)
    for block in params:
        x = block_fn(block, x)
    return x


def loss(params: Sequence[dict[str, jax.Array]], x: jax.Array, y: jax.Array,
         use: Callable[[jax.Array], jax.Array] = _identity,
         out_sharding: Any = None, remat: bool = False) -> jax.Array:
    """Return the mean squared error of :func:`forward` against ``y``."""
    return jnp.mean((forward(params, x, use, out_sharding, remat) - y) ** 2)


# --------------------------------------------------------------------------
# Layouts
# --------------------------------------------------------------------------


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")


def param_specs(layout: str) -> dict[str, P]:
    """Return where each weight of a block lives, for ``layout``.

    Data parallelism replicates them; FSDP splits each weight's first
    dimension over ``"data"``; tensor parallelism splits ``w_in`` by columns
    and ``w_out`` by rows over ``"model"`` (Megatron-LM's MLP), so the hidden
    units are split and a block needs one reduction; FSDP + TP does both.
    """
    _check_layout(layout)
    return {
        "data parallel": {"w_in": P(), "w_out": P()},
        "FSDP": {"w_in": P(DATA, None), "w_out": P(DATA, None)},
        "tensor parallel": {"w_in": P(None, MODEL), "w_out": P(MODEL, None)},
        "FSDP + TP": {"w_in": P(DATA, MODEL), "w_out": P(MODEL, DATA)},
    }[layout]


def _gather_over_data(layout: str) -> Callable[[jax.Array], jax.Array]:
    """Return the weights' all-gather over ``"data"`` before use (FSDP layouts)."""
    if layout == "FSDP":
        return lambda w: jax.reshard(w, P())
    if layout == "FSDP + TP":
        def gather(w: jax.Array) -> jax.Array:
            # Keep the "model" split, undo the "data" one.
            spec = jax.typeof(w).sharding.spec
            return jax.reshard(w, P(*(None if e == DATA else e for e in spec)))
        return gather
    return _identity


def make_step(layout: str, optimizer: Any, remat: bool = False) -> Callable:
    """Return a training step for ``layout``, written with shardings (Explicit mode).

    The step takes ``(params, opt_state, x, y)`` laid out as the layout says
    (see :func:`place`) and returns the new parameters, the new optimizer
    state and the loss. Under ``jax.jit`` with a mesh set (axes ``"data"``
    and, for the tensor-parallel layouts, ``"model"``), JAX inserts every
    collective the layouts imply.
    """
    _check_layout(layout)
    use = _gather_over_data(layout)
    # The product over split hidden units must say where its result goes.
    out = P(DATA, None) if layout in ("tensor parallel", "FSDP + TP") else None

    def step(params, opt_state, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y, use, out, remat)
        params, opt_state = _apply_update(optimizer, grads, opt_state, params)
        return params, opt_state, value

    return step


def place(tree: Any, layout: str) -> Any:
    """Lay out a tree of block weights (or Adam moments shaped like them).

    Leaves whose dict key is ``w_in`` or ``w_out`` follow
    :func:`param_specs`; everything else (the step count) is replicated. Needs
    ``jax.set_mesh`` with the layout's axes.
    """
    return jax.device_put(tree, spec_tree(tree, layout))


def spec_tree(tree: Any, layout: str) -> Any:
    """Return the ``PartitionSpec`` of every leaf of ``tree`` under ``layout``.

    Leaves whose dict key is ``w_in`` or ``w_out`` (weights, or Adam's moments
    of them) get :func:`param_specs`'s; every other leaf, such as Adam's step
    count, is replicated.
    """
    specs = param_specs(layout)

    def spec_of(path, leaf):
        key = getattr(path[-1], "key", None) if path else None
        return specs.get(key, P()) if getattr(leaf, "ndim", 0) == 2 else P()

    return jax.tree_util.tree_map_with_path(spec_of, tree)


def _apply_update(optimizer: Any, grads: Any, opt_state: Any, params: Any):
    """Return the parameters and optimizer state after one optimizer update."""
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return jax.tree.map(lambda p, u: p + u, params, updates), opt_state


def fsdp_step_shard_map(optimizer: Any, mesh: Any, remat: bool = False) -> Callable:
    """Return FSDP's step per device: all-gather weights, reduce-scatter gradients.

    Each device holds ``1/n`` of every weight's rows, and of Adam's moments.
    The forward pass gathers each weight (``all_gather``); differentiating an
    ``all_gather`` gives its transpose, a ``psum_scatter``, so the gradients
    come back already summed and split like the weights. The optimizer then
    updates each device's slice on its own.
    """
    def per_device(params, opt_state, x, y):
        def local_loss(params):
            gather = lambda w: jax.lax.all_gather(w, DATA, tiled=True)  # noqa: E731
            # The mean over the global batch: each device's mean, averaged.
            return jax.lax.pmean(loss(params, x, y, gather, remat=remat), DATA)

        value, grads = jax.value_and_grad(local_loss)(params)
        params, opt_state = _apply_update(optimizer, grads, opt_state, params)
        return params, opt_state, value

    return _with_specs(per_device, mesh, "FSDP")


def tp_step_shard_map(optimizer: Any, mesh: Any) -> Callable:
    """Return Megatron's tensor-parallel step per device: one ``psum`` per block.

    Each device holds ``w_in``'s columns and ``w_out``'s rows for its share of
    the hidden units, computes a partial output of every block, and one
    ``psum`` over ``"model"`` completes it. The backward pass needs one more
    per block (the transpose of the forward's ``psum`` is free; the gradient
    reaching a block's input is a sum over the split units). The batch may be
    split over ``"data"`` too: then the gradients are averaged over it.
    """
    def per_device(params, opt_state, x, y):
        def local_loss(params):
            h = x
            for block in params:
                partial = jax.nn.relu(h @ block["w_in"]) @ block["w_out"]
                h = h + jax.lax.psum(partial, MODEL)
            return jax.lax.pmean(jnp.mean((h - y) ** 2), DATA)

        value, grads = jax.value_and_grad(local_loss)(params)
        params, opt_state = _apply_update(optimizer, grads, opt_state, params)
        return params, opt_state, value

    return _with_specs(per_device, mesh, "tensor parallel")


def _with_specs(per_device: Callable, mesh: Any, layout: str) -> Callable:
    def step(params, opt_state, x, y):
        p_specs, o_specs = spec_tree(params, layout), spec_tree(opt_state, layout)
        batch = P(DATA, None)
        return jax.shard_map(per_device, mesh=mesh,
                             in_specs=(p_specs, o_specs, batch, batch),
                             out_specs=(p_specs, o_specs, P()))(params, opt_state, x, y)

    return step


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------


def _shards(layout: str, data: int, model: int) -> int:
    """How many pieces each weight is cut into under ``layout``."""
    _check_layout(layout)
    return {"data parallel": 1, "FSDP": data, "tensor parallel": model,
            "FSDP + TP": data * model}[layout]


def state_bytes(size: Size, layout: str, data: int = 1, model: int = 1,
                itemsize: int = F32) -> dict[str, int]:
    """Return each part of the training state held by one device, in bytes.

    Parameters
    ----------
    size : Size
        The model.
    layout : str
        One of :data:`LAYOUTS`.
    data, model : int
        The mesh's sizes along ``"data"`` and ``"model"``.
    itemsize : int
        Bytes per number.

    Returns
    -------
    dict
        ``params``, ``grads`` and ``adam`` (the two moments), and their
        ``total``. Adam's step count (4 bytes) is left out: it is too small
        to matter and the same everywhere.
    """
    per_device = param_count(size) * itemsize // _shards(layout, data, model)
    parts = {"params": per_device, "grads": per_device, "adam": 2 * per_device}
    parts["total"] = sum(parts.values())
    return parts


def compiled_memory(compiled: Any) -> dict[str, int]:
    """Return XLA's memory analysis of a compiled program, per device, in bytes.

    ``arguments`` and ``outputs`` are the buffers passed in and returned,
    ``temp`` the scratch space, ``alias`` the bytes of outputs written into
    donated arguments; ``peak`` is what the program needs at once:
    arguments + outputs + temp - alias.
    """
    stats = compiled.memory_analysis()
    found = {
        "arguments": int(stats.argument_size_in_bytes),
        "outputs": int(stats.output_size_in_bytes),
        "temp": int(stats.temp_size_in_bytes),
        "alias": int(stats.alias_size_in_bytes),
    }
    found["peak"] = (found["arguments"] + found["outputs"] + found["temp"]
                     - found["alias"])
    return found


def compile_from_shapes(size: Size, layout: str, batch: int, data: int = 1,
                        model: int = 1, optimizer: Any = None) -> Any:
    """Compile ``layout``'s training step from shapes alone, allocating nothing.

    The parameters, Adam's state and the batch are given to ``jax.jit`` as
    ``jax.ShapeDtypeStruct`` with the layout's shardings on a ``data × model``
    mesh of the first ``data * model`` devices, so that a learner can read a
    large program's :func:`compiled_memory` and :func:`compiled_collectives`
    without the memory to run it.

    Raises
    ------
    ValueError
        If JAX has fewer than ``data * model`` devices, or the batch does not
        split over ``data``.
    """
    import optax
    from jax.sharding import AxisType, NamedSharding

    _check_layout(layout)
    have = len(jax.devices())
    if have < data * model:
        raise ValueError(f"a {data}×{model} mesh needs {data * model} devices; JAX has "
                         f"{have} (call jaxcourse.devices.use_cpu_devices first)")
    if batch % data:
        raise ValueError(f"a batch of {batch} does not split over {data} devices")
    optimizer = optimizer or optax.adam(1e-3)
    mesh = jax.make_mesh((data, model), (DATA, MODEL),
                         axis_types=(AxisType.Explicit, AxisType.Explicit),
                         devices=jax.devices()[:data * model])
    params = jax.eval_shape(lambda key: init_params(key, size), jax.random.key(0))
    opt_state = jax.eval_shape(optimizer.init, params)

    def shaped(tree: Any) -> Any:
        return jax.tree.map(
            lambda leaf, spec: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                                    sharding=NamedSharding(mesh, spec)),
            tree, spec_tree(tree, layout))

    batch_shape = jax.ShapeDtypeStruct((batch, size.width), jnp.float32,
                                       sharding=NamedSharding(mesh, P(DATA, None)))
    with jax.set_mesh(mesh):
        step = jax.jit(make_step(layout, optimizer))
        return step.lower(shaped(params), shaped(opt_state), batch_shape,
                          batch_shape).compile()


# --------------------------------------------------------------------------
# Communication
# --------------------------------------------------------------------------


class Collective(NamedTuple):
    """One collective of a program.

    Attributes
    ----------
    kind : str
        ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all`` or
        ``collective-permute``.
    nbytes : int
        The bytes of the whole operand: for an all-gather its output, for a
        reduce-scatter its input, for an all-reduce its input (= output).
    group : int
        The number of devices taking part in each group.
    """

    kind: str
    nbytes: int
    group: int


KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
         "collective-permute")
_ITEMSIZE = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "f64": 8, "s8": 1,
             "u8": 1, "pred": 1, "s64": 8}
_INSTRUCTION = re.compile(
    r"=\s*(?P<shape>\(.*?\)|\S+)\s+(?P<kind>" + "|".join(KINDS) + r")(?:-start)?\(")
_ARRAY = re.compile(r"(\w+)\[([\d,]*)\]")


def _shape_bytes(text: str) -> int:
    total = 0
    for dtype, dims in _ARRAY.findall(text):
        count = int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
        total += count * _ITEMSIZE.get(dtype, 4)
    return total


def _group_size(line: str) -> int:
    # Three spellings of replica groups in XLA's text: explicit lists
    # {{0,1},{2,3}}, iota tiles [groups,size]<=[n], and named mesh axes
    # mesh['a'=4,'b'=2] {'a'}.
    if (found := re.search(r"replica_groups=\{\{([\d,]*)\}", line)):
        return len(found.group(1).split(","))
    if (found := re.search(r"replica_groups=\[(\d+),(\d+)\]<=", line)):
        return int(found.group(2))
    if (found := re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", line)):
        sizes = dict(re.findall(r"'(\w+)'=(\d+)", found.group(1)))
        axes = re.findall(r"'(\w+)'", found.group(2))
        return int(np.prod([int(sizes[a]) for a in axes]))
    if (found := re.search(r"source_target_pairs=\{(.*?)\}\s*[,}]", line)):
        return len(re.findall(r"\{", found.group(1))) or 1
    return 1


def compiled_collectives(compiled: Any) -> list[Collective]:
    """Return every collective operand in a compiled program's HLO, in order.

    ``compiled`` is the result of ``jax.jit(f).lower(*args).compile()``. XLA
    combines small all-reduces into one instruction over a tuple of operands;
    each operand is returned as a collective of its own, since that is what
    the program would do without the combining (and the bytes are the same).
    The shapes XLA prints are per device; the bytes returned are those of the
    whole operand (see :class:`Collective`).
    """
    found = []
    for line in compiled.as_text().splitlines():
        match = _INSTRUCTION.search(line)
        if not match:
            continue
        kind, group = match.group("kind"), _group_size(line)
        if group <= 1:
            continue  # over a mesh axis of size 1: nothing moves
        for dtype, dims in _ARRAY.findall(match.group("shape")):
            out_bytes = _shape_bytes(f"{dtype}[{dims}]")
            nbytes = out_bytes * group if kind == "reduce-scatter" else out_bytes
            found.append(Collective(kind, nbytes, group))
    return found


def ring_bytes(kind: str, nbytes: int, group: int) -> float:
    """Return the bytes one device sends for a collective on a ring of ``group``.

    Each device sends ``(n - 1) / n`` of the operand for an all-gather or a
    reduce-scatter (``n - 1`` steps of one ``1/n`` piece), twice that for an
    all-reduce (a reduce-scatter, then an all-gather), and the whole operand
    for a ``collective-permute``, and ``(n - 1) / 2`` of the device's
    operand for an all-to-all (pieces are forwarded round the ring).
    """
    if group <= 1:
        return 0.0
    factor = (group - 1) / group
    if kind in ("all-gather", "reduce-scatter"):
        return nbytes * factor
    if kind == "all-reduce":
        return 2 * nbytes * factor
    if kind == "collective-permute":
        return float(nbytes)
    if kind == "all-to-all":
        # On the same one-way ring, the piece for the device k hops away is
        # forwarded k times: (1 + ... + (n - 1)) pieces of nbytes / n
        # (jaxcourse.collectives.bytes_sent prices direct links too).
        return nbytes * (group - 1) / 2
    raise ValueError(f"unknown collective {kind!r}; expected one of {KINDS}")


def collective_summary(found: Sequence[Collective]) -> dict[str, Any]:
    """Count collectives by kind and total the bytes one device sends."""
    counts = {kind: 0 for kind in KINDS}
    for item in found:
        counts[item.kind] += 1
    sent = sum(ring_bytes(c.kind, c.nbytes, c.group) for c in found)
    return {"counts": {k: v for k, v in counts.items() if v}, "bytes": sent}


def predicted_collectives(size: Size, layout: str, batch: int, data: int = 1,
                          model: int = 1, itemsize: int = F32,
                          regather: bool = False) -> list[Collective]:
    """Return the collectives one training step of ``layout`` needs, by reasoning.

    Parameters
    ----------
    size : Size
        The model.
    layout : str
        One of :data:`LAYOUTS`.
    batch : int
        The global batch.
    data, model : int
        The mesh's sizes.
    itemsize : int
        Bytes per number.
    regather : bool
        For the FSDP layouts: whether the backward pass gathers each weight
        again (ZeRO-3 proper, or FSDP under ``jax.checkpoint``) rather than
        keeping the forward pass's gathered copy.

    Returns
    -------
    list of Collective
        One entry per operand. Whenever the batch is split, the loss (one
        number) is summed over ``"data"``. Data parallel: an all-reduce of
        every weight's gradient over ``"data"``. FSDP: an all-gather of every
        weight (twice with ``regather``) and a reduce-scatter of every
        gradient. Tensor parallel: an all-reduce of a ``(batch / data, d)``
        activation per block forward, and per block but the first backward,
        over ``"model"``, plus the all-reduce of each weight piece's gradient
        over ``"data"`` when the batch is split. FSDP + TP: FSDP's collectives
        on each weight's ``1/model`` piece, over ``"data"``, and tensor
        parallelism's activations over ``"model"``.
    """
    _check_layout(layout)
    weight = size.width * size.hidden * itemsize  # bytes of one weight matrix
    weights = 2 * size.layers
    found: list[Collective] = []
    if data > 1:
        # The loss, a mean over the whole batch: each group's sum, summed.
        found.append(Collective("all-reduce", itemsize, data))
    if layout == "data parallel":
        found += [Collective("all-reduce", weight, data)] * weights
    if layout in ("FSDP", "FSDP + TP"):
        piece = weight // (model if layout == "FSDP + TP" else 1)
        gathers = weights * (2 if regather else 1)
        found += [Collective("all-gather", piece, data)] * gathers
        found += [Collective("reduce-scatter", piece, data)] * weights
    if layout in ("tensor parallel", "FSDP + TP"):
        activation = batch // data * size.width * itemsize
        # Forward, one per block; backward, one per block but the first (no
        # gradient is needed for the inputs themselves).
        found += [Collective("all-reduce", activation, model)] * (2 * size.layers - 1)
        if layout == "tensor parallel" and data > 1:
            found += [Collective("all-reduce", weight // model, data)] * weights
    return found


def collective_steps(size: Size, layout: str, batch: int, data: int = 1,
                     model: int = 1, n: int = 4) -> list[tuple[str, str, np.ndarray]]:
    """Return the collectives of ``layout``'s step, as blocks to draw.

    Each entry is ``(lax name, what it moves × how many per step, blocks)``
    for :func:`jaxcourse.collectives.draw_steps`, drawn on ``n`` devices: a
    weight cut into ``n`` pieces is gathered, a gradient or a partial
    activation is summed (everywhere, or one piece per device). The counts
    are :func:`predicted_collectives`' for one step of ``size`` at ``batch``
    on a ``data × model`` mesh, the loss's one-number sum left out.
    """
    _check_layout(layout)
    activation = batch // data * size.width * F32
    counts = {"weight": 0, "gradient": 0, "activation": 0}
    for c in predicted_collectives(size, layout, batch, data, model):
        if c.kind == "all-gather":
            counts["weight"] += 1
        elif c.kind == "reduce-scatter" or (c.kind == "all-reduce" and c.group == data
                                            and c.nbytes > F32):
            counts["gradient"] += 1
        elif c.kind == "all-reduce" and c.group == model and c.nbytes == activation:
            counts["activation"] += 1
    pieces = np.arange(n, dtype=float)[:, None]         # device d holds piece d
    partial = np.ones((n, n))                           # every device a partial sum
    steps = {"data parallel": [("psum", "gradient")],
             "FSDP": [("all_gather", "weight"), ("psum_scatter", "gradient")],
             "tensor parallel": [("psum", "activation")],
             "FSDP + TP": [("all_gather", "weight"), ("psum", "activation"),
                           ("psum_scatter", "gradient")]}[layout]
    return [(name, f"{what} × {counts[what]}",
             pieces if name == "all_gather" else partial) for name, what in steps]


# --------------------------------------------------------------------------
# The roofline
# --------------------------------------------------------------------------


class Hardware(NamedTuple):
    """One accelerator, from its vendor's published specifications.

    Attributes
    ----------
    name : str
        The chip.
    flops : float
        Peak dense bfloat16 matrix FLOP/s per chip.
    hbm : float
        Memory per chip, bytes.
    hbm_bandwidth : float
        Memory bandwidth, bytes/s.
    link_bandwidth : float
        Bandwidth for collectives between chips, bytes/s one way per chip
        (NVLink, or the TPU's inter-chip interconnect).
    source : str
        Where the numbers come from (``book/references.md`` gives the pages).
    """

    name: str
    flops: float
    hbm: float
    hbm_bandwidth: float
    link_bandwidth: float
    source: str


#: Real chips (dense bf16 peak; see ``book/references.md``).
HARDWARE: dict[str, Hardware] = {
    "H100 SXM": Hardware("H100 SXM", 989e12, 80e9, 3.35e12, 450e9,
                         "NVIDIA H100 datasheet: 989 TFLOP/s bf16 dense, 80 GB HBM3 "
                         "at 3.35 TB/s, NVLink 900 GB/s (450 GB/s each way)"),
    "A100 SXM 80GB": Hardware("A100 SXM 80GB", 312e12, 80e9, 2.039e12, 300e9,
                              "NVIDIA A100 datasheet: 312 TFLOP/s bf16 dense, 80 GB "
                              "HBM2e at 2,039 GB/s, NVLink 600 GB/s (300 each way)"),
    "TPU v5e": Hardware("TPU v5e", 197e12, 16e9, 819e9, 200e9,
                        "Google Cloud TPU v5e: 197 TFLOP/s bf16, 16 GB HBM2 at "
                        "819 GB/s, ICI 1,600 Gbps per chip"),
    "TPU v5p": Hardware("TPU v5p", 459e12, 95e9, 2.765e12, 600e9,
                        "Google Cloud TPU v5p: 459 TFLOP/s bf16, 95 GB HBM2e at "
                        "2,765 GB/s, ICI 4,800 Gbps per chip"),
}


def step_flops(size: Size, batch: int) -> float:
    """Return the FLOPs of one training step: 6 per parameter per example.

    A matrix product of ``(b, m) @ (m, n)`` costs ``2 b m n`` FLOPs; the
    forward pass does one per weight, the backward pass two (the gradient
    for the input and for the weight). The elementwise work is left out.
    """
    return 6.0 * batch * param_count(size)


def step_time(size: Size, layout: str, batch: int, hw: Hardware, data: int = 1,
              model: int = 1, itemsize: int = 2) -> dict[str, float]:
    """Return the roofline estimate of one step, per device, in seconds.

    ``compute`` is the device's share of :func:`step_flops` at ``hw.flops``;
    ``communication`` the bytes :func:`predicted_collectives` sends (ZeRO-3's
    re-gather for FSDP) over ``hw.link_bandwidth``; ``step`` their maximum,
    as if the two overlap perfectly (the best case). bfloat16 by default.
    """
    devices = data * model
    compute = step_flops(size, batch) / devices / hw.flops
    sent = sum(ring_bytes(c.kind, c.nbytes, c.group) for c in predicted_collectives(
        size, layout, batch, data, model, itemsize, regather=True))
    communication = sent / hw.link_bandwidth
    return {"compute": compute, "communication": communication,
            "step": max(compute, communication)}


def critical_batch(size: Size, layout: str, hw: Hardware, data: int = 1,
                   model: int = 1, itemsize: int = 2) -> float:
    """Return the batch per data-parallel group above which a step is compute-bound.

    For data parallelism and FSDP the bytes sent do not grow with the batch
    and the FLOPs do, so compute wins above a batch; solving
    ``compute = communication`` gives it. Tensor parallelism's bytes grow with
    the batch too, so its ratio does not depend on the batch: the result is
    ``0`` when it is compute-bound at every batch and ``inf`` when never.
    """
    probe = max(data, 1) * 1024
    t = step_time(size, layout, probe, hw, data, model, itemsize)
    if layout == "tensor parallel" and data == 1:
        return 0.0 if t["compute"] >= t["communication"] else float("inf")
    fixed = t["communication"]
    if layout in ("tensor parallel", "FSDP + TP"):
        # Separate the part that grows with the batch (activations).
        grows = step_time(size, layout, 2 * probe, hw, data, model, itemsize)
        slope = grows["communication"] - fixed
        fixed = fixed - slope
        per_example = t["compute"] / probe - slope / probe
        if per_example <= 0:
            return float("inf")
        return fixed / per_example / max(data, 1)
    return fixed / (t["compute"] / probe) / max(data, 1)
