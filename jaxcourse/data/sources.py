"""Where a dataset's files come from, and the checks they pass before use.

Three sources, in the course's order of preference (:func:`candidates`):

1. MNIST files the user already has (``--mnist-dir PATH`` or
   ``JAX_COURSE_MNIST_DIR``);
2. the official MNIST download location (the one TFDS uses), only if it
   answers within a few seconds (:func:`network_answers`);
3. Fashion-MNIST from Debian's ``dataset-fashion-mnist`` package (or a
   folder given in ``JAX_COURSE_FASHION_MNIST_DIR``).

Each source yields a :class:`Candidate`: the four decompressed IDX files in
memory, already checked against what :mod:`jaxcourse.data.specs` knows of the
dataset (official checksums, shapes, examples per class), so that another
dataset passed off as MNIST is refused before anything is written.
"""

from __future__ import annotations

import gzip
import hashlib
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxcourse.data.specs import (
    DATASETS,
    DEBIAN_FASHION_DIR,
    IDX_FILES,
    SPLIT_SIZES,
    DataCorruptError,
    DataNotProvisionedError,
    DatasetSpec,
    parse_idx,
)

__all__ = ["MNIST_HOST", "MNIST_URL", "Candidate", "candidates", "network_answers"]

# Where TFDS itself downloads MNIST from; probed before any download. Read
# when used, not when defined, so that the tests can point it elsewhere.
MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
MNIST_HOST = ("storage.googleapis.com", 443)


@dataclass
class Candidate:
    """Decompressed IDX payloads of one dataset, ready to be checked and written."""

    spec: DatasetSpec
    source: str
    payloads: dict[str, bytes]


def candidates(
    wanted: str | None,
    mnist_dir: Path | None,
    fashion_dir: Path,
    network_timeout: float,
    say: Callable[[str], None],
) -> Iterator[Callable[[], Candidate]]:
    """Yield, in the course's order of preference, thunks that fetch a source.

    Parameters
    ----------
    wanted : str or None
        The dataset asked for, or ``None`` for the first that works.
    mnist_dir : Path or None
        The user's folder of MNIST files, if any.
    fashion_dir : Path
        The folder of Fashion-MNIST files.
    network_timeout : float
        Seconds the download site has to answer before it is skipped.
    say : callable
        Prints progress (or nothing).

    Yields
    ------
    callable
        Returns a checked :class:`Candidate`, or raises
        :class:`~jaxcourse.data.specs.DataNotProvisionedError`,
        :class:`~jaxcourse.data.specs.DataCorruptError` or ``OSError``.
    """
    if wanted in (None, "mnist"):
        if mnist_dir is not None:
            yield lambda: _from_folder(
                DATASETS["mnist"], mnist_dir, "MNIST files given by the user"
            )

        def official() -> Candidate:
            say(
                f"Checking whether the MNIST download answers within "
                f"{network_timeout:g} s …"
            )
            if not network_answers(timeout=network_timeout):
                raise DataNotProvisionedError(
                    "the official MNIST download did not answer (no network)"
                )
            return _download_mnist(timeout=30.0)

        yield official
    if wanted in (None, "fashion_mnist"):
        yield lambda: _from_folder(
            DATASETS["fashion_mnist"],
            fashion_dir,
            "Debian's dataset-fashion-mnist package"
            if fashion_dir == DEBIAN_FASHION_DIR
            else "Fashion-MNIST files given by the user",
        )


def network_answers(
    host: tuple[str, int] | None = None, timeout: float = 5.0
) -> bool:
    """Return whether ``host`` accepts a TCP connection within ``timeout`` seconds.

    The name lookup runs in a daemon thread, because ``getaddrinfo`` ignores
    socket timeouts and can block far longer on a machine with no network.

    Parameters
    ----------
    host : (str, int), optional
        Host name and port; by default :data:`MNIST_HOST`.
    timeout : float
        Seconds to wait in all.

    Returns
    -------
    bool
        True only if a connection was made in time.
    """
    address = MNIST_HOST if host is None else host
    outcome: list[bool] = []

    def attempt() -> None:
        try:
            with socket.create_connection(address, timeout=timeout):
                outcome.append(True)
        except OSError:
            outcome.append(False)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(outcome and outcome[0])


def _decompress(blob: bytes, name: str, where: str) -> bytes:
    try:
        return gzip.decompress(blob)
    except (OSError, EOFError) as err:
        raise DataCorruptError(
            f"{name} {where} is not a valid gzip file ({err})."
        ) from None


def _read_idx_folder(folder: Path) -> tuple[dict[str, bytes], dict[str, str]]:
    """Read the four IDX files from ``folder``, ``.gz`` or not.

    Returns the decompressed payloads and the SHA-256 of every ``.gz`` read.
    """
    payloads: dict[str, bytes] = {}
    gz_digests: dict[str, str] = {}
    for stem in (name for pair in IDX_FILES.values() for name in pair):
        plain, packed = folder / stem, folder / (stem + ".gz")
        if plain.is_file():
            payloads[stem] = plain.read_bytes()
        elif packed.is_file():
            blob = packed.read_bytes()
            gz_digests[stem] = hashlib.sha256(blob).hexdigest()
            payloads[stem] = _decompress(blob, packed.name, "in the folder given")
        else:
            raise DataNotProvisionedError(
                f"The folder {folder} has no {stem} (nor {stem}.gz); it needs the "
                "four IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte."
            )
    return payloads, gz_digests


def _check_candidate(cand: Candidate, gz_digests: dict[str, str]) -> None:
    """Check a candidate against what is known of its dataset, or raise."""
    spec = cand.spec
    for stem, digest in gz_digests.items():
        expected = spec.gz_sha256.get(stem)
        if expected and digest != expected:
            raise DataCorruptError(
                f"{stem}.gz from {cand.source} does not match the official "
                f"{spec.title} file (SHA-256 {digest[:12]}…, expected "
                f"{expected[:12]}…). Download it again."
            )
    for stem, payload in cand.payloads.items():
        expected = spec.raw_sha256.get(stem)
        if expected and hashlib.sha256(payload).hexdigest() != expected:
            raise DataCorruptError(
                f"{stem} from {cand.source} does not match the {spec.title} "
                "release (checksum of the decompressed file differs). "
                "Reinstall or download it again."
            )
    for split, (img_name, lbl_name) in IDX_FILES.items():
        images = parse_idx(cand.payloads[img_name], img_name)
        labels = parse_idx(cand.payloads[lbl_name], lbl_name)
        if images.shape != (SPLIT_SIZES[split], 28, 28) or labels.shape != (
            SPLIT_SIZES[split],
        ):
            raise DataCorruptError(
                f"{img_name}/{lbl_name} from {cand.source} hold shapes "
                f"{images.shape} and {labels.shape}; {spec.title} has "
                f"{SPLIT_SIZES[split]} images of 28×28."
            )
        counts = tuple(int(c) for c in np.bincount(labels, minlength=10))
        if spec.label_counts and counts != spec.label_counts[split]:
            raise DataCorruptError(
                f"The {split} labels from {cand.source} are not {spec.title}'s "
                f"(examples per class {counts}). Is it another dataset?"
            )


def _download_mnist(timeout: float) -> Candidate:
    """Download the four official MNIST files, checking each one."""
    payloads: dict[str, bytes] = {}
    gz_digests: dict[str, str] = {}
    source = "the official MNIST download"
    for stem in DATASETS["mnist"].gz_sha256:
        with urllib.request.urlopen(MNIST_URL + stem + ".gz", timeout=timeout) as r:
            blob = r.read()
        gz_digests[stem] = hashlib.sha256(blob).hexdigest()
        payloads[stem] = _decompress(blob, f"{stem}.gz", f"from {source}")
    cand = Candidate(DATASETS["mnist"], source, payloads)
    _check_candidate(cand, gz_digests)
    return cand


def _from_folder(spec: DatasetSpec, folder: Path, source: str) -> Candidate:
    payloads, gz_digests = _read_idx_folder(folder)
    cand = Candidate(spec, source, payloads)
    _check_candidate(cand, gz_digests)
    return cand
