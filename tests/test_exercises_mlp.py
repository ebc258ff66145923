"""Chapter 1's reference code works as the chapter uses it.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook) is checked for every
chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/mlp.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from solutions import mlp

# ---- unit tests of the reference code ------------------------------------------


def test_reference_relu_and_one_hot() -> None:
    np.testing.assert_array_equal(mlp.relu(jnp.array([-1, 0, 2])), [0, 0, 2])
    encoded = mlp.one_hot(np.array([3, 0]), 4)
    np.testing.assert_array_equal(encoded, [[0, 0, 0, 1], [1, 0, 0, 0]])
    assert encoded.dtype == jnp.float32


def test_reference_model_shapes_and_accuracy() -> None:
    params = mlp.init_params([784, 16, 10], jax.random.key(0))
    assert [(w.shape, b.shape) for w, b in params] == [
        ((16, 784), (16,)), ((10, 16), (10,))
    ]
    images = jax.random.normal(jax.random.key(1), (5, 784))
    log_probs = mlp.batched_predict(params, images)
    assert log_probs.shape == (5, 10)
    np.testing.assert_allclose(jnp.exp(log_probs).sum(axis=1), 1.0, rtol=1e-5)
    targets = jax.nn.one_hot(log_probs.argmax(1), 10)
    assert float(mlp.accuracy(log_probs, targets)) == 1.0


def test_reference_update_lowers_the_loss() -> None:
    params = mlp.init_params([784, 16, 10], jax.random.key(0), scale=0.1)
    images = jax.random.normal(jax.random.key(1), (32, 784))
    targets = jax.nn.one_hot(jnp.arange(32) % 10, 10)
    before = mlp.loss(params, images, targets)
    for _ in range(5):
        params = mlp.update(params, images, targets, 0.05)
    assert float(mlp.loss(params, images, targets)) < float(before)
