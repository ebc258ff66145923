"""``python -m jaxcourse.exercises.authoring.warm_cache``: compile answers ahead.

A learner's first Check compiles their function once per case, and XLA's
compiling is most of what that Check costs. JAX's persistent compilation
cache (:mod:`jaxcourse.compile_cache`, on in every exercise notebook) keeps
each compiled program on disk, keyed by the program itself (without source
locations). This module checks every exercise once with a copy of its
reference answer, as a learner's function would be checked, so that the
cache holds those programs before a learner first presses Check: an answer
that computes what the reference computes, the same way, then compiles
nothing; one written differently compiles its own programs, once.

``make setup`` runs it (about a minute; seconds when nothing changed). Each
device count gets a process of its own (JAX fixes it when it starts). A
stamp in the cache's folder records the exercises' code it was run for, so
a second run with the same code does nothing (``--force`` runs it anyway).
Nothing here can fail the setup: an exercise that cannot be checked (its
dataset missing, say) is named and skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxcourse.cli import add_version

__all__ = ["STAMP", "fresh_copy", "main", "warm"]

#: The stamp in the cache's folder: the digest of the code it was warmed for.
STAMP = "warmed-exercises"


def fresh_copy(function: Any) -> Any:
    """Return a new function object with ``function``'s code, as a learner's is.

    Nothing cached in memory for ``function`` (JAX's traces, say) is reused;
    a ``jax.jit``-wrapped function gets a fresh ``jax.jit`` of a copy.
    """
    import jax

    if not hasattr(function, "__code__"):
        inner = getattr(function, "__wrapped__", None)
        return jax.jit(fresh_copy(inner)) if inner is not None else function
    return types.FunctionType(function.__code__, function.__globals__,
                              function.__name__, function.__defaults__,
                              function.__closure__)


def warm(exercise_ids: list[str], say: Callable[[str], None] = print) -> int:
    """Check each exercise with a copy of its reference here; return the failures.

    JAX must not have started yet with another device count than the
    exercises': run it in a process of its own per device count.
    """
    from ..checking.judging import check
    from ..checking.registry import get

    failed = 0
    for exercise_id in exercise_ids:
        started = time.perf_counter()
        try:
            result = check(exercise_id, fresh_copy(get(exercise_id).reference))
            passed = result.passed
        except Exception as err:  # one exercise must not stop the others
            passed = False
            say(f"  {exercise_id}: could not be checked ({type(err).__name__})")
        failed += not passed
        say(f"  {exercise_id}: {time.perf_counter() - started:.1f} s"
            + ("" if passed else " (did not pass: skipped)"))
    return failed


def _code_digest() -> str:
    """Digest of the exercises' code and the engine's: what the cache depends on."""
    from ... import course

    roots = [Path(__file__).parents[1], *course.content_folders()]
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            if "__pycache__" not in path.parts:
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    """Warm the cache for every exercise, one process per device count."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.exercises.authoring.warm_cache",
        description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true",
                        help="run even if the stamp says the code is unchanged")
    parser.add_argument("--devices", type=int, default=None,
                        help=argparse.SUPPRESS)  # a child: this device count only
    parser.add_argument("ids", nargs="*", help=argparse.SUPPRESS)
    add_version(parser)
    args = parser.parse_args(argv)

    if args.devices is not None:  # the child, with JAX not yet started
        from ...devices import use_cpu_devices

        use_cpu_devices(args.devices)
        warm(args.ids)
        return 0  # an exercise that fails only stays cold

    from ... import compile_cache
    from ..checking.registry import by_chapter, get

    folder = compile_cache.enable_by_default()
    if folder is None:
        print("the compilation cache is off (JAX_COURSE_COMPILE_CACHE=off): "
              "nothing to warm")
        return 0
    stamp = folder / STAMP
    digest = _code_digest()
    if not args.force and stamp.is_file() and stamp.read_text().strip() == digest:
        print(f"the compilation cache already holds the reference answers' "
              f"programs ({folder})")
        return 0
    groups: dict[int, list[str]] = {}
    for ids in by_chapter().values():
        for exercise_id in ids:
            groups.setdefault(get(exercise_id).devices, []).append(exercise_id)
    print(f"compiling the reference answers' programs into {folder}")
    started = time.perf_counter()
    complete = True
    for devices, ids in sorted(groups.items()):
        print(f"{len(ids)} exercises on {devices} device(s):", flush=True)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "jaxcourse.exercises.authoring.warm_cache",
                 "--devices", str(devices), *ids], check=False, timeout=1800)
            complete &= proc.returncode == 0
        except subprocess.TimeoutExpired:
            print(f"  gave up on the exercises on {devices} device(s) after 30 min")
            complete = False
    if complete:
        stamp.write_text(digest + "\n")
    print(f"done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
