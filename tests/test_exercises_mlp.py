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

from jaxcourse.exercises import get
from jaxcourse.numerics import FLOAT32_ROUNDOFF, sum_tolerance
from solutions import mlp

# exp(z - logsumexp(z)) summed over 10 classes: the logsumexp's sum and the final
# one round within gamma_10 each, and z - logsumexp(z) within u of each of the two
# (their sizes below 8 here), plus u for the log and u for the exp.
PROBABILITY_SUM_RTOL = 2 * sum_tolerance(10) + (2 * 8 + 2) * FLOAT32_ROUNDOFF

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
    np.testing.assert_allclose(jnp.exp(log_probs).sum(axis=1), 1.0,
                               rtol=PROBABILITY_SUM_RTOL)
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


# ---- the checks' tolerances cover float32's rounding -----------------------------


def _as_float64(params):
    return [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in params]


def _logit_terms(params, images) -> float:
    """The largest logit's terms: the network run on absolute values."""
    terms = np.abs(np.asarray(images, np.float64))
    for w, b in _as_float64(params):
        terms = terms @ np.abs(w).T + np.abs(b)
    return float(terms.max())


def _gradient_terms(params, images, targets) -> float:
    """The largest term of ``loss``'s gradient: the backward pass on absolute values."""
    (w1, b1), (w2, b2) = _as_float64(params)
    x, t = np.asarray(images, np.float64), np.asarray(targets, np.float64)
    z1 = x @ w1.T + b1
    z2 = np.maximum(z1, 0) @ w2.T + b2
    p = np.exp(z2 - z2.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    out = np.abs(p - t) / t.size  # loss averages over the batch and the classes
    hidden = (out @ np.abs(w2)) * (z1 > 0)
    terms = np.abs(x) @ np.abs(w1).T + np.abs(b1)
    return float(max((out.T @ terms).max(), out.sum(0).max(),
                     (hidden.T @ np.abs(x)).max(), hidden.sum(0).max()))


def test_tolerances_cover_the_cases_rounding() -> None:
    # Each case's atol is at least its bound for its own draws: 2 gamma_n times
    # the terms, as solutions.mlp derives it, not only below the bounds assumed.
    for case in get("mlp.update").cases:
        params, images, targets, step_size = case.make_inputs()
        sizes = [images.shape[1]] + [len(b) for _, b in params]
        chain = 2 * sum(sizes) + len(images)
        assert _gradient_terms(params, images, targets) <= mlp.GRADIENT_TERMS
        assert 2 * sum_tolerance(chain) * step_size * _gradient_terms(
            params, images, targets) <= case.atol
    for case in get("mlp.batched_predict").cases:
        if case.transform != "vectorized":
            params, images = case.make_inputs()
            sizes = [images.shape[1]] + [len(b) for _, b in params]
            assert 4 * sum_tolerance(sum(sizes)) * _logit_terms(params, images) \
                <= case.atol
