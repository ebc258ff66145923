"""Tensor parallelism's split vocabulary: the embedding, the output layer, the loss.

Run by tests/test_vocab_parallel.py in a pytest process of its own: these
cases need eight CPU devices, and JAX fixes its device count when it starts.
Megatron-LM's ``VocabParallelEmbedding`` and ``vocab_parallel_cross_entropy``
(``megatron/core/tensor_parallel/layers.py``, ``cross_entropy.py``), as the
course's layouts run them (:mod:`jaxcourse.transformer.layouts`).
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.devices import use_cpu_devices

use_cpu_devices(8)  # before any array: the layouts need a mesh of 8

from jax.sharding import AxisType  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from jaxcourse import transformer  # noqa: E402
from jaxcourse.scaling import compiled_collectives  # noqa: E402
from jaxcourse.scaling.memory import residual_bytes, saved_residuals  # noqa: E402
from jaxcourse.transformer import DATA, MODEL, Config  # noqa: E402

TP_LAYOUTS = [name for name, lay in transformer.LAYOUTS.items() if lay.tp]
SHAPES = [(1, 2), (2, 2), (1, 4), (2, 4), (4, 2), (1, 8)]


def _case(seed: int) -> tuple[Config, str, tuple[int, int], int, int, int]:
    """A random small model, a TP layout, a mesh, a batch, a sequence, a chunk.

    The model axis divides the heads, the key/value heads and the vocabulary
    (whose size is otherwise random), the data axis the batch, and under
    sequence parallelism the model axis the sequence.
    """
    rng = np.random.default_rng(seed)
    layout = TP_LAYOUTS[seed % len(TP_LAYOUTS)]
    data, model = SHAPES[int(rng.integers(len(SHAPES)))]
    kv_heads = model * int(rng.choice([1, 2]))
    heads = kv_heads * int(rng.choice([1, 2]))
    head_dim = int(rng.choice([4, 8]))
    cfg = Config(vocab=model * int(rng.integers(5, 40)), d_model=heads * head_dim,
                 layers=int(rng.integers(1, 3)), heads=heads, kv_heads=kv_heads,
                 hidden=model * int(rng.integers(3, 12)))
    batch = data * int(rng.integers(1, 3))
    seq = model * int(rng.integers(2, 5))
    chunk = int(rng.choice([0, seq // 2])) if seq % 2 == 0 else 0
    return cfg, layout, (data, model), batch, seq, chunk


def _mesh(shape: tuple[int, int]):
    devices = jax.devices()[:shape[0] * shape[1]]
    return jax.make_mesh(shape, (DATA, MODEL), devices=devices,
                         axis_types=(AxisType.Explicit,) * 2)


def _tokens(cfg: Config, batch: int, seq: int, seed: int):
    tokens = jax.random.randint(jax.random.key(seed), (batch, seq + 1), 0, cfg.vocab)
    return tokens[:, :-1], tokens[:, 1:]


def _within(got, want, scale, tolerance: float) -> float:
    # tests/transformer_cases.py's normwise bound: the worst ratio (<= 1 passes).
    ratios = jax.tree.map(
        lambda g, w, s: float(jnp.max(jnp.abs(g - w)) / (tolerance * jnp.max(s))),
        got, want, scale)
    return max(jax.tree.leaves(ratios))


def _split_grad(cfg, layout, shape, params, inputs, targets, chunk=0):
    mesh = _mesh(shape)
    per_device = transformer.make_grad_fn(
        cfg, hooks=transformer.layout_hooks(layout),
        reduce=lambda v: jax.lax.pmean(v, DATA), loss_chunk=chunk)
    specs = transformer.spec_tree(params, layout)
    tokens = transformer.batch_spec(layout)
    fn = jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(specs, tokens, tokens),
                               out_specs=(P(), specs)))
    args = (transformer.place(params, layout, mesh),
            transformer.place(inputs, layout, mesh, tokens=True),
            transformer.place(targets, layout, mesh, tokens=True))
    compiled = fn.lower(*args).compile()
    return compiled, compiled(*args)


@pytest.mark.parametrize("seed", range(4))
def test_the_split_vocabulary_is_the_one_device_loss_and_gradient(seed: int) -> None:
    cfg, layout, shape, batch, seq, chunk = _case(seed)
    params = transformer.init_params(jax.random.key(seed), cfg)
    inputs, targets = _tokens(cfg, batch, seq, seed)
    value, grads = jax.jit(transformer.make_grad_fn(cfg))(params, inputs, targets)
    scale = transformer.per_example_grad_sum(params, inputs, targets, cfg)
    tolerance = transformer.gradient_tolerance(cfg, batch, seq)
    # The layout's own step (its mean over "data"), and the loss in chunks.
    mesh = _mesh(shape)
    placed = (transformer.place(params, layout, mesh),
              transformer.place(inputs, layout, mesh, tokens=True),
              transformer.place(targets, layout, mesh, tokens=True))
    compiled = jax.jit(transformer.sharded_grad_fn(cfg, layout, mesh)).lower(
        *placed).compile()
    got_value, got = compiled(*placed)
    assert abs(float(got_value - value)) <= tolerance * float(value)
    assert _within(got, grads, scale, tolerance) <= 1
    # Each device holds vocab / model rows of the embedding, columns of the
    # output layer (and, under FSDP, 1 / data of the other dimension).
    lay = transformer.LAYOUTS[layout]
    cut = shape[0] if lay.fsdp else 1
    assert placed[0]["embed"].addressable_shards[0].data.shape == (
        cfg.vocab // shape[1], cfg.d_model // cut)
    assert placed[0]["unembed"].addressable_shards[0].data.shape == (
        cfg.d_model // cut, cfg.vocab // shape[1])
    # The collectives the compiled program prints are the predicted ones.
    predicted = transformer.predicted_collectives(cfg, layout, batch, seq, *shape)
    assert Counter(compiled_collectives(compiled)) == Counter(predicted)
    if chunk:
        _, (chunked, chunked_grads) = _split_grad(cfg, layout, shape, params, inputs,
                                                  targets, chunk)
        assert abs(float(chunked - value)) <= tolerance * float(value)
        assert _within(chunked_grads, grads, scale, tolerance) <= 1


def test_a_wrong_slice_or_a_lost_sum_is_caught() -> None:
    # The comparison can fail: the embedding's slices swapped between the two
    # devices (an offset taken from the wrong index), or a gradient counted
    # on each of the two devices, are outside the tolerance.
    cfg, layout, shape = Config(vocab=48, d_model=16, layers=1, heads=2, kv_heads=2,
                                hidden=24), "TP", (1, 2)
    params = transformer.init_params(jax.random.key(3), cfg)
    inputs, targets = _tokens(cfg, 4, 8, 3)
    value, grads = jax.jit(transformer.make_grad_fn(cfg))(params, inputs, targets)
    scale = transformer.per_example_grad_sum(params, inputs, targets, cfg)
    tolerance = transformer.gradient_tolerance(cfg, 4, 8)
    swapped = dict(params, embed=jnp.roll(params["embed"], cfg.vocab // 2, axis=0))
    _, (wrong, _) = _split_grad(cfg, layout, shape, swapped, inputs, targets)
    assert abs(float(wrong - value)) > tolerance * float(value)
    _, (_, got) = _split_grad(cfg, layout, shape, params, inputs, targets)
    assert _within(got, grads, scale, tolerance) <= 1
    assert _within(jax.tree.map(lambda g: 2 * g, got), grads, scale, tolerance) > 1


@pytest.mark.parametrize(("layout", "precision"), [("TP", "bfloat16"),
                                                   ("TP + SP", "mixed")])
def test_the_whole_steps_collectives(layout: str, precision: str) -> None:
    # compile_step's step (Adam's update adds nothing over the mesh), in
    # bfloat16. XLA:CPU runs a bfloat16 all-reduce, all-gather or
    # reduce-scatter in float32: every collective it prints is 4 bytes a
    # number, the weights' and activations' as the loss's.
    cfg = Config(vocab=64, d_model=32, layers=2, heads=4, kv_heads=2, hidden=48)
    compiled = transformer.compile_step(cfg, layout, 2, 2, 4, 8, precision, "none")
    predicted = transformer.predicted_collectives(cfg, layout, 4, 8, 2, 2, itemsize=4)
    assert Counter(compiled_collectives(compiled)) == Counter(predicted)


def test_a_vocabulary_the_model_axis_does_not_divide_is_refused() -> None:
    cfg = Config(vocab=50, d_model=16, layers=1, heads=4, kv_heads=4, hidden=24)
    for layout in TP_LAYOUTS:
        with pytest.raises(ValueError, match="50 words do not split evenly"):
            transformer.sharded_grad_fn(cfg, layout, _mesh((1, 4)))
        transformer.sharded_grad_fn(cfg, layout, _mesh((4, 2)))   # 2 divides 50
    transformer.sharded_grad_fn(cfg, "FSDP", _mesh((4, 1)))


@pytest.mark.parametrize(("layout", "shape"), [("TP", (1, 4)), ("TP + SP", (2, 2)),
                                                ("FSDP + TP", (2, 4))])
def test_the_state_splits_the_tables_over_model(layout: str, shape) -> None:
    cfg = Config(vocab=96, d_model=32, layers=2, heads=4, kv_heads=4, hidden=64)
    state = transformer.state_bytes(cfg, layout, "float32", *shape)
    compiled = transformer.compile_step(cfg, layout, *shape, 8, 8, "float32", "none")
    memory = transformer.compile_report(compiled)["memory"]
    data, model = shape
    # The inputs and targets (int32), over data, and over model too under SP.
    tokens = 2 * 8 * 8 * 4 // (data * (model if transformer.LAYOUTS[layout].sp else 1))
    assert memory["arguments"] == state["total"] + tokens
    # By hand: the tables over model (and data under FSDP), the norms over
    # data under FSDP only; 12 bytes a number (the weight, two moments).
    fsdp = data if transformer.LAYOUTS[layout].fsdp else 1
    parts = transformer.param_parts(cfg)
    matrices = parts["attention"] + parts["mlp"]
    tables = 2 * cfg.vocab * cfg.d_model
    norms = parts["total"] - matrices - tables
    assert state["total"] == 12 * (matrices // (fsdp * model) + tables // (fsdp * model)
                                   + norms // fsdp) + 4


@pytest.mark.parametrize("seed", range(2))
def test_the_heads_residuals_are_the_list_jax_prints(seed: int) -> None:
    # residuals_per_token under TP counts what print_saved_residuals lists
    # for one device's loss (listed inside shard_map, so with its shapes).
    rng = np.random.default_rng(100 + seed)
    layout = TP_LAYOUTS[seed % len(TP_LAYOUTS)]
    model = int(rng.choice([2, 4]))
    heads = model * int(rng.choice([1, 2]))
    cfg = Config(vocab=model * int(rng.integers(10, 40)), d_model=heads * 8,
                 layers=int(rng.integers(1, 3)), heads=heads, kv_heads=heads,
                 hidden=model * 10)
    chunk = int(rng.choice([0, 4]))
    mesh = _mesh((1, model))
    params = transformer.init_params(jax.random.key(seed), cfg, jnp.bfloat16)
    hooks = transformer.layout_hooks(layout)
    specs = transformer.spec_tree(params, layout)
    tokens = transformer.batch_spec(layout)
    kept = []
    for batch in (2, 4):
        zeros = transformer.place(np.zeros((batch, 16), np.int32), layout, mesh,
                                  tokens=True)

        def per_device(p, i, t):
            kept.append(saved_residuals(lambda w: transformer.loss(
                w, i, t, cfg, hooks, remat="full", chunk=chunk), p))
            return jnp.zeros(())

        jax.eval_shape(jax.shard_map(per_device, mesh=mesh,
                                     in_specs=(specs, tokens, tokens), out_specs=P()),
                       transformer.place(params, layout, mesh), zeros, zeros)
    listed = (residual_bytes(kept[1]) - residual_bytes(kept[0])) / (2 * 16)
    planned = transformer.residuals_per_token(cfg, "full", "mixed", bool(chunk),
                                              layout, model)
    split = model if transformer.LAYOUTS[layout].sp else 1
    assert listed == planned["blocks"] / split + planned["head"]
    # The log-softmax is a slice of the vocabulary: the whole one is not kept.
    whole = transformer.residuals_per_token(cfg, "full", "mixed", bool(chunk))
    assert (planned["head"] < whole["head"]) == (not chunk or split > 1)


@pytest.mark.parametrize("seed", range(3))
def test_the_priced_traffic_is_the_predicted_collectives(seed: int) -> None:
    # phase_bytes' "model" axis, both passes, is ring_bytes summed over the
    # collectives predicted_collectives lists (a block's once: times layers).
    from jaxcourse.scaling import ring_bytes

    rng = np.random.default_rng(200 + seed)
    layout = ("TP", "TP + SP")[seed % 2]
    model = int(rng.choice([2, 4, 8]))
    cfg = Config(vocab=model * int(rng.integers(10, 99)), d_model=8 * model,
                 layers=int(rng.integers(1, 6)), heads=model, kv_heads=model,
                 hidden=16 * model)
    batch, seq, itemsize = int(rng.integers(1, 9)), 16 * model, int(rng.choice([2, 4]))
    listed = transformer.predicted_collectives(cfg, layout, batch, seq, 1, model,
                                               itemsize)
    # Sequence parallelism all-reduces the norms' gradients over "model" too
    # (d numbers each, 8 · model · itemsize bytes: no other collective is so
    # small here); phase_bytes leaves them with the weights'.
    sent = sum(ring_bytes(c.kind, c.nbytes, c.group) for c in listed
               if c.group == model and c.nbytes != cfg.d_model * itemsize)
    activation = batch * seq * cfg.d_model * itemsize
    # A block's: four all-reduces, or four all-gathers and four reduce-scatters.
    block = 4 * (ring_bytes("all-reduce", activation, model) if layout == "TP" else
                 ring_bytes("all-gather", activation, model)
                 + ring_bytes("reduce-scatter", activation, model))
    sent += (cfg.layers - 1) * block
    passes = transformer.phase_bytes(cfg, layout, batch * seq, 1, model, itemsize)
    priced = passes["forward"]["model"] + passes["backward"]["model"]
    assert priced == pytest.approx(sent, rel=1e-12)
    # The two ends' and the loss's share: more than nothing, less than a block's.
    ends = priced - cfg.layers * block
    assert 0 < ends < block
