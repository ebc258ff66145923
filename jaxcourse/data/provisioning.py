"""Provisioning: fetch a dataset from the first source that works, and store it.

:func:`provision` is what ``python -m jaxcourse.data`` (``make data``) runs:
it reuses a provisioned dataset that still passes its checks, and otherwise
takes the first source of :func:`jaxcourse.data.sources.candidates` that
works, writes it to the data folder (:mod:`jaxcourse.data.store`) and checks
what it wrote (:mod:`jaxcourse.data.checks`). :func:`ensure` is what a
chapter's first cell calls: check, and provision only if nothing is there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from jaxcourse import CourseError
from jaxcourse.data import store
from jaxcourse.data.checks import require, verify
from jaxcourse.data.sources import candidates
from jaxcourse.data.specs import (
    DATASET_ENV,
    DATASETS,
    DEBIAN_FASHION_DIR,
    FASHION_DIR_ENV,
    FIX_COMMAND,
    MNIST_DIR_ENV,
    DataNotProvisionedError,
    DatasetInfo,
    data_dir,
)

__all__ = ["ensure", "provision"]


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

    Tries the sources in the order of :mod:`jaxcourse.data.sources`, writes the
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
        Data folder; see :func:`~jaxcourse.data.specs.data_dir`.
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

    record = store.read_record(base)
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
            store.write_record(base, record)
            say(f"Dataset: {info} — already provisioned and verified.")
            return info

    failures: list[str] = []
    for fetch in candidates(wanted, mnist_path, fashion_path, network_timeout, say):
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
    # Counted steps with their usual time, so a long wait reads as progress.
    steps = 3 if tfds else 2
    say(f"step 1/{steps}: writing {cand.spec.title}'s raw files from {cand.source} "
        "(a few seconds) …")
    entry = {
        "source": cand.source,
        "raw_sha256": store.write_raw(cand.spec, cand.payloads, base),
    }
    if tfds:
        say(f"step 2/{steps}: preparing the TFDS copy (once; about half a minute; "
            f"{time.perf_counter() - started:.0f} s so far) …")
        entry["tfds_sha256"] = store.write_tfds(cand.spec, base)
    record["datasets"][cand.spec.name] = entry
    record["active"] = cand.spec.name
    store.write_record(base, record)
    say(f"step {steps}/{steps}: checking what was written against its checksums "
        "(a few seconds) …")
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


