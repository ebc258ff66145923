"""The multilayer perceptron of chapter 1, for the chapters and tools after it.

Chapter 1 builds this model line by line; chapter 2, the benchmarks and the
exercises import it from here so that they show only what they teach. The
reference hyper-parameters are those of the original JAX tutorials.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

__all__ = [
    "Hyper",
    "REFERENCE",
    "accuracy",
    "batched_predict",
    "init_params",
    "loss",
    "make_scan_epoch",
    "one_hot",
    "plot_accuracy_against_reference",
    "predict",
    "update",
]

Params = list[tuple[jax.Array, jax.Array]]


class Hyper(NamedTuple):
    """Training hyper-parameters.

    Attributes
    ----------
    layer_sizes : tuple of int
        Widths from input to output.
    param_scale : float
        Standard deviation of the initial weights and biases.
    step_size : float
        SGD learning rate.
    num_epochs : int
        Passes over the training set.
    batch_size : int
        Examples per SGD step.
    """

    layer_sizes: tuple[int, ...] = (784, 512, 512, 10)
    param_scale: float = 0.01
    step_size: float = 0.01
    num_epochs: int = 10
    batch_size: int = 128


REFERENCE = Hyper()


def init_params(
    layer_sizes: Sequence[int], key: jax.Array, scale: float = 0.01
) -> Params:
    """Draw Gaussian weights and biases for a dense network.

    Parameters
    ----------
    layer_sizes : sequence of int
        Widths from input to output.
    key : jax.Array
        A PRNG key.
    scale : float
        Standard deviation of every weight and bias.

    Returns
    -------
    list of (W, b)
        One ``(out, in)`` weight matrix and ``(out,)`` bias per layer.
    """
    keys = jax.random.split(key, len(layer_sizes) - 1)
    params = []
    for n_in, n_out, k in zip(layer_sizes[:-1], layer_sizes[1:], keys, strict=True):
        w_key, b_key = jax.random.split(k)
        params.append(
            (
                scale * jax.random.normal(w_key, (n_out, n_in)),
                scale * jax.random.normal(b_key, (n_out,)),
            )
        )
    return params


def predict(params: Params, image: jax.Array,
            activation: Callable[[jax.Array], jax.Array] = jax.nn.relu) -> jax.Array:
    """Return log-probabilities of the classes for ONE flattened image.

    ``activation`` is the hidden layers' nonlinearity: ``jax.nn.relu`` unless
    a chapter compares another way of writing it.
    """
    activations = image
    for w, b in params[:-1]:
        activations = activation(jnp.dot(w, activations) + b)
    final_w, final_b = params[-1]
    logits = jnp.dot(final_w, activations) + final_b
    return logits - logsumexp(logits)


# The per-example model, batched by vmap over the images' leading axis.
batched_predict = jax.vmap(predict, in_axes=(None, 0))


def one_hot(
    labels: jax.Array, k: int = 10, dtype: jnp.dtype = jnp.float32
) -> jax.Array:
    """Encode integer labels as rows of a ``(len(labels), k)`` one-hot matrix."""
    return jnp.array(labels[:, None] == jnp.arange(k), dtype)


def accuracy(params: Params, images: jax.Array, targets: jax.Array) -> jax.Array:
    """Fraction of images whose arg-max prediction matches the one-hot target."""
    predicted = jnp.argmax(batched_predict(params, images), axis=1)
    return jnp.mean(predicted == jnp.argmax(targets, axis=1))


def loss(params: Params, images: jax.Array, targets: jax.Array,
         activation: Callable[[jax.Array], jax.Array] = jax.nn.relu) -> jax.Array:
    """Negative log-likelihood of the one-hot targets, averaged over all entries.

    As in the original tutorials, the mean runs over the batch *and* the ten
    classes, so this is the usual per-example NLL divided by 10 (and SGD's
    step size of 0.01 acts like 0.001 on the usual loss). The chapters keep
    it so that their runs compare with the reference results. ``activation``
    is :func:`predict`'s.
    """
    per_example = jax.vmap(functools.partial(predict, activation=activation),
                           in_axes=(None, 0))
    return -jnp.mean(per_example(params, images) * targets)


@jax.jit
def update(
    params: Params, images: jax.Array, targets: jax.Array, step_size: float = 0.01
) -> Params:
    """Take one SGD step on a batch and return the new parameters."""
    grads = jax.grad(loss)(params, images, targets)
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads)


def make_scan_epoch(step_size: float = 0.01, num_classes: int = 10):
    """Build a jitted function that runs many SGD steps in one call.

    The returned ``epoch(params, images, labels)`` takes a stack of batches,
    ``images`` of shape ``(steps, batch, 784)`` (any dtype; cast to float32
    inside) and integer ``labels`` of shape ``(steps, batch)``, and runs one
    :func:`update` per batch under :func:`jax.lax.scan`: one dispatch from
    Python instead of ``steps``, which is what makes it fast.

    Parameters
    ----------
    step_size : float
        SGD learning rate.
    num_classes : int
        Number of classes for the one-hot targets.

    Returns
    -------
    callable
        ``epoch(params, images, labels) -> params``.
    """

    def step(params: Params, batch: tuple[jax.Array, jax.Array]):
        images, labels = batch
        targets = one_hot(labels, num_classes)
        grads = jax.grad(loss)(params, images.astype(jnp.float32), targets)
        return jax.tree.map(lambda p, g: p - step_size * g, params, grads), None

    @jax.jit
    def epoch(params: Params, images: jax.Array, labels: jax.Array) -> Params:
        params, _ = jax.lax.scan(step, params, (images, labels))
        return params

    return epoch


def plot_accuracy_against_reference(
    history: Sequence[dict],
    reference: dict,
    *,
    this_run: str,
    reference_run: str,
):
    """Plot a run's accuracies and a reference run's in two panels, side by side.

    The panels are separate because the two runs may not share a dataset (the
    course falls back to Fashion-MNIST where MNIST cannot be fetched), and the
    accuracies of two datasets do not share a scale.

    Parameters
    ----------
    history : sequence of dict
        One dict per epoch with keys ``"epoch"``, ``"train_acc"``, ``"test_acc"``.
    reference : dict
        Lists under the keys ``"epoch"``, ``"train_acc"`` and ``"test_acc"``.
    this_run, reference_run : str
        Panel titles: which dataset and machine each run used.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, for the caller to show.
    """
    import matplotlib.pyplot as plt  # only the chapters that plot need it

    # As wide as the book's text column (6.4 in), so nothing is scaled down.
    fig, (ours, theirs) = plt.subplots(1, 2, figsize=(6.4, 3.6), sharex=True)
    epochs = [h["epoch"] for h in history]
    ours.plot(epochs, [h["train_acc"] for h in history], "o-", label="train")
    ours.plot(epochs, [h["test_acc"] for h in history], "s-", label="test")
    theirs.plot(reference["epoch"], reference["train_acc"], "o--", color="k",
                label="train")
    theirs.plot(reference["epoch"], reference["test_acc"], "s--", color="gray",
                label="test")
    for ax, title in ((ours, this_run), (theirs, reference_run)):
        ax.set(xlabel="epoch", ylabel="accuracy")
        ax.set_title(title, fontsize=10, wrap=True)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Accuracy after each epoch, two runs (the heights compare\n"
                 "only when both panels show the same dataset)", fontsize=11)
    fig.tight_layout()
    return fig
