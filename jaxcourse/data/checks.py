"""Checking the provisioned files, once per process, and loading them.

Every file written to the data folder has its SHA-256 in the record
(:mod:`jaxcourse.data.store`), so a corrupted file is found before it turns
into a strange training curve. Hashing the dataset takes a noticeable
fraction of a second, and a chapter checks it several times (``ensure()``,
then each ``load_numpy``), so each file is hashed the first time a process
checks it and trusted afterwards for as long as it is unchanged on disk: the
trust is keyed by the file's path, inode, size, modification and change
times, and any write changes at least one of those.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from jaxcourse.data import store
from jaxcourse.data.specs import (
    DATASETS,
    FIX_COMMAND,
    IDX_FILES,
    DataCorruptError,
    DatasetInfo,
    DatasetSpec,
    data_dir,
)

__all__ = ["file_matches", "load_numpy", "require", "verify"]

# Files whose recorded SHA-256 this process has seen them match: one entry of
# (path, expected digest, device, inode, size, mtime, ctime) per file.
_verified: set[tuple] = set()

# A file changed within this many nanoseconds of its hashing is hashed again
# next time. A timestamp is only as fine as the file system keeps it (one
# second on some), so a second write that soon after the first could leave
# every stamp as it was.
_RECENT_NS = 2_000_000_000


def file_matches(path: Path, expected: str) -> bool:
    """Return whether ``path`` holds the bytes whose SHA-256 is ``expected``.

    The file is hashed the first time this process asks, and again only if it
    has changed on disk since (or had just changed when it was hashed).

    Parameters
    ----------
    path : Path
        The file.
    expected : str
        The SHA-256 recorded for it, as hex.

    Returns
    -------
    bool
        ``False`` if the file is missing or its content differs.
    """
    try:
        stat = path.stat()
    except OSError:
        return False
    key = (
        os.fspath(path.absolute()),
        expected,
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
    )
    if key in _verified:
        return True
    # Stamped before hashing: a write during the hash changes the stamps, so
    # the entry below can only describe the bytes that were hashed or older.
    hashed_at = time.time_ns()
    if store.sha256_file(path) != expected:
        return False
    if hashed_at - max(stat.st_mtime_ns, stat.st_ctime_ns) > _RECENT_NS:
        _verified.add(key)
    return True


def verify(
    name: str | None = None,
    root: str | os.PathLike[str] | None = None,
    *,
    include_tfds: bool = True,
) -> DatasetInfo:
    """Check every provisioned file of a dataset against its recorded SHA-256.

    Each file is hashed once per process (see :func:`file_matches`).

    Parameters
    ----------
    name : str, optional
        Dataset to check; by default the active one (see :func:`require`).
    root : path-like, optional
        Data folder; see :func:`~jaxcourse.data.specs.data_dir`.
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
    info, entry = store.lookup(name, data_dir(root))
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
        if not file_matches(path, expected):
            raise DataCorruptError(
                f"{rel} in the data folder is corrupt (its SHA-256 differs from "
                f"the one recorded when it was written). Delete it and run "
                f"`{FIX_COMMAND}` to write it again."
            )
    return info


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
        Data folder; see :func:`~jaxcourse.data.specs.data_dir`.

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
        Data folder; see :func:`~jaxcourse.data.specs.data_dir`.
    spec : DatasetSpec, optional
        Read this dataset's files without consulting the record (and so
        without checking them).
    verify : bool
        Check the files' checksums against the record first (once per
        process, see :func:`file_matches`).

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
        info, entry = store.lookup(name, base)
        spec = DATASETS[info.name]
        if verify:
            _verify_files(base, entry["raw_sha256"], IDX_FILES[split])
    return store.read_split(spec, base, split)


def _verify_files(base: Path, recorded: dict[str, str], stems: tuple[str, ...]) -> None:
    for rel, expected in recorded.items():
        if Path(rel).name in stems and not file_matches(base / rel, expected):
            raise DataCorruptError(
                f"{rel} in the data folder is missing or corrupt (its SHA-256 "
                f"differs from the recorded one). Delete it and run "
                f"`{FIX_COMMAND}` to write it again."
            )
