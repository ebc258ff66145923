"""A batched PyTorch ``DataLoader`` whose worker processes are safe beside JAX.

Chapter 2 builds a loader that cuts each batch out of whole arrays with one
fancy index. With ``num_workers > 0`` the ``DataLoader`` runs that indexing in
worker processes, and on Linux it starts them with ``os.fork()`` by default.
Forking a process in which JAX has started its threads can deadlock the child,
and JAX says so with a ``RuntimeWarning``. Workers started with ``"spawn"`` (or
``"forkserver"``) begin as fresh interpreters instead, so they import what they
run: the dataset class and the collate function must live in an importable
module, not in a notebook. That is why they live here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from torch.utils.data import DataLoader

__all__ = ["ArrayDataset", "keep_numpy", "worker_loader"]


class ArrayDataset:
    """A dataset held as whole arrays; indexing with a list returns a batch.

    Parameters
    ----------
    images : numpy.ndarray
        One row per example.
    labels : numpy.ndarray
        One label per example, as many as ``images`` has rows.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images = images
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, indices: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        return self.images[indices], self.labels[indices]


def keep_numpy(batch: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Return a batch unchanged: :class:`ArrayDataset` already made it."""
    return batch


def worker_loader(
    images: np.ndarray,
    labels: np.ndarray,
    batch_size: int,
    seed: int,
    num_workers: int = 2,
    context: str = "spawn",
) -> DataLoader:
    """Build a shuffled, batched ``DataLoader`` that reads in worker processes.

    The main process draws each epoch's order from a ``torch.Generator``
    seeded with ``seed`` and hands the workers lists of indices, so the
    batches do not depend on ``num_workers``. The workers are started once
    (``persistent_workers=True``) with the given multiprocessing ``context``.

    Parameters
    ----------
    images, labels : numpy.ndarray
        The whole split, one row (and one label) per example.
    batch_size : int
        Examples per batch; the last batch may be smaller.
    seed : int
        Seed of the generator that shuffles every epoch anew.
    num_workers : int
        Worker processes; 0 reads in the main process.
    context : str
        ``"spawn"`` or ``"forkserver"`` are safe once JAX has started;
        ``"fork"`` (Linux's default) makes JAX warn of a possible deadlock.

    Returns
    -------
    torch.utils.data.DataLoader
        Yields ``(images, labels)`` pairs of NumPy arrays.
    """
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler

    dataset = ArrayDataset(images, labels)
    generator = torch.Generator().manual_seed(seed)
    sampler = BatchSampler(
        RandomSampler(dataset, generator=generator), batch_size, drop_last=False
    )
    workers = {}
    if num_workers:
        workers = {"multiprocessing_context": context, "persistent_workers": True}
    return DataLoader(
        dataset,
        sampler=sampler,
        batch_size=None,
        collate_fn=keep_numpy,
        num_workers=num_workers,
        **workers,
    )
