"""Reference code for chapter 1's exercises: the pieces of an MLP on MNIST.

Importing this module registers the exercises ``mlp.relu``, ``mlp.one_hot``,
``mlp.accuracy`` and ``mlp.update`` with :mod:`jaxcourse.exercises`. Each is a
reference function below plus a few lines of checker spec at the end of the
file: the cases it is tried on, its hints, and known mistakes to name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcourse.exercises import Case, Exercise, Mistake, register

# The model is chapter 1's, from the course package (re-exported for the tests):
# the exercise notebook imports the same code, so a check trains exactly what
# the chapter taught.
from jaxcourse.mlp import batched_predict, init_params, loss, predict  # noqa: F401

CHAPTER = "01_mlp_tfds"
Params = list[tuple[jax.Array, jax.Array]]


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def relu(x):
    """Rectified linear unit: ``x`` where positive, 0 elsewhere, same dtype."""
    return jnp.maximum(0, x)


def one_hot(x, k, dtype=jnp.float32):
    """One-hot encode the integer labels ``x`` (shape ``(n,)``) into ``(n, k)``."""
    return jnp.asarray(x[:, None] == jnp.arange(k), dtype)


def accuracy(log_probs, targets):
    """Fraction of rows whose most likely class is the one-hot target's class."""
    predicted = jnp.argmax(log_probs, axis=1)
    target = jnp.argmax(targets, axis=1)
    return jnp.mean(predicted == target)


@jax.jit
def update(params, images, targets, step_size):
    """One step of gradient descent on ``loss``; returns new params."""
    grads = jax.grad(loss)(params, images, targets)
    return [
        (w - step_size * dw, b - step_size * db)
        for (w, b), (dw, db) in zip(params, grads, strict=True)
    ]


# --------------------------------------------------------------------------
# Checker specs: inputs are seeded, so the feedback is reproducible
# --------------------------------------------------------------------------


def _floats(*shape: int):
    return lambda rng: (rng.normal(size=shape).astype(np.float32),)


def _labels(n: int, k: int = 10):
    return lambda rng, size=n: (rng.integers(0, k, size=size).astype(np.uint8), k)


def _log_probs(n: int, k: int):
    def make(rng: np.random.Generator, size: int = n) -> tuple:
        logits = rng.normal(size=(size, k)).astype(np.float32)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        targets = np.eye(k, dtype=np.float32)[rng.integers(0, k, size=size)]
        return log_probs.astype(np.float32), targets

    return make


def _fixed_accuracy_inputs(rng: np.random.Generator) -> tuple:
    # Four examples, three classes: rows 0, 1 and 3 are right, row 2 is wrong.
    log_probs = np.log(np.array(
        [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]],
        dtype=np.float32,
    ))
    targets = np.eye(3, dtype=np.float32)[[0, 1, 1, 2]]
    return log_probs, targets


def _network(sizes: list[int], batch: int, step_size: float):
    def make(rng: np.random.Generator) -> tuple:
        params = [
            (jnp.asarray(0.1 * rng.normal(size=(n, m)), jnp.float32),
             jnp.asarray(0.1 * rng.normal(size=(n,)), jnp.float32))
            for m, n in zip(sizes[:-1], sizes[1:], strict=True)
        ]
        images = rng.normal(size=(batch, sizes[0])).astype(np.float32)
        targets = np.eye(sizes[-1], dtype=np.float32)[
            rng.integers(0, sizes[-1], size=batch)
        ]
        return params, images, targets, step_size

    return make


def _ascent(params, images, targets, step_size):
    grads = jax.grad(loss)(params, images, targets)
    return [(w + step_size * dw, b + step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def _weights_only(params, images, targets, step_size):
    grads = jax.grad(loss)(params, images, targets)
    return [(w - step_size * dw, b)
            for (w, b), (dw, _) in zip(params, grads, strict=True)]


FIXED = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], np.float32)

register(
    Exercise(
        id="mlp.relu",
        title="ReLU",
        chapter=CHAPTER,
        reference=relu,
        cases=[
            Case("relu(x) for x = [-2, -0.5, 0, 0.5, 2] (float32)",
                 lambda rng: (FIXED.copy(),)),
            Case("relu(x) keeps the shape of a random (3, 4) matrix", _floats(3, 4)),
            Case("relu(x) keeps an int32 input's dtype",
                 lambda rng: (np.array([-3, 0, 4], np.int32),)),
            Case("jax.jit(relu)(x) on a random (8,) vector", _floats(8),
                 transform="jit"),
            Case("jax.grad of sum(relu(x)) is 1 where x > 0, else 0",
                 lambda rng: (np.array([-1.5, -0.2, 0.3, 2.0], np.float32),),
                 transform="grad"),
        ],
        hints=[
            "ReLU keeps positive numbers and replaces the others with 0.",
            "One jnp function compares two arrays element by element and keeps "
            "the larger value; broadcasting lets one of them be the scalar 0.",
            "`jnp.maximum(0, x)`: writing `0` (not `0.0`) keeps an integer "
            "input's dtype.",
        ],
        mistakes=[
            Mistake("did you keep the negative part (minimum instead of maximum)?",
                    lambda x: jnp.minimum(0, x)),
            Mistake("did you take the absolute value?", jnp.abs),
            Mistake("writing 0.0 turns integers into floats; write 0",
                    lambda x: jnp.maximum(0.0, x)),
        ],
    ),
    Exercise(
        id="mlp.one_hot",
        title="One-hot encoding",
        chapter=CHAPTER,
        reference=one_hot,
        cases=[
            Case("one_hot(x, 10) for labels x = [0, 2, 9]",
                 lambda rng: (np.array([0, 2, 9], np.uint8), 10)),
            Case("one_hot(x, 10, dtype=jnp.int32) returns int32",
                 lambda rng: (np.array([1, 0, 3, 3], np.uint8), 10),
                 kwargs={"dtype": jnp.int32}),
            Case("one_hot(x, 10) on 64 random uint8 labels", _labels(64)),
            Case("jax.jit on labels, with k = 10 static", _labels(16),
                 transform="jit"),
            Case("no Python loop over the labels (traced with 4 and 32 labels)",
                 lambda rng, n: (rng.integers(0, 10, size=n).astype(np.int32), 10),
                 transform="vectorized"),
        ],
        hints=[
            "Row i of the result is all zeros except a 1 in column x[i].",
            "Compare a column of labels, x[:, None] with shape (n, 1), with the row "
            "jnp.arange(k) with shape (k,): broadcasting gives (n, k) booleans.",
            "Convert the booleans with jnp.asarray(..., dtype) so the `dtype` "
            "argument is honoured.",
        ],
        mistakes=[
            Mistake("did you one-hot along the wrong axis?",
                    lambda x, k, dtype=jnp.float32:
                    jnp.asarray(x[None, :] == jnp.arange(k)[:, None], dtype)),
            Mistake("the labels start at 0, not 1",
                    lambda x, k, dtype=jnp.float32:
                    jnp.asarray(x[:, None] == jnp.arange(1, k + 1), dtype)),
            Mistake("the `dtype` argument is ignored",
                    lambda x, k, dtype=jnp.float32:
                    jnp.asarray(x[:, None] == jnp.arange(k), jnp.float32)),
        ],
    ),
    Exercise(
        id="mlp.accuracy",
        title="Accuracy",
        chapter=CHAPTER,
        reference=accuracy,
        cases=[
            Case("accuracy on 4 examples and 3 classes (3 right)",
                 _fixed_accuracy_inputs, dtype="kind"),
            Case("accuracy on 50 random examples, 10 classes", _log_probs(50, 10),
                 dtype="kind"),
            Case("accuracy when every prediction is right",
                 lambda rng: (np.log(np.eye(6, dtype=np.float32) * 0.9 + 0.01),
                              np.eye(6, dtype=np.float32)), dtype="kind"),
            Case("jax.jit(accuracy) on 20 random examples", _log_probs(20, 10),
                 transform="jit", dtype="kind"),
            Case("no Python loop over the examples (traced with 4 and 32)",
                 _log_probs(4, 10), transform="vectorized"),
        ],
        hints=[
            "The predicted class of a row is the position of its largest "
            "log-probability; the target class is the position of the 1.",
            "jnp.argmax(a, axis=1) gives one class per row (axis 0 would give one "
            "per class).",
            "The mean of a boolean array is the fraction of True values.",
        ],
        mistakes=[
            Mistake("did you take the argmax along axis 0 (per class) instead of "
                    "axis 1 (per example)?",
                    lambda p, t: jnp.mean(jnp.argmax(p, 0) == jnp.argmax(t, 0))),
            Mistake("that is the number of right answers; divide by the number of "
                    "examples (or take the mean)",
                    lambda p, t: jnp.sum(jnp.argmax(p, 1) == jnp.argmax(t, 1))),
            Mistake("that is the error rate, 1 − accuracy",
                    lambda p, t: jnp.mean(jnp.argmax(p, 1) != jnp.argmax(t, 1))),
        ],
    ),
    Exercise(
        id="mlp.update",
        title="One SGD step with jax.grad",
        chapter=CHAPTER,
        reference=update,
        time_limit=10.0,
        cases=[
            Case("update on a [6, 5, 3] network, 4 examples, step_size 0.1",
                 _network([6, 5, 3], 4, 0.1), rtol=1e-4, atol=1e-6),
            Case("update honours step_size (0.5, another network)",
                 _network([6, 5, 3], 4, 0.5), seed=1, rtol=1e-4, atol=1e-6),
            Case("update on a [784, 32, 10] network, 8 examples",
                 _network([784, 32, 10], 8, 0.01), seed=2, rtol=1e-4, atol=1e-6),
            Case("jax.jit(update) on a [6, 5, 3] network", _network([6, 5, 3], 4, 0.1),
                 seed=3, transform="jit", rtol=1e-4, atol=1e-6),
        ],
        hints=[
            "jax.grad(loss)(params, images, targets) returns gradients with the "
            "same structure as params: a list of (dw, db) pairs.",
            "Gradient descent moves against the gradient: w - step_size * dw.",
            "Build and return a new list of (w, b) tuples, one per layer, biases "
            "included; do not modify `params` in place. Under jax.jit, avoid "
            "float() or print() of traced values.",
        ],
        mistakes=[
            Mistake("did you add the gradient (ascent) instead of subtracting it?",
                    _ascent),
            Mistake("the biases were not updated", _weights_only),
        ],
    ),
)
