"""The first Check of every exercise, as a learner meets it: in a fresh process.

Usage: ``python benchmarks/first_check.py [--live] [--cache DIR | --no-cache]
[--only ID ...]``

For each exercise, a new interpreter imports the course and starts JAX with
the exercise's devices (not timed: a learner's notebook has done both). Then,
as in the notebook, the exercise's panel is shown with the starter code, which
raises ``NotImplementedError`` (``shown``: what that costs Run All; a panel
checks once when it is shown), and the panel starts what the next Check would
wait for (:func:`jaxcourse.exercises.warm_up`: a launched exercise's
processes, which start JAX and wait; ``ready``: how long after the panel they
were ready, time the learner spends reading the exercise). Then it times
``check(id, answer)`` with a correct answer, a new function object with the
reference's code: the first Check of a correct answer, compilation included.
It is timed in its two halves: running the learner's function on every case
(``function``) and judging the outputs against the reference's (``judge``:
from the stored outputs when they are fresh, see
``jaxcourse.exercises.checking.references``). ``again`` is a second Check in the same
process: what the Check costs besides compilation. ``cpu`` is the first
Check's CPU time in its own process (launched processes not counted): on a
busy machine it varies less than the wall-clock figures. ``cold`` is the same
first Check in another new process where no panel was shown first (a learner
who wrote the answer before running the cells: nothing was prepared).

``--live`` also times each first Check with the stored outputs ignored, so
the reference runs live as it did before they existed (``live`` column).
The children of one exercise run back to back, so a busy machine slows them
alike.

Seconds do not travel between machines, so every time is also printed in
*units*: the machine's unit is the median, over 5 fresh processes, of the
first compile-and-run of a trivial jitted function (``jax.jit(lambda x: x +
1)``, JAX already started, no compilation cache), measured before the
exercises. The target: every exercise's first Check within 10 units, and
their median within 3.

The compilation cache: by default the children use the course's, as a
learner's notebook does (:mod:`jaxcourse.compile_cache`; ``make setup`` fills
it with the reference answers' programs, ``python -m
jaxcourse.exercises.authoring.warm_cache``), so the figures are those of an answer that
compiles to the reference's programs on a machine set up as the README says.
``--cache DIR`` uses the folder ``DIR`` instead (run twice: the second run
reads what the first wrote), ``--no-cache`` none at all (every program is
compiled, as on a machine where nothing was compiled before).

``--answer right`` checks, instead of the reference's code, the first
alternative right answer of the course's tables (``tests/exercise_answers``):
an answer written unlike the reference, whose programs the cache does not
hold (``(reference)`` marks an exercise that has none).

Printed per exercise, then the slowest and the median, in seconds and units.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap

UNIT_CHILD = textwrap.dedent("""
    import json, time
    import jax
    import jax.numpy as jnp
    x = jnp.float32(1)  # JAX started: not part of the unit
    started = time.perf_counter()
    jax.jit(lambda x: x + 1)(x).block_until_ready()
    print(json.dumps({"seconds": time.perf_counter() - started}))
""")

CHILD = textwrap.dedent("""
    import json, sys, time
    exercise_id, devices, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    from jaxcourse.devices import use_cpu_devices
    use_cpu_devices(devices)  # JAX starts here, as in a learner's notebook
    from jaxcourse.exercises import check, get, judge, observe_all, warm_up
    from jaxcourse.exercises.checking import references
    from jaxcourse.exercises.authoring.warm_cache import fresh_copy
    if mode == "live":  # as before the stores existed: the reference runs here
        references.stored_outputs = lambda exercise: None
    exercise = get(exercise_id)
    reference = exercise.reference
    # The learner's answer: the reference's code in a function of its own, so
    # nothing cached in memory for the reference object is reused; or the
    # first alternative right answer of the course's tables, written unlike it.
    answer, own = fresh_copy(reference), False
    if sys.argv[4] == "right":
        sys.path.insert(0, "tests")
        from exercise_answers import answers_module, right, topic_of
        topic = topic_of(exercise_id)
        names = [r.name for r in right(topic) if r.exercise_id == exercise_id]
        if names:
            # Named as the exercise names it, as in a learner's notebook (JAX
            # names a compiled program after its function).
            answer, own = fresh_copy(getattr(answers_module(topic), names[0])), True
            # (Not a launched answer: its source is run, under its own name.)
            launched = any(case.warm_up is not None for case in exercise.cases)
            if hasattr(answer, "__code__") and not launched:
                answer.__name__ = answer.__qualname__ = reference.__name__
    shown = ready = 0.0
    if mode != "cold":
        def starter(*args, **kwargs):
            raise NotImplementedError
        starter.__name__ = reference.__name__
        started = time.perf_counter()
        check(exercise_id, starter)  # the panel, shown with the starter code
        prepared = [p for p in warm_up(exercise) if p is not None]  # as the panel
        shown = time.perf_counter() - started
        for p in prepared:  # the learner reads the exercise meanwhile
            p.wait_ready(120)
        ready = time.perf_counter() - started
    cpu = time.process_time()
    started = time.perf_counter()
    observed = observe_all(exercise, answer)  # check() is these two
    middle = time.perf_counter()
    result = judge(exercise, observed)
    ended = time.perf_counter()
    cpu = time.process_time() - cpu
    judge(exercise, observe_all(exercise, answer))
    again = time.perf_counter() - ended
    print(json.dumps({"seconds": ended - started, "function": middle - started,
                      "judge": ended - middle, "again": again, "cpu": cpu,
                      "shown": shown, "ready": ready, "own": own,
                      "stored": references.stored_outputs(exercise) is not None,
                      "passed": result.passed}))
""")


def _child_env(cache: str | None) -> dict[str, str]:
    """The children's environment: the cache as asked, panels that prepare."""
    from jaxcourse.compile_cache import SWITCH_ENV
    from jaxcourse.exercises.checking.observe import WARM_UP_ENV

    env = dict(os.environ, **{WARM_UP_ENV: "1"})
    for name in ("JAX_COMPILATION_CACHE_DIR", SWITCH_ENV):
        env.pop(name, None)
    if cache is None:
        env[SWITCH_ENV] = "off"
    elif cache:
        env["JAX_COMPILATION_CACHE_DIR"] = cache
    return env


def machine_unit(runs: int = 5) -> float:
    """Return the machine's unit: the median first jit compile-and-run, in s.

    Each of ``runs`` fresh interpreters starts JAX (untimed), then times the
    first call of ``jax.jit(lambda x: x + 1)``: tracing, compiling and
    running a trivial program, what every first Check pays at least once.
    """
    times = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", UNIT_CHILD], capture_output=True,
                              text=True, timeout=300, check=True,
                              env=_child_env(None))  # never from a cache
        times.append(json.loads(proc.stdout.strip().splitlines()[-1])["seconds"])
    return statistics.median(times)


def first_check(exercise_id: str, devices: int, mode: str = "shown",
                cache: str | None = "", answer: str = "reference") -> dict:
    """Time the first Check of ``exercise_id`` in a new interpreter.

    ``mode``: ``"shown"`` (the panel was shown with the starter code first),
    ``"cold"`` (it was not) or ``"live"`` (shown, stored outputs ignored).
    ``cache``: a folder for JAX's persistent compilation cache, ``""`` for
    the course's own, ``None`` for none. ``answer``: ``"reference"`` (a copy
    of it) or ``"right"`` (the tables' first alternative, if there is one).
    """
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, exercise_id, str(devices), mode, answer],
        capture_output=True, text=True, timeout=600, check=False,
        env=_child_env(cache),
    )
    if proc.returncode != 0:
        return {"seconds": float("nan"), "passed": False,
                "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: The targets, in units: every first Check, and the median of them all.
MAX_UNITS, MEDIAN_UNITS = 10.0, 3.0


def _summary(label: str, times: list[float], unit: float) -> str:
    over = sum(t / unit > MAX_UNITS for t in times)
    median = statistics.median(times)
    return (f"{label}: median {median:.2f} s = {median / unit:.1f} units "
            f"(target {MEDIAN_UNITS:g}), max {max(times):.2f} s = "
            f"{max(times) / unit:.1f} units, {over} of {len(times)} over "
            f"{MAX_UNITS:g} units")


def _cache_said(cache: str | None) -> str:
    """Say which compilation cache the children use, and whether it was warmed."""
    if cache is None:
        return "none"
    if cache:
        return cache
    from jaxcourse import compile_cache
    from jaxcourse.exercises.authoring.warm_cache import STAMP

    folder = compile_cache.cache_dir()
    warmed = (folder / STAMP).is_file()
    return (f"the course's ({folder.name}, "
            + ("filled by make setup" if warmed else "not filled by make setup")
            + ")")


def main(argv: list[str] | None = None) -> int:
    """Print the first-Check time of every exercise (or of those named)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, metavar="ID")
    parser.add_argument("--live", action="store_true",
                        help="also time the first Check with the reference run live")
    caching = parser.add_mutually_exclusive_group()
    caching.add_argument("--cache", default="", metavar="DIR",
                         help="this folder for JAX's compilation cache, not the "
                              "course's")
    caching.add_argument("--no-cache", action="store_true",
                         help="no compilation cache: every program is compiled")
    parser.add_argument("--answer", choices=("reference", "right"),
                        default="reference",
                        help="check a copy of the reference (default), or the "
                             "first alternative right answer of the course's "
                             "tables (tests/exercise_answers), written unlike it")
    args = parser.parse_args(argv)
    cache = None if args.no_cache else args.cache
    from jaxcourse.exercises import by_chapter, get

    ids = [i for ids in by_chapter().values() for i in ids]
    if args.only:
        unknown = sorted(set(args.only) - set(ids))
        if unknown:
            parser.error(f"no exercise {', '.join(unknown)}")
        ids = [i for i in ids if i in args.only]
    unit = machine_unit()
    print(f"unit: {unit:.3f} s (median first jit compile-and-run of a trivial "
          f"function, 5 fresh processes); compilation cache: {_cache_said(cache)}; "
          + ("answers: copies of the references" if args.answer == "reference" else
             "answers: the tables' first alternative right answer"))
    print(f"{'exercise':34} {'first':>6} {'units':>6} {'function':>8} {'judge':>6} "
          f"{'again':>6} {'cpu':>6} {'shown':>6} {'ready':>6} {'cold':>6} {'units':>6} "
          f"{'stored':>6}" + (f" {'live':>6}" if args.live else ""))
    rows = []
    for exercise_id in ids:
        devices = get(exercise_id).devices
        row = first_check(exercise_id, devices, cache=cache, answer=args.answer)
        row["cold"] = first_check(exercise_id, devices, "cold", cache,
                                  args.answer)["seconds"]
        if args.live:
            row["live"] = first_check(exercise_id, devices, "live", cache,
                                      args.answer)["seconds"]
        rows.append((exercise_id, row))
        if not row["passed"]:
            print(f"{exercise_id:34} FAILED {row.get('error', '')}", flush=True)
            continue
        print(f"{exercise_id:34} {row['seconds']:6.2f} {row['seconds'] / unit:6.1f} "
              f"{row['function']:8.2f} {row['judge']:6.2f} {row['again']:6.2f} "
              f"{row['cpu']:6.2f} {row['shown']:6.2f} {row['ready']:6.2f} "
              f"{row['cold']:6.2f} "
              f"{row['cold'] / unit:6.1f} {'yes' if row['stored'] else 'NO':>6}"
              + ("" if row["own"] or args.answer == "reference" else " (reference)")
              + (f" {row['live']:6.2f}" if args.live else ""), flush=True)
    passed = [(i, r) for i, r in rows if r["passed"]]
    print()
    print("slowest first:")
    for exercise_id, row in sorted(passed, key=lambda x: -x[1]["seconds"])[:10]:
        print(f"  {exercise_id:34} {row['seconds']:6.2f} s "
              f"{row['seconds'] / unit:5.1f} units")
    if passed:
        print(_summary("first Check", [r["seconds"] for _, r in passed], unit))
        print(_summary("first Check, no panel shown before",
                       [r["cold"] for _, r in passed], unit))
        if args.live:
            print(_summary("with the reference live",
                           [r["live"] for _, r in passed], unit))
    return 0 if len(passed) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
