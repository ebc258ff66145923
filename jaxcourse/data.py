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
  found before it turns into a strange training curve.

Sources, tried in order (:func:`provision`):

1. MNIST files the user already has: ``--mnist-dir PATH`` or the
   ``JAX_COURSE_MNIST_DIR`` environment variable.
2. The official MNIST download location (the one TFDS uses), only if it
   answers within 5 seconds.
3. Fashion-MNIST from Debian's ``dataset-fashion-mnist`` package.

Run it as ``python -m jaxcourse.data`` (``make data``). ``JAX_COURSE_DATASET``
(``mnist`` or ``fashion_mnist``) overrides the choice; ``JAX_COURSE_DATA_DIR``
moves the data folder (default ``~/.jax-course/data``).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaxcourse import CourseError

__all__ = [
    "DATASETS",
    "DataCorruptError",
    "DataNotProvisionedError",
    "DatasetInfo",
    "DatasetSpec",
    "data_dir",
    "ensure",
    "load_numpy",
    "network_answers",
    "provision",
    "require",
    "verify",
]

DATA_DIR_ENV = "JAX_COURSE_DATA_DIR"
DATASET_ENV = "JAX_COURSE_DATASET"
MNIST_DIR_ENV = "JAX_COURSE_MNIST_DIR"
FASHION_DIR_ENV = "JAX_COURSE_FASHION_MNIST_DIR"
RECORD_NAME = "jaxcourse-data.json"
DEBIAN_FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
FIX_COMMAND = "python -m jaxcourse.data"

# The four IDX files of both datasets, by split; torchvision expects exactly
# these names, decompressed, in DATA_DIR/<class name>/raw/.
IDX_FILES: dict[str, tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
SPLIT_SIZES = {"train": 60_000, "test": 10_000}


class DataNotProvisionedError(CourseError):
    """No usable dataset is provisioned; the message names the command to run."""


class DataCorruptError(CourseError):
    """A provisioned file fails its checksum; the message says how to fix it."""


@dataclass(frozen=True)
class DatasetSpec:
    """What the course knows about one dataset before it has any file of it.

    Attributes
    ----------
    name : str
        The TFDS builder name, also the course's id (``"mnist"``).
    title : str
        The name to print for people.
    torch_class : str
        The ``torchvision.datasets`` class that reads the raw files.
    class_names : tuple of str
        Label names, index by label.
    raw_sha256 : dict
        SHA-256 of each *decompressed* IDX file, where known in advance.
    gz_sha256 : dict
        SHA-256 of each official ``.gz`` file, where known in advance.
    label_counts : dict
        Examples per class in each split: a fingerprint that tells MNIST from
        Fashion-MNIST even when only uncompressed files are at hand.
    """

    name: str
    title: str
    torch_class: str
    class_names: tuple[str, ...]
    raw_sha256: dict[str, str] = field(default_factory=dict)
    gz_sha256: dict[str, str] = field(default_factory=dict)
    label_counts: dict[str, tuple[int, ...]] = field(default_factory=dict)


DATASETS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec(
        name="mnist",
        title="MNIST",
        torch_class="MNIST",
        class_names=tuple(str(d) for d in range(10)),
        gz_sha256={
            "train-images-idx3-ubyte": (
                "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"
            ),
            "train-labels-idx1-ubyte": (
                "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"
            ),
            "t10k-images-idx3-ubyte": (
                "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"
            ),
            "t10k-labels-idx1-ubyte": (
                "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"
            ),
        },
        label_counts={
            "train": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
            "test": (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009),
        },
    ),
    "fashion_mnist": DatasetSpec(
        name="fashion_mnist",
        title="Fashion-MNIST",
        torch_class="FashionMNIST",
        class_names=(
            "T-shirt/top",
            "Trouser",
            "Pullover",
            "Dress",
            "Coat",
            "Sandal",
            "Shirt",
            "Sneaker",
            "Bag",
            "Ankle boot",
        ),
        raw_sha256={
            "train-images-idx3-ubyte": (
                "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"
            ),
            "train-labels-idx1-ubyte": (
                "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"
            ),
            "t10k-images-idx3-ubyte": (
                "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"
            ),
            "t10k-labels-idx1-ubyte": (
                "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"
            ),
        },
        label_counts={"train": (6000,) * 10, "test": (1000,) * 10},
    ),
}

# Where TFDS itself downloads MNIST from; probed before any download.
MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
MNIST_HOST = ("storage.googleapis.com", 443)


@dataclass(frozen=True)
class DatasetInfo:
    """The provisioned dataset a chapter should load.

    Attributes
    ----------
    name : str
        TFDS builder name: pass it to ``tfds.load``.
    title : str
        Human-readable name.
    torch_class : str
        Name of the ``torchvision.datasets`` class that reads it.
    data_dir : str
        The folder to pass as ``data_dir=`` (TFDS) or ``root=`` (torchvision).
    source : str
        Where the files came from.
    class_names : tuple of str
        Label names.
    """

    name: str
    title: str
    torch_class: str
    data_dir: str
    source: str
    class_names: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.title} ({self.name}), from {self.source}"


# --------------------------------------------------------------------------
# Paths and the record
# --------------------------------------------------------------------------


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Return the course's data folder.

    Parameters
    ----------
    path : path-like, optional
        An explicit folder; otherwise ``$JAX_COURSE_DATA_DIR``, otherwise
        ``~/.jax-course/data``.

    Returns
    -------
    pathlib.Path
        The folder (not created here).
    """
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".jax-course" / "data"


def raw_dir(spec: DatasetSpec, root: Path) -> Path:
    """Return the folder torchvision reads ``spec``'s raw files from."""
    return root / spec.torch_class / "raw"


def _read_record(root: Path) -> dict:
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


def _write_record(root: Path, record: dict) -> None:
    # Write then rename, so an interrupted run never leaves half a record.
    tmp = root / (RECORD_NAME + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.replace(root / RECORD_NAME)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------
# IDX parsing
# --------------------------------------------------------------------------


def parse_idx(payload: bytes, what: str = "IDX file") -> np.ndarray:
    """Parse an uncompressed IDX file of unsigned bytes into an array.

    Parameters
    ----------
    payload : bytes
        The whole decompressed file.
    what : str
        Name used in error messages.

    Returns
    -------
    numpy.ndarray
        ``uint8`` array with the shape given by the file's header.

    Raises
    ------
    DataCorruptError
        If the header is not an unsigned-byte IDX header or the length
        disagrees with it.
    """
    if len(payload) < 8 or payload[:2] != b"\x00\x00" or payload[2] != 0x08:
        raise DataCorruptError(f"{what} is not an IDX file of unsigned bytes.")
    ndim = payload[3]
    header = 4 + 4 * ndim
    dims = tuple(int(d) for d in np.frombuffer(payload, ">u4", ndim, 4))
    if len(payload) != header + int(np.prod(dims)):
        raise DataCorruptError(
            f"{what} is truncated or padded: its header promises shape {dims}."
        )
    return np.frombuffer(payload, np.uint8, offset=header).reshape(dims)


# --------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------


@dataclass
class _Candidate:
    """Decompressed IDX payloads of one dataset, ready to be checked and written."""

    spec: DatasetSpec
    source: str
    payloads: dict[str, bytes]


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
            try:
                payloads[stem] = gzip.decompress(blob)
            except (OSError, EOFError) as err:
                raise DataCorruptError(
                    f"{packed.name} in the folder given is not a valid gzip file "
                    f"({err})."
                ) from None
        else:
            raise DataNotProvisionedError(
                f"The folder {folder} has no {stem} (nor {stem}.gz); it needs the "
                "four IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte."
            )
    return payloads, gz_digests


def _check_candidate(cand: _Candidate, gz_digests: dict[str, str]) -> None:
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


def network_answers(host: tuple[str, int] = MNIST_HOST, timeout: float = 5.0) -> bool:
    """Return whether ``host`` accepts a TCP connection within ``timeout`` seconds.

    The name lookup runs in a daemon thread, because ``getaddrinfo`` ignores
    socket timeouts and can block far longer on a machine with no network.

    Parameters
    ----------
    host : (str, int)
        Host name and port.
    timeout : float
        Seconds to wait in all.

    Returns
    -------
    bool
        True only if a connection was made in time.
    """
    outcome: list[bool] = []

    def attempt() -> None:
        try:
            with socket.create_connection(host, timeout=timeout):
                outcome.append(True)
        except OSError:
            outcome.append(False)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(outcome and outcome[0])


def _download_mnist(timeout: float) -> _Candidate:
    """Download the four official MNIST files, checking each one."""
    payloads: dict[str, bytes] = {}
    gz_digests: dict[str, str] = {}
    for stem in DATASETS["mnist"].gz_sha256:
        with urllib.request.urlopen(MNIST_URL + stem + ".gz", timeout=timeout) as r:
            blob = r.read()
        gz_digests[stem] = hashlib.sha256(blob).hexdigest()
        payloads[stem] = gzip.decompress(blob)
    cand = _Candidate(DATASETS["mnist"], "the official MNIST download", payloads)
    _check_candidate(cand, gz_digests)
    return cand


def _from_folder(spec: DatasetSpec, folder: Path, source: str) -> _Candidate:
    payloads, gz_digests = _read_idx_folder(folder)
    cand = _Candidate(spec, source, payloads)
    _check_candidate(cand, gz_digests)
    return cand


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


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


def _write_tfds(spec: DatasetSpec, root: Path) -> dict[str, str]:
    """Store the raw files as a TFDS dataset under the registered builder's name.

    Copying the official ``.gz`` files into a TFDS download folder is not
    enough offline (TFDS still tries to download), so the arrays are written
    as a prepared dataset with the registered name, version and features; a
    later ``tfds.load(name, data_dir=root)`` then reads it with no network.
    Shuffling is disabled so TFDS, torchvision and NumPy all see the examples
    in the same order.
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
            images, labels = load_numpy(split, root=root, spec=spec, verify=False)
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
        str(p.relative_to(root)): _sha256(p)
        for p in sorted(target.iterdir())
        if p.is_file()
    }


def _write_raw(cand: _Candidate, root: Path) -> dict[str, str]:
    folder = raw_dir(cand.spec, root)
    folder.mkdir(parents=True, exist_ok=True)
    digests = {}
    for stem, payload in cand.payloads.items():
        tmp = folder / (stem + ".part")
        tmp.write_bytes(payload)
        tmp.replace(folder / stem)
        digests[str((folder / stem).relative_to(root))] = hashlib.sha256(
            payload
        ).hexdigest()
    return digests


# --------------------------------------------------------------------------
# Verification and loading
# --------------------------------------------------------------------------


def verify(
    name: str | None = None,
    root: str | os.PathLike[str] | None = None,
    *,
    include_tfds: bool = True,
) -> DatasetInfo:
    """Check every provisioned file of a dataset against its recorded SHA-256.

    Parameters
    ----------
    name : str, optional
        Dataset to check; by default the active one (see :func:`require`).
    root : path-like, optional
        Data folder; see :func:`data_dir`.
    include_tfds : bool
        Also check the prepared TFDS files.

    Returns
    -------
    DatasetInfo
        The verified dataset.

    Raises
    ------
    DataNotProvisionedError
        If nothing (or not that dataset) is provisioned.
    DataCorruptError
        If a file is missing or altered; the message names it and the fix.
    """
    info, entry = _lookup(name, data_dir(root))
    files = dict(entry["raw_sha256"])
    if include_tfds:
        files.update(entry.get("tfds_sha256", {}))
    base = Path(info.data_dir)
    for rel, expected in sorted(files.items()):
        path = base / rel
        if not path.is_file():
            raise DataCorruptError(
                f"{rel} is missing from the data folder. Run `{FIX_COMMAND}` "
                "to provision the dataset again."
            )
        if _sha256(path) != expected:
            raise DataCorruptError(
                f"{rel} in the data folder is corrupt (its SHA-256 differs from "
                f"the one recorded when it was written). Delete it and run "
                f"`{FIX_COMMAND}` to write it again."
            )
    return info


def _lookup(name: str | None, root: Path) -> tuple[DatasetInfo, dict]:
    record = _read_record(root)
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


def require(
    name: str | None = None, root: str | os.PathLike[str] | None = None
) -> DatasetInfo:
    """Return the provisioned dataset a chapter should load, after checking it.

    The choice is ``name`` if given, else ``$JAX_COURSE_DATASET``, else the
    dataset the last provisioning recorded as active.

    Parameters
    ----------
    name : str, optional
        ``"mnist"`` or ``"fashion_mnist"``.
    root : path-like, optional
        Data folder; see :func:`data_dir`.

    Returns
    -------
    DatasetInfo
        Name, folder and origin of the dataset.
    """
    return verify(name, root)


def load_numpy(
    split: str,
    name: str | None = None,
    root: str | os.PathLike[str] | None = None,
    *,
    spec: DatasetSpec | None = None,
    verify: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Load one split as NumPy arrays straight from the raw IDX files.

    Parameters
    ----------
    split : {"train", "test"}
        Which split.
    name : str, optional
        Dataset; by default the active one.
    root : path-like, optional
        Data folder; see :func:`data_dir`.
    spec : DatasetSpec, optional
        Internal: read this dataset's files without consulting the record.
    verify : bool
        Check the files' checksums against the record first.

    Returns
    -------
    images : numpy.ndarray
        ``uint8`` array of shape ``(N, 28, 28)``, pixel values 0–255.
    labels : numpy.ndarray
        ``uint8`` array of shape ``(N,)``.
    """
    if split not in IDX_FILES:
        raise ValueError(f"split must be one of {sorted(IDX_FILES)}, not {split!r}")
    base = data_dir(root)
    if spec is None:
        info, entry = _lookup(name, base)
        spec = DATASETS[info.name]
        if verify:
            _verify_files(base, entry["raw_sha256"], IDX_FILES[split])
    folder = raw_dir(spec, base)
    arrays = []
    for stem in IDX_FILES[split]:
        path = folder / stem
        if not path.is_file():
            raise DataNotProvisionedError(
                f"{stem} is missing; run `{FIX_COMMAND}` to provision the data."
            )
        arrays.append(parse_idx(path.read_bytes(), stem))
    return arrays[0], arrays[1]


def _verify_files(base: Path, recorded: dict[str, str], stems: tuple[str, ...]) -> None:
    for rel, expected in recorded.items():
        if Path(rel).name in stems:
            path = base / rel
            if not path.is_file() or _sha256(path) != expected:
                raise DataCorruptError(
                    f"{rel} in the data folder is missing or corrupt (its SHA-256 "
                    f"differs from the recorded one). Delete it and run "
                    f"`{FIX_COMMAND}` to write it again."
                )


# --------------------------------------------------------------------------
# Provisioning
# --------------------------------------------------------------------------


def _candidates(
    wanted: str | None,
    mnist_dir: Path | None,
    fashion_dir: Path,
    network_timeout: float,
    say: Callable[[str], None],
) -> Iterator[Callable[[], _Candidate]]:
    """Yield, in the course's order of preference, thunks that fetch a source."""
    if wanted in (None, "mnist"):
        if mnist_dir is not None:
            yield lambda: _from_folder(
                DATASETS["mnist"], mnist_dir, "MNIST files given by the user"
            )

        def official() -> _Candidate:
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


def provision(
    dataset: str | None = None,
    *,
    mnist_dir: str | os.PathLike[str] | None = None,
    fashion_dir: str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
    network_timeout: float = 5.0,
    tfds: bool = True,
    quiet: bool = False,
) -> DatasetInfo:
    """Provision a dataset for offline use and make it the active one.

    Tries the sources in the order given in the module docstring, writes the
    raw files, the TFDS dataset (unless ``tfds=False``) and the record, and
    checks what it wrote. Already provisioned and intact: returns at once.

    Parameters
    ----------
    dataset : {"mnist", "fashion_mnist"}, optional
        Force a dataset; default ``$JAX_COURSE_DATASET``, else the first
        source that works.
    mnist_dir : path-like, optional
        Folder with MNIST's four IDX files (``.gz`` or not); default
        ``$JAX_COURSE_MNIST_DIR``.
    fashion_dir : path-like, optional
        Folder with Fashion-MNIST's files; default
        ``$JAX_COURSE_FASHION_MNIST_DIR``, else Debian's package folder.
    root : path-like, optional
        Data folder; see :func:`data_dir`.
    network_timeout : float
        Seconds to wait for the download site to answer.
    tfds : bool
        Also write the prepared TFDS dataset (about 30 s on two cores).
    quiet : bool
        Print nothing.

    Returns
    -------
    DatasetInfo
        The dataset now active.

    Raises
    ------
    DataNotProvisionedError
        If no source works; the message lists what each one said and the fix.
    """
    say: Callable[[str], None] = (lambda _msg: None) if quiet else print
    base = data_dir(root)
    wanted = dataset or os.environ.get(DATASET_ENV) or None
    if wanted is not None and wanted not in DATASETS:
        raise DataNotProvisionedError(
            f"Unknown dataset {wanted!r}; choose one of {sorted(DATASETS)}."
        )
    mnist_env = os.environ.get(MNIST_DIR_ENV)
    mnist_path = (
        Path(mnist_dir or mnist_env).expanduser() if (mnist_dir or mnist_env) else None
    )
    fashion_path = Path(
        fashion_dir or os.environ.get(FASHION_DIR_ENV) or DEBIAN_FASHION_DIR
    ).expanduser()

    record = _read_record(base)
    # Reuse what is there when it still verifies and fits the request.
    reusable = (
        [wanted]
        if wanted
        else (["mnist"] if mnist_path else []) + [record.get("active")]
    )
    for name in reusable:
        if name and name in record["datasets"]:
            entry = record["datasets"][name]
            if tfds and not entry.get("tfds_sha256"):
                continue
            try:
                info = verify(name, base, include_tfds=tfds)
            except CourseError as err:
                say(
                    f"Provisioned {DATASETS[name].title} failed its check ({err}); "
                    "writing it again."
                )
                break
            record["active"] = name
            _write_record(base, record)
            say(f"Dataset: {info} — already provisioned and verified.")
            return info

    failures: list[str] = []
    for fetch in _candidates(wanted, mnist_path, fashion_path, network_timeout, say):
        try:
            cand = fetch()
            break
        except (CourseError, OSError) as err:
            failures.append(str(err))
    else:
        tried = "\n".join(f"  - {f}" for f in failures)
        hint = (
            "Install Debian's Fashion-MNIST (`apt-get install dataset-fashion-mnist`),"
            f" or point {MNIST_DIR_ENV} at a folder with the four MNIST IDX files,"
            f" then run `{FIX_COMMAND}` again."
        )
        raise DataNotProvisionedError(
            f"No dataset could be provisioned:\n{tried}\n{hint}"
        )

    base.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    say(f"Writing {cand.spec.title} from {cand.source} …")
    entry = {"source": cand.source, "raw_sha256": _write_raw(cand, base)}
    if tfds:
        say("Preparing the TFDS copy (once; about half a minute) …")
        entry["tfds_sha256"] = _write_tfds(cand.spec, base)
    record["datasets"][cand.spec.name] = entry
    record["active"] = cand.spec.name
    _write_record(base, record)
    info = verify(cand.spec.name, base, include_tfds=tfds)
    say(
        f"Dataset: {info} — written and verified in "
        f"{time.perf_counter() - started:.0f} s."
    )
    return info


def ensure(quiet: bool = True) -> DatasetInfo:
    """Return the active dataset, provisioning it first if there is none.

    A chapter's first cell calls this: on a machine that ran ``make data`` it
    only verifies; in a fresh Colab runtime it provisions.

    Parameters
    ----------
    quiet : bool
        Print nothing when the data is already there.

    Returns
    -------
    DatasetInfo
        The dataset to load.
    """
    try:
        return require()
    except DataNotProvisionedError:
        return provision(quiet=quiet)


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


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
    args = parser.parse_args(argv)
    try:
        if args.check:
            info = verify(args.dataset, args.data_dir)
            print(f"Dataset: {info} — verified in {data_dir(args.data_dir)}")
        else:
            info = provision(
                args.dataset,
                mnist_dir=args.mnist_dir,
                root=args.data_dir,
                tfds=not args.no_tfds,
            )
            print(f"Data folder: {info.data_dir}")
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
