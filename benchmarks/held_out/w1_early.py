"""Held-out answers written from the exercise texts alone (chapters 1-3), writer W1.

Written by reading only the three student notebooks (exercises/01_mlp_exercises,
02_torch_data_exercises, 03_bayes_exercises), the chapters book/01_mlp, 02_torch_data
and 03_bayes, and the public module jaxcourse/mlp.py that the notebooks import. The
answers were tried only on small made-up inputs with the writer's own code. No
checker, hint, reference solution, stored output, message catalogue or test was read
or run.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import jax.scipy as jsp
import numpy as np

from jaxcourse.mlp import loss, predict

# ---------------------------------------------------------------------------
# Helpers the notebooks define or provide (mirrored here).
# ---------------------------------------------------------------------------


def _log_joint(beta, all_x, y, prior_scale=1.0):
    # The notebook's given log_joint, for ONE beta of shape (features,).
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=prior_scale))
    signs = 2 * y - 1
    result = result + jnp.sum(-jax.nn.softplus(-signs * jnp.dot(all_x, beta)))
    return result


def _elbo_value_and_grad(beta_loc, beta_log_scale, epsilon, all_x, y):
    # The learner's own exercise-4 answer, used by exercise 5.
    per_sample = jax.vmap(_log_joint, in_axes=(0, None, None, None))

    def objective(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(per_sample(samples, all_x, y, 10.0))
        entropy = jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))
        return expected + entropy

    return jax.value_and_grad(objective, argnums=(0, 1))(beta_loc, beta_log_scale)


_STEP_SIZE = 0.01  # a learner's global, copied from the chapter


# ===========================================================================
# mlp.relu
# ===========================================================================


def relu__forgot_zero_floor(x):
    """Returns x unchanged: the max with zero left out."""
    return x + 0


def relu__min_instead_of_max(x):
    """Uses jnp.minimum, which keeps the negatives and zeroes the positives."""
    return jnp.minimum(0, x)


def relu__float_zero_literal(x):
    """Compares with 0.0, so an int32 input comes back as float32."""
    return jnp.maximum(x, 0.0)


def relu__always_float32(x):
    """Casts the result to float32 to be safe, losing the input dtype."""
    return jnp.maximum(x, 0).astype(jnp.float32)


def relu__returns_step_function(x):
    """Returns the 0/1 mask (x > 0) instead of x where positive."""
    return (x > 0).astype(x.dtype)


def relu__leaky_slope(x):
    """Writes a leaky ReLU: 0.01 * x for negatives instead of zero."""
    return jnp.where(x > 0, x, 0.01 * x)


def relu__half_x_plus_abs(x):
    """Uses (x + |x|) / 2, whose true division turns ints into floats."""
    return (x + jnp.abs(x)) / 2


def relu__numpy_maximum(x):
    """Goes through NumPy's np.maximum, which cannot take a jit tracer."""
    return jnp.asarray(np.maximum(np.asarray(x), 0))


def relu__clip_to_one(x):
    """Clips to [0, 1] instead of only flooring at zero."""
    return jnp.clip(x, 0, 1)


def relu__right_where(x):
    """Right: jnp.where on the sign, zeros of the input's dtype elsewhere."""
    return jnp.where(x > 0, x, jnp.zeros_like(x))


def relu__right_mask_multiply(x):
    """Right: multiplies x by the positive mask cast to x's dtype."""
    return x * (x > 0).astype(x.dtype)


def relu__right_maximum_zeros(x):
    """Right: element-wise maximum with a zero array of the same dtype."""
    return jnp.maximum(x, jnp.zeros_like(x))


# ===========================================================================
# mlp.one_hot
# ===========================================================================


def one_hot__python_loop(x, k, dtype=jnp.float32):
    """Builds each row in a Python loop over the labels, then stacks them."""
    rows = [(jnp.arange(k) == label).astype(dtype) for label in x]
    return jnp.stack(rows)


def one_hot__transposed(x, k, dtype=jnp.float32):
    """Puts the classes on the rows: returns a (k, n) array."""
    return (jnp.arange(k)[:, None] == x[None, :]).astype(dtype)


def one_hot__boolean_result(x, k, dtype=jnp.float32):
    """Returns the boolean comparison and never casts to dtype."""
    return x[:, None] == jnp.arange(k)


def one_hot__ignores_dtype(x, k, dtype=jnp.float32):
    """Always casts to float32, whatever dtype is asked for."""
    return (x[:, None] == jnp.arange(k)).astype(jnp.float32)


def one_hot__ten_columns(x, k, dtype=jnp.float32):
    """Hard-codes the ten MNIST classes instead of using k."""
    return (x[:, None] == jnp.arange(10)).astype(dtype)


def one_hot__labels_from_one(x, k, dtype=jnp.float32):
    """Treats labels as 1..k, so every one is shifted a column left."""
    return (x[:, None] == jnp.arange(1, k + 1)).astype(dtype)


def one_hot__scatter_whole_columns(x, k, dtype=jnp.float32):
    """Sets [:, x] to one, which fills every label's column in every row."""
    return jnp.zeros((x.shape[0], k), dtype).at[:, x].set(1)


def one_hot__numpy_eye(x, k, dtype=jnp.float32):
    """Indexes np.eye with the labels through NumPy (breaks under tracing)."""
    return jnp.asarray(np.eye(k)[np.asarray(x)], dtype)


def one_hot__right_expand_dims(x, k, dtype=jnp.float32):
    """Right: compares a column of labels with a row of class indices."""
    labels = jnp.expand_dims(jnp.asarray(x), -1)
    return jnp.where(labels == jnp.arange(k), 1, 0).astype(dtype)


def one_hot__right_equal_broadcast(x, k, dtype=jnp.float32):
    """Right: jnp.equal of (n, 1) against (1, k), cast to dtype."""
    classes = jnp.arange(k).reshape(1, k)
    return jnp.equal(jnp.reshape(x, (-1, 1)), classes).astype(dtype)


# ===========================================================================
# mlp.accuracy
# ===========================================================================


def accuracy__argmax_axis0(log_probs, targets):
    """Takes the argmax over axis 0, the batch, instead of the classes."""
    return jnp.mean(jnp.argmax(log_probs, axis=0) == jnp.argmax(targets, axis=0))


def accuracy__count_not_fraction(log_probs, targets):
    """Returns the number of correct examples instead of the fraction."""
    return jnp.sum(jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1))


def accuracy__float_inside(log_probs, targets):
    """Calls float() on the mean to get a plain number (fails under jit)."""
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return jnp.asarray(float(jnp.mean(hits)))


def accuracy__error_rate(log_probs, targets):
    """Counts the mismatches, so it returns the error rate."""
    return jnp.mean(jnp.argmax(log_probs, axis=1) != jnp.argmax(targets, axis=1))


def accuracy__argmin_of_log_probs(log_probs, targets):
    """Picks the class with the smallest log-probability as the prediction."""
    return jnp.mean(jnp.argmin(log_probs, axis=1) == jnp.argmax(targets, axis=1))


def accuracy__mean_true_class_probability(log_probs, targets):
    """Averages the probability given to the target class (a soft accuracy)."""
    return jnp.mean(jnp.sum(jnp.exp(log_probs) * targets, axis=1))


def accuracy__integer_division(log_probs, targets):
    """Divides the count by n with //, which gives 0 unless all are right."""
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return jnp.sum(hits) // log_probs.shape[0]


def accuracy__percent(log_probs, targets):
    """Returns a percentage (times 100) instead of a fraction."""
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return 100 * jnp.mean(hits)


def accuracy__per_example_not_reduced(log_probs, targets):
    """Returns the per-example 0/1 hits and forgets to average them."""
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return hits.astype(jnp.float32)


def accuracy__right_mean_of_float_hits(log_probs, targets):
    """Right: argmax over the last axis, hits cast to float32, then the mean."""
    predicted = jnp.argmax(log_probs, axis=-1)
    wanted = jnp.argmax(targets, axis=-1)
    return jnp.mean((predicted == wanted).astype(jnp.float32))


def accuracy__right_count_over_n(log_probs, targets):
    """Right: the count of hits divided (true division) by the batch size."""
    hits = jnp.sum(jnp.argmax(log_probs, 1) == jnp.argmax(targets, 1))
    return hits / jnp.float32(log_probs.shape[0])


# ===========================================================================
# mlp.update
# ===========================================================================


@jax.jit
def update__gradient_ascent(params, images, targets, step_size):
    """Adds step_size times the gradient instead of subtracting it."""
    grads = jax.grad(loss)(params, images, targets)
    return [(w + step_size * dw, b + step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


@jax.jit
def update__global_step_size(params, images, targets, step_size):
    """Uses the chapter's global step size 0.01, not the argument."""
    grads = jax.grad(loss)(params, images, targets)
    return [(w - _STEP_SIZE * dw, b - _STEP_SIZE * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


@jax.jit
def update__biases_not_updated(params, images, targets, step_size):
    """Moves only the weights and returns the biases unchanged."""
    grads = jax.grad(loss)(params, images, targets)
    return [(w - step_size * dw, b)
            for (w, b), (dw, _) in zip(params, grads, strict=True)]


@jax.jit
def update__list_of_lists(params, images, targets, step_size):
    """Returns each layer as a [w, b] list instead of a (w, b) tuple."""
    grads = jax.grad(loss)(params, images, targets)
    return [[w - step_size * dw, b - step_size * db]
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def update__mutates_params_in_place(params, images, targets, step_size):
    """Writes the new layers back into the params list and returns it."""
    grads = jax.grad(loss)(params, images, targets)
    for i, ((w, b), (dw, db)) in enumerate(zip(params, grads, strict=True)):
        params[i] = (w - step_size * dw, b - step_size * db)
    return params


@jax.jit
def update__ten_times_step(params, images, targets, step_size):
    """Multiplies the step by 10 to undo the loss's mean over ten classes."""
    grads = jax.grad(loss)(params, images, targets)
    return jax.tree.map(lambda p, g: p - 10 * step_size * g, params, grads)


@jax.jit
def update__returns_loss_too(params, images, targets, step_size):
    """Returns (new_params, loss_value) instead of only the new parameters."""
    value, grads = jax.value_and_grad(loss)(params, images, targets)
    new = [(w - step_size * dw, b - step_size * db)
           for (w, b), (dw, db) in zip(params, grads, strict=True)]
    return new, value


@jax.jit
def update__float_step_size(params, images, targets, step_size):
    """Converts step_size with float(), which fails on a traced value."""
    lr = float(step_size)
    grads = jax.grad(loss)(params, images, targets)
    return [(w - lr * dw, b - lr * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def _summed_loss(params, images, targets):
    log_probs = jax.vmap(predict, in_axes=(None, 0))(params, images)
    return -jnp.sum(log_probs * targets)


@jax.jit
def update__own_summed_loss(params, images, targets, step_size):
    """Differentiates its own loss that sums over the batch instead of the mean."""
    grads = jax.grad(_summed_loss)(params, images, targets)
    return [(w - step_size * dw, b - step_size * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


@jax.jit
def update__right_zip_layers(params, images, targets, step_size):
    """Right: grad of loss, then a new list of (w, b) tuples layer by layer."""
    grads = jax.grad(loss)(params, images, targets)
    new_params = []
    for (w, b), (dw, db) in zip(params, grads, strict=True):
        new_params.append((w - step_size * dw, b - step_size * db))
    return new_params


@jax.jit
def update__right_flat_leaves(params, images, targets, step_size):
    """Right: updates the flat leaves and pairs them back into tuples."""
    grads = jax.grad(loss)(params, images, targets)
    moved = [p - step_size * g for p, g in zip(jax.tree.leaves(params),
                                               jax.tree.leaves(grads), strict=True)]
    return list(zip(moved[0::2], moved[1::2], strict=True))


# ===========================================================================
# mlp.batched_predict
# ===========================================================================


def batched_predict__no_in_axes(params, images):
    """Calls jax.vmap(predict) with no in_axes, so params are mapped too."""
    return jax.vmap(predict)(params, images)


def batched_predict__in_axes_swapped(params, images):
    """Writes in_axes=(0, None): maps over params and shares the images."""
    return jax.vmap(predict, in_axes=(0, None))(params, images)


def batched_predict__python_loop(params, images):
    """Loops over the images in Python and stacks the results."""
    return jnp.stack([predict(params, image) for image in images])


def batched_predict__out_axes_one(params, images):
    """Sets out_axes=1, which returns (classes, n) instead of (n, classes)."""
    return jax.vmap(predict, in_axes=(None, 0), out_axes=1)(params, images)


def batched_predict__hand_batched_softmax_no_axis(params, images):
    """Rewrites the forward pass for a batch; logsumexp has no axis."""
    activations = images
    for w, b in params[:-1]:
        activations = jax.nn.relu(activations @ w.T + b)
    final_w, final_b = params[-1]
    logits = activations @ final_w.T + final_b
    return logits - jax.scipy.special.logsumexp(logits)


def batched_predict__lax_map(params, images):
    """Uses jax.lax.map over the images instead of jax.vmap."""
    return jax.lax.map(lambda image: predict(params, image), images)


def batched_predict__returns_classes(params, images):
    """Returns the predicted class of each image instead of log-probabilities."""
    log_probs = jax.vmap(predict, in_axes=(None, 0))(params, images)
    return jnp.argmax(log_probs, axis=1)


def batched_predict__squeezed(params, images):
    """Squeezes the result, so a batch of one loses its batch axis."""
    return jnp.squeeze(jax.vmap(predict, in_axes=(None, 0))(params, images))


def batched_predict__right_closure(params, images):
    """Right: vmaps a one-argument closure over the params."""
    return jax.vmap(lambda image: predict(params, image))(images)


def batched_predict__right_partial(params, images):
    """Right: vmaps predict with the params bound by functools.partial."""
    return jax.vmap(functools.partial(predict, params), in_axes=0)(images)


def batched_predict__right_explicit_axes(params, images):
    """Right: in_axes=(None, 0) and out_axes=0 spelled out."""
    mapped = jax.vmap(predict, in_axes=(None, 0), out_axes=0)
    return mapped(params, images)


# ===========================================================================
# mlp.tf_batches
# ===========================================================================


def tf_batches__tf_tensors(dataset, batch_size):
    """Batches and prefetches but returns the dataset of TF tensors as is."""
    return dataset.batch(batch_size).prefetch(1)


def tf_batches__drops_remainder(dataset, batch_size):
    """Uses drop_remainder=True, so the last smaller batch is lost."""
    import tensorflow_datasets as tfds

    return tfds.as_numpy(dataset.batch(batch_size, drop_remainder=True).prefetch(1))


def tf_batches__shuffled_like_chapter(dataset, batch_size):
    """Shuffles before batching as the chapter did, so the order changes."""
    import tensorflow_datasets as tfds

    ds = dataset.shuffle(1000, seed=0).batch(batch_size).prefetch(1)
    return tfds.as_numpy(ds)


def tf_batches__no_prefetch(dataset, batch_size):
    """Batches and converts to NumPy but never prefetches."""
    import tensorflow_datasets as tfds

    return tfds.as_numpy(dataset.batch(batch_size))


def tf_batches__prefetch_before_batch(dataset, batch_size):
    """Prefetches before batching, so it prefetches one example, not a batch."""
    import tensorflow_datasets as tfds

    return tfds.as_numpy(dataset.prefetch(1).batch(batch_size))


def tf_batches__never_batched(dataset, batch_size):
    """Forgets .batch(), so it yields one (image, label) example at a time."""
    import tensorflow_datasets as tfds

    return tfds.as_numpy(dataset.prefetch(1))


def tf_batches__chapter_batch_size(dataset, batch_size):
    """Batches by the chapter's 128 instead of the batch_size argument."""
    import tensorflow_datasets as tfds

    return tfds.as_numpy(dataset.batch(128).prefetch(1))


def tf_batches__jax_arrays(dataset, batch_size):
    """Hands the batches over as JAX arrays (jnp.asarray) instead of NumPy."""
    return [(jnp.asarray(images), jnp.asarray(labels))
            for images, labels in dataset.batch(batch_size).prefetch(1)
            .as_numpy_iterator()]


def tf_batches__right_tfds_as_numpy(dataset, batch_size):
    """Right: batch, prefetch(1), then tfds.as_numpy for a NumPy iterable."""
    import tensorflow_datasets as tfds

    pipeline = dataset.batch(batch_size, drop_remainder=False)
    return tfds.as_numpy(pipeline.prefetch(1))


def tf_batches__right_list_of_numpy(dataset, batch_size):
    """Right: iterates the batched, prefetched pipeline into NumPy pairs."""
    pipeline = dataset.batch(batch_size).prefetch(buffer_size=1)
    return [(images.numpy(), labels.numpy()) for images, labels in pipeline]


# ===========================================================================
# torch_data.numpy_collate
# ===========================================================================


def numpy_collate__not_recursive(batch):
    """Regroups the fields one level only and stacks each, nested or not."""
    if isinstance(batch[0], (tuple, list)):
        return tuple(np.stack([np.asarray(v) for v in field])
                     for field in zip(*batch, strict=True))
    return np.stack([np.asarray(example) for example in batch])


def numpy_collate__torch_default_collate(batch):
    """Calls PyTorch's default_collate, which returns torch tensors."""
    from torch.utils.data import default_collate

    return default_collate(batch)


def numpy_collate__forgets_to_stack(batch):
    """Regroups the fields recursively but leaves each leaf as a Python list."""
    if isinstance(batch[0], (tuple, list)):
        return tuple(numpy_collate__forgets_to_stack(list(field))
                     for field in zip(*batch, strict=True))
    return list(batch)


def numpy_collate__concatenate_not_stack(batch):
    """Uses np.concatenate, which joins along the existing first axis."""
    if isinstance(batch[0], (tuple, list)):
        return tuple(numpy_collate__concatenate_not_stack(list(field))
                     for field in zip(*batch, strict=True))
    return np.concatenate([np.asarray(example) for example in batch])


def numpy_collate__casts_to_float32(batch):
    """Casts every stacked leaf to float32 for the model, labels included."""
    if isinstance(batch[0], (tuple, list)):
        return tuple(numpy_collate__casts_to_float32(list(field))
                     for field in zip(*batch, strict=True))
    return np.stack([np.asarray(example) for example in batch]).astype(np.float32)


def numpy_collate__np_array_of_batch(batch):
    """Calls np.array on the whole list of examples, structure and all."""
    return np.array(batch)


def numpy_collate__stacks_on_last_axis(batch):
    """Stacks along axis=-1, so the batch axis comes last."""
    if isinstance(batch[0], (tuple, list)):
        return tuple(numpy_collate__stacks_on_last_axis(list(field))
                     for field in zip(*batch, strict=True))
    return np.stack([np.asarray(example) for example in batch], axis=-1)


def numpy_collate__vstack_leaves(batch):
    """Stacks the leaves with np.vstack, which joins rows instead of adding an axis."""
    if isinstance(batch[0], (tuple, list)):
        return tuple(numpy_collate__vstack_leaves(list(field))
                     for field in zip(*batch, strict=True))
    return np.vstack([np.asarray(example) for example in batch])


def numpy_collate__no_regrouping(batch):
    """Converts each example's fields to NumPy but keeps one entry per example."""
    if isinstance(batch[0], (tuple, list)):
        return [tuple(np.asarray(v) for v in example) for example in batch]
    return np.stack([np.asarray(example) for example in batch])


def numpy_collate__right_recursive(batch):
    """Right: transposes the fields with zip and recurses; leaves np.stack."""
    head = batch[0]
    if isinstance(head, (tuple, list)):
        fields = zip(*batch, strict=True)
        return tuple(numpy_collate__right_recursive(list(f)) for f in fields)
    return np.stack([np.asarray(item) for item in batch], axis=0)


def numpy_collate__right_index_fields(batch):
    """Right: collates field i of every example, keeping list or tuple."""
    head = batch[0]
    if not isinstance(head, (tuple, list)):
        return np.stack([np.asarray(item) for item in batch])
    collated = [numpy_collate__right_index_fields([ex[i] for ex in batch])
                for i in range(len(head))]
    return collated if isinstance(head, list) else tuple(collated)


# ===========================================================================
# torch_data.flatten_and_cast
# ===========================================================================


def flatten_and_cast__scaled_to_unit(pic):
    """Divides by 255 to put the pixels in [0, 1]."""
    return np.ravel(np.asarray(pic, dtype=np.float32)) / 255.0


def flatten_and_cast__hardcoded_784(pic):
    """Reshapes to 784, which only fits a 28x28 image."""
    return np.asarray(pic, dtype=np.float32).reshape(784)


def flatten_and_cast__float64(pic):
    """Casts with dtype=float, which is float64 in NumPy."""
    return np.asarray(pic, dtype=float).ravel()


def flatten_and_cast__not_flattened(pic):
    """Casts to float32 but keeps the (height, width) shape."""
    return np.asarray(pic, dtype=np.float32)


def flatten_and_cast__torchvision_to_tensor(pic):
    """Uses torchvision's to_tensor, a scaled torch tensor, then flattens it."""
    from torchvision.transforms import functional

    return functional.to_tensor(pic).flatten()


def flatten_and_cast__jax_array(pic):
    """Returns a JAX array built with jnp instead of a NumPy array."""
    return jnp.ravel(jnp.asarray(np.asarray(pic), dtype=jnp.float32))


def flatten_and_cast__mnist_normalised(pic):
    """Applies the usual MNIST mean/std normalisation after scaling."""
    pixels = np.ravel(np.asarray(pic, dtype=np.float32)) / 255.0
    return ((pixels - 0.1307) / 0.3081).astype(np.float32)


def flatten_and_cast__column_major(pic):
    """Flattens in Fortran (column) order, so the pixels come out transposed."""
    return np.asarray(pic, dtype=np.float32).flatten(order="F")


def flatten_and_cast__uint8_kept(pic):
    """Flattens the image but never casts it, so it stays uint8."""
    return np.ravel(np.asarray(pic))


def flatten_and_cast__right_reshape(pic):
    """Right: to a NumPy array, astype float32, reshape(-1)."""
    return np.asarray(pic).astype(np.float32).reshape(-1)


def flatten_and_cast__right_flatten_copy(pic):
    """Right: np.array with dtype float32, then .flatten()."""
    pixels = np.array(pic, dtype=np.float32)
    return pixels.flatten()


# ===========================================================================
# torch_data.batches
# ===========================================================================


def batches__drops_last(images, labels, batch_size):
    """Stops at the last full batch, so the smaller last batch is lost."""
    n = labels.shape[0]
    return [(images[s:s + batch_size], labels[s:s + batch_size])
            for s in range(0, n - batch_size + 1, batch_size)]


def batches__stacks_single_rows(images, labels, batch_size):
    """Builds each batch by stacking single rows images[i]."""
    n = labels.shape[0]
    out = []
    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        rows = [images[i] for i in range(start, stop)]
        out.append((np.stack(rows), labels[start:stop]))
    return out


def batches__inclusive_end(images, labels, batch_size):
    """Ends each slice at start + batch_size - 1, as if the end were inclusive."""
    n = labels.shape[0]
    return [(images[s:s + batch_size - 1], labels[s:s + batch_size - 1])
            for s in range(0, n, batch_size)]


def batches__one_batch_too_many(images, labels, batch_size):
    """Makes n // batch_size + 1 batches: an empty one when it divides n."""
    n = labels.shape[0]
    return [(images[i * batch_size:(i + 1) * batch_size],
             labels[i * batch_size:(i + 1) * batch_size])
            for i in range(n // batch_size + 1)]


def batches__array_split_evenly(images, labels, batch_size):
    """Uses np.array_split into n // batch_size parts of nearly equal size."""
    parts = labels.shape[0] // batch_size
    return list(zip(np.array_split(images, parts), np.array_split(labels, parts),
                    strict=True))


def batches__labels_by_batch_number(images, labels, batch_size):
    """Slices the labels from the batch number instead of the start index."""
    n = labels.shape[0]
    return [(images[s:s + batch_size], labels[i:i + batch_size])
            for i, s in enumerate(range(0, n, batch_size))]


def batches__batch_size_as_count(images, labels, batch_size):
    """Reads batch_size as the number of batches and splits into that many."""
    return list(zip(np.array_split(images, batch_size),
                    np.array_split(labels, batch_size), strict=True))


def batches__reshape_drops_remainder(images, labels, batch_size):
    """Reshapes the full batches into a stack and silently drops the rest."""
    full = labels.shape[0] // batch_size
    used = full * batch_size
    image_stack = images[:used].reshape(full, batch_size, *images.shape[1:])
    label_stack = labels[:used].reshape(full, batch_size)
    return [(image_stack[i], label_stack[i]) for i in range(full)]


def batches__right_range_slices(images, labels, batch_size):
    """Right: one slice of each array per start in range(0, n, batch_size)."""
    total = images.shape[0]
    pairs = []
    for first in range(0, total, batch_size):
        window = slice(first, first + batch_size)
        pairs.append((images[window], labels[window]))
    return pairs


def batches__right_generator_ceil(images, labels, batch_size):
    """Right: a generator over ceil(n / batch_size) batch numbers."""
    count = -(-labels.shape[0] // batch_size)
    for number in range(count):
        lo, hi = number * batch_size, (number + 1) * batch_size
        yield images[lo:hi], labels[lo:hi]


# ===========================================================================
# torch_data.shuffled_batches
# ===========================================================================


def _cut(order, batch_size):
    return [order[s:s + batch_size] for s in range(0, len(order), batch_size)]


def shuffled_batches__global_seed(num_examples, batch_size, seed):
    """Seeds NumPy's global generator and uses np.random.permutation."""
    np.random.seed(seed)
    return _cut(np.random.permutation(num_examples), batch_size)


def shuffled_batches__choice_with_replacement(num_examples, batch_size, seed):
    """Draws indices with rng.choice, which repeats some by default."""
    rng = np.random.default_rng(seed)
    return _cut(rng.choice(num_examples, size=num_examples), batch_size)


def shuffled_batches__drops_last(num_examples, batch_size, seed):
    """Keeps only full batches, dropping the leftover indices."""
    order = np.random.default_rng(seed).permutation(num_examples)
    full = num_examples // batch_size
    return [order[i * batch_size:(i + 1) * batch_size] for i in range(full)]


def shuffled_batches__never_shuffled(num_examples, batch_size, seed):
    """Creates the generator but cuts np.arange in order, never permuting."""
    np.random.default_rng(seed)
    return _cut(np.arange(num_examples), batch_size)


def shuffled_batches__shuffles_within_batches(num_examples, batch_size, seed):
    """Cuts 0..n-1 into batches first and permutes inside each batch only."""
    rng = np.random.default_rng(seed)
    return [rng.permutation(chunk) for chunk in _cut(np.arange(num_examples),
                                                     batch_size)]


def shuffled_batches__legacy_random_state(num_examples, batch_size, seed):
    """Uses the legacy np.random.RandomState(seed) instead of default_rng."""
    order = np.random.RandomState(seed).permutation(num_examples)
    return _cut(order, batch_size)


def shuffled_batches__seed_plus_one(num_examples, batch_size, seed):
    """Adds the epoch to the seed itself (seed + 1), shifting the order."""
    order = np.random.default_rng(seed + 1).permutation(num_examples)
    return _cut(order, batch_size)


def shuffled_batches__jax_permutation(num_examples, batch_size, seed):
    """Shuffles with jax.random.permutation on a JAX key made from the seed."""
    order = jax.random.permutation(jax.random.key(seed), num_examples)
    return _cut(order, batch_size)


def shuffled_batches__indices_from_one(num_examples, batch_size, seed):
    """Permutes 1..n instead of 0..n-1."""
    rng = np.random.default_rng(seed)
    return _cut(rng.permutation(np.arange(1, num_examples + 1)), batch_size)


def shuffled_batches__right_slices(num_examples, batch_size, seed):
    """Right: a private default_rng(seed).permutation, cut in slices."""
    generator = np.random.default_rng(seed)
    order = generator.permutation(num_examples)
    batches = []
    start = 0
    while start < num_examples:
        batches.append(order[start:start + batch_size])
        start += batch_size
    return batches


def shuffled_batches__right_split_points(num_examples, batch_size, seed):
    """Right: np.split of the permutation at multiples of batch_size."""
    order = np.random.default_rng(seed).permutation(num_examples)
    cuts = np.arange(batch_size, num_examples, batch_size)
    return list(np.split(order, cuts))


# ===========================================================================
# torch_data.make_loader
# ===========================================================================


def make_loader__shuffles(dataset, batch_size, collate_fn):
    """Passes shuffle=True as the chapter's training loader did."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size, shuffle=True,
                      collate_fn=collate_fn)


def make_loader__drops_last(dataset, batch_size, collate_fn):
    """Sets drop_last=True, losing the last smaller batch."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size, drop_last=True,
                      collate_fn=collate_fn)


def make_loader__ignores_collate_fn(dataset, batch_size, collate_fn):
    """Never passes collate_fn, so PyTorch's default collate is used."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size)


def make_loader__collate_positional(dataset, batch_size, collate_fn):
    """Passes collate_fn third by position, where DataLoader expects shuffle."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size, collate_fn)


def make_loader__list_of_batches(dataset, batch_size, collate_fn):
    """Returns list(DataLoader(...)), a list instead of the loader."""
    from torch.utils.data import DataLoader

    return list(DataLoader(dataset, batch_size=batch_size, collate_fn=collate_fn))


def make_loader__own_loop(dataset, batch_size, collate_fn):
    """Batches by hand with a Python loop instead of a DataLoader."""
    n = len(dataset)
    return [collate_fn([dataset[i] for i in range(s, min(s + batch_size, n))])
            for s in range(0, n, batch_size)]


def make_loader__batch_size_none(dataset, batch_size, collate_fn):
    """Copies batch_size=None from the fast loader, so nothing is batched."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=None, collate_fn=collate_fn)


def make_loader__chapter_batch_size(dataset, batch_size, collate_fn):
    """Uses the chapter's 128 instead of the batch_size argument."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=128, collate_fn=collate_fn)


def make_loader__right_keywords(dataset, batch_size, collate_fn):
    """Right: DataLoader with batch_size, shuffle/drop_last off, collate_fn."""
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size, shuffle=False,
                      drop_last=False, collate_fn=collate_fn)


def make_loader__right_batch_sampler(dataset, batch_size, collate_fn):
    """Right: a sequential BatchSampler keeping the last batch, and collate_fn."""
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_fn)


# ===========================================================================
# bayes.batched_log_joint
# ===========================================================================


def batched_log_joint__likelihood_axis0(beta, all_x, y):
    """Sums the likelihood over axis 0 (the betas) instead of the points."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=-1)
    logits = jnp.dot(all_x, beta.T).T
    return prior + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=0)


def batched_log_joint__prior_no_axis(beta, all_x, y):
    """Gives the likelihood sum its axis but sums the prior over everything."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0))
    logits = beta @ all_x.T
    return prior + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)


def batched_log_joint__logits_not_transposed(beta, all_x, y):
    """Keeps the logits as (points, batch), so the signs meet the wrong axis."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=-1)
    logits = jnp.dot(all_x, beta.T)
    return prior + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)


def batched_log_joint__labels_as_signs(beta, all_x, y):
    """Multiplies by the 0/1 labels, forgetting the sign trick 2y - 1."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=-1)
    logits = beta @ all_x.T
    return prior + jnp.sum(-jax.nn.softplus(-y * logits), axis=-1)


def batched_log_joint__softplus_sign_dropped(beta, all_x, y):
    """Writes softplus(s * logits), dropping the minus inside the softplus."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=-1)
    logits = beta @ all_x.T
    return prior + jnp.sum(-jax.nn.softplus((2 * y - 1) * logits), axis=-1)


def batched_log_joint__mean_over_points(beta, all_x, y):
    """Averages the likelihood over the points instead of summing it."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=-1)
    logits = beta @ all_x.T
    return prior + jnp.mean(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)


def batched_log_joint__prior_scale_ten(beta, all_x, y):
    """Uses the variational part's N(0, 10^2) prior instead of the standard one."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 10.0), axis=-1)
    logits = beta @ all_x.T
    return prior + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)


def batched_log_joint__python_loop(beta, all_x, y):
    """Calls the one-beta log_joint in a Python loop over the betas."""
    return jnp.stack([_log_joint(b, all_x, y) for b in beta])


def batched_log_joint__no_prior(beta, all_x, y):
    """Returns the log likelihood only and leaves the prior out."""
    logits = beta @ all_x.T
    return jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)


def batched_log_joint__right_matmul(beta, all_x, y):
    """Right: logits beta @ X.T of shape (batch, points), sums over axis -1."""
    log_prior = jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0).sum(axis=-1)
    signs = 2 * y - 1
    logits = jnp.matmul(beta, all_x.T)
    return log_prior - jax.nn.softplus(-signs[None, :] * logits).sum(axis=-1)


def batched_log_joint__right_einsum(beta, all_x, y):
    """Right: einsum logits and the normal log density written out, axis 1."""
    log_prior = jnp.sum(-0.5 * beta**2 - 0.5 * jnp.log(2 * jnp.pi), axis=1)
    logits = jnp.einsum("bf,pf->bp", beta, all_x)
    signs = (2 * y - 1).astype(logits.dtype)
    return log_prior + jnp.sum(-jax.nn.softplus(-signs * logits), axis=1)


def batched_log_joint__right_points_first(beta, all_x, y):
    """Right: keeps (points, batch) logits, signs on axis 0, sums over axis 0."""
    log_prior = jnp.sum(jsp.stats.norm.logpdf(beta), axis=1)
    logits = all_x @ beta.T
    signs = (2 * y - 1)[:, None]
    return log_prior + jnp.sum(-jax.nn.softplus(-signs * logits), axis=0)


# ===========================================================================
# bayes.vmapped_log_joint
# ===========================================================================


def vmapped_log_joint__maps_data_too(betas, all_x, y, prior_scale=1.0):
    """Maps over axis 0 of the data as well as the betas."""
    return jax.vmap(_log_joint, in_axes=(0, 0, 0, None))(betas, all_x, y, prior_scale)


def vmapped_log_joint__drops_prior_scale(betas, all_x, y, prior_scale=1.0):
    """Never passes prior_scale on, so the prior is always standard normal."""
    return jax.vmap(_log_joint, in_axes=(0, None, None))(betas, all_x, y)


def vmapped_log_joint__prior_scale_keyword(betas, all_x, y, prior_scale=1.0):
    """Passes prior_scale as a keyword to the vmapped function."""
    mapped = jax.vmap(_log_joint, in_axes=(0, None, None))
    return mapped(betas, all_x, y, prior_scale=prior_scale)


def vmapped_log_joint__python_loop(betas, all_x, y, prior_scale=1.0):
    """Loops over the betas in Python and stacks the log joints."""
    return jnp.stack([_log_joint(b, all_x, y, prior_scale) for b in betas])


def vmapped_log_joint__passes_variance(betas, all_x, y, prior_scale=1.0):
    """Passes prior_scale squared, reading sigma_0^2 as the scale argument."""
    mapped = jax.vmap(_log_joint, in_axes=(0, None, None, None))
    return mapped(betas, all_x, y, prior_scale**2)


def vmapped_log_joint__hand_batched(betas, all_x, y, prior_scale=1.0):
    """Batches the formula by hand instead of applying vmap to log_joint."""
    prior = jnp.sum(jsp.stats.norm.logpdf(betas, 0.0, prior_scale), axis=-1)
    logits = betas @ all_x.T
    return prior + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)


def vmapped_log_joint__signs_as_labels(betas, all_x, y, prior_scale=1.0):
    """Turns y into signs 2y - 1 before calling log_joint, which does it again."""
    mapped = jax.vmap(_log_joint, in_axes=(0, None, None, None))
    return mapped(betas, all_x, 2 * y - 1, prior_scale)


def vmapped_log_joint__prior_scale_ten(betas, all_x, y, prior_scale=1.0):
    """Binds the chapter's prior_scale=10.0 with partial instead of the argument."""
    mapped = jax.vmap(functools.partial(_log_joint, prior_scale=10.0),
                      in_axes=(0, None, None))
    return mapped(betas, all_x, y)


def vmapped_log_joint__right_positional_none(betas, all_x, y, prior_scale=1.0):
    """Right: in_axes=(0, None, None, None) with prior_scale positional."""
    batched = jax.vmap(_log_joint, in_axes=(0, None, None, None))
    return batched(betas, all_x, y, prior_scale)


def vmapped_log_joint__right_closure(betas, all_x, y, prior_scale=1.0):
    """Right: vmaps a closure of one beta over the leading axis of betas."""
    return jax.vmap(lambda one: _log_joint(one, all_x, y, prior_scale))(betas)


def vmapped_log_joint__right_partial_keywords(betas, all_x, y, prior_scale=1.0):
    """Right: partial binds data and prior_scale; vmap sees only the betas."""
    single = functools.partial(_log_joint, all_x=all_x, y=y, prior_scale=prior_scale)
    return jax.vmap(single)(betas)


# ===========================================================================
# bayes.sample_betas
# ===========================================================================


def sample_betas__no_exp(key, beta_loc, beta_log_scale, num_samples):
    """Multiplies the noise by the log-scale itself, forgetting the exp."""
    noise = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return beta_loc + beta_log_scale * noise


def sample_betas__splits_key(key, beta_loc, beta_log_scale, num_samples):
    """Splits the key first and draws from the subkey."""
    _, subkey = jax.random.split(key)
    noise = jax.random.normal(subkey, (num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(beta_log_scale) * noise


def sample_betas__noise_drawn_transposed(key, beta_loc, beta_log_scale, num_samples):
    """Draws the noise as (d, num_samples) and transposes it."""
    noise = jax.random.normal(key, (beta_loc.shape[0], num_samples)).T
    return beta_loc + jnp.exp(beta_log_scale) * noise


def sample_betas__log_variance(key, beta_loc, beta_log_scale, num_samples):
    """Treats the log-scale as a log-variance and uses exp(log_scale / 2)."""
    noise = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(0.5 * beta_log_scale) * noise


def sample_betas__same_noise_every_sample(key, beta_loc, beta_log_scale,
                                          num_samples):
    """Draws one (d,) noise vector and repeats it for every sample."""
    noise = jax.random.normal(key, (beta_loc.shape[0],))
    sample = beta_loc + jnp.exp(beta_log_scale) * noise
    return jnp.tile(sample, (num_samples, 1))


def sample_betas__softplus_scale(key, beta_loc, beta_log_scale, num_samples):
    """Makes the scale positive with softplus instead of exp."""
    noise = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return beta_loc + jax.nn.softplus(beta_log_scale) * noise


def sample_betas__fixed_key(key, beta_loc, beta_log_scale, num_samples):
    """Ignores the key argument and draws from jax.random.key(0)."""
    noise = jax.random.normal(jax.random.key(0), (num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(beta_log_scale) * noise


def sample_betas__split_per_sample(key, beta_loc, beta_log_scale, num_samples):
    """Splits the key into one key per sample and draws each row separately."""
    keys = jax.random.split(key, num_samples)
    noise = jax.vmap(lambda k: jax.random.normal(k, beta_loc.shape))(keys)
    return beta_loc + jnp.exp(beta_log_scale) * noise


def sample_betas__loc_and_scale_swapped(key, beta_loc, beta_log_scale, num_samples):
    """Adds the scale and multiplies the noise by the mean: roles swapped."""
    noise = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return jnp.exp(beta_log_scale) + beta_loc * noise


def sample_betas__right_exp_scale(key, beta_loc, beta_log_scale, num_samples):
    """Right: noise from the given key, then mu + exp(log sigma) * noise."""
    d = beta_loc.shape[0]
    eps = jax.random.normal(key, (num_samples, d))
    sigma = jnp.exp(beta_log_scale)
    return eps * sigma + beta_loc


def sample_betas__right_explicit_rows(key, beta_loc, beta_log_scale, num_samples):
    """Right: broadcasts (1, d) location and scale rows over (S, d) noise."""
    eps = jax.random.normal(key, shape=(num_samples, len(beta_loc)))
    return beta_loc[None, :] + jnp.exp(beta_log_scale)[None, :] * eps


# ===========================================================================
# bayes.elbo_value_and_grad
# ===========================================================================

_HALF_LOG_2PI_E = 0.5 * np.log(2 * np.pi * np.e)


def _vi_batched(samples, all_x, y, prior_scale=10.0):
    return jax.vmap(_log_joint, in_axes=(0, None, None, None))(
        samples, all_x, y, prior_scale)


def elbo_value_and_grad__prior_scale_one(beta_loc, beta_log_scale, epsilon, all_x,
                                         y):
    """Uses log_joint's default prior_scale 1 instead of 10."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return (jnp.mean(_vi_batched(samples, all_x, y, 1.0))
                + jnp.sum(log_scale + _HALF_LOG_2PI_E))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__sum_over_samples(beta_loc, beta_log_scale, epsilon, all_x,
                                          y):
    """Sums the log joints over the samples instead of averaging them."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return (jnp.sum(_vi_batched(samples, all_x, y))
                + jnp.sum(log_scale + _HALF_LOG_2PI_E))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__no_entropy(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Returns only the expected log joint; the entropy term is left out."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return jnp.mean(_vi_batched(samples, all_x, y))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__reference_run_entropy(beta_loc, beta_log_scale, epsilon,
                                               all_x, y):
    """Uses the reference run's sum(log sigma - log(2 pi) / 2), not the entropy."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return (jnp.mean(_vi_batched(samples, all_x, y))
                + jnp.sum(log_scale - 0.5 * np.log(2 * np.pi)))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__samples_built_outside(beta_loc, beta_log_scale, epsilon,
                                               all_x, y):
    """Builds the samples before the differentiated function, from the inputs."""
    samples = beta_loc + jnp.exp(beta_log_scale) * epsilon

    def f(loc, log_scale):
        return (jnp.mean(_vi_batched(samples, all_x, y))
                + jnp.sum(log_scale + _HALF_LOG_2PI_E))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__forgot_argnums(beta_loc, beta_log_scale, epsilon, all_x,
                                        y):
    """Leaves argnums at its default, so only one gradient comes back."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return (jnp.mean(_vi_batched(samples, all_x, y))
                + jnp.sum(log_scale + _HALF_LOG_2PI_E))
    value, (loc_grad, log_scale_grad) = jax.value_and_grad(f)(beta_loc,
                                                              beta_log_scale)
    return value, (loc_grad, log_scale_grad)


def elbo_value_and_grad__negated_as_loss(beta_loc, beta_log_scale, epsilon, all_x,
                                         y):
    """Returns the negative ELBO and its gradients, as for a loss to minimise."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return -(jnp.mean(_vi_batched(samples, all_x, y))
                 + jnp.sum(log_scale + _HALF_LOG_2PI_E))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__entropy_without_half(beta_loc, beta_log_scale, epsilon,
                                              all_x, y):
    """Adds log(2 pi e) per coefficient, forgetting the factor one half."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return (jnp.mean(_vi_batched(samples, all_x, y))
                + jnp.sum(log_scale + jnp.log(2 * jnp.pi * jnp.e)))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__entropy_mean_not_sum(beta_loc, beta_log_scale, epsilon,
                                              all_x, y):
    """Averages the entropy terms over the coefficients instead of summing."""
    def f(loc, log_scale):
        samples = loc + jnp.exp(log_scale) * epsilon
        return (jnp.mean(_vi_batched(samples, all_x, y))
                + jnp.mean(log_scale + _HALF_LOG_2PI_E))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__no_exp_in_samples(beta_loc, beta_log_scale, epsilon, all_x,
                                           y):
    """Builds the samples as mu + log sigma * epsilon, without the exp."""
    def f(loc, log_scale):
        samples = loc + log_scale * epsilon
        return (jnp.mean(_vi_batched(samples, all_x, y))
                + jnp.sum(log_scale + _HALF_LOG_2PI_E))
    return jax.value_and_grad(f, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__right_closure(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Right: samples built inside, mean of vmapped log joints plus entropy."""
    joint = jax.vmap(functools.partial(_log_joint, all_x=all_x, y=y,
                                       prior_scale=10.0))

    def objective(mu, log_sigma):
        draws = mu + jnp.exp(log_sigma) * epsilon
        entropy = jnp.sum(log_sigma) + mu.shape[0] * 0.5 * jnp.log(2 * jnp.pi * jnp.e)
        return joint(draws).mean() + entropy

    value, grads = jax.value_and_grad(objective, argnums=(0, 1))(beta_loc,
                                                                  beta_log_scale)
    return value, (grads[0], grads[1])


def elbo_value_and_grad__right_tuple_argument(beta_loc, beta_log_scale, epsilon,
                                              all_x, y):
    """Right: differentiates w.r.t. one (mu, log sigma) tuple argument."""
    def objective(variational):
        mu, log_sigma = variational
        draws = mu + jnp.exp(log_sigma) * epsilon
        expected = jnp.mean(_vi_batched(draws, all_x, y, 10.0))
        return expected + jnp.sum(log_sigma + 0.5 * (jnp.log(2 * jnp.pi) + 1.0))

    value, (loc_grad, log_scale_grad) = jax.value_and_grad(objective)(
        (beta_loc, beta_log_scale))
    return value, (loc_grad, log_scale_grad)


# ===========================================================================
# bayes.ascent_step
# ===========================================================================


def ascent_step__descends(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Subtracts the gradients, as in gradient descent on a loss."""
    value, (g_loc, g_scale) = _elbo_value_and_grad(beta_loc, beta_log_scale,
                                                   epsilon, all_x, y)
    return value, beta_loc - step_size * g_loc, beta_log_scale - step_size * g_scale


def ascent_step__elbo_after_step(beta_loc, beta_log_scale, epsilon, all_x, y,
                                 step_size):
    """Returns the ELBO recomputed at the new parameters, after the step."""
    _, (g_loc, g_scale) = _elbo_value_and_grad(beta_loc, beta_log_scale, epsilon,
                                               all_x, y)
    new_loc = beta_loc + step_size * g_loc
    new_log_scale = beta_log_scale + step_size * g_scale
    value, _ = _elbo_value_and_grad(new_loc, new_log_scale, epsilon, all_x, y)
    return value, new_loc, new_log_scale


def ascent_step__only_loc_moves(beta_loc, beta_log_scale, epsilon, all_x, y,
                                step_size):
    """Moves the mean only and returns the log-scale unchanged."""
    value, (g_loc, _) = _elbo_value_and_grad(beta_loc, beta_log_scale, epsilon,
                                             all_x, y)
    return value, beta_loc + step_size * g_loc, beta_log_scale


def ascent_step__elbo_returned_last(beta_loc, beta_log_scale, epsilon, all_x, y,
                                    step_size):
    """Returns (new_loc, new_log_scale, elbo): the ELBO in the wrong place."""
    value, (g_loc, g_scale) = _elbo_value_and_grad(beta_loc, beta_log_scale,
                                                   epsilon, all_x, y)
    return beta_loc + step_size * g_loc, beta_log_scale + step_size * g_scale, value


def ascent_step__gradients_swapped(beta_loc, beta_log_scale, epsilon, all_x, y,
                                   step_size):
    """Unpacks the gradients in the wrong order, so each moves by the other's."""
    value, (g_scale, g_loc) = _elbo_value_and_grad(beta_loc, beta_log_scale,
                                                   epsilon, all_x, y)
    return value, beta_loc + step_size * g_loc, beta_log_scale + step_size * g_scale


def ascent_step__chapter_step_size(beta_loc, beta_log_scale, epsilon, all_x, y,
                                   step_size):
    """Uses the chapter's global step size 0.01 instead of the argument."""
    value, (g_loc, g_scale) = _elbo_value_and_grad(beta_loc, beta_log_scale,
                                                   epsilon, all_x, y)
    return (value, beta_loc + _STEP_SIZE * g_loc,
            beta_log_scale + _STEP_SIZE * g_scale)


def ascent_step__draws_fresh_noise(beta_loc, beta_log_scale, epsilon, all_x, y,
                                   step_size):
    """Draws new noise from a key as the chapter's loop did, ignoring epsilon."""
    noise = jax.random.normal(jax.random.key(0), epsilon.shape)
    value, (g_loc, g_scale) = _elbo_value_and_grad(beta_loc, beta_log_scale, noise,
                                                   all_x, y)
    return value, beta_loc + step_size * g_loc, beta_log_scale + step_size * g_scale


def ascent_step__float_elbo(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Returns float(elbo) to log it, which fails under jax.jit."""
    value, (g_loc, g_scale) = _elbo_value_and_grad(beta_loc, beta_log_scale,
                                                   epsilon, all_x, y)
    return (float(value), beta_loc + step_size * g_loc,
            beta_log_scale + step_size * g_scale)


def ascent_step__no_elbo_returned(beta_loc, beta_log_scale, epsilon, all_x, y,
                                  step_size):
    """Returns only the two new parameters and forgets the ELBO."""
    _, (g_loc, g_scale) = _elbo_value_and_grad(beta_loc, beta_log_scale, epsilon,
                                               all_x, y)
    return beta_loc + step_size * g_loc, beta_log_scale + step_size * g_scale


def ascent_step__right_along_gradient(beta_loc, beta_log_scale, epsilon, all_x, y,
                                      step_size):
    """Right: ELBO before the step, both parameters plus step_size * gradient."""
    elbo, grads = _elbo_value_and_grad(beta_loc, beta_log_scale, epsilon, all_x, y)
    loc_grad, log_scale_grad = grads
    new_loc = beta_loc + step_size * loc_grad
    new_log_scale = beta_log_scale + step_size * log_scale_grad
    return elbo, new_loc, new_log_scale


def ascent_step__right_tree_map(beta_loc, beta_log_scale, epsilon, all_x, y,
                                step_size):
    """Right: jax.tree.map adds step_size * gradient to the parameter pair."""
    elbo, grads = _elbo_value_and_grad(beta_loc, beta_log_scale, epsilon, all_x, y)
    moved = jax.tree.map(lambda p, g: p + g * step_size,
                         (beta_loc, beta_log_scale), grads)
    return (elbo, *moved)


# ===========================================================================

_TOPICS = {
    "relu": "mlp",
    "one_hot": "mlp",
    "accuracy": "mlp",
    "update": "mlp",
    "batched_predict": "mlp",
    "tf_batches": "mlp",
    "numpy_collate": "torch_data",
    "flatten_and_cast": "torch_data",
    "batches": "torch_data",
    "shuffled_batches": "torch_data",
    "make_loader": "torch_data",
    "batched_log_joint": "bayes",
    "vmapped_log_joint": "bayes",
    "sample_betas": "bayes",
    "elbo_value_and_grad": "bayes",
    "ascent_step": "bayes",
}


def _rows(*functions):
    rows = []
    for function in functions:
        exercise, _, _ = function.__name__.partition("__")
        rows.append((f"{_TOPICS[exercise]}.{exercise}", function,
                     function.__doc__.strip().rstrip(".")))
    return rows


_ALL = [value for name, value in dict(globals()).items()
        if callable(value) and "__" in name and not name.startswith("_")]
ANSWERS = _rows(*[f for f in _ALL if "__right_" not in f.__name__])  # the wrong ones
RIGHT = _rows(*[f for f in _ALL if "__right_" in f.__name__])  # the right ones
