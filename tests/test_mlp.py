"""The shared MLP: shapes, a learning step, and scan == loop of steps."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcourse import mlp


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
    np.testing.assert_allclose(jnp.exp(log_probs).sum(axis=1), 1.0, rtol=1e-5)
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
    for a, b in zip(jax.tree.leaves(looped), jax.tree.leaves(scanned), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
