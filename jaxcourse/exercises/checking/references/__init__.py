"""Stored reference outputs: every reference's answer, computed ahead of time.

A first Check used to run the reference on every case (and each known mistake
on a failed one) before it could say anything: seconds of compilation on a
laptop. Instead, what they return is computed once, when the student
notebooks are generated, and stored beside the module that defines the
exercises (``solutions/bayes.py`` -> ``solutions/bayes_outputs.json``), so a
Check runs only the learner's function. The grader reads the same stores.

A store is used only while it is *fresh*: its fingerprint records the
SHA-256 of the defining module, of every ``jaxcourse`` module it imports (and
those import), the JAX, jaxlib and NumPy versions, the JAX settings that
change values (64-bit mode, matmul precision, the random-number generator)
and the platform (the stores are computed on CPU). Anything else, such as an
edited reference, another JAX in Colab, a GPU runtime, a store that does not
parse or fails its checksum, means the outputs are computed live, exactly as
without a store. Never an error.

Reading them is this module's part; writing them is
:mod:`jaxcourse.exercises.checking.references.writer`'s. Writing the stores::

    python -m jaxcourse.exercises.checking.references           # write the stale ones
    python -m jaxcourse.exercises.checking.references --check   # exit 1 if any is stale
    python -m jaxcourse.exercises.checking.references --verify  # recompute and compare

Each module's outputs are computed in a fresh process with as many simulated
CPU devices as its exercises need, as the grader gives them.

File format: the first line is a JSON header (``format``, ``fingerprint`` and
the ``sha256`` of the rest); the rest is JSON, one entry per exercise with a
``signature`` of its cases, each case's time limit (``limits``, in seconds:
:func:`jaxcourse.exercises.checking.case_limits.limit_from_reference` of the reference's
time on it, measured while the store was computed), the reference's
observation of each case and each mistake's, one observation per line. An
entry is ``null`` where a mistake is never looked up (``grad`` and
``vectorized`` cases) and where an output is larger than :data:`MAX_STORED`:
those few are computed live. An exercise's edition in another language (the
same functions on the same cases) is stored once: its entry holds its own
``signature`` and ``same_as``, the id whose observations it shares.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ..observation import Observation
from ..spec import Exercise

__all__ = [
    "FORMAT",
    "MAX_STORED",
    "StoredOutputs",
    "fingerprint",
    "stale_reasons",
    "store_path",
    "stored_outputs",
]

#: Bumped whenever the file format or the meaning of an observation changes.
#: 2: each entry holds its cases' time limits (``limits``).
FORMAT = 2
SUFFIX = "_outputs.json"
#: An observation larger than this (encoded) is not stored but computed live:
#: a few cases return a whole data set or a replicated network, megabytes of
#: random floats that no compression shrinks, cheap to recompute.
MAX_STORED = 32 * 1024
# This module's real name, also when it runs as ``python -m``.
_MODULE = __spec__.name if __spec__ is not None else __name__
_TOP_PACKAGE = _MODULE.split(".", 1)[0]  # "jaxcourse"
# JAX settings under which the same reference returns other values or dtypes.
_CONFIG_FLAGS = (
    "jax_enable_x64",
    "jax_default_matmul_precision",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_numpy_dtype_promotion",
    "jax_numpy_rank_promotion",
)
# Modules that never shape what a function returns: the wording and the
# display of feedback, the course's version number, and this module (its
# FORMAT number stands for it). Editing them leaves the stores fresh; their
# own imports are not followed.
_NOT_OUTPUTS = frozenset({
    f"{_TOP_PACKAGE}.messages",
    f"{_TOP_PACKAGE}.version",
    # The Check panel; its package's __init__ is a docstring.
    f"{_TOP_PACKAGE}.exercises.widgets",
    f"{_TOP_PACKAGE}.exercises.widgets.panel",
    _MODULE,
})
# Every import statement, anywhere in a file, even inside a string: the
# multi-process exercises launch worker scripts written as strings.
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)"
    r"|import[ \t]+([^\n#]*))",
    re.MULTILINE,
)


def _names(text: str) -> list[str]:
    # "a as b, c" or "(\n    a,\n    c,\n)" -> ["a", "c"]
    pieces = text.strip().strip("()").replace("\\", " ").split(",")
    return [p.split()[0] for p in pieces if p.split()]


# --------------------------------------------------------------------------
# Fingerprints: which sources and versions a store was computed from
# --------------------------------------------------------------------------


def _digest(path: Path) -> str:
    # Line endings normalised: a Windows checkout is the same source.
    data = path.read_bytes().replace(b"\r\n", b"\n")
    return hashlib.sha256(data).hexdigest()


def _package_root() -> Path:
    # The folder that holds the jaxcourse package (site-packages, or the
    # repository in an editable install), found from the package itself.
    return Path(sys.modules[_TOP_PACKAGE].__file__).resolve().parents[1]


def _roots(module: Any) -> dict[str, Path]:
    """Top-level packages whose modules count as sources, and their folders.

    This package, the package of the module that defines the exercises (its
    helpers may live in a sibling module), and the content's helper packages
    (:func:`jaxcourse.course.content_packages`) found beside that package:
    in the course, an installed course and a release alike, the helpers'
    copy that goes with the module.
    """
    roots = {_TOP_PACKAGE: _package_root()}
    name = module.__name__
    if "." in name:
        depth = name.count(".")
        folder = Path(module.__file__).resolve().parents[depth]
        roots[name.split(".", 1)[0]] = folder
        for package in _content_packages():
            if (folder / package / "__init__.py").is_file():
                roots.setdefault(package, folder)
    return roots


def _content_packages() -> tuple[str, ...]:
    # No course installed (a test's own topic, a bare engine): no helpers.
    from jaxcourse.course import NoCourseError, content_packages

    try:
        return content_packages()
    except NoCourseError:
        return ()


def _module_file(name: str, roots: dict[str, Path]) -> Path | None:
    """Return the source file of module ``name`` under ``roots``, not importing it."""
    parts = name.split(".")
    if parts[0] not in roots:
        return None
    path = roots[parts[0]].joinpath(*parts)
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def _imported(source: str, package: str, roots: dict[str, Path]) -> set[str]:
    """Modules under ``roots`` that ``source`` imports (and their parents)."""
    found: set[str] = set()
    for start, names, plain in _IMPORT.findall(source):
        if plain:
            candidates = _names(plain)
        else:
            dots = len(start) - len(start.lstrip("."))
            base = start.lstrip(".")
            if dots:
                parent = package.split(".")[: len(package.split(".")) - dots + 1]
                base = ".".join([*parent, base] if base else parent)
            candidates = [base] + [f"{base}.{n}" for n in _names(names)]
        for name in candidates:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                module = ".".join(parts[:i])
                if module not in _NOT_OUTPUTS and \
                        _module_file(module, roots) is not None:
                    found.add(module)
    return found


def _dependencies(module: Any) -> list[str]:
    """Every module of ``jaxcourse`` (or of ``module``'s package) it imports.

    Directly or not, followed through each imported module's source.
    """
    roots = _roots(module)
    package = module.__name__.rpartition(".")[0]
    todo = sorted(_imported(Path(module.__file__).read_text(encoding="utf-8"),
                            package, roots))
    seen: set[str] = {module.__name__}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name, roots)
        assert path is not None  # _imported keeps only names with a file
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        todo += sorted(_imported(path.read_text(encoding="utf-8"), own, roots) - seen)
    return sorted(seen - {module.__name__})


def _settings() -> dict[str, str]:
    import jaxlib

    values = {
        "format": str(FORMAT),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
    }
    for flag in _CONFIG_FLAGS:
        values[flag] = str(getattr(jax.config, flag, None))
    return values


def fingerprint(module: Any) -> dict:
    """Return the fingerprint of the outputs computed from ``module`` now.

    Parameters
    ----------
    module : module
        The module that defines the exercises (and their references).

    Returns
    -------
    dict
        ``settings`` (versions and JAX flags, see the module's docstring),
        ``platform`` and ``sources``: module name -> SHA-256 of its file, for
        ``module`` and every module of ``jaxcourse`` or of its own package
        that it imports, directly or not.
    """
    roots = _roots(module)
    sources = {module.__name__: _digest(Path(module.__file__))}
    for name in _dependencies(module):
        sources[name] = _digest(_module_file(name, roots))  # type: ignore[arg-type]
    return {"settings": _settings(), "platform": "cpu", "sources": sources}


def _changes(recorded: dict, module: Any) -> list[str]:
    """List what differs between a fingerprint and the sources and settings now.

    Only the files the store lists are hashed (a few milliseconds): if none
    of them changed, neither did what they import.
    """
    try:
        settings = _settings()
        changed = [
            f"{key} {recorded['settings'].get(key)} -> {settings.get(key)}"
            for key in sorted(set(settings) | set(recorded["settings"]))
            if recorded["settings"].get(key) != settings.get(key)
        ]
        if recorded["platform"] != "cpu":
            changed.append(f"platform {recorded['platform']}")
        sources, roots = recorded["sources"], _roots(module)
        if module.__name__ not in sources:
            changed.append(module.__name__)
        for name, digest in sorted(sources.items()):
            path = Path(module.__file__) if name == module.__name__ else \
                _module_file(name, roots)
            if path is None or _digest(path) != digest:
                changed.append(name)
    except (KeyError, TypeError, AttributeError, OSError) as err:
        return [f"an unreadable fingerprint ({type(err).__name__})"]
    return changed


def store_path(module_file: str | os.PathLike) -> Path:
    """Where the outputs of the exercises defined in ``module_file`` are stored."""
    path = Path(module_file)
    return path.with_name(path.stem + SUFFIX)


# --------------------------------------------------------------------------
# Which exercise an entry belongs to
# --------------------------------------------------------------------------


def _name(value: Any) -> str:
    if value is None:
        return ""
    if callable(value):
        module = getattr(value, "__module__", "")
        return f"{module}.{getattr(value, '__qualname__', '')}"
    # No memory addresses: the signature must be the same in every process.
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def _signature(exercise: Exercise) -> str:
    """Return a digest of what decides the observations: functions and cases.

    The module's own digest already covers an edited exercise; this tells
    apart another exercise registered under the same id (a test's, say).
    Tolerances and dtype policies are left out: judging reads them live. So
    are the texts (the id, the cases' descriptions, the mistakes' messages),
    which change no observation: an exercise's editions in other languages
    (:mod:`jaxcourse.exercises.checking.editions`), whether built when a Chinese
    notebook asks for the English id or registered under their own, have its
    digest, and so read its stored observations (``"same_as"`` for the latter).
    """
    parts: list[Any] = [_name(exercise.reference)]
    for case in exercise.cases:
        parts.append([
            case.transform, case.seed, case.argnums, _name(case.in_axes),
            list(case.sizes), _name(case.inputs), _name(case.extract),
            _name(case.runner),
            sorted((str(k), _name(v)) for k, v in case.kwargs.items()),
        ])
    for mistake in exercise.mistakes:
        parts.append(_name(mistake.function))
    text = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _entry(entries: dict, exercise_id: str) -> Any:
    """Return ``exercise_id``'s entry, an edition's read from its twin's.

    An edition's entry is ``{"signature": ..., "same_as": twin id}``: its own
    signature (checked against the exercise as usual) with the twin's
    observations and limits. None if there is no such entry.
    """
    entry = entries.get(exercise_id)
    if isinstance(entry, dict) and "same_as" in entry:
        twin = entries.get(entry["same_as"])
        if not isinstance(twin, dict) or "same_as" in twin:
            return None
        entry = {**twin, "signature": entry["signature"]}
    return entry


def _looks_up_mistakes(case: Any) -> bool:
    # As judging._diagnose: a mistake is named only from a compared value.
    return case.transform not in ("grad", "vectorized")


# --------------------------------------------------------------------------
# Reading (in every process that checks or grades)
# --------------------------------------------------------------------------


@dataclass
class StoredOutputs:
    """An exercise's stored observations: the reference's and each mistake's.

    An entry is None where the output was too large to store
    (:data:`MAX_STORED`), or, for a mistake, is never looked up.
    """

    reference: list[Observation | None]
    mistakes: list[list[Observation | None]] = field(default_factory=list)
    #: Each case's time limit in seconds (see the module's docstring).
    limits: list[float] = field(default_factory=list)

    def mistake(self, case: int, number: int) -> Observation | None:
        """Return mistake ``number``'s observation of ``case`` (None: not stored)."""
        try:
            return self.mistakes[number][case]
        except IndexError:
            return None


@dataclass
class _Store:
    stamp: tuple[int, int, int]  # the file's inode, mtime and size when read
    fingerprint: dict
    entries: dict
    # (exercise id, signature) -> its decoded entry, None if it does not fit
    decoded: dict[tuple[str, str], StoredOutputs | None] = field(default_factory=dict)


# Store path -> its parsed content, or None when it is missing or corrupt.
_STORES: dict[str, _Store | None] = {}


def _read(path: Path) -> _Store | None:
    """Parse and checksum a store once per process (again if the file changed)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    key = str(path)
    cached = _STORES.get(key)
    if cached is not None and cached.stamp == stamp:
        return cached
    try:
        # Line endings normalised, as for the sources: a checkout that turned
        # them into CRLF holds the same store.
        head, _, body = path.read_bytes().replace(b"\r\n", b"\n").partition(b"\n")
        header = json.loads(head)
        if header.get("format") != FORMAT or \
                hashlib.sha256(body).hexdigest() != header["sha256"]:
            raise ValueError("checksum")
        entries = json.loads(body)
        if not isinstance(entries, dict) or not isinstance(header["fingerprint"], dict):
            raise ValueError("layout")
        store = _Store(stamp, header["fingerprint"], entries)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        # A corrupt store: the outputs are computed live, as without one.
        _STORES[key] = None
        return None
    _STORES[key] = store
    return store


def _decode(exercise: Exercise, entry: Any) -> StoredOutputs | None:
    try:
        if entry["signature"] != _signature(exercise):
            return None
        n = len(exercise.cases)
        reference = [None if o is None else Observation.from_json(o)
                     for o in entry["reference"]]
        if len(reference) != n or any(o is not None and o.kind != "value"
                                      for o in reference):
            return None
        mistakes = [
            [None if o is None else Observation.from_json(o) for o in row]
            for row in entry["mistakes"]
        ]
        if len(mistakes) != len(exercise.mistakes) or \
                any(len(row) != n for row in mistakes):
            return None
        limits = [float(s) for s in entry["limits"]]
        if len(limits) != n or not all(0 < s < 3600 for s in limits):
            return None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
    return StoredOutputs(reference, mistakes, limits)


def stored_outputs(exercise: Exercise) -> StoredOutputs | None:
    """Return ``exercise``'s stored outputs, or None to compute them live.

    None when the reference's module has no store beside it, the store is
    corrupt, its fingerprint does not match (see the module's docstring), or
    it holds no entry for this very exercise. Never raises.
    """
    try:
        module = sys.modules.get(exercise.reference.__module__)
        module_file = getattr(module, "__file__", None)
        if not module_file:
            return None
        store = _read(store_path(module_file))
        entry = _entry(store.entries, exercise.id) if store is not None else None
        if entry is None:
            return None
        # Checked at every lookup (a few files hashed; judging looks up once per
        # exercise object): a module edited and reloaded in a running notebook
        # must not meet the outputs of its old version.
        if jax.default_backend() != "cpu" or _changes(store.fingerprint, module):
            return None
        key = (exercise.id, _signature(exercise))
        if key not in store.decoded:
            store.decoded[key] = _decode(exercise, entry)
        return store.decoded[key]
    except Exception:  # a store must never stop a Check
        return None


def stale_reasons(module: Any) -> list[str]:
    """Say why the store beside ``module`` does not apply here; [] when it does.

    What :func:`stored_outputs` checks at a lookup, in words: a missing or
    corrupt store, another platform, a changed source, version or setting
    (``"jax 0.10.2 -> 0.11.0"``). A class release, whose references are
    withheld (:mod:`jaxcourse.exercises.checking.class_release`), tells the learner.
    Never raises.
    """
    try:
        module_file = getattr(module, "__file__", None)
        if not module_file:
            return ["no module file"]
        path = store_path(module_file)
        if not path.is_file():
            return [f"no {path.name}"]
        store = _read(path)
        if store is None:
            return [f"a corrupt {path.name}"]
        reasons = _changes(store.fingerprint, module)
        if jax.default_backend() != "cpu":
            reasons.append(f"a {jax.default_backend()} runtime (stored on cpu)")
        return reasons
    except Exception as err:  # a message must never fail in its turn
        return [f"{type(err).__name__}"]


# --------------------------------------------------------------------------
# Writing (when the student notebooks are generated)
# --------------------------------------------------------------------------
