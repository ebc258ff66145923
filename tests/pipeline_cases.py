"""jaxcourse.transformer.pipeline: the schedule as it ran, the backward pass, memory.

Run by tests/test_pipeline.py in a pytest process of its own: the stages are
CPU devices (up to eight), and JAX fixes its device count when it starts.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.devices import use_cpu_devices

use_cpu_devices(8)  # before any array: up to 8 stages

from jax.sharding import AxisType  # noqa: E402

from jaxcourse import numerics, transformer  # noqa: E402
from jaxcourse.transformer import STAGE, Config, pipeline  # noqa: E402

RNG = np.random.default_rng(52)


def _config(layers: int) -> Config:
    return Config(vocab=96, d_model=16, layers=layers, heads=2, kv_heads=1, hidden=32)


def _mesh(stages: int):
    return jax.make_mesh((stages,), (STAGE,), devices=jax.devices()[:stages],
                         axis_types=(AxisType.Explicit,))


def _tolerance(cfg: Config, seq: int, terms: int = 0) -> float:
    """Two float32 evaluations of the blocks in other orders: a chain of their sums.

    The forward chain per layer (``d``, attention's ``heads · h`` and ``seq``,
    the MLP's ``hidden``), twice for a backward pass, plus ``terms`` for a
    weight's gradient summed over the tokens and micro-batches.
    """
    chain = cfg.layers * (cfg.d_model + cfg.heads * cfg.head_dim + cfg.hidden + seq)
    return 2 * numerics.sum_tolerance((2 if terms else 1) * chain + terms)


def _error(got: jax.Array, want: jax.Array) -> float:
    """The largest error relative to the largest value (normwise)."""
    return float(jnp.max(jnp.abs(got - want)) / jnp.max(jnp.abs(want)))


def _gappy_feed(stages: int, micro: int) -> np.ndarray:
    """A feed with at least one gap: the micro-batches enter at random ticks."""
    gaps = RNG.integers(0, 3, micro)
    gaps[RNG.integers(1, micro)] += 1          # at least one idle tick in between
    ticks = np.cumsum(gaps + 1) - 1 - gaps[0]  # the first enters at tick 0
    feed = np.zeros(ticks[-1] + stages, bool)
    feed[ticks] = True
    return feed


def test_in_flight_counts_gpipe_and_1f1b() -> None:
    for _ in range(50):
        p, m = int(RNG.integers(1, 17)), int(RNG.integers(1, 65))
        assert pipeline.in_flight("GPipe", p, m) == [m] * p
        one = pipeline.in_flight("1F1B", p, m)
        assert one[0] == min(m, p) and one[-1] == 1
        assert all(a >= b for a, b in zip(one, one[1:], strict=False))
        gpipe = pipeline.in_flight("GPipe", p, m)
        assert all(o <= g for o, g in zip(one, gpipe, strict=True))
    with pytest.raises(ValueError, match="unknown schedule"):
        pipeline.in_flight("zero bubble", 4, 8)


def test_a_feed_that_cannot_finish_is_refused() -> None:
    cfg = _config(4)
    run = pipeline.gpipe(cfg, _mesh(4))
    layers = transformer.init_params(jax.random.key(0), cfg)["layers"]
    xs = jnp.zeros((2, 1, 4, cfg.d_model))
    with pytest.raises(ValueError, match="needs 4 ticks"):
        run(layers, xs, np.array([1, 0, 1, 0, 0], bool))
    with pytest.raises(ValueError, match="with 2 set"):
        run(layers, xs, np.array([1, 0, 0, 0, 0, 0], bool))
    with pytest.raises(ValueError, match="do not split"):
        pipeline.gpipe(_config(6), _mesh(4))


@pytest.mark.parametrize("case", range(3))
def test_busy_is_read_from_the_run_and_the_outputs_are_the_blocks(case: int) -> None:
    stages = int(RNG.choice([2, 3, 4, 8]))
    micro = int(RNG.integers(2, 7))
    cfg = _config(stages * int(RNG.integers(1, 3)))
    layers = transformer.init_params(jax.random.key(case), cfg)["layers"]
    run = pipeline.gpipe(cfg, _mesh(stages))
    seq = 8
    xs = jax.random.normal(jax.random.key(10 + case), (micro, 2, seq, cfg.d_model))
    want = jax.vmap(lambda x: transformer.blocks(layers, x, cfg))(xs)
    tolerance = _tolerance(cfg, seq)
    # GPipe's feed: the flags agree with the formula, which was not used.
    ys, busy = run(layers, xs)
    busy = np.asarray(busy)
    assert busy.shape == (stages, micro + stages - 1)
    formula = pipeline.bubble_fraction(stages, micro)
    assert 1 - busy.mean() == pytest.approx(formula, abs=1e-12)
    assert _error(ys, want) <= tolerance
    # A feed with gaps: each stage is busy one tick after the stage before,
    # which the formula (t >= stage) & (t - stage < m) does not say. The
    # outputs are still the blocks', in order, because the last stage stores
    # what it holds only when its flag says it is a micro-batch.
    feed = _gappy_feed(stages, micro)
    ys, busy = run(layers, xs, feed)
    busy = np.asarray(busy)
    ticks = np.arange(feed.size)
    stage = np.arange(stages)[:, None]
    assert not np.array_equal(busy, (ticks >= stage) & (ticks - stage < micro))
    for s in range(stages):
        assert np.array_equal(busy[s, s:], feed[:feed.size - s])
        assert not busy[s, :s].any()
    assert busy.sum() == stages * micro
    assert 1 - busy.mean() > formula
    assert _error(ys, want) <= tolerance


@pytest.mark.parametrize("case", range(2))
def test_the_backward_pass_equals_the_unpipelined_gradient(case: int) -> None:
    stages = int(RNG.choice([2, 4]))
    micro = int(RNG.integers(1 if case == 0 else 2, 5))   # a gap needs two
    cfg = _config(stages * int(RNG.integers(1, 3)))
    seq, batch = 8, 2
    layers = transformer.init_params(jax.random.key(20 + case), cfg)["layers"]
    xs = jax.random.normal(jax.random.key(30 + case), (micro, batch, seq, cfg.d_model))
    cotangent = jax.random.normal(jax.random.key(40 + case), xs.shape)
    feed = (pipeline.default_feed(stages, micro) if case == 0
            else _gappy_feed(stages, micro))
    got = pipeline.gpipe_grad(cfg, _mesh(stages))(layers, xs, cotangent, feed)
    unpiped = jax.vmap(lambda w, v: transformer.blocks(w, v, cfg), in_axes=(None, 0))
    _, pullback = jax.vjp(unpiped, layers, xs)
    want = pullback(cotangent)
    # Normwise per array: a weight's gradient sums micro · batch · seq tokens.
    tolerance = _tolerance(cfg, seq, terms=micro * batch * seq)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert g.shape == w.shape
        assert _error(g, w) <= tolerance
    # A wrong backward pass is caught: the cotangent of another micro-batch order.
    wrong = pullback(cotangent[::-1])[1] if micro > 1 else 2 * want[1]
    assert _error(got[1], wrong) > tolerance


def test_gpipes_backward_memory_grows_by_one_micro_batchs_activations() -> None:
    stages = 4
    cfg = _config(stages * 2)
    batch, seq = 2, 8
    mesh = _mesh(stages)
    temps = {m: pipeline.gpipe_grad_memory(cfg, mesh, m, batch, seq)["temp"]
             for m in (2, 4, 8)}
    slopes = [(temps[4] - temps[2]) / 2, (temps[8] - temps[4]) / 4]
    # What JAX says the stage's blocks keep for one micro-batch (the weights aside).
    kept = pipeline.micro_batch_residuals(cfg, stages, batch, seq)
    for slope in slopes:
        assert 0.9 * kept <= slope <= 1.1 * kept
