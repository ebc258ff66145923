"""Offline data provisioning for the course, and the loaders that read it.

The course trains on MNIST when it can have it, and on Fashion-MNIST (the same
IDX format, 70,000 28×28 grey images in 10 classes) when it cannot. One
command writes the chosen dataset in the three forms the chapters use:

* raw IDX files under ``DATA_DIR/<MNIST|FashionMNIST>/raw/``, which
  ``torchvision.datasets.MNIST(root=DATA_DIR, download=False)`` (or
  ``FashionMNIST``) reads as it is, and :func:`load_numpy` reads for tests;
* a prepared TFDS dataset under the registered builder's name and version,
  which ``tfds.load(name, data_dir=DATA_DIR, download=False)`` reads with no
  network call;
* a record, ``DATA_DIR/jaxcourse-data.json``, naming the active dataset, where
  it came from and the SHA-256 of every file written, so a corrupted file is
  found before it turns into a strange training curve. Each file is hashed
  once per process, and again only if it changes on disk.

Sources, tried in order (:func:`provision`):

1. MNIST files the user already has: ``--mnist-dir PATH`` or the
   ``JAX_COURSE_MNIST_DIR`` environment variable.
2. The official MNIST download location (the one TFDS uses), only if it
   answers within 5 seconds.
3. Fashion-MNIST from Debian's ``dataset-fashion-mnist`` package.

Run it as ``python -m jaxcourse.data`` (``make data``). ``JAX_COURSE_DATASET``
(``mnist`` or ``fashion_mnist``) overrides the choice; ``JAX_COURSE_DATA_DIR``
moves the data folder (default ``~/.jax-course/data``).

The package is split at its seams; everything public is importable from here:

:mod:`~jaxcourse.data.specs`
    the datasets, their IDX files and folders, the errors;
:mod:`~jaxcourse.data.sources`
    the user's folder, the official download, Debian's package;
:mod:`~jaxcourse.data.store`
    the data folder: the record, the raw files, the TFDS copy;
:mod:`~jaxcourse.data.checks`
    checksums (once per process), :func:`verify`, :func:`require`,
    :func:`load_numpy`;
:mod:`~jaxcourse.data.provisioning`
    :func:`provision` and :func:`ensure`;
:mod:`~jaxcourse.data.corpus`
    the text corpus (Debian's fortune files) for the transformer chapter:
    :func:`provision_corpus`, :func:`load_corpus`;
:mod:`~jaxcourse.data.cli`
    the command line, :func:`main`.
"""

from __future__ import annotations

from jaxcourse.data import specs
from jaxcourse.data.checks import load_numpy, require, verify
from jaxcourse.data.cli import main
from jaxcourse.data.corpus import load_corpus, provision_corpus
from jaxcourse.data.provisioning import ensure, provision
from jaxcourse.data.sources import MNIST_HOST, MNIST_URL, network_answers
from jaxcourse.data.specs import *  # noqa: F403  (all of it is public here)
from jaxcourse.data.store import RECORD_NAME

__all__ = [
    "MNIST_HOST", "MNIST_URL", "RECORD_NAME", "ensure", "load_corpus", "load_numpy",
    "main", "network_answers", "provision", "provision_corpus", "require", "verify",
]
__all__ += specs.__all__
