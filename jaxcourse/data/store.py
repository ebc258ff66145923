"""The data folder: the record, the raw IDX files and the prepared TFDS copy.

A provisioned dataset lives in three forms under the data folder
(:func:`~jaxcourse.data.specs.data_dir`):

* raw IDX files under ``<MNIST|FashionMNIST>/raw/``, which
  ``torchvision.datasets.MNIST(root=DATA_DIR, download=False)`` (or
  ``FashionMNIST``) reads as it is (:func:`write_raw`, :func:`read_split`);
* a prepared TFDS dataset under the registered builder's name and version,
  which ``tfds.load(name, data_dir=DATA_DIR, download=False)`` reads with no
  network call (:func:`write_tfds`);
* a record, ``jaxcourse-data.json``, naming the active dataset, where it came
  from and the SHA-256 of every file written (:func:`read_record`,
  :func:`write_record`, :func:`lookup`). :mod:`jaxcourse.data.checks` checks
  the files against it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from jaxcourse.data.specs import (
    DATA_DIR_ENV,
    DATASET_ENV,
    DATASETS,
    FIX_COMMAND,
    IDX_FILES,
    MNIST_DIR_ENV,
    DataCorruptError,
    DataNotProvisionedError,
    DatasetInfo,
    DatasetSpec,
    parse_idx,
    raw_dir,
)

__all__ = [
    "RECORD_NAME",
    "lookup",
    "read_record",
    "read_split",
    "sha256_file",
    "write_raw",
    "write_record",
    "write_tfds",
]

RECORD_NAME = "jaxcourse-data.json"


def read_record(root: Path) -> dict:
    """Return the data folder's record (an empty one if there is none).

    Raises
    ------
    DataCorruptError
        If the record cannot be read; the message says how to start again.
    """
    path = root / RECORD_NAME
    if not path.exists():
        return {"active": None, "datasets": {}}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise DataCorruptError(
            f"The data record {path.name} in the data folder cannot be read "
            f"({err}). Delete it and run `{FIX_COMMAND}` to provision again."
        ) from None


def write_record(root: Path, record: dict) -> None:
    """Replace the data folder's record with ``record``."""
    # Write then rename, so an interrupted run never leaves half a record.
    tmp = root / (RECORD_NAME + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.replace(root / RECORD_NAME)


def lookup(name: str | None, root: Path) -> tuple[DatasetInfo, dict]:
    """Return the dataset to use and its entry in the record.

    The choice is ``name`` if given, else ``$JAX_COURSE_DATASET``, else the
    dataset the record names as active.

    Raises
    ------
    DataNotProvisionedError
        If nothing, or not the dataset asked for, is provisioned in ``root``;
        the message names the command that fixes it.
    """
    record = read_record(root)
    wanted = name or os.environ.get(DATASET_ENV) or record.get("active")
    if wanted is None:
        raise DataNotProvisionedError(
            f"No dataset is provisioned in the data folder ({root.name}/). Run "
            f"`{FIX_COMMAND}` once (it works offline), or set {DATA_DIR_ENV} to "
            "a folder that holds one."
        )
    if wanted not in DATASETS:
        raise DataNotProvisionedError(
            f"Unknown dataset {wanted!r}; choose one of {sorted(DATASETS)}."
        )
    entry = record["datasets"].get(wanted)
    if entry is None:
        have = sorted(record["datasets"]) or ["none"]
        raise DataNotProvisionedError(
            f"{DATASETS[wanted].title} is not provisioned here (provisioned: "
            f"{', '.join(have)}). Run `{FIX_COMMAND} --dataset {wanted}`"
            + (
                f" with {MNIST_DIR_ENV} pointing at your MNIST files"
                if wanted == "mnist"
                else ""
            )
            + f", or unset {DATASET_ENV}."
        )
    spec = DATASETS[wanted]
    info = DatasetInfo(
        name=spec.name,
        title=spec.title,
        torch_class=spec.torch_class,
        data_dir=str(root),
        source=entry["source"],
        class_names=spec.class_names,
    )
    return info, entry


def sha256_file(path: Path) -> str:
    """Return the SHA-256 of the file at ``path``, as hex."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_split(
    spec: DatasetSpec, root: Path, split: str
) -> tuple[np.ndarray, np.ndarray]:
    """Read one split's raw IDX files as ``(images, labels)``, unchecked.

    Raises
    ------
    DataNotProvisionedError
        If a file is missing.
    DataCorruptError
        If a file is not a well-formed IDX file.
    """
    folder = raw_dir(spec, root)
    arrays = []
    for stem in IDX_FILES[split]:
        path = folder / stem
        if not path.is_file():
            raise DataNotProvisionedError(
                f"{stem} is missing; run `{FIX_COMMAND}` to provision the data."
            )
        arrays.append(parse_idx(path.read_bytes(), stem))
    return arrays[0], arrays[1]


def write_raw(
    spec: DatasetSpec, payloads: dict[str, bytes], root: Path
) -> dict[str, str]:
    """Write the decompressed IDX files where torchvision reads them.

    Returns
    -------
    dict
        The SHA-256 of each file written, by path relative to ``root``.
    """
    folder = raw_dir(spec, root)
    folder.mkdir(parents=True, exist_ok=True)
    digests = {}
    for stem, payload in payloads.items():
        tmp = folder / (stem + ".part")
        tmp.write_bytes(payload)
        tmp.replace(folder / stem)
        digests[str((folder / stem).relative_to(root))] = hashlib.sha256(
            payload
        ).hexdigest()
    return digests


@contextlib.contextmanager
def _quiet_tfds() -> Iterator[None]:
    """Silence TFDS's progress bars and TensorFlow's C++ start-up chatter."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow_datasets as tfds

    tfds.disable_progress_bar()
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _tfds_version_dir(spec: DatasetSpec, root: Path) -> Path:
    import tensorflow_datasets as tfds

    return root / spec.name / str(tfds.builder_cls(spec.name).VERSION)


def write_tfds(spec: DatasetSpec, root: Path) -> dict[str, str]:
    """Store the raw files as a TFDS dataset under the registered builder's name.

    Copying the official ``.gz`` files into a TFDS download folder is not
    enough offline (TFDS still tries to download), so the arrays are written
    as a prepared dataset with the registered name, version and features; a
    later ``tfds.load(name, data_dir=root)`` then reads it with no network.
    Shuffling is disabled so TFDS, torchvision and NumPy all see the examples
    in the same order.

    Returns
    -------
    dict
        The SHA-256 of each file written, by path relative to ``root``.
    """
    with _quiet_tfds():
        import tensorflow as tf
        import tensorflow_datasets as tfds

        registered = tfds.builder(spec.name, data_dir=str(root / ".tfds-info"))
        target = _tfds_version_dir(spec, root)
        if target.exists():
            shutil.rmtree(target)
        splits = {}
        for split in IDX_FILES:
            images, labels = read_split(spec, root, split)
            splits[split] = tf.data.Dataset.from_tensor_slices(
                {"image": images[..., None], "label": labels.astype(np.int64)}
            )
        tfds.dataset_builders.store_as_tfds_dataset(
            name=spec.name,
            version=registered.version,
            features=registered.info.features,
            split_datasets=splits,
            data_dir=str(root),
            description=registered.info.description,
            homepage=registered.info.homepage,
            citation=registered.info.citation,
            disable_shuffling=True,
        )
    shutil.rmtree(root / ".tfds-info", ignore_errors=True)
    shutil.rmtree(root / "downloads", ignore_errors=True)
    return {
        str(p.relative_to(root)): sha256_file(p)
        for p in sorted(target.iterdir())
        if p.is_file()
    }
