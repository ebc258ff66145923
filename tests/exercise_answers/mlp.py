"""Answers to chapter 1's exercises (topic ``mlp``), as learners write them.

What checking each must give is in ``mlp.toml``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

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


def one_hot_ten_classes(x, k, dtype=jnp.float32):
    # MNIST has 10 classes: k written in, not taken from the argument.
    return jnp.asarray(x[:, None] == jnp.arange(10), dtype)


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
