"""The command line: ``python -m jaxcourse.data`` (``make data``, ``jaxcourse-data``).

Provisions the course's dataset (:func:`jaxcourse.data.provisioning.provision`)
and its text corpus (:func:`jaxcourse.data.corpus.provision_corpus`) or, with
``--check``, only verifies them. A problem is one line on stderr that
says what to do, and exit code 2; never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from jaxcourse import CourseError
from jaxcourse.cli import add_version
from jaxcourse.data.checks import verify
from jaxcourse.data.corpus import corpus_path, load_corpus, provision_corpus
from jaxcourse.data.provisioning import provision
from jaxcourse.data.specs import (
    DATA_DIR_ENV,
    DATASET_ENV,
    DATASETS,
    FIX_COMMAND,
    MNIST_DIR_ENV,
    data_dir,
)

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Provision (or check) the course's dataset from the command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 2 when no dataset could be provisioned or a file is bad.
    """
    parser = argparse.ArgumentParser(
        prog=FIX_COMMAND,
        description="Provision the course's dataset for offline use.",
    )
    parser.add_argument(
        "--dataset",
        choices=sorted(DATASETS),
        help=f"force a dataset (default: ${DATASET_ENV} or the "
        "first source that works)",
    )
    parser.add_argument(
        "--mnist-dir", help=f"folder with MNIST's IDX files (default: ${MNIST_DIR_ENV})"
    )
    parser.add_argument(
        "--data-dir",
        help=f"data folder (default: ${DATA_DIR_ENV} or ~/.jax-course/data)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only verify what is provisioned"
    )
    parser.add_argument(
        "--no-tfds", action="store_true", help="skip the TFDS copy (raw files only)"
    )
    add_version(parser)
    args = parser.parse_args(argv)
    try:
        if args.check:
            info = verify(args.dataset, args.data_dir)
            print(f"Dataset: {info} — verified in {data_dir(args.data_dir)}")
            load_corpus(args.data_dir)
            print(f"Corpus: {corpus_path(args.data_dir)} — verified")
        else:
            info = provision(
                args.dataset,
                mnist_dir=args.mnist_dir,
                root=args.data_dir,
                tfds=not args.no_tfds,
            )
            provision_corpus(args.data_dir)
            print(f"Data folder: {info.data_dir}")
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0

