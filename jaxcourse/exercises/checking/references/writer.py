"""Writing the stored reference outputs: computed in fresh processes, verified.

The command line (``python -m jaxcourse.exercises.checking.references``) and
:mod:`jaxcourse.exercises.authoring.cli` call :func:`write_all`; the tests call
:func:`stale` and :func:`verify_in_process`. See the package for the format.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jaxcourse.cli import add_version
from jaxcourse.load_clock import LoadClock

from ..case_limits import limit_from_reference
from ..comparison import compare
from ..observation import Observation
from ..observe import observe
from ..registry import _REGISTRY, exercise_ids, get
from ..spec import Exercise
from . import (
    FORMAT,
    MAX_STORED,
    _changes,
    _decode,
    _entry,
    _looks_up_mistakes,
    _package_root,
    _read,
    _signature,
    fingerprint,
    store_path,
)

__all__ = [
    "changes",
    "complete_in_process",
    "complete_store",
    "module_files",
    "compute_store",
    "main",
    "serialize",
    "stale",
    "verify_in_process",
    "verify_store",
    "write_all",
    "write_store",
]

# What the fresh processes run: the package, whose __main__ calls main().
_PACKAGE = __spec__.parent if __spec__ is not None else __name__.rsplit(".", 1)[0]


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
        if "same_as" in entry:
            parts.append(f"{json.dumps(exercise_id)}: " + json.dumps(
                {"signature": entry["signature"], "same_as": entry["same_as"]}))
            continue
        mistakes = ", ".join(rows(r) for r in entry["mistakes"])
        parts.append(
            f"{json.dumps(exercise_id)}: {{\"signature\": "
            f"{json.dumps(entry['signature'])},\n\"limits\": "
            f"{json.dumps(entry['limits'])},\n\"reference\": "
            f"{rows(entry['reference'])},\n\"mistakes\": [{mistakes}]}}"
        )
    return "{\n" + ",\n".join(parts) + "\n}\n"


def serialize(entries: dict, fingerprint: dict) -> str:
    """Return a store's text: the header line (with the checksum), then the entries.

    Parameters
    ----------
    entries : dict
        Exercise id -> ``{"signature", "limits", "reference", "mistakes"}``,
        observations as :meth:`Observation.to_json` gives them (None where
        not stored).
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
    in this process: it must have the devices the exercises need. The
    reference's time on each case (its ``prepare`` excluded, as under a
    Check) gives the case's time limit
    (:func:`jaxcourse.exercises.checking.case_limits.limit_from_reference`).

    Raises
    ------
    RuntimeError
        If a reference fails on one of its cases.
    """
    module = importlib.import_module(module_name)
    entries: dict[str, dict] = {}
    computed: dict[str, str] = {}  # functions-and-cases digest -> exercise id
    for exercise in _exercises_of(module_name):
        twin = computed.setdefault(_signature(exercise), exercise.id)
        if twin != exercise.id:
            # An edition of an exercise computed above: the same observations.
            entries[exercise.id] = {"signature": _signature(exercise), "same_as": twin}
            continue
        reference, limits = [], []
        for case in exercise.cases:
            if case.prepare is not None:
                case.prepare()  # untimed, as under a Check
            # Its own time, compiling included: the time it waited for a
            # core while other processes held them left out, so a store
            # written on a busy machine gets the limits of a quiet one.
            clock = LoadClock()
            obs = observe(exercise.reference, case, None)
            limits.append(limit_from_reference(clock.elapsed(compiling=0.0)))
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
        entries[exercise.id] = {"signature": _signature(exercise), "limits": limits,
                                "reference": reference, "mistakes": mistakes}
    return serialize(entries, fingerprint(module))


def complete_store(module_name: str) -> dict[str, dict]:
    """Compute what ``module_name``'s store left out: the outputs too large to store.

    A class release (:mod:`jaxcourse.exercises.release`) withholds the
    references, so its store must hold every observation a Check looks up:
    each reference's on every case, and each mistake's where a mistake is
    looked up (:func:`_looks_up_mistakes`). Runs them here, where the store
    holds None; the process must have the exercises' devices.

    Returns
    -------
    dict
        Exercise id -> ``{"reference": {case: obs}, "mistakes": {number:
        {case: obs}}}``, observations as :meth:`Observation.to_json` gives
        them, case and mistake numbers as strings (JSON keys); only the
        exercises with something left out.

    Raises
    ------
    RuntimeError
        If the store is missing or stale, or a reference fails on a case.
    """
    module = importlib.import_module(module_name)
    why = changes(module_name)
    if why:
        raise RuntimeError(f"the store of {module_name} is out of date "
                           f"({', '.join(why)})")
    store = _read(store_path(module.__file__))
    assert store is not None  # changes() found it fresh
    filled: dict[str, dict] = {}
    for exercise in _exercises_of(module_name):
        raw = store.entries.get(exercise.id)
        if isinstance(raw, dict) and "same_as" in raw:
            continue  # an edition: its twin's entry, completed once
        stored = _decode(exercise, _entry(store.entries, exercise.id))
        if stored is None:
            raise RuntimeError(f"the store of {module_name} has no valid entry "
                               f"for {exercise.id}")
        reference: dict[str, dict] = {}
        mistakes: dict[str, dict[str, dict]] = {}
        for i, case in enumerate(exercise.cases):
            if case.prepare is not None and (
                    stored.reference[i] is None or _looks_up_mistakes(case)):
                case.prepare()
            if stored.reference[i] is None:
                obs = observe(exercise.reference, case, None)
                if obs.kind != "value":
                    raise RuntimeError(
                        f"the reference of {exercise.id} fails on "
                        f"{case.description!r}: {obs.kind} {obs.error}")
                reference[str(i)] = obs.to_json()
            if not _looks_up_mistakes(case):
                continue
            for n, mistake in enumerate(exercise.mistakes):
                if stored.mistake(i, n) is None:
                    mistakes.setdefault(str(n), {})[str(i)] = _mistake_json(
                        mistake.function, case)
        if reference or mistakes:
            filled[exercise.id] = {"reference": reference, "mistakes": mistakes}
    return filled


def verify_store(module_name: str) -> dict[str, list[str]]:
    """Recompute every stored output of ``module_name`` here and compare.

    Each stored observation must equal a live one, by the case's own
    comparison (:func:`jaxcourse.exercises.checking.comparison.compare`, its tolerances
    and dtype policy). The fingerprint is not looked at (:func:`stale` does).

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
        entry = _entry(store.entries, exercise.id) if store is not None else None
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
    # A launched case runs with the course's launcher, never through a Slurm
    # cluster that happens to be up: what is stored must not depend on it
    # (srun gave chapter 8's global_batch other values for a known mistake).
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COURSE_CHECK_LAUNCHER="course")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), str(_package_root()), *filter(None, [env.get("PYTHONPATH")])]
    )
    with tempfile.TemporaryDirectory(prefix="jaxcourse-outputs-") as folder:
        out = Path(folder) / "out.json"
        proc = subprocess.run(
            [sys.executable, "-m", _PACKAGE, "--child", action, module_name,
             "--devices", str(devices), "--out", str(out)],
            capture_output=True, text=True, timeout=timeout, env=env, check=False,
        )
        if proc.returncode != 0 or not out.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"{action} the outputs of {module_name}: the process "
                               f"failed:\n{tail}")
        return out.read_text(encoding="utf-8")


def complete_in_process(module_name: str, module_file: str | os.PathLike,
                        devices: int = 1, timeout: float = 900.0) -> dict[str, dict]:
    """:func:`complete_store` in a fresh process with ``devices`` CPU devices."""
    return json.loads(_in_fresh_process("complete", module_name, module_file,
                                        devices, timeout))


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


def module_files() -> dict[str, tuple[Path, int]]:
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
    # An entry a Check would not use (its exercise's functions or cases
    # differ, as _decode finds), or an exercise without one, or one too many.
    exercises = {e.id: e for e in _exercises_of(module_name)}
    for exercise_id in sorted(set(exercises) | set(store.entries)):
        entry = store.entries.get(exercise_id)
        if exercise_id not in exercises:
            changed.append(f"{exercise_id}: no such exercise now")
        elif not isinstance(entry, dict) or \
                entry.get("signature") != _signature(exercises[exercise_id]):
            changed.append(f"{exercise_id}: its functions or cases changed")
    return changed


def stale(modules: Sequence[str] | None = None) -> list[Path]:
    """Return the stores that are missing or out of date, to rewrite.

    Parameters
    ----------
    modules : sequence of str, optional
        Module names to look at; by default every module that defines
        exercises.
    """
    names = list(module_files()) if modules is None else list(modules)
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
    for name, (module_file, devices) in sorted(module_files().items()):
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
    elif action == "complete":
        text = json.dumps(complete_store(module_name), ensure_ascii=False)
    else:
        text = json.dumps(verify_store(module_name), ensure_ascii=False)
    Path(out).write_text(text, encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Write the stale stores, or with ``--check`` only report them."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.exercises.checking.references",
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
    add_version(parser)
    args = parser.parse_args(argv)
    if args.child:
        return _child_main(*args.child, args.devices, args.out)
    if args.verify:
        failed = False
        for name, (module_file, devices) in sorted(module_files().items()):
            problems = verify_in_process(name, module_file, devices)
            for exercise_id, found in problems.items():
                failed = failed or bool(found)
                print(f"{exercise_id}: {'; '.join(found) if found else 'ok'}")
        return 1 if failed else 0
    if args.check:
        old = {name: changes(name) for name in sorted(module_files())}
        old = {name: why for name, why in old.items() if why}
        for name, why in old.items():
            print(f"stale: {name} ({', '.join(why)})")
        if old:
            print("run `python -m jaxcourse.exercises.checking.references` "
                  "to rewrite them")
        return 1 if old else 0
    try:
        write_all(force=args.force)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    return 0

