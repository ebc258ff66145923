"""What the course knows about its datasets before it has a file of them.

The two datasets (:data:`DATASETS`: MNIST and Fashion-MNIST, the same IDX
format), the four IDX files each has and the folders they go in
(:func:`data_dir`, :func:`raw_dir`), how to read one (:func:`parse_idx`),
the environment variables that override the course's choices, and the two
errors every other module of :mod:`jaxcourse.data` raises.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaxcourse import CourseError

__all__ = [
    "DATASETS",
    "DATASET_ENV",
    "DATA_DIR_ENV",
    "DEBIAN_FASHION_DIR",
    "FASHION_DIR_ENV",
    "FIX_COMMAND",
    "IDX_FILES",
    "MNIST_DIR_ENV",
    "SPLIT_SIZES",
    "DataCorruptError",
    "DataNotProvisionedError",
    "DatasetInfo",
    "DatasetSpec",
    "data_dir",
    "parse_idx",
    "raw_dir",
]

DATA_DIR_ENV = "JAX_COURSE_DATA_DIR"
DATASET_ENV = "JAX_COURSE_DATASET"
MNIST_DIR_ENV = "JAX_COURSE_MNIST_DIR"
FASHION_DIR_ENV = "JAX_COURSE_FASHION_MNIST_DIR"
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

