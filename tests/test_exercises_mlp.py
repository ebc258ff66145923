"""Chapter 1's exercises: realistic wrong answers are rejected with a message
that names the problem; alternative correct answers are accepted; the
reference solutions work."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxcourse.exercises import check
from solutions import mlp

# ---- wrong answers ------------------------------------------------------------


def relu_minimum(x):
    return jnp.minimum(0, x)


def relu_numpy(x):
    return np.maximum(0, x)


def relu_builtin_max(x):
    return max(0, x)


def relu_float_zero(x):
    return jnp.maximum(0.0, x)


def relu_abs(x):
    return jnp.abs(x)


def one_hot_wrong_axis(x, k, dtype=jnp.float32):
    return jnp.asarray(x[None, :] == jnp.arange(k)[:, None], dtype)


def one_hot_python_loop(x, k, dtype=jnp.float32):
    return jnp.stack([jnp.arange(k) == label for label in x]).astype(dtype)


def one_hot_int_loop(x, k, dtype=jnp.float32):
    return jnp.stack([jnp.eye(k, dtype=dtype)[int(label)] for label in x])


def one_hot_ignores_dtype(x, k, dtype=jnp.float32):
    return jnp.asarray(x[:, None] == jnp.arange(k), jnp.float32)


def one_hot_off_by_one(x, k, dtype=jnp.float32):
    return jnp.asarray(x[:, None] == jnp.arange(1, k + 1), dtype)


def accuracy_wrong_axis(log_probs, targets):
    return jnp.mean(jnp.argmax(log_probs, axis=0) == jnp.argmax(targets, axis=0))


def accuracy_count(log_probs, targets):
    return jnp.sum(jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1))


def accuracy_no_argmax_on_targets(log_probs, targets):
    return jnp.mean(jnp.argmax(log_probs, axis=1) == targets)


def accuracy_python_float(log_probs, targets):
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return float(hits.sum()) / len(hits)


def accuracy_python_loop(log_probs, targets):
    hits = [jnp.argmax(p) == jnp.argmax(t)
            for p, t in zip(log_probs, targets, strict=True)]
    return jnp.mean(jnp.stack(hits))


step_size = 0.01  # the global a learner may use instead of the argument


def update_ascent(params, images, targets, step_size):
    grads = jax.grad(mlp.loss)(params, images, targets)
    return [(w + step_size * dw, b + step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def update_global_step(params, images, targets, _step):
    grads = jax.grad(mlp.loss)(params, images, targets)
    return [(w - step_size * dw, b - step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def update_weights_only(params, images, targets, step_size):
    grads = jax.grad(mlp.loss)(params, images, targets)
    return [(w - step_size * dw, b)
            for (w, b), (dw, _) in zip(params, grads, strict=True)]


def update_prints_loss(params, images, targets, step_size):
    print(f"loss {float(mlp.loss(params, images, targets)):.3f}")
    grads = jax.grad(mlp.loss)(params, images, targets)
    return [(w - step_size * dw, b - step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def update_in_place(params, images, targets, step_size):
    grads = jax.grad(mlp.loss)(params, images, targets)
    for i, ((w, b), (dw, db)) in enumerate(zip(params, grads, strict=True)):
        params[i] = (w - step_size * dw, b - step_size * db)
    return params


def update_wrong_argument(params, images, targets, step_size):
    grads = jax.grad(mlp.loss, argnums=1)(params, images, targets)
    return [(w - step_size * grads, b) for w, b in params]


def update_tuple_of_lists(params, images, targets, step_size):
    grads = jax.grad(mlp.loss)(params, images, targets)
    new = [(w - step_size * dw, b - step_size * db)
           for (w, b), (dw, db) in zip(params, grads, strict=True)]
    return tuple(list(pair) for pair in new)


def batched_predict_no_vmap(params, images):
    return mlp.predict(params, images)


def batched_predict_first(params, images):
    return mlp.predict(params, images[0])


def batched_predict_out_axes(params, images):
    return jax.vmap(mlp.predict, in_axes=(None, 0), out_axes=1)(params, images)


def batched_predict_loop(params, images):
    return jnp.stack([mlp.predict(params, image) for image in images])


def tf_batches_tensors(dataset, batch_size):
    return list(dataset.batch(batch_size))


def tf_batches_drop(dataset, batch_size):
    return dataset.batch(batch_size, drop_remainder=True).as_numpy_iterator()


def tf_batches_fixed(dataset, batch_size):
    return dataset.batch(128).as_numpy_iterator()


def tf_batches_unbatched(dataset, batch_size):
    return dataset.as_numpy_iterator()


WRONG = [
    ("mlp.batched_predict", batched_predict_no_vmap, "raised TypeError"),
    ("mlp.batched_predict", batched_predict_first, "for the first image only"),
    ("mlp.batched_predict", batched_predict_out_axes, "keep out_axes at its default"),
    ("mlp.batched_predict", batched_predict_loop, "a Python loop over the examples?"),
    ("mlp.tf_batches", tf_batches_tensors, "EagerTensor"),
    ("mlp.tf_batches", tf_batches_drop, "drop_remainder drops it"),
    ("mlp.tf_batches", tf_batches_fixed, "wrong structure"),
    ("mlp.tf_batches", tf_batches_unbatched, "the examples are not batched"),
    ("mlp.relu", relu_minimum, "minimum instead of maximum"),
    ("mlp.relu", relu_numpy, "under jax.jit, raised TracerArrayConversionError"),
    ("mlp.relu", relu_builtin_max, "truth value of an array"),
    ("mlp.relu", relu_float_zero, "wrong dtype: expected int32, got float32"),
    ("mlp.relu", relu_abs, "absolute value"),
    ("mlp.one_hot", one_hot_wrong_axis,
     "wrong shape: expected (3, 10), got (10, 3) (the axes look swapped) — did "
     "you one-hot along the wrong axis?"),
    ("mlp.one_hot", one_hot_python_loop, "a Python loop over the examples?"),
    ("mlp.one_hot", one_hot_int_loop, "ConcretizationTypeError"),
    ("mlp.one_hot", one_hot_ignores_dtype,
     "wrong dtype: expected int32, got float32 — the `dtype` argument is ignored"),
    ("mlp.one_hot", one_hot_off_by_one, "the labels start at 0, not 1"),
    ("mlp.accuracy", accuracy_wrong_axis, "argmax along axis 0"),
    ("mlp.accuracy", accuracy_count, "that is the number of right answers"),
    ("mlp.accuracy", accuracy_no_argmax_on_targets, "Incompatible shapes"),
    ("mlp.accuracy", accuracy_python_float, "under jax.jit"),
    ("mlp.accuracy", accuracy_python_loop, "a Python loop over the examples?"),
    ("mlp.update", update_ascent, "add the gradient (ascent)"),
    ("mlp.update", update_global_step, "update honours step_size"),
    ("mlp.update", update_weights_only, "the biases were not updated"),
    ("mlp.update", update_prints_loss,
     "under jax.jit, raised ConcretizationTypeError"),
    ("mlp.update", update_in_place, "changed its input in place (argument 1)"),
    ("mlp.update", update_wrong_argument, "raised"),
]


@pytest.mark.parametrize(("exercise_id", "answer", "fragment"), WRONG,
                         ids=[f"{e}-{a.__name__}" for e, a, _ in WRONG])
def test_wrong_answer_is_rejected_and_named(exercise_id, answer, fragment) -> None:
    result = check(exercise_id, answer)
    assert not result.passed and result.status == "failed"
    assert result.score < 1.0
    text = " | ".join(result.messages)
    assert fragment in text, text


def test_every_exercise_has_three_wrong_answers() -> None:
    from collections import Counter

    counts = Counter(e for e, _, _ in WRONG)
    assert set(counts) == {"mlp.relu", "mlp.one_hot", "mlp.accuracy", "mlp.update",
                           "mlp.batched_predict", "mlp.tf_batches"}
    assert min(counts.values()) >= 3


# ---- alternative correct answers ---------------------------------------------


def relu_where(x):
    return jnp.where(x > 0, x, 0)


def relu_mask(x):
    return x * (x > 0)


def one_hot_eye(x, k, dtype=jnp.float32):
    return jnp.eye(k, dtype=dtype)[x]


def one_hot_nn(x, k, dtype=jnp.float32):
    return jax.nn.one_hot(x, k, dtype=dtype)


def one_hot_vmap(x, k, dtype=jnp.float32):
    return jax.vmap(lambda label: (jnp.arange(k) == label).astype(dtype))(x)


def accuracy_sum_over_len(log_probs, targets):
    hits = jnp.argmax(log_probs, -1) == jnp.argmax(targets, -1)
    return hits.sum() / hits.shape[0]


def accuracy_take_along(log_probs, targets):
    best = jnp.max(log_probs, axis=1)
    at_target = jnp.sum(log_probs * targets, axis=1)
    return jnp.mean((at_target >= best).astype(jnp.float32))


def update_tree_map(params, images, targets, step_size):
    grads = jax.grad(mlp.loss)(params, images, targets)
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads)


def update_optax(params, images, targets, step_size):
    grads = jax.grad(mlp.loss)(params, images, targets)
    optimizer = optax.sgd(step_size)
    updates, _ = optimizer.update(grads, optimizer.init(params))
    return optax.apply_updates(params, updates)


def relu_nn(x):
    return jax.nn.relu(x)


def one_hot_seed(x, k, dtype=jnp.float32):
    # The seed's (and the JAX docs') version: labels against a range, as a column.
    return jnp.array(x[:, None] == jnp.arange(k), dtype)


def accuracy_seed(log_probs, targets):
    # The seed's accuracy, given the predictions instead of params and images.
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(log_probs, axis=1)
    return jnp.mean(predicted_class == target_class)


def update_seed(params, images, targets, step_size):
    # The seed's update: a list comprehension over (w, b) pairs.
    grads = jax.grad(mlp.loss)(params, images, targets)
    return [(w - step_size * dw, b - step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def batched_predict_seed(params, images):
    # The seed's (and the docs') way: vmap with in_axes=(None, 0), then call.
    batched = jax.vmap(mlp.predict, in_axes=(None, 0))
    return batched(params, images)


def batched_predict_partial(params, images):
    return jax.vmap(functools.partial(mlp.predict, params))(images)


def batched_predict_lambda(params, images):
    return jax.vmap(lambda image: mlp.predict(params, image))(images)


def tf_batches_tfds(dataset, batch_size):
    # The seed's pipeline: batch, prefetch, then tfds.as_numpy.
    import tensorflow_datasets as tfds

    return tfds.as_numpy(dataset.batch(batch_size).prefetch(1))


def tf_batches_list(dataset, batch_size):
    return [(x.numpy(), y.numpy()) for x, y in dataset.batch(batch_size)]


def tf_batches_autotune(dataset, batch_size):
    import tensorflow as tf

    pipeline = dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
    return list(pipeline.as_numpy_iterator())


RIGHT = [
    ("mlp.batched_predict", batched_predict_seed),
    ("mlp.batched_predict", batched_predict_partial),
    ("mlp.batched_predict", batched_predict_lambda),
    ("mlp.tf_batches", tf_batches_tfds),
    ("mlp.tf_batches", tf_batches_list),
    ("mlp.tf_batches", tf_batches_autotune),
    ("mlp.relu", relu_nn),
    ("mlp.one_hot", one_hot_seed),
    ("mlp.accuracy", accuracy_seed),
    ("mlp.update", update_seed),
    ("mlp.update", update_tuple_of_lists),  # a tuple of lists is not wrong
    ("mlp.relu", relu_where),
    ("mlp.relu", relu_mask),
    ("mlp.one_hot", one_hot_eye),
    ("mlp.one_hot", one_hot_nn),
    ("mlp.one_hot", one_hot_vmap),
    ("mlp.accuracy", accuracy_sum_over_len),
    ("mlp.accuracy", accuracy_take_along),
    ("mlp.update", update_tree_map),
    ("mlp.update", update_optax),
]


@pytest.mark.parametrize(("exercise_id", "answer"), RIGHT,
                         ids=[f"{e}-{a.__name__}" for e, a in RIGHT])
def test_alternative_correct_answer_is_accepted(exercise_id, answer) -> None:
    result = check(exercise_id, answer)
    assert result.passed, result.report()
    assert result.score == 1.0


@pytest.mark.parametrize("name", ["relu", "one_hot", "accuracy", "update"])
def test_reference_passes_its_own_check(name) -> None:
    assert check(f"mlp.{name}", getattr(mlp, name)).passed


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
