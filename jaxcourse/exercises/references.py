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

Writing the stores::

    python -m jaxcourse.exercises.references           # write the stale ones
    python -m jaxcourse.exercises.references --check   # exit 1 if any is stale
    python -m jaxcourse.exercises.references --verify  # recompute and compare

Each module's outputs are computed in a fresh process with as many simulated
CPU devices as its exercises need, as the grader gives them.

File format: the first line is a JSON header (``format``, ``fingerprint`` and
the ``sha256`` of the rest); the rest is JSON, one entry per exercise with a
``signature`` of its cases, the reference's observation of each case and each
mistake's, one observation per line. An entry is ``null`` where a mistake is
never looked up (``grad`` and ``vectorized`` cases) and where an output is
larger than :data:`MAX_STORED`: those few are computed live.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from .judging import compare
from .observe import Observation, observe
from .registry import _REGISTRY, exercise_ids, get
from .spec import Exercise

__all__ = [
    "FORMAT",
    "MAX_STORED",
    "StoredOutputs",
    "changes",
    "compute_store",
    "fingerprint",
    "main",
    "serialize",
    "stale",
    "store_path",
    "stored_outputs",
    "verify_in_process",
    "verify_store",
    "write_all",
    "write_store",
]

#: Bumped whenever the file format or the meaning of an observation changes.
FORMAT = 1
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
# display of feedback, and this module (its FORMAT number stands for it).
# Editing them leaves the stores fresh; their own imports are not followed.
_NOT_OUTPUTS = frozenset({
    f"{_TOP_PACKAGE}.exercises.messages",
    f"{_TOP_PACKAGE}.exercises.widgets",
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
    # repository in an editable install).
    return Path(__file__).resolve().parents[2]


def _roots(module: Any) -> dict[str, Path]:
    """Top-level packages whose modules count as sources, and their folders.

    This package, and the package of the module that defines the exercises
    (its helpers may live in a sibling module).
    """
    roots = {_TOP_PACKAGE: _package_root()}
    name = module.__name__
    if "." in name:
        depth = name.count(".")
        roots[name.split(".", 1)[0]] = Path(module.__file__).resolve().parents[depth]
    return roots


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
    Tolerances and dtype policies are left out: judging reads them live.
    """
    parts: list[Any] = [exercise.id, _name(exercise.reference)]
    for case in exercise.cases:
        parts.append([
            case.description, case.transform, case.seed, case.argnums,
            _name(case.in_axes), list(case.sizes), _name(case.inputs),
            _name(case.extract), _name(case.runner),
            sorted((str(k), _name(v)) for k, v in case.kwargs.items()),
        ])
    for mistake in exercise.mistakes:
        parts.append([mistake.message, _name(mistake.function)])
    text = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


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
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
    return StoredOutputs(reference, mistakes)


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
        if store is None or exercise.id not in store.entries:
            return None
        # Checked at every lookup (a few files hashed; judging looks up once per
        # exercise object): a module edited and reloaded in a running notebook
        # must not meet the outputs of its old version.
        if jax.default_backend() != "cpu" or _changes(store.fingerprint, module):
            return None
        key = (exercise.id, _signature(exercise))
        if key not in store.decoded:
            store.decoded[key] = _decode(exercise, store.entries[exercise.id])
        return store.decoded[key]
    except Exception:  # a store must never stop a Check
        return None


# --------------------------------------------------------------------------
# Writing (when the student notebooks are generated)
# --------------------------------------------------------------------------


def _exercises_of(module_name: str) -> list[Exercise]:
    return [e for e in _REGISTRY.values() if e.reference.__module__ == module_name]


def _small(data: dict) -> dict | None:
    size = len(json.dumps(data, separators=(",", ":")))
    return data if size <= MAX_STORED else None


def _mistake_json(function: Callable, case: Any) -> dict:
    obs = observe(function, case, None)
    if obs.kind != "value":
        # Only a value can name a mistake; an error's text (which may hold a
        # temporary folder's path) is of no use and would change every time.
        obs = Observation(obs.kind)
    return obs.to_json()


def _body(entries: dict) -> str:
    """JSON with one observation per line: an unchanged output makes no diff."""

    def one(obs: dict | None) -> str:
        return json.dumps(obs, sort_keys=True, separators=(",", ":"))

    def rows(observations: list) -> str:
        return "[\n" + ",\n".join(one(o) for o in observations) + "\n]"

    parts = []
    for exercise_id in sorted(entries):
        entry = entries[exercise_id]
        mistakes = ", ".join(rows(r) for r in entry["mistakes"])
        parts.append(
            f"{json.dumps(exercise_id)}: {{\"signature\": "
            f"{json.dumps(entry['signature'])},\n\"reference\": "
            f"{rows(entry['reference'])},\n\"mistakes\": [{mistakes}]}}"
        )
    return "{\n" + ",\n".join(parts) + "\n}\n"


def serialize(entries: dict, fingerprint: dict) -> str:
    """Return a store's text: the header line (with the checksum), then the entries.

    Parameters
    ----------
    entries : dict
        Exercise id -> ``{"signature", "reference", "mistakes"}``, observations
        as :meth:`Observation.to_json` gives them (None where not stored).
    fingerprint : dict
        What :func:`fingerprint` returns.
    """
    body = _body(entries)
    header = {"format": FORMAT, "fingerprint": fingerprint,
              "sha256": hashlib.sha256(body.encode()).hexdigest()}
    return json.dumps(header, sort_keys=True, separators=(",", ":")) + "\n" + body


def compute_store(module_name: str) -> str:
    """Import ``module_name`` and return the text of its store.

    Runs every exercise's reference, and each known mistake, on every case,
    in this process: it must have the devices the exercises need.

    Raises
    ------
    RuntimeError
        If a reference fails on one of its cases.
    """
    module = importlib.import_module(module_name)
    entries: dict[str, dict] = {}
    for exercise in _exercises_of(module_name):
        reference = []
        for case in exercise.cases:
            obs = observe(exercise.reference, case, None)
            if obs.kind != "value":
                raise RuntimeError(
                    f"the reference of {exercise.id} fails on "
                    f"{case.description!r}: {obs.kind} {obs.error}"
                )
            reference.append(_small(obs.to_json()))
        mistakes = [
            [_small(_mistake_json(m.function, case)) if _looks_up_mistakes(case)
             else None for case in exercise.cases]
            for m in exercise.mistakes
        ]
        entries[exercise.id] = {"signature": _signature(exercise),
                                "reference": reference, "mistakes": mistakes}
    return serialize(entries, fingerprint(module))


def verify_store(module_name: str) -> dict[str, list[str]]:
    """Recompute every stored output of ``module_name`` here and compare.

    Each stored observation must equal a live one, by the case's own
    comparison (:func:`jaxcourse.exercises.judging.compare`, its tolerances and
    dtype policy). The fingerprint is not looked at (:func:`stale` does).

    Returns
    -------
    dict
        Exercise id -> what differs (an empty list when all agree).
    """
    module = importlib.import_module(module_name)
    store = _read(store_path(module.__file__))
    problems: dict[str, list[str]] = {}
    for exercise in _exercises_of(module_name):
        found = problems.setdefault(exercise.id, [])
        entry = store.entries.get(exercise.id) if store is not None else None
        stored = _decode(exercise, entry) if entry is not None else None
        if stored is None:
            found.append("no valid entry in the store")
            continue
        for i, case in enumerate(exercise.cases):
            pairs = [("reference", exercise.reference, stored.reference[i])]
            pairs += [(f"mistake {n + 1}", m.function, stored.mistake(i, n))
                      for n, m in enumerate(exercise.mistakes)]
            for label, function, known in pairs:
                if known is None:
                    continue  # too large to store, or never looked up
                live = observe(function, case, None)
                if known.kind != live.kind:
                    found.append(f"case {i + 1}, {label}: stored {known.kind}, "
                                 f"live {live.kind} {live.error}")
                elif known.kind == "value":
                    diff = compare(known.value, live.value, case)
                    if diff:
                        found.append(f"case {i + 1}, {label}: {diff}")
    return problems


def _in_fresh_process(action: str, module_name: str, module_file: str | os.PathLike,
                      devices: int, timeout: float) -> str:
    """Run ``action`` (compute or verify) on a module in a fresh process.

    The process gets ``devices`` simulated CPU devices and JAX on CPU, as
    the grader's do; it returns what the action wrote, as text.
    """
    # The folder that holds the module's top-level package goes first on the
    # path, so the child imports this very module.
    root = Path(module_file).resolve().parents[module_name.count(".")]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), str(_package_root()), *filter(None, [env.get("PYTHONPATH")])]
    )
    with tempfile.TemporaryDirectory(prefix="jaxcourse-outputs-") as folder:
        out = Path(folder) / "out.json"
        proc = subprocess.run(
            [sys.executable, "-m", _MODULE, "--child", action, module_name,
             "--devices", str(devices), "--out", str(out)],
            capture_output=True, text=True, timeout=timeout, env=env, check=False,
        )
        if proc.returncode != 0 or not out.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"{action} the outputs of {module_name}: the process "
                               f"failed:\n{tail}")
        return out.read_text(encoding="utf-8")


def write_store(module_name: str, module_file: str | os.PathLike, devices: int = 1,
                timeout: float = 900.0) -> bool:
    """Compute ``module_name``'s store in a fresh process and write it.

    The file is rewritten only when its text changes, so unchanged outputs
    make no diff.

    Returns
    -------
    bool
        Whether the file changed.

    Raises
    ------
    RuntimeError
        If the computation fails (its last lines of output are in the message).
    """
    path = store_path(module_file)
    text = _in_fresh_process("compute", module_name, module_file, devices, timeout)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def verify_in_process(module_name: str, module_file: str | os.PathLike,
                      devices: int = 1, timeout: float = 900.0) -> dict[str, list[str]]:
    """:func:`verify_store` in a fresh process with ``devices`` CPU devices."""
    text = _in_fresh_process("verify", module_name, module_file, devices, timeout)
    return json.loads(text)


def _module_files() -> dict[str, tuple[Path, int]]:
    """Every module that defines exercises: its file and the devices it needs."""
    modules: dict[str, tuple[Path, int]] = {}
    for exercise_id in exercise_ids():
        exercise = get(exercise_id)
        name = exercise.reference.__module__
        module_file = getattr(sys.modules.get(name), "__file__", None)
        if not module_file:
            continue
        devices = max(exercise.devices, modules.get(name, (None, 1))[1])
        modules[name] = (Path(module_file), devices)
    return modules


def changes(module_name: str) -> list[str]:
    """Say why ``module_name``'s store is out of date; [] when it is fresh.

    Each item names a changed source module (``"solutions.bayes"``), version
    or setting (``"jax 0.10.2 -> 0.11.0"``), or says the store is missing or
    corrupt.
    """
    module = importlib.import_module(module_name)
    path = store_path(module.__file__)
    if not path.is_file():
        return ["no store"]
    store = _read(path)
    if store is None:
        return ["a corrupt store"]
    changed = _changes(store.fingerprint, module)
    # Here, unlike at a Check, the imports are followed again: a module that
    # is now imported, or no longer, counts too.
    recorded = set(store.fingerprint.get("sources", {}))
    changed += sorted(set(fingerprint(module)["sources"]) ^ recorded)
    return changed


def stale(modules: Sequence[str] | None = None) -> list[Path]:
    """Return the stores that are missing or out of date, to rewrite.

    Parameters
    ----------
    modules : sequence of str, optional
        Module names to look at; by default every module that defines
        exercises.
    """
    names = list(_module_files()) if modules is None else list(modules)
    return [store_path(importlib.import_module(name).__file__)
            for name in names if changes(name)]


def write_all(*, force: bool = False,
              echo: Callable[[str], None] | None = print) -> list[Path]:
    """Write every stale store (every store with ``force``); return those changed.

    Parameters
    ----------
    force : bool
        Recompute every store, fresh or not.
    echo : callable, optional
        Called with one line per module; None to stay quiet.
    """
    changed = []
    todo = set(stale()) if not force else None
    for name, (module_file, devices) in sorted(_module_files().items()):
        path = store_path(module_file)
        if todo is not None and path not in todo:
            if echo:
                echo(f"{path.name}: fresh")
            continue
        written = write_store(name, module_file, devices)
        if written:
            changed.append(path)
        if echo:
            size = path.stat().st_size / 1024
            echo(f"{path.name}: {'written' if written else 'unchanged'} "
                 f"({size:.0f} KiB, {devices} device{'s' if devices > 1 else ''})")
    return changed


def _child_main(action: str, module_name: str, devices: int, out: str) -> int:
    if devices > 1:
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(devices)
    if action == "compute":
        text = compute_store(module_name)
    else:
        text = json.dumps(verify_store(module_name), ensure_ascii=False)
    Path(out).write_text(text, encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Write the stale stores, or with ``--check`` only report them."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.exercises.references",
        description="Compute and store every exercise's reference outputs.",
    )
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a store is missing or stale")
    parser.add_argument("--force", action="store_true",
                        help="recompute every store, even the fresh ones")
    parser.add_argument("--verify", action="store_true",
                        help="recompute every stored output and compare (slow)")
    # What the fresh processes of write_store and verify_in_process run.
    parser.add_argument("--child", nargs=2, metavar=("ACTION", "MODULE"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--devices", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child_main(*args.child, args.devices, args.out)
    if args.verify:
        failed = False
        for name, (module_file, devices) in sorted(_module_files().items()):
            problems = verify_in_process(name, module_file, devices)
            for exercise_id, found in problems.items():
                failed = failed or bool(found)
                print(f"{exercise_id}: {'; '.join(found) if found else 'ok'}")
        return 1 if failed else 0
    if args.check:
        old = {name: changes(name) for name in sorted(_module_files())}
        old = {name: why for name, why in old.items() if why}
        for name, why in old.items():
            print(f"stale: {name} ({', '.join(why)})")
        if old:
            print("run `python -m jaxcourse.exercises.references` to rewrite them")
        return 1 if old else 0
    try:
        write_all(force=args.force)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
