"""Wrong answers written from the exercise text alone (chapters 1-3).

See benchmarks/named_mistakes.py.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import jax.scipy as jsp
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
import torch
from jax.scipy.special import logsumexp
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    SequentialSampler,
    default_collate,
)

from jaxcourse.mlp import loss, predict

# The chapters' learning rate, which some answers read as a global.
STEP_SIZE = 0.01


# ---------------------------------------------------------------------------
# mlp.relu
# ---------------------------------------------------------------------------


def relu__float_zero(x):
    """Compares with the float 0.0, so int32 inputs come back as float32."""
    return jnp.maximum(0.0, x)


def relu__true_division(x):
    """Writes relu as (x + |x|) / 2, whose true division turns ints into floats."""
    return (x + jnp.abs(x)) / 2


def relu__max_reduction(x):
    """Types jnp.max(x, 0), a reduction over axis 0, instead of jnp.maximum."""
    return jnp.max(x, 0)


def relu__stack_wrong_axis(x):
    """Stacks x with zeros but takes the max over the last axis, not the new one."""
    return jnp.max(jnp.stack([jnp.zeros_like(x), x]), axis=-1)


def relu__python_if(x):
    """Writes the scalar formula with a Python if, which cannot judge an array."""
    if x > 0:
        return x
    return jnp.zeros_like(x)


def relu__numpy_maximum(x):
    """Uses np.maximum, which returns NumPy and fails on tracers under jit/grad."""
    return np.maximum(x, 0)


def relu__at_set_discarded(x):
    """Zeroes the negatives with .at[].set(0) but never keeps the returned array."""
    out = jnp.asarray(x)
    out.at[out < 0].set(0)
    return out


def relu__clip_to_one(x):
    """Uses jnp.clip(x, 0, 1), which also caps the positive values at one."""
    return jnp.clip(x, 0, 1)


def relu__library_relu(x):
    """Calls jax.nn.relu although the exercise asks for an own jax.numpy version."""
    return jax.nn.relu(x)


# ---------------------------------------------------------------------------
# mlp.one_hot
# ---------------------------------------------------------------------------


def one_hot__python_loop(x, k, dtype=jnp.float32):
    """Builds one row per label in a list comprehension over the labels."""
    return jnp.array([jnp.arange(k) == label for label in x], dtype=dtype)


def one_hot__bool_result(x, k, dtype=jnp.float32):
    """Returns the broadcast comparison itself, a bool array, ignoring dtype."""
    return x[:, None] == jnp.arange(k)


def one_hot__transposed(x, k, dtype=jnp.float32):
    """Puts the classes on the rows, which gives a (k, n) array."""
    return (jnp.arange(k)[:, None] == x[None, :]).astype(dtype)


def one_hot__one_based(x, k, dtype=jnp.float32):
    """Numbers the classes 1 to k, so each one lands a column to the left."""
    return jnp.array(x[:, None] == jnp.arange(1, k + 1), dtype)


def one_hot__eye_default_dtype(x, k, dtype=jnp.float32):
    """Indexes rows of jnp.eye(k), float32 whatever dtype was asked for."""
    return jnp.eye(k)[x]


def one_hot__at_rows(x, k, dtype=jnp.float32):
    """Scatters with .at[x].set(1), which fills whole rows numbered by the labels."""
    return jnp.zeros((len(x), k), dtype).at[x].set(1)


def one_hot__classes_from_labels(x, k, dtype=jnp.float32):
    """Takes the number of classes from the largest label instead of k."""
    return jnp.array(x[:, None] == jnp.arange(jnp.max(x) + 1), dtype)


def one_hot__no_new_axis(x, k, dtype=jnp.float32):
    """Compares x with jnp.arange(k) without a new axis, so no (n, k) broadcast."""
    return jnp.array(x == jnp.arange(k), dtype)


def one_hot__numpy_eye(x, k, dtype=jnp.float32):
    """Indexes NumPy's eye with np.asarray(x), which fails on traced labels."""
    return np.eye(k, dtype=dtype)[np.asarray(x)]


# ---------------------------------------------------------------------------
# mlp.accuracy
# ---------------------------------------------------------------------------


def accuracy__axis0(log_probs, targets):
    """Takes the argmax over axis 0, the examples, instead of the classes."""
    return jnp.mean(jnp.argmax(log_probs, axis=0) == jnp.argmax(targets, axis=0))


def accuracy__float_inside(log_probs, targets):
    """Wraps the mean in float(), which fails on a tracer under jit."""
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return float(jnp.mean(hits))


def accuracy__count(log_probs, targets):
    """Sums the hits, returning the number of correct examples, not the fraction."""
    return jnp.sum(jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1))


def accuracy__targets_not_argmaxed(log_probs, targets):
    """Compares the predicted classes with the one-hot targets themselves."""
    return jnp.mean(jnp.argmax(log_probs, axis=1) == targets)


def accuracy__integer_division(log_probs, targets):
    """Divides the integer hit count by n with //, giving 0 unless all are right."""
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return jnp.sum(hits) // hits.shape[0]


def accuracy__target_probability(log_probs, targets):
    """Averages the probability given to the target class instead of argmax hits."""
    return jnp.mean(jnp.sum(jnp.exp(log_probs) * targets, axis=1))


def accuracy__elementwise_threshold(log_probs, targets):
    """Thresholds probabilities at 0.5 and compares every entry with the targets."""
    return jnp.mean((jnp.exp(log_probs) > 0.5) == (targets > 0.5))


def accuracy__error_rate(log_probs, targets):
    """Averages the examples where prediction and target differ: the error rate."""
    return jnp.mean(jnp.argmax(log_probs, axis=1) != jnp.argmax(targets, axis=1))


def accuracy__no_mean(log_probs, targets):
    """Returns the per-example hits as floats and forgets to average them."""
    hits = jnp.argmax(log_probs, axis=1) == jnp.argmax(targets, axis=1)
    return hits.astype(jnp.float32)


# ---------------------------------------------------------------------------
# mlp.update
# ---------------------------------------------------------------------------


@jax.jit
def update__ascent(params, images, targets, step_size):
    """Adds step_size times the gradient instead of subtracting it."""
    grads = jax.grad(loss)(params, images, targets)
    return [
        (w + step_size * dw, b + step_size * db)
        for (w, b), (dw, db) in zip(params, grads, strict=True)
    ]


@jax.jit
def update__global_step_size(params, images, targets, step_size):
    """Uses the chapter's global STEP_SIZE instead of the step_size argument."""
    grads = jax.grad(loss)(params, images, targets)
    return [
        (w - STEP_SIZE * dw, b - STEP_SIZE * db)
        for (w, b), (dw, db) in zip(params, grads, strict=True)
    ]


def update__in_place(params, images, targets, step_size):
    """Drops @jax.jit and writes the new pairs back into the params list given."""
    grads = jax.grad(loss)(params, images, targets)
    for i, ((w, b), (dw, db)) in enumerate(zip(params, grads, strict=True)):
        params[i] = (w - step_size * dw, b - step_size * db)
    return params


@jax.jit
def update__bias_frozen(params, images, targets, step_size):
    """Moves only the weights and passes every bias through unchanged."""
    grads = jax.grad(loss)(params, images, targets)
    return [
        (w - step_size * dw, b)
        for (w, b), (dw, _) in zip(params, grads, strict=True)
    ]


@jax.jit
def update__loss_not_grad(params, images, targets, step_size):
    """Subtracts step_size times the loss value from every parameter."""
    value = loss(params, images, targets)
    return [(w - step_size * value, b - step_size * value) for w, b in params]


@jax.jit
def update__returns_loss_too(params, images, targets, step_size):
    """Returns (loss, new_params), the pattern of many training loops."""
    value, grads = jax.value_and_grad(loss)(params, images, targets)
    new_params = [
        (w - step_size * dw, b - step_size * db)
        for (w, b), (dw, db) in zip(params, grads, strict=True)
    ]
    return value, new_params


@jax.jit
def update__no_step_size(params, images, targets, step_size):
    """Subtracts the raw gradient and forgets to scale it by step_size."""
    grads = jax.grad(loss)(params, images, targets)
    return [(w - dw, b - db) for (w, b), (dw, db) in zip(params, grads, strict=True)]


@jax.jit
def update__float_step_size(params, images, targets, step_size):
    """Converts step_size with float(), which fails on the traced argument."""
    lr = float(step_size)
    grads = jax.grad(loss)(params, images, targets)
    return [
        (w - lr * dw, b - lr * db)
        for (w, b), (dw, db) in zip(params, grads, strict=True)
    ]


@jax.jit
def update__divides_by_batch(params, images, targets, step_size):
    """Divides the gradient by the batch size, though the loss is already a mean."""
    n = images.shape[0]
    grads = jax.grad(loss)(params, images, targets)
    return [
        (w - step_size * dw / n, b - step_size * db / n)
        for (w, b), (dw, db) in zip(params, grads, strict=True)
    ]


@jax.jit
def update__drops_last_layer(params, images, targets, step_size):
    """Copies predict's params[:-1] loop, so the output layer is dropped."""
    grads = jax.grad(loss)(params, images, targets)
    return [
        (w - step_size * dw, b - step_size * db)
        for (w, b), (dw, db) in zip(params[:-1], grads[:-1], strict=True)
    ]


# ---------------------------------------------------------------------------
# mlp.batched_predict
# ---------------------------------------------------------------------------


def batched_predict__default_in_axes(params, images):
    """Calls jax.vmap(predict) with default in_axes, mapping the params too."""
    return jax.vmap(predict)(params, images)


def batched_predict__pixel_axis(params, images):
    """Maps over axis 1 of the images, the pixels, instead of axis 0."""
    return jax.vmap(predict, in_axes=(None, 1))(params, images)


def batched_predict__swapped_in_axes(params, images):
    """Writes in_axes=(0, None): the params mapped, the images passed whole."""
    return jax.vmap(predict, in_axes=(0, None))(params, images)


def batched_predict__python_loop(params, images):
    """Calls predict on each image in a Python loop and stacks the rows."""
    return jnp.stack([predict(params, image) for image in images])


def batched_predict__out_axes_one(params, images):
    """Sets out_axes=1, which returns the log-probabilities as (classes, n)."""
    return jax.vmap(predict, in_axes=(None, 0), out_axes=1)(params, images)


def batched_predict__by_hand(params, images):
    """Batches the layers by hand; its logsumexp normalizes over the whole batch."""
    activations = images
    for w, b in params[:-1]:
        activations = jax.nn.relu(activations @ w.T + b)
    final_w, final_b = params[-1]
    logits = activations @ final_w.T + final_b
    return logits - logsumexp(logits)


def batched_predict__probabilities(params, images):
    """Exponentiates the vmapped output, returning probabilities, not log-probs."""
    return jnp.exp(jax.vmap(predict, in_axes=(None, 0))(params, images))


def batched_predict__hardcoded_pixels(params, images):
    """Reshapes the images to (-1, 784) first, which fits only 28x28 networks."""
    return jax.vmap(predict, in_axes=(None, 0))(params, images.reshape(-1, 784))


def batched_predict__squeeze(params, images):
    """Squeezes the result, which drops the batch axis for a batch of one."""
    return jnp.squeeze(jax.vmap(predict, in_axes=(None, 0))(params, images))


# ---------------------------------------------------------------------------
# mlp.tf_batches
# ---------------------------------------------------------------------------


def tf_batches__tensors(dataset, batch_size):
    """Returns the batched, prefetched tf.data pipeline, which yields TF tensors."""
    return dataset.batch(batch_size).prefetch(1)


def tf_batches__drop_remainder(dataset, batch_size):
    """Batches with drop_remainder=True, losing the last, smaller batch."""
    return tfds.as_numpy(dataset.batch(batch_size, drop_remainder=True).prefetch(1))


def tf_batches__shuffled(dataset, batch_size):
    """Shuffles before batching, as training pipelines do, losing the order."""
    return tfds.as_numpy(dataset.shuffle(1024).batch(batch_size).prefetch(1))


def tf_batches__first_batch_only(dataset, batch_size):
    """Returns next(iter(...)): one (images, labels) batch, not all the batches."""
    return next(iter(tfds.as_numpy(dataset.batch(batch_size).prefetch(1))))


def tf_batches__unbatched(dataset, batch_size):
    """Converts to NumPy and prefetches but never batches: one example per item."""
    return tfds.as_numpy(dataset.prefetch(1))


def tf_batches__jax_arrays(dataset, batch_size):
    """Turns every batch into JAX arrays with jnp.asarray instead of NumPy."""
    for images, labels in tfds.as_numpy(dataset.batch(batch_size).prefetch(1)):
        yield jnp.asarray(images), jnp.asarray(labels)


def tf_batches__dict_keys(dataset, batch_size):
    """Reads each batch as a dict with "image" and "label", as tfds.load gave."""
    for batch in tfds.as_numpy(dataset.batch(batch_size).prefetch(1)):
        yield batch["image"], batch["label"]


def tf_batches__flattened_scaled(dataset, batch_size):
    """Flattens the images and scales them to [0, 1] inside the pipeline."""

    def prepare(image, label):
        return tf.reshape(tf.cast(image, tf.float32) / 255.0, [-1]), label

    return tfds.as_numpy(dataset.map(prepare).batch(batch_size).prefetch(1))


def tf_batches__no_prefetch(dataset, batch_size):
    """Batches and converts to NumPy but leaves out the prefetch asked for."""
    return tfds.as_numpy(dataset.batch(batch_size))


# ---------------------------------------------------------------------------
# torch_data.numpy_collate
# ---------------------------------------------------------------------------


def numpy_collate__one_level(batch):
    """Regroups the fields once, then stacks nested tuples instead of recursing."""
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return tuple(
            np.stack([np.asarray(value) for value in field])
            for field in zip(*batch, strict=True)
        )
    return np.stack([np.asarray(example) for example in batch])


def numpy_collate__leaves_as_lists(batch):
    """Recurses correctly but returns each leaf field as a plain Python list."""
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return tuple(
            numpy_collate__leaves_as_lists(list(field))
            for field in zip(*batch, strict=True)
        )
    return list(batch)


def numpy_collate__concatenate(batch):
    """Joins the leaves with np.concatenate, adding no new batch axis."""
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return tuple(
            numpy_collate__concatenate(list(field))
            for field in zip(*batch, strict=True)
        )
    return np.concatenate([np.asarray(example) for example in batch])


def numpy_collate__float32(batch):
    """Stacks every leaf as float32, so integer labels change dtype."""
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return tuple(
            numpy_collate__float32(list(field)) for field in zip(*batch, strict=True)
        )
    return np.stack([np.asarray(example, dtype=np.float32) for example in batch])


def numpy_collate__default_collate(batch):
    """Delegates to PyTorch's default_collate, which returns torch tensors."""
    return default_collate(batch)


def numpy_collate__tuples_only(batch):
    """Recurses into tuples only, so list examples are stacked as one leaf."""
    first = batch[0]
    if isinstance(first, tuple):
        return tuple(
            numpy_collate__tuples_only(list(field))
            for field in zip(*batch, strict=True)
        )
    return np.stack([np.asarray(example) for example in batch])


def numpy_collate__batch_axis_last(batch):
    """Stacks the leaves along axis=-1, which puts the batch axis last."""
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return tuple(
            numpy_collate__batch_axis_last(list(field))
            for field in zip(*batch, strict=True)
        )
    return np.stack([np.asarray(example) for example in batch], axis=-1)


def numpy_collate__per_example(batch):
    """Recurses into each example instead of regrouping the examples by field."""
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return tuple(numpy_collate__per_example(list(example)) for example in batch)
    return np.stack([np.asarray(example) for example in batch])


def numpy_collate__pops_first(batch):
    """Takes the first example with batch.pop(0), removing it from the batch."""
    first = batch.pop(0)
    if isinstance(first, (tuple, list)):
        return tuple(
            numpy_collate__pops_first(list(field)) for field in zip(*batch, strict=True)
        )
    return np.stack([np.asarray(example) for example in batch])


# ---------------------------------------------------------------------------
# torch_data.flatten_and_cast
# ---------------------------------------------------------------------------


def flatten_and_cast__scaled(pic):
    """Divides by 255 to get pixels in [0, 1], though raw pixels are asked for."""
    return np.ravel(np.asarray(pic, dtype=np.float32)) / 255.0


def flatten_and_cast__hardcoded_784(pic):
    """Reshapes to (784,), which only fits 28x28 images."""
    return np.asarray(pic, dtype=np.float32).reshape(784)


def flatten_and_cast__no_cast(pic):
    """Flattens the image but forgets the cast, so the pixels stay uint8."""
    return np.ravel(np.asarray(pic))


def flatten_and_cast__float64(pic):
    """Casts with dtype=float, which is NumPy's float64, not float32."""
    return np.asarray(pic, dtype=float).ravel()


def flatten_and_cast__torch_tensor(pic):
    """Returns a flattened torch tensor, as torchvision transforms usually do."""
    return torch.as_tensor(np.asarray(pic, dtype=np.float32)).flatten()


def flatten_and_cast__jax_array(pic):
    """Flattens and casts with jax.numpy, returning a JAX array, not NumPy."""
    return jnp.ravel(jnp.asarray(pic, dtype=jnp.float32))


def flatten_and_cast__keeps_2d(pic):
    """Casts to float32 but forgets to flatten, keeping (height, width)."""
    return np.asarray(pic, dtype=np.float32)


def flatten_and_cast__batch_axis(pic):
    """Reshapes to (1, -1), adding a batch axis the collate function will add."""
    return np.asarray(pic, dtype=np.float32).reshape(1, -1)


def flatten_and_cast__fortran_order(pic):
    """Flattens in column-major order, reading the image column by column."""
    return np.asarray(pic, dtype=np.float32).ravel(order="F")


def flatten_and_cast__pil_getdata(pic):
    """Reads the pixels with PIL's getdata(), which a NumPy array does not have."""
    return np.array(pic.getdata(), dtype=np.float32)


# ---------------------------------------------------------------------------
# torch_data.batches
# ---------------------------------------------------------------------------


def batches__drops_last(images, labels, batch_size):
    """Stops at the last full batch, dropping the smaller remainder."""
    return [
        (images[start : start + batch_size], labels[start : start + batch_size])
        for start in range(0, len(labels) - batch_size + 1, batch_size)
    ]


def batches__per_example(images, labels, batch_size):
    """Builds each batch by stacking images[i] for every index in it."""
    out = []
    for start in range(0, len(labels), batch_size):
        stop = min(start + batch_size, len(labels))
        rows = [images[i] for i in range(start, stop)]
        out.append((np.stack(rows), labels[start:stop]))
    return out


def batches__inclusive_end(images, labels, batch_size):
    """Slices start:start + batch_size - 1, as if slice ends were inclusive."""
    return [
        (images[start : start + batch_size - 1], labels[start : start + batch_size - 1])
        for start in range(0, len(labels), batch_size)
    ]


def batches__batch_index_start(images, labels, batch_size):
    """Starts batch k at index k instead of k * batch_size, so batches overlap."""
    num_batches = -(-len(labels) // batch_size)
    return [
        (images[k : k + batch_size], labels[k : k + batch_size])
        for k in range(num_batches)
    ]


def batches__array_split_count(images, labels, batch_size):
    """Calls np.array_split(x, batch_size): batch_size batches, not of that size."""
    return list(
        zip(
            np.array_split(images, batch_size),
            np.array_split(labels, batch_size),
            strict=True,
        )
    )


def batches__extra_empty(images, labels, batch_size):
    """Makes n // batch_size + 1 batches: an empty last one when sizes divide."""
    return [
        (
            images[k * batch_size : (k + 1) * batch_size],
            labels[k * batch_size : (k + 1) * batch_size],
        )
        for k in range(len(labels) // batch_size + 1)
    ]


def batches__swapped_pair(images, labels, batch_size):
    """Yields (labels_batch, images_batch), the pair the wrong way round."""
    for start in range(0, len(labels), batch_size):
        yield labels[start : start + batch_size], images[start : start + batch_size]


def batches__reshape(images, labels, batch_size):
    """Reshapes to (-1, batch_size, ...), which needs batch_size to divide n."""
    image_batches = images.reshape(-1, batch_size, *images.shape[1:])
    label_batches = labels.reshape(-1, batch_size)
    return list(zip(image_batches, label_batches, strict=True))


# ---------------------------------------------------------------------------
# torch_data.shuffled_batches
# ---------------------------------------------------------------------------


def _cut(order, batch_size):
    """Cut an index array into consecutive batches, the last one smaller."""
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def shuffled_batches__global_seed(num_examples, batch_size, seed):
    """Seeds NumPy's global generator and uses np.random.permutation."""
    np.random.seed(seed)
    return _cut(np.random.permutation(num_examples), batch_size)


def shuffled_batches__with_replacement(num_examples, batch_size, seed):
    """Draws rng.choice(n, n), which samples with replacement by default."""
    rng = np.random.default_rng(seed)
    return _cut(rng.choice(num_examples, num_examples), batch_size)


def shuffled_batches__shuffles_batch_order(num_examples, batch_size, seed):
    """Cuts 0..n-1 into batches in order, then shuffles only the batch order."""
    rng = np.random.default_rng(seed)
    chunks = _cut(np.arange(num_examples), batch_size)
    return [chunks[j] for j in rng.permutation(len(chunks))]


def shuffled_batches__drops_last(num_examples, batch_size, seed):
    """Keeps only full batches, dropping the smaller last one."""
    order = np.random.default_rng(seed).permutation(num_examples)
    return [
        order[i : i + batch_size]
        for i in range(0, num_examples - batch_size + 1, batch_size)
    ]


def shuffled_batches__unseeded(num_examples, batch_size, seed):
    """Creates np.random.default_rng() without the seed: a new order every call."""
    order = np.random.default_rng().permutation(num_examples)
    return _cut(order, batch_size)


def shuffled_batches__within_batch(num_examples, batch_size, seed):
    """Shuffles inside each consecutive batch, so the batches keep their contents."""
    rng = np.random.default_rng(seed)
    return [
        rng.permutation(np.arange(i, min(i + batch_size, num_examples)))
        for i in range(0, num_examples, batch_size)
    ]


def shuffled_batches__off_by_one(num_examples, batch_size, seed):
    """Permutes num_examples - 1, the largest index, so one example is missing."""
    order = np.random.default_rng(seed).permutation(num_examples - 1)
    return _cut(order, batch_size)


def shuffled_batches__sorted_batches(num_examples, batch_size, seed):
    """Sorts the indices inside each batch after shuffling, for tidier batches."""
    order = np.random.default_rng(seed).permutation(num_examples)
    return [np.sort(batch) for batch in _cut(order, batch_size)]


def shuffled_batches__argsort(num_examples, batch_size, seed):
    """Shuffles by argsorting rng.random(n), not with the generator's permutation."""
    rng = np.random.default_rng(seed)
    return _cut(np.argsort(rng.random(num_examples)), batch_size)


def shuffled_batches__seed_plus_one(num_examples, batch_size, seed):
    """Seeds with seed + 1, reading "seed + epoch" as the function's job."""
    order = np.random.default_rng(seed + 1).permutation(num_examples)
    return _cut(order, batch_size)


def shuffled_batches__array_split(num_examples, batch_size, seed):
    """Splits the permutation into ceil(n / batch_size) near-equal parts."""
    order = np.random.default_rng(seed).permutation(num_examples)
    return np.array_split(order, -(-num_examples // batch_size))


# ---------------------------------------------------------------------------
# torch_data.make_loader
# ---------------------------------------------------------------------------


def make_loader__shuffled(dataset, batch_size, collate_fn):
    """Passes shuffle=True, as training loaders usually do."""
    return DataLoader(
        dataset, batch_size=batch_size, shuffle=True, collate_fn=collate_fn
    )


def make_loader__drop_last(dataset, batch_size, collate_fn):
    """Passes drop_last=True, losing the last, smaller batch."""
    return DataLoader(
        dataset, batch_size=batch_size, drop_last=True, collate_fn=collate_fn
    )


def make_loader__no_collate(dataset, batch_size, collate_fn):
    """Forgets collate_fn, so PyTorch's default collate builds tensors."""
    return DataLoader(dataset, batch_size=batch_size)


def make_loader__positional(dataset, batch_size, collate_fn):
    """Passes collate_fn third positionally, where DataLoader expects shuffle."""
    return DataLoader(dataset, batch_size, collate_fn)


def make_loader__list_of_batches(dataset, batch_size, collate_fn):
    """Builds a list of collated batches by hand instead of a DataLoader."""
    n = len(dataset)
    return [
        collate_fn([dataset[j] for j in range(i, min(i + batch_size, n))])
        for i in range(0, n, batch_size)
    ]


def make_loader__chapter_batch_sampler(dataset, batch_size, collate_fn):
    """Copies the fast loader's BatchSampler, which indexes the dataset by lists."""
    sampler = BatchSampler(
        SequentialSampler(dataset), batch_size=batch_size, drop_last=False
    )
    return DataLoader(dataset, sampler=sampler, batch_size=None, collate_fn=collate_fn)


def make_loader__returns_iter(dataset, batch_size, collate_fn):
    """Returns iter(loader), a one-pass iterator instead of the DataLoader."""
    return iter(DataLoader(dataset, batch_size=batch_size, collate_fn=collate_fn))


def make_loader__hardcoded_128(dataset, batch_size, collate_fn):
    """Keeps the chapter's batch_size=128 instead of the argument."""
    return DataLoader(dataset, batch_size=128, collate_fn=collate_fn)


def make_loader__batch_size_none(dataset, batch_size, collate_fn):
    """Copies the chapter's batch_size=None, which turns off batching."""
    return DataLoader(dataset, batch_size=None, collate_fn=collate_fn)


# ---------------------------------------------------------------------------
# The notebook's given model for chapter 3 (unchanged)
# ---------------------------------------------------------------------------


def log_joint(beta, all_x, y, prior_scale=1.0):
    """Log joint of the chapter's model for ONE beta, as given in the notebook."""
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=prior_scale))
    signs = 2 * y - 1
    result = result + jnp.sum(-jax.nn.softplus(-signs * jnp.dot(all_x, beta)))
    return result


# ---------------------------------------------------------------------------
# bayes.batched_log_joint
# ---------------------------------------------------------------------------


def batched_log_joint__prior_no_axis(beta, all_x, y):
    """Gives the likelihood sum its axis but sums the prior over the whole batch."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0))
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T
    return prior + jnp.sum(-jax.nn.softplus(-signs * logits), axis=-1)


def batched_log_joint__no_final_transpose(beta, all_x, y):
    """Keeps the logits as (points, batch), forgetting the second transpose."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T)
    return prior + jnp.sum(-jax.nn.softplus(-signs * logits), axis=-1)


def batched_log_joint__likelihood_axis0(beta, all_x, y):
    """Sums the (batch, points) likelihood over axis 0, the batch."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(beta, all_x.T)
    return prior + jnp.sum(-jax.nn.softplus(-signs * logits), axis=0)


def batched_log_joint__python_loop(beta, all_x, y):
    """Calls log_joint once per beta in a Python loop and stacks the results."""
    return jnp.stack([log_joint(b, all_x, y) for b in beta])


def batched_log_joint__uses_vmap(beta, all_x, y):
    """Reaches for jax.vmap, which this exercise asks to do without."""
    return jax.vmap(log_joint, in_axes=(0, None, None))(beta, all_x, y)


def batched_log_joint__labels_not_signs(beta, all_x, y):
    """Multiplies the logits by y itself, forgetting the signs 2y - 1."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    logits = jnp.dot(all_x, beta.T).T
    return prior + jnp.sum(-jax.nn.softplus(-y * logits), axis=-1)


def batched_log_joint__sign_flip(beta, all_x, y):
    """Drops the minus inside softplus, the log-likelihood of the other label."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T
    return prior + jnp.sum(-jax.nn.softplus(signs * logits), axis=-1)


def batched_log_joint__mean_not_sum(beta, all_x, y):
    """Averages over the points and the features instead of summing."""
    prior = jnp.mean(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T
    return prior + jnp.mean(-jax.nn.softplus(-signs * logits), axis=-1)


def batched_log_joint__no_norm_constant(beta, all_x, y):
    """Writes the prior as -beta**2 / 2, dropping the normal's log constant."""
    prior = jnp.sum(-0.5 * beta**2, axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T
    return prior + jnp.sum(-jax.nn.softplus(-signs * logits), axis=-1)


def batched_log_joint__log_sigmoid(beta, all_x, y):
    """Takes jnp.log(jax.nn.sigmoid(...)), which underflows for large logits."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T
    return prior + jnp.sum(jnp.log(jax.nn.sigmoid(signs * logits)), axis=-1)


def batched_log_joint__dot_without_transpose(beta, all_x, y):
    """Writes jnp.dot(beta, all_x), contracting features with points."""
    prior = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(beta, all_x)
    return prior + jnp.sum(-jax.nn.softplus(-signs * logits), axis=-1)


# ---------------------------------------------------------------------------
# bayes.vmapped_log_joint
# ---------------------------------------------------------------------------


def vmapped_log_joint__default_in_axes(betas, all_x, y, prior_scale=1.0):
    """Calls jax.vmap(log_joint) with default in_axes, mapping every argument."""
    return jax.vmap(log_joint)(betas, all_x, y, prior_scale)


def vmapped_log_joint__keyword_prior_scale(betas, all_x, y, prior_scale=1.0):
    """Passes prior_scale as a keyword, which vmap maps over axis 0."""
    mapped = jax.vmap(log_joint, in_axes=(0, None, None))
    return mapped(betas, all_x, y, prior_scale=prior_scale)


def vmapped_log_joint__ignores_prior_scale(betas, all_x, y, prior_scale=1.0):
    """Leaves prior_scale out of the call, so the prior is always N(0, 1)."""
    return jax.vmap(log_joint, in_axes=(0, None, None))(betas, all_x, y)


def vmapped_log_joint__maps_data(betas, all_x, y, prior_scale=1.0):
    """Writes in_axes=(0, 0, None, None), mapping the rows of all_x too."""
    mapped = jax.vmap(log_joint, in_axes=(0, 0, None, None))
    return mapped(betas, all_x, y, prior_scale)


def vmapped_log_joint__maps_features(betas, all_x, y, prior_scale=1.0):
    """Maps betas over axis 1, the features, instead of axis 0."""
    mapped = jax.vmap(log_joint, in_axes=(1, None, None, None))
    return mapped(betas, all_x, y, prior_scale)


def vmapped_log_joint__python_loop(betas, all_x, y, prior_scale=1.0):
    """Loops over the betas in Python instead of using jax.vmap."""
    return jnp.stack([log_joint(b, all_x, y, prior_scale) for b in betas])


def vmapped_log_joint__partial_default_axes(betas, all_x, y, prior_scale=1.0):
    """Fixes prior_scale with partial but keeps default in_axes for the data."""
    mapped = jax.vmap(functools.partial(log_joint, prior_scale=prior_scale))
    return mapped(betas, all_x, y)


def vmapped_log_joint__variance(betas, all_x, y, prior_scale=1.0):
    """Passes prior_scale ** 2, reading the sigma_0 squared of the formula."""
    mapped = jax.vmap(log_joint, in_axes=(0, None, None, None))
    return mapped(betas, all_x, y, prior_scale**2)


def vmapped_log_joint__sums_batch(betas, all_x, y, prior_scale=1.0):
    """Vmaps correctly, then sums the batch into one number."""
    mapped = jax.vmap(log_joint, in_axes=(0, None, None, None))
    return jnp.sum(mapped(betas, all_x, y, prior_scale))


# ---------------------------------------------------------------------------
# bayes.sample_betas
# ---------------------------------------------------------------------------


def sample_betas__splits_key(key, beta_loc, beta_log_scale, num_samples):
    """Splits the key first and draws the noise from the subkey."""
    _, subkey = jax.random.split(key)
    epsilon = jax.random.normal(subkey, (num_samples, beta_loc.shape[-1]))
    return beta_loc + jnp.exp(beta_log_scale) * epsilon


def sample_betas__log_scale_as_sigma(key, beta_loc, beta_log_scale, num_samples):
    """Multiplies the noise by beta_log_scale itself, forgetting the exp."""
    epsilon = jax.random.normal(key, (num_samples, beta_loc.shape[-1]))
    return beta_loc + beta_log_scale * epsilon


def sample_betas__half_exp(key, beta_loc, beta_log_scale, num_samples):
    """Uses exp(beta_log_scale / 2), treating the log scale as a log variance."""
    epsilon = jax.random.normal(key, (num_samples, beta_loc.shape[-1]))
    return beta_loc + jnp.exp(0.5 * beta_log_scale) * epsilon


def sample_betas__transposed_noise(key, beta_loc, beta_log_scale, num_samples):
    """Draws the noise as (d, num_samples) and transposes it."""
    epsilon = jax.random.normal(key, (beta_loc.shape[-1], num_samples)).T
    return beta_loc + jnp.exp(beta_log_scale) * epsilon


def sample_betas__numpy_noise(key, beta_loc, beta_log_scale, num_samples):
    """Draws the noise with np.random.normal, ignoring the key."""
    epsilon = np.random.normal(size=(num_samples, beta_loc.shape[-1]))
    return beta_loc + jnp.exp(beta_log_scale) * epsilon


def sample_betas__per_sample_keys(key, beta_loc, beta_log_scale, num_samples):
    """Splits one key per sample and draws each noise vector separately."""
    d = beta_loc.shape[-1]
    keys = jax.random.split(key, num_samples)
    epsilon = jax.vmap(lambda k: jax.random.normal(k, (d,)))(keys)
    return beta_loc + jnp.exp(beta_log_scale) * epsilon


def sample_betas__adds_scale(key, beta_loc, beta_log_scale, num_samples):
    """Adds the scale to the noise instead of multiplying by it."""
    epsilon = jax.random.normal(key, (num_samples, beta_loc.shape[-1]))
    return beta_loc + jnp.exp(beta_log_scale) + epsilon


def sample_betas__repeated_noise(key, beta_loc, beta_log_scale, num_samples):
    """Draws one (d,) noise vector and tiles the sample num_samples times."""
    epsilon = jax.random.normal(key, beta_loc.shape)
    return jnp.tile(beta_loc + jnp.exp(beta_log_scale) * epsilon, (num_samples, 1))


def sample_betas__forgets_loc(key, beta_loc, beta_log_scale, num_samples):
    """Scales the noise by sigma but forgets to add the mean."""
    epsilon = jax.random.normal(key, (num_samples, beta_loc.shape[-1]))
    return jnp.exp(beta_log_scale) * epsilon


def sample_betas__fixed_key(key, beta_loc, beta_log_scale, num_samples):
    """Draws from jax.random.PRNGKey(0) instead of the key it was given."""
    epsilon = jax.random.normal(
        jax.random.PRNGKey(0), (num_samples, beta_loc.shape[-1])
    )
    return beta_loc + jnp.exp(beta_log_scale) * epsilon


# ---------------------------------------------------------------------------
# bayes.elbo_value_and_grad
# ---------------------------------------------------------------------------

_HALF_LOG_2_PI_E = 0.5 * math.log(2 * math.pi * math.e)


def _log_joints(betas, all_x, y, prior_scale=10.0):
    """Log joint of every row of betas, as in the chapter's vi_log_joint."""
    return jax.vmap(log_joint, in_axes=(0, None, None, None))(
        betas, all_x, y, prior_scale
    )


def elbo_value_and_grad__prior_scale_one(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Uses log_joint's default prior_scale=1.0 instead of the chapter's 10.0."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y, 1.0))
        return expected + jnp.sum(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__samples_outside(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Builds the samples before the differentiated function, cutting the path."""
    betas = beta_loc + jnp.exp(beta_log_scale) * epsilon

    def elbo(loc, log_scale):
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return expected + jnp.sum(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__no_entropy(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Returns the expected log joint alone, forgetting the entropy term."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        return jnp.mean(_log_joints(betas, all_x, y))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__default_argnums(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Leaves argnums at its default, so only the gradient for beta_loc comes back."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return expected + jnp.sum(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo)(beta_loc, beta_log_scale)


def elbo_value_and_grad__sum_not_mean(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Sums the log joints over the samples instead of averaging them."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.sum(_log_joints(betas, all_x, y))
        return expected + jnp.sum(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__entropy_sign(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Subtracts the entropy instead of adding it."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return expected - jnp.sum(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__entropy_no_constant(
    beta_loc, beta_log_scale, epsilon, all_x, y
):
    """Keeps only sum(log sigma) of the entropy, dropping its constant term."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return expected + jnp.sum(log_scale)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__negated(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Returns the negative ELBO, a loss to minimize, and its gradients."""

    def neg_elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return -(expected + jnp.sum(log_scale + _HALF_LOG_2_PI_E))

    return jax.value_and_grad(neg_elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__log_scale_as_sigma(
    beta_loc, beta_log_scale, epsilon, all_x, y
):
    """Builds the samples as loc + log_scale * epsilon, forgetting the exp."""

    def elbo(loc, log_scale):
        betas = loc + log_scale * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return expected + jnp.sum(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def elbo_value_and_grad__entropy_mean(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Averages the entropy terms over the coefficients instead of summing."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return expected + jnp.mean(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


# ---------------------------------------------------------------------------
# bayes.ascent_step
# ---------------------------------------------------------------------------


def _my_elbo_value_and_grad(beta_loc, beta_log_scale, epsilon, all_x, y):
    """The learner's exercise 4 answer, which the ascent steps below call."""

    def elbo(loc, log_scale):
        betas = loc + jnp.exp(log_scale) * epsilon
        expected = jnp.mean(_log_joints(betas, all_x, y))
        return expected + jnp.sum(log_scale + _HALF_LOG_2_PI_E)

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def ascent_step__descent(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Subtracts the gradients, as in the SGD of chapter 1, lowering the ELBO."""
    value, (loc_grad, log_scale_grad) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    return (
        value,
        beta_loc - step_size * loc_grad,
        beta_log_scale - step_size * log_scale_grad,
    )


def ascent_step__elbo_after(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Returns the ELBO recomputed at the new parameters, after the step."""
    _, (loc_grad, log_scale_grad) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    new_loc = beta_loc + step_size * loc_grad
    new_log_scale = beta_log_scale + step_size * log_scale_grad
    value, _ = _my_elbo_value_and_grad(new_loc, new_log_scale, epsilon, all_x, y)
    return value, new_loc, new_log_scale


def ascent_step__loc_only(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Moves beta_loc and returns beta_log_scale unchanged."""
    value, (loc_grad, _) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    return value, beta_loc + step_size * loc_grad, beta_log_scale


def ascent_step__swapped_grads(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Unpacks the gradient pair in the wrong order, swapping the two."""
    value, (log_scale_grad, loc_grad) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    return (
        value,
        beta_loc + step_size * loc_grad,
        beta_log_scale + step_size * log_scale_grad,
    )


def ascent_step__return_order(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Returns (new_loc, new_log_scale, elbo), the ELBO last instead of first."""
    value, (loc_grad, log_scale_grad) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    return (
        beta_loc + step_size * loc_grad,
        beta_log_scale + step_size * log_scale_grad,
        value,
    )


def ascent_step__float_elbo(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Returns float(elbo) for logging, which fails on a tracer under jit."""
    value, (loc_grad, log_scale_grad) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    return (
        float(value),
        beta_loc + step_size * loc_grad,
        beta_log_scale + step_size * log_scale_grad,
    )


def ascent_step__fresh_noise(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Draws new noise with a fixed key, as the chapter's loop did, not epsilon."""
    noise = jax.random.normal(jax.random.PRNGKey(0), epsilon.shape)
    value, (loc_grad, log_scale_grad) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, noise, all_x, y
    )
    return (
        value,
        beta_loc + step_size * loc_grad,
        beta_log_scale + step_size * log_scale_grad,
    )


def ascent_step__ignores_step_size(
    beta_loc, beta_log_scale, epsilon, all_x, y, step_size
):
    """Uses the chapter's global step size 0.01 instead of the argument."""
    value, (loc_grad, log_scale_grad) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    return (
        value,
        beta_loc + STEP_SIZE * loc_grad,
        beta_log_scale + STEP_SIZE * log_scale_grad,
    )


def ascent_step__sequential(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """Moves beta_loc, then takes the log-scale gradient at the moved loc."""
    value, (loc_grad, _) = _my_elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y
    )
    new_loc = beta_loc + step_size * loc_grad
    _, (_, log_scale_grad) = _my_elbo_value_and_grad(
        new_loc, beta_log_scale, epsilon, all_x, y
    )
    return value, new_loc, beta_log_scale + step_size * log_scale_grad


ANSWERS = [
    # mlp.relu
    ("mlp.relu", relu__float_zero, "float 0.0 promotes int input"),
    ("mlp.relu", relu__true_division, "true division promotes int input"),
    ("mlp.relu", relu__max_reduction, "jnp.max reduction instead of maximum"),
    ("mlp.relu", relu__stack_wrong_axis, "max over the wrong axis"),
    ("mlp.relu", relu__python_if, "Python if on an array"),
    ("mlp.relu", relu__numpy_maximum, "NumPy function, fails under jit"),
    ("mlp.relu", relu__at_set_discarded, ".at[].set result discarded"),
    ("mlp.relu", relu__clip_to_one, "clip also caps at one"),
    ("mlp.relu", relu__library_relu, "uses jax.nn.relu, forbidden"),
    # mlp.one_hot
    ("mlp.one_hot", one_hot__python_loop, "Python loop over labels"),
    ("mlp.one_hot", one_hot__bool_result, "bool dtype, ignores dtype"),
    ("mlp.one_hot", one_hot__transposed, "(k, n) instead of (n, k)"),
    ("mlp.one_hot", one_hot__one_based, "classes numbered from 1"),
    ("mlp.one_hot", one_hot__eye_default_dtype, "eye ignores dtype argument"),
    ("mlp.one_hot", one_hot__at_rows, "scatter fills whole rows"),
    ("mlp.one_hot", one_hot__classes_from_labels, "k taken from max label"),
    ("mlp.one_hot", one_hot__no_new_axis, "missing new axis for broadcast"),
    ("mlp.one_hot", one_hot__numpy_eye, "NumPy indexing, fails under tracing"),
    # mlp.accuracy
    ("mlp.accuracy", accuracy__axis0, "argmax over the wrong axis"),
    ("mlp.accuracy", accuracy__float_inside, "float() inside, fails under jit"),
    ("mlp.accuracy", accuracy__count, "sum instead of mean"),
    ("mlp.accuracy", accuracy__targets_not_argmaxed, "compares with one-hot targets"),
    ("mlp.accuracy", accuracy__integer_division, "integer division of the count"),
    ("mlp.accuracy", accuracy__target_probability, "mean target probability"),
    ("mlp.accuracy", accuracy__elementwise_threshold, "elementwise over all classes"),
    ("mlp.accuracy", accuracy__error_rate, "error rate instead of accuracy"),
    ("mlp.accuracy", accuracy__no_mean, "per-example vector, no mean"),
    # mlp.update
    ("mlp.update", update__ascent, "wrong sign: gradient ascent"),
    ("mlp.update", update__global_step_size, "global step size, not the argument"),
    ("mlp.update", update__in_place, "mutates params in place"),
    ("mlp.update", update__bias_frozen, "biases not updated"),
    ("mlp.update", update__loss_not_grad, "subtracts the loss, not the gradient"),
    ("mlp.update", update__returns_loss_too, "returns (loss, params)"),
    ("mlp.update", update__no_step_size, "forgets to scale by step_size"),
    ("mlp.update", update__float_step_size, "float() on a traced argument"),
    ("mlp.update", update__divides_by_batch, "gradient divided by batch size"),
    ("mlp.update", update__drops_last_layer, "output layer dropped"),
    # mlp.batched_predict
    ("mlp.batched_predict", batched_predict__default_in_axes, "default in_axes"),
    ("mlp.batched_predict", batched_predict__pixel_axis, "maps over the pixel axis"),
    ("mlp.batched_predict", batched_predict__swapped_in_axes, "in_axes swapped"),
    ("mlp.batched_predict", batched_predict__python_loop, "Python loop over images"),
    ("mlp.batched_predict", batched_predict__out_axes_one, "transposed output"),
    ("mlp.batched_predict", batched_predict__by_hand, "hand batching, no axis"),
    ("mlp.batched_predict", batched_predict__probabilities, "probabilities"),
    ("mlp.batched_predict", batched_predict__hardcoded_pixels, "hard-coded 784"),
    ("mlp.batched_predict", batched_predict__squeeze, "squeeze drops batch of one"),
    # mlp.tf_batches
    ("mlp.tf_batches", tf_batches__tensors, "yields TF tensors, not NumPy"),
    ("mlp.tf_batches", tf_batches__drop_remainder, "drops the last batch"),
    ("mlp.tf_batches", tf_batches__shuffled, "shuffles, order lost"),
    ("mlp.tf_batches", tf_batches__first_batch_only, "returns only one batch"),
    ("mlp.tf_batches", tf_batches__unbatched, "never batches"),
    ("mlp.tf_batches", tf_batches__jax_arrays, "JAX arrays instead of NumPy"),
    ("mlp.tf_batches", tf_batches__dict_keys, "treats tuple elements as dicts"),
    ("mlp.tf_batches", tf_batches__flattened_scaled, "flattens and scales images"),
    ("mlp.tf_batches", tf_batches__no_prefetch, "no prefetch"),
    # torch_data.numpy_collate
    ("torch_data.numpy_collate", numpy_collate__one_level, "no recursion"),
    ("torch_data.numpy_collate", numpy_collate__leaves_as_lists, "lists, not arrays"),
    ("torch_data.numpy_collate", numpy_collate__concatenate, "concatenate not stack"),
    ("torch_data.numpy_collate", numpy_collate__float32, "casts to float32"),
    ("torch_data.numpy_collate", numpy_collate__default_collate, "torch tensors"),
    ("torch_data.numpy_collate", numpy_collate__tuples_only, "lists not recursed"),
    ("torch_data.numpy_collate", numpy_collate__batch_axis_last, "batch axis last"),
    ("torch_data.numpy_collate", numpy_collate__per_example, "recurses per example"),
    ("torch_data.numpy_collate", numpy_collate__pops_first, "pop mutates, drops one"),
    # torch_data.flatten_and_cast
    ("torch_data.flatten_and_cast", flatten_and_cast__scaled, "scaled by 255"),
    ("torch_data.flatten_and_cast", flatten_and_cast__hardcoded_784, "hard-coded 784"),
    ("torch_data.flatten_and_cast", flatten_and_cast__no_cast, "stays uint8"),
    ("torch_data.flatten_and_cast", flatten_and_cast__float64, "float64"),
    ("torch_data.flatten_and_cast", flatten_and_cast__torch_tensor, "torch tensor"),
    ("torch_data.flatten_and_cast", flatten_and_cast__jax_array, "JAX array"),
    ("torch_data.flatten_and_cast", flatten_and_cast__keeps_2d, "not flattened"),
    ("torch_data.flatten_and_cast", flatten_and_cast__batch_axis, "(1, h*w) shape"),
    ("torch_data.flatten_and_cast", flatten_and_cast__fortran_order, "column order"),
    ("torch_data.flatten_and_cast", flatten_and_cast__pil_getdata, "PIL-only API"),
    # torch_data.batches
    ("torch_data.batches", batches__drops_last, "drops the last batch"),
    ("torch_data.batches", batches__per_example, "reads one example at a time"),
    ("torch_data.batches", batches__inclusive_end, "slice one short"),
    ("torch_data.batches", batches__batch_index_start, "overlapping batches"),
    ("torch_data.batches", batches__array_split_count, "array_split count vs size"),
    ("torch_data.batches", batches__extra_empty, "extra empty batch"),
    ("torch_data.batches", batches__swapped_pair, "(labels, images) order"),
    ("torch_data.batches", batches__reshape, "reshape needs divisible n"),
    # torch_data.shuffled_batches
    ("torch_data.shuffled_batches", shuffled_batches__global_seed, "global seed"),
    ("torch_data.shuffled_batches", shuffled_batches__with_replacement, "repeats"),
    (
        "torch_data.shuffled_batches",
        shuffled_batches__shuffles_batch_order,
        "shuffles only the batch order",
    ),
    ("torch_data.shuffled_batches", shuffled_batches__drops_last, "drops last batch"),
    ("torch_data.shuffled_batches", shuffled_batches__unseeded, "unseeded generator"),
    ("torch_data.shuffled_batches", shuffled_batches__within_batch, "within batches"),
    ("torch_data.shuffled_batches", shuffled_batches__off_by_one, "n - 1 indices"),
    ("torch_data.shuffled_batches", shuffled_batches__sorted_batches, "sorted"),
    ("torch_data.shuffled_batches", shuffled_batches__argsort, "not permutation"),
    ("torch_data.shuffled_batches", shuffled_batches__seed_plus_one, "seed + 1"),
    ("torch_data.shuffled_batches", shuffled_batches__array_split, "even split"),
    # torch_data.make_loader
    ("torch_data.make_loader", make_loader__shuffled, "shuffle=True"),
    ("torch_data.make_loader", make_loader__drop_last, "drop_last=True"),
    ("torch_data.make_loader", make_loader__no_collate, "collate_fn not passed"),
    ("torch_data.make_loader", make_loader__positional, "collate_fn as shuffle"),
    ("torch_data.make_loader", make_loader__list_of_batches, "not a DataLoader"),
    (
        "torch_data.make_loader",
        make_loader__chapter_batch_sampler,
        "BatchSampler indexes by lists",
    ),
    ("torch_data.make_loader", make_loader__returns_iter, "returns an iterator"),
    ("torch_data.make_loader", make_loader__hardcoded_128, "hard-coded batch 128"),
    ("torch_data.make_loader", make_loader__batch_size_none, "batching turned off"),
    # bayes.batched_log_joint
    ("bayes.batched_log_joint", batched_log_joint__prior_no_axis, "prior no axis"),
    (
        "bayes.batched_log_joint",
        batched_log_joint__no_final_transpose,
        "logits (points, batch)",
    ),
    ("bayes.batched_log_joint", batched_log_joint__likelihood_axis0, "sum axis=0"),
    ("bayes.batched_log_joint", batched_log_joint__python_loop, "Python loop"),
    ("bayes.batched_log_joint", batched_log_joint__uses_vmap, "uses vmap"),
    ("bayes.batched_log_joint", batched_log_joint__labels_not_signs, "y, not 2y - 1"),
    ("bayes.batched_log_joint", batched_log_joint__sign_flip, "sign flipped"),
    ("bayes.batched_log_joint", batched_log_joint__mean_not_sum, "mean not sum"),
    (
        "bayes.batched_log_joint",
        batched_log_joint__no_norm_constant,
        "prior without constant",
    ),
    ("bayes.batched_log_joint", batched_log_joint__log_sigmoid, "log(sigmoid)"),
    (
        "bayes.batched_log_joint",
        batched_log_joint__dot_without_transpose,
        "dot(beta, all_x)",
    ),
    # bayes.vmapped_log_joint
    ("bayes.vmapped_log_joint", vmapped_log_joint__default_in_axes, "default axes"),
    (
        "bayes.vmapped_log_joint",
        vmapped_log_joint__keyword_prior_scale,
        "prior_scale as keyword",
    ),
    (
        "bayes.vmapped_log_joint",
        vmapped_log_joint__ignores_prior_scale,
        "prior_scale ignored",
    ),
    ("bayes.vmapped_log_joint", vmapped_log_joint__maps_data, "maps all_x too"),
    ("bayes.vmapped_log_joint", vmapped_log_joint__maps_features, "in_axes 1"),
    ("bayes.vmapped_log_joint", vmapped_log_joint__python_loop, "Python loop"),
    (
        "bayes.vmapped_log_joint",
        vmapped_log_joint__partial_default_axes,
        "partial, data mapped",
    ),
    ("bayes.vmapped_log_joint", vmapped_log_joint__variance, "scale squared"),
    ("bayes.vmapped_log_joint", vmapped_log_joint__sums_batch, "sums the batch"),
    # bayes.sample_betas
    ("bayes.sample_betas", sample_betas__splits_key, "splits the key"),
    ("bayes.sample_betas", sample_betas__log_scale_as_sigma, "no exp"),
    ("bayes.sample_betas", sample_betas__half_exp, "exp(log_scale / 2)"),
    ("bayes.sample_betas", sample_betas__transposed_noise, "noise drawn transposed"),
    ("bayes.sample_betas", sample_betas__numpy_noise, "NumPy noise, key ignored"),
    ("bayes.sample_betas", sample_betas__per_sample_keys, "one key per sample"),
    ("bayes.sample_betas", sample_betas__adds_scale, "adds sigma"),
    ("bayes.sample_betas", sample_betas__repeated_noise, "same noise every sample"),
    ("bayes.sample_betas", sample_betas__forgets_loc, "mean forgotten"),
    ("bayes.sample_betas", sample_betas__fixed_key, "fixed key"),
    # bayes.elbo_value_and_grad
    (
        "bayes.elbo_value_and_grad",
        elbo_value_and_grad__prior_scale_one,
        "prior_scale 1",
    ),
    (
        "bayes.elbo_value_and_grad",
        elbo_value_and_grad__samples_outside,
        "samples built outside",
    ),
    ("bayes.elbo_value_and_grad", elbo_value_and_grad__no_entropy, "no entropy"),
    (
        "bayes.elbo_value_and_grad",
        elbo_value_and_grad__default_argnums,
        "default argnums",
    ),
    ("bayes.elbo_value_and_grad", elbo_value_and_grad__sum_not_mean, "sum not mean"),
    (
        "bayes.elbo_value_and_grad",
        elbo_value_and_grad__entropy_sign,
        "entropy subtracted",
    ),
    (
        "bayes.elbo_value_and_grad",
        elbo_value_and_grad__entropy_no_constant,
        "entropy constant dropped",
    ),
    ("bayes.elbo_value_and_grad", elbo_value_and_grad__negated, "negative ELBO"),
    (
        "bayes.elbo_value_and_grad",
        elbo_value_and_grad__log_scale_as_sigma,
        "no exp on the scale",
    ),
    (
        "bayes.elbo_value_and_grad",
        elbo_value_and_grad__entropy_mean,
        "entropy averaged",
    ),
    # bayes.ascent_step
    ("bayes.ascent_step", ascent_step__descent, "descent, wrong sign"),
    ("bayes.ascent_step", ascent_step__elbo_after, "ELBO after the step"),
    ("bayes.ascent_step", ascent_step__loc_only, "log scale not updated"),
    ("bayes.ascent_step", ascent_step__swapped_grads, "gradients swapped"),
    ("bayes.ascent_step", ascent_step__return_order, "return order"),
    ("bayes.ascent_step", ascent_step__float_elbo, "float() under jit"),
    ("bayes.ascent_step", ascent_step__fresh_noise, "ignores epsilon"),
    ("bayes.ascent_step", ascent_step__ignores_step_size, "global step size"),
    ("bayes.ascent_step", ascent_step__sequential, "sequential updates"),
]
