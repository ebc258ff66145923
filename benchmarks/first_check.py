"""The first Check of every exercise, as a learner meets it: in a fresh process.

Usage: ``python benchmarks/first_check.py [--live] [--only ID ...]``

For each exercise, a new interpreter imports the course and starts JAX with
the exercise's devices (not timed: a learner's notebook has done both). Then,
as in the notebook, the exercise's panel is shown with the starter code, which
raises ``NotImplementedError`` (``shown``: what that costs Run All; a panel
checks once when it is shown). Then it times ``check(id, answer)`` with a
correct answer, a new function object with the reference's code: the first
Check of a correct answer, compilation included. It is timed in its two
halves: running the learner's function on every case (``function``) and
judging the outputs against the reference's (``judge``: from the stored
outputs when they are fresh, see ``jaxcourse.exercises.references``).
``again`` is a second Check in the same process: what the Check costs besides
compilation. ``cpu`` is the first Check's CPU time in its own process
(launched processes not counted): on a busy machine it varies less than the
wall-clock figures. ``cold`` is the same first Check in another new process
where no panel was shown first (a learner who wrote the answer before running
the cells).

``--live`` also times each first Check with the stored outputs ignored, so
the reference runs live as it did before they existed (``live`` column).
The children of one exercise run back to back, so a busy machine slows them
alike.

Printed per exercise, then the slowest and the median; the target is 2 s on a
two-core machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, time, types
    exercise_id, devices, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    import jax
    from jaxcourse.devices import use_cpu_devices
    use_cpu_devices(devices)  # JAX starts here, as in a learner's notebook
    from jaxcourse.exercises import check, get, judge, observe_all
    from jaxcourse.exercises import references
    if mode == "live":  # as before the stores existed: the reference runs here
        references.stored_outputs = lambda exercise: None
    exercise = get(exercise_id)
    reference = exercise.reference
    # The learner's answer: the reference's code in a function of its own, so
    # nothing cached for the reference object is reused.
    def fresh(fn):
        if not hasattr(fn, "__code__"):  # @jax.jit: jit a fresh copy, as a learner
            inner = getattr(fn, "__wrapped__", None)
            return jax.jit(fresh(inner)) if inner is not None else fn
        return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__,
                                  fn.__defaults__, fn.__closure__)
    answer = fresh(reference)
    shown = 0.0
    if mode != "cold":
        def starter(*args, **kwargs):
            raise NotImplementedError
        starter.__name__ = reference.__name__
        started = time.perf_counter()
        check(exercise_id, starter)  # the panel, shown with the starter code
        shown = time.perf_counter() - started
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
                      "shown": shown,
                      "stored": references.stored_outputs(exercise) is not None,
                      "passed": result.passed}))
""")


def first_check(exercise_id: str, devices: int, mode: str = "shown") -> dict:
    """Time the first Check of ``exercise_id`` in a new interpreter.

    ``mode``: ``"shown"`` (the panel was shown with the starter code first),
    ``"cold"`` (it was not) or ``"live"`` (shown, stored outputs ignored).
    """
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, exercise_id, str(devices), mode],
        capture_output=True, text=True, timeout=600, check=False,
    )
    if proc.returncode != 0:
        return {"seconds": float("nan"), "passed": False,
                "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(label: str, times: list[float]) -> str:
    over = sum(t > 2.0 for t in times)
    return (f"{label}: median {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s, {over} of {len(times)} over 2 s")


def main(argv: list[str] | None = None) -> int:
    """Print the first-Check time of every exercise (or of those named)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, metavar="ID")
    parser.add_argument("--live", action="store_true",
                        help="also time the first Check with the reference run live")
    args = parser.parse_args(argv)
    from jaxcourse.exercises import by_chapter, get

    ids = [i for ids in by_chapter().values() for i in ids]
    if args.only:
        unknown = sorted(set(args.only) - set(ids))
        if unknown:
            parser.error(f"no exercise {', '.join(unknown)}")
        ids = [i for i in ids if i in args.only]
    print(f"{'exercise':34} {'first':>6} {'function':>8} {'judge':>6} {'again':>6} "
          f"{'cpu':>6} {'shown':>6} {'cold':>6} {'stored':>6}"
          + (f" {'live':>6}" if args.live else ""))
    rows = []
    for exercise_id in ids:
        devices = get(exercise_id).devices
        row = first_check(exercise_id, devices)
        row["cold"] = first_check(exercise_id, devices, "cold")["seconds"]
        if args.live:
            row["live"] = first_check(exercise_id, devices, "live")["seconds"]
        rows.append((exercise_id, row))
        if not row["passed"]:
            print(f"{exercise_id:34} FAILED {row.get('error', '')}", flush=True)
            continue
        print(f"{exercise_id:34} {row['seconds']:6.2f} {row['function']:8.2f} "
              f"{row['judge']:6.2f} {row['again']:6.2f} {row['cpu']:6.2f} "
              f"{row['shown']:6.2f} {row['cold']:6.2f} "
              f"{'yes' if row['stored'] else 'NO':>6}"
              + (f" {row['live']:6.2f}" if args.live else ""), flush=True)
    passed = [(i, r) for i, r in rows if r["passed"]]
    print()
    print("slowest first:")
    for exercise_id, row in sorted(passed, key=lambda x: -x[1]["seconds"])[:10]:
        print(f"  {exercise_id:34} {row['seconds']:6.2f} s")
    if passed:
        print(_summary("first Check", [r["seconds"] for _, r in passed]))
        print(_summary("first Check, no panel shown before",
                       [r["cold"] for _, r in passed]))
        if args.live:
            print(_summary("with the reference live", [r["live"] for _, r in passed]))
    return 0 if len(passed) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
