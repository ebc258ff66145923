"""The shared MLP: shapes, a learning step, and scan == loop of steps."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcourse import mlp
from jaxcourse.numerics import FLOAT32_ROUNDOFF, sum_tolerance

# exp(z - logsumexp(z)) summed over 10 classes: the logsumexp's sum and the final
# one round within gamma_10 each, and z - logsumexp(z) within u of each of the two
# (their sizes below 8 here), plus u for the log and u for the exp.
PROBABILITY_SUM_RTOL = 2 * sum_tolerance(10) + (2 * 8 + 2) * FLOAT32_ROUNDOFF


def small_problem():
    params = mlp.init_params((784, 32, 10), jax.random.key(0))
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(6, 16, 784), dtype=np.uint8)
    labels = rng.integers(0, 10, size=(6, 16))
    return params, images, labels


def test_shapes_and_probabilities() -> None:
    params, images, _ = small_problem()
    log_probs = mlp.batched_predict(params, images[0].astype(np.float32))
    assert log_probs.shape == (16, 10)
    np.testing.assert_allclose(jnp.exp(log_probs).sum(axis=1), 1.0,
                               rtol=PROBABILITY_SUM_RTOL)
    assert mlp.one_hot(jnp.array([2, 0])).tolist() == [
        [0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ]


def test_update_lowers_the_loss() -> None:
    params, images, labels = small_problem()
    x, y = images[0].astype(np.float32) / 255, mlp.one_hot(labels[0])
    before = mlp.loss(params, x, y)
    for _ in range(5):
        params = mlp.update(params, x, y, 0.1)
    assert mlp.loss(params, x, y) < before


def test_scan_epoch_equals_a_loop_of_updates() -> None:
    params, images, labels = small_problem()
    looped = params
    for x, y in zip(images, labels, strict=True):
        looped = mlp.update(looped, x.astype(np.float32), mlp.one_hot(y))
    scanned = mlp.make_scan_epoch()(params, images, labels)
    # Six steps of 0.01, each gradient within 2 gamma_n of the other's (n: the
    # widths forwards and backwards, then the batch), relative to its terms
    # (below 40 here: these pixels are not scaled); a difference grows at most
    # 3-fold through the steps that follow (measured in float64), and each
    # update rounds within u of the parameters.
    steps = len(images)
    step = 2 * sum_tolerance(2 * (784 + 32 + 10) + 16) * 0.01 * 40
    for a, b in zip(jax.tree.leaves(looped), jax.tree.leaves(scanned), strict=True):
        np.testing.assert_allclose(a, b, rtol=steps * 2 * FLOAT32_ROUNDOFF,
                                   atol=3 * steps * step)
