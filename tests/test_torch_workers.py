"""jaxcourse.loaders: DataLoader workers that start without JAX's fork warning.

Chapter 2 reads batches in worker processes after JAX has started. Forked
workers make JAX warn of a deadlock ("os.fork() was called"); the course's
loader spawns them instead. These tests start processes, hence ``slow``.
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.loaders import worker_loader

pytestmark = pytest.mark.slow

IMAGES = np.arange(500 * 4, dtype=np.uint8).reshape(500, 4)
LABELS = np.arange(500)


def two_epochs_and_fork_warnings(context: str) -> tuple[list[np.ndarray], list[str]]:
    """Read two epochs with two workers after JAX has started; return the
    labels of each epoch and the messages of JAX's fork warnings."""
    jnp.ones(3).block_until_ready()  # JAX is running, its threads started
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = worker_loader(IMAGES, LABELS, 64, seed=0, context=context)
        epochs = [np.concatenate([y for _, y in loader]) for _ in range(2)]
        del loader  # shuts the persistent workers down
    return epochs, [str(w.message) for w in caught if "os.fork()" in str(w.message)]


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_workers_start_without_the_fork_warning(context: str) -> None:
    epochs, fork_warnings = two_epochs_and_fork_warnings(context)
    assert fork_warnings == []
    # The order is drawn in the main process: workers do not change the batches.
    in_main = worker_loader(IMAGES, LABELS, 64, seed=0, num_workers=0)
    for labels in epochs:
        assert np.array_equal(labels, np.concatenate([y for _, y in in_main]))
    assert not np.array_equal(epochs[0], epochs[1])  # a new order each epoch
    assert np.array_equal(np.sort(epochs[0]), LABELS)  # every example once
