"""Reference code for chapter 1's exercises: the pieces of an MLP on MNIST.

Importing this module registers the exercises ``mlp.relu``, ``mlp.one_hot``,
``mlp.accuracy``, ``mlp.update``, ``mlp.batched_predict`` and
``mlp.tf_batches`` with :mod:`jaxcourse.exercises`. Each is a
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
from jaxcourse.mlp import init_params, loss, predict  # noqa: F401
from jaxcourse.numerics import FLOAT32_ROUNDOFF, sum_tolerance

CHAPTER = "01_mlp"
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


def batched_predict(params, images):
    """``predict`` for a batch of images ``(n, pixels)``: ``(n, classes)``."""
    return jax.vmap(predict, in_axes=(None, 0))(params, images)


def tf_batches(dataset, batch_size):
    """Batches of NumPy arrays from a ``tf.data.Dataset`` of (image, label) pairs."""
    return dataset.batch(batch_size).prefetch(1).as_numpy_iterator()


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
        # JAX arrays, as the chapter's training loop hands them: the Check can
        # then compile the whole step at once (Exercise.compiled_calls), one
        # program instead of one per operation of the gradient.
        return params, jnp.asarray(images), jnp.asarray(targets), step_size

    return make


#: A bound on the magnitude of the update cases' gradient terms: the backward
#: pass run on absolute values (|p - t| through |W| and |activations|). The
#: cases' draws reach 1.8; over 200 seeds of each case, at most 3.0.
GRADIENT_TERMS = 4.0


def _step_tolerance(sizes: list[int], batch: int, step_size: float) -> dict:
    """Return ``rtol`` and ``atol`` for two float32 SGD steps of ``loss``.

    The gradient chains a sum over every layer's width forwards and again
    backwards, then one over the batch: to first order it is within gamma_n,
    ``n = 2 sum(sizes) + batch``, of the exact gradient, relative to its terms
    (below :data:`GRADIENT_TERMS`); two evaluations differ by twice that, times
    the step size. ``w - step_size * dw`` then rounds once in each, within
    ``u`` of its size. The error a logit's rounding makes in the softmax is
    left out: to first order it can be larger, but rounding never comes near
    it (the measured errors stay below a tenth of this bound).
    """
    return {"rtol": 2 * FLOAT32_ROUNDOFF,
            "atol": 2 * sum_tolerance(2 * sum(sizes) + batch) * step_size
            * GRADIENT_TERMS}


def _logits_tolerance(sizes: list[int], terms: float) -> dict:
    """Return ``rtol`` and ``atol`` for two float32 evaluations of ``predict``.

    The logits chain a sum over every layer's width (the softmax's over the
    classes included): to first order within gamma_n, ``n = sum(sizes)``, of
    exact, relative to their terms, ``|W2| (|W1| |x| + |b1|) + |b2|``, which
    ``terms`` bounds for the case's draws. A log-probability subtracts the
    logsumexp of the logits, as far off again; two evaluations differ by twice
    the sum.
    """
    return {"rtol": 0.0, "atol": 2 * 2 * sum_tolerance(sum(sizes)) * terms}


def _ascent(params, images, targets, step_size):
    grads = jax.grad(loss)(params, images, targets)
    return [(w + step_size * dw, b + step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def _weights_only(params, images, targets, step_size):
    grads = jax.grad(loss)(params, images, targets)
    return [(w - step_size * dw, b)
            for (w, b), (dw, _) in zip(params, grads, strict=True)]


def _model_and_images(sizes: list[int], batch: int):
    def make(rng: np.random.Generator, n: int = batch) -> tuple:
        params = [
            (jnp.asarray(0.1 * rng.normal(size=(out, inp)), jnp.float32),
             jnp.asarray(0.1 * rng.normal(size=(out,)), jnp.float32))
            for inp, out in zip(sizes[:-1], sizes[1:], strict=True)
        ]
        # JAX arrays, as the chapter's batches are once on the device; they
        # also let a Check compile the whole function (compiled_calls).
        return params, jnp.asarray(rng.normal(size=(n, sizes[0])), jnp.float32)

    return make


def _first_only(params, images):
    return predict(params, images[0])


def _probabilities(params, images):
    return jnp.exp(jax.vmap(predict, in_axes=(None, 0))(params, images))


def _batch_axis_last(params, images):
    return jax.vmap(predict, in_axes=(None, 0), out_axes=1)(params, images)


def _dataset(n: int, shape: tuple[int, ...], batch_size: int):
    def make(rng: np.random.Generator) -> tuple:
        images = rng.integers(0, 256, size=(n, *shape), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n).astype(np.int64)
        return images, labels, batch_size

    return make


def _import_tensorflow():
    # A case's `prepare`: imported before the time limit starts, as the
    # learner's notebook has done before its first Check, so the limit
    # measures the pipeline alone. TensorFlow Datasets too: the chapter's
    # pipeline ends in tfds.as_numpy, and its import takes a second.
    import os

    # TensorFlow's C++ start-up logs would land in the learner's notebook.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import tensorflow as tf  # only this exercise needs TensorFlow
    import tensorflow_datasets  # noqa: F401

    return tf


def _on_dataset(function, images, labels, batch_size):
    # The case's inputs stay NumPy (so they can be compared and sent between
    # processes); the tf.data.Dataset is built here, just before the call.
    tf = _import_tensorflow()
    return function(tf.data.Dataset.from_tensor_slices((images, labels)), batch_size)


def _as_batches(out):
    # Any iterable of (images, labels) pairs will do: a list, a generator,
    # tfds.as_numpy or as_numpy_iterator. TensorFlow tensors stay tensors, so
    # the comparison names their type.
    if out is None or isinstance(out, np.ndarray) or not hasattr(out, "__iter__"):
        return out
    return [tuple(item) if isinstance(item, (tuple, list)) else item for item in out]


def _sizes(out):
    batches = _as_batches(out)
    if not isinstance(batches, list):
        return batches
    return np.array([len(np.asarray(b[0])) if isinstance(b, tuple) else -1
                     for b in batches])


def _drop_last(dataset, batch_size):
    return dataset.batch(batch_size, drop_remainder=True).as_numpy_iterator()


def _one_by_one(dataset, batch_size):
    return dataset.as_numpy_iterator()


def _shuffled(dataset, batch_size):
    return dataset.shuffle(64, seed=0).batch(batch_size).as_numpy_iterator()


FIXED = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], np.float32)
# How every tf_batches case runs: on a tf.data.Dataset built from its inputs,
# with TensorFlow imported before the time limit, and, if it never ends, a
# dataset that repeats for ever named as the likely cause.
_PIPELINE = {"runner": _on_dataset, "prepare": _import_tensorflow,
             "endless": "repeat"}

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
            "Write the scalar as an integer literal, not a float one: an integer "
            "input must keep its dtype.",
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
            Case("another number of classes: one_hot(x, 4) for x = [3, 0, 1, 1]",
                 lambda rng: (np.array([3, 0, 1, 1], np.uint8), 4)),
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
            "Compare a column of labels, shape (n, 1), with a row holding every "
            "class number 0..k-1, shape (k,): broadcasting gives (n, k) booleans.",
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
        compiled_calls=True,
        cases=[
            Case("update on a [6, 5, 3] network, 4 examples, step_size 0.1",
                 _network([6, 5, 3], 4, 0.1), **_step_tolerance([6, 5, 3], 4, 0.1)),
            Case("update honours step_size (0.5, another network)",
                 _network([6, 5, 3], 4, 0.5), seed=1,
                 **_step_tolerance([6, 5, 3], 4, 0.5)),
            Case("update on a [784, 32, 10] network, 8 examples",
                 _network([784, 32, 10], 8, 0.01), seed=2,
                 **_step_tolerance([784, 32, 10], 8, 0.01)),
            Case("jax.jit(update) on a [6, 5, 3] network", _network([6, 5, 3], 4, 0.1),
                 seed=3, transform="jit", **_step_tolerance([6, 5, 3], 4, 0.1)),
        ],
        hints=[
            "jax.grad(loss) is a new function: called with the same arguments as "
            "loss, it returns gradients with the same structure as params, a list "
            "of (dw, db) pairs.",
            "Gradient descent moves every parameter against its own gradient, "
            "scaled by the step size.",
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
    Exercise(
        id="mlp.batched_predict",
        title="Batch predict with jax.vmap",
        chapter=CHAPTER,
        reference=batched_predict,
        compiled_calls=True,
        cases=[
            # The logits' terms bound for each case's draws (measured: 141,
            # 0.29, 0.42, 2.5; over 200 seeds at most 201, 0.92, 0.95, 4.8).
            Case("chapter 1's shape of network, [784, 32, 10], on 5 images -> (5, 10)",
                 _model_and_images([784, 32, 10], 5),
                 **_logits_tolerance([784, 32, 10], 256)),
            Case("another network, [6, 8, 8, 3], on 7 inputs -> (7, 3)",
                 _model_and_images([6, 8, 8, 3], 7), seed=1,
                 **_logits_tolerance([6, 8, 8, 3], 1)),
            Case("a batch of one image keeps its batch axis: (1, 4)",
                 _model_and_images([12, 5, 4], 1), seed=2,
                 **_logits_tolerance([12, 5, 4], 1)),
            Case("jax.jit of it, [20, 16, 10] on 9 inputs",
                 _model_and_images([20, 16, 10], 9), seed=3, transform="jit",
                 **_logits_tolerance([20, 16, 10], 8)),
            Case("no Python loop over the images (traced for 4 and 32)",
                 _model_and_images([10, 8, 3], 4), transform="vectorized"),
        ],
        hints=[
            "predict is written for one image of shape (pixels,); a batch is "
            "(n, pixels). jax.vmap turns a one-example function into a batched "
            "one, without touching predict.",
            "vmap needs to know, for each argument, whether to map over one of its "
            "axes or to pass it whole: params are the same for every image, the "
            "images are mapped over their first axis.",
            "jax.vmap(f, in_axes=...) returns a new function; call it with params "
            "and images.",
        ],
        mistakes=[
            Mistake("that is one prediction, for the first image only: map predict "
                    "over every image of the batch", _first_only),
            Mistake("these are probabilities: predict already returns "
                    "log-probabilities, do not exponentiate them", _probabilities),
            Mistake("the batch axis came out last: one row per image, so keep "
                    "out_axes at its default, 0", _batch_axis_last),
        ],
    ),
    Exercise(
        id="mlp.tf_batches",
        title="A tf.data pipeline that yields NumPy batches",
        chapter=CHAPTER,
        reference=tf_batches,
        cases=[
            Case("10 (28, 28, 1) images, batch_size 4 -> NumPy batches of 4, 4, 2, "
                 "in order", _dataset(10, (28, 28, 1), 4), extract=_as_batches,
                 **_PIPELINE),
            Case("12 (3, 3) images, batch_size 3 -> 4 batches of 3",
                 _dataset(12, (3, 3), 3), seed=1, extract=_as_batches, **_PIPELINE),
            Case("5 images, batch_size 8 -> one batch of 5 (the partial batch "
                 "is kept)", _dataset(5, (2, 2), 8), seed=2, extract=_as_batches,
                 **_PIPELINE),
            Case("300 images, batch_size 128: batch sizes 128, 128, 44",
                 _dataset(300, (4,), 128), seed=3, extract=_sizes, **_PIPELINE),
        ],
        hints=[
            "A tf.data.Dataset has methods that return a new dataset: one groups "
            "consecutive examples into batches, another prepares the next "
            "element in the background while the current one is used.",
            "JAX wants NumPy arrays, not TensorFlow tensors: a dataset can be "
            "iterated as NumPy directly (a method of the dataset), or through "
            "tensorflow_datasets.as_numpy.",
            "Keep the order and the last, partial batch: no shuffling, no "
            "drop_remainder.",
        ],
        mistakes=[
            Mistake("the last, partial batch is missing: drop_remainder drops "
                    "it", _drop_last),
            Mistake("the examples are not batched: group them into batches of "
                    "batch_size", _one_by_one),
            Mistake("the examples were shuffled: keep their order (shuffling "
                    "belongs to a training pipeline, not this one)", _shuffled),
        ],
    ),
)
