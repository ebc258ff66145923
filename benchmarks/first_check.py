"""The first Check of every exercise, as a learner meets it: in a fresh process.

Usage: ``python benchmarks/first_check.py [--only ID ...]``

For each exercise, a new interpreter imports the course (not timed), gets the
exercise's devices, and times ``check(id, reference)``: the first Check of a
correct answer, compilation included. Printed per exercise, slowest first, with
the median; the target is 2 s on a two-core machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, time
    exercise_id, devices = sys.argv[1], int(sys.argv[2])
    import jax
    if devices > 1:
        from jaxcourse.devices import use_cpu_devices
        use_cpu_devices(devices)
    from jaxcourse.exercises import check, get
    exercise = get(exercise_id)
    started = time.perf_counter()
    result = check(exercise_id, exercise.reference)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "passed": result.passed}))
""")


def first_check(exercise_id: str, devices: int) -> dict:
    """Time the first Check of ``exercise_id`` in a new interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, exercise_id, str(devices)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    if proc.returncode != 0:
        return {"seconds": float("nan"), "passed": False,
                "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Print the first-Check time of every exercise (or of those named)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, metavar="ID")
    args = parser.parse_args(argv)
    from jaxcourse.exercises import by_chapter, get

    ids = [i for ids in by_chapter().values() for i in ids]
    if args.only:
        ids = [i for i in ids if i in args.only]
    rows = []
    for exercise_id in ids:
        row = first_check(exercise_id, get(exercise_id).devices)
        rows.append((exercise_id, row))
        status = "ok" if row["passed"] else f"FAILED {row.get('error', '')}"
        print(f"{exercise_id:40} {row['seconds']:6.2f} s  {status}", flush=True)
    times = [r["seconds"] for _, r in rows if r["passed"]]
    print()
    print("slowest first:")
    for exercise_id, row in sorted(rows, key=lambda x: -x[1]["seconds"])[:10]:
        print(f"  {exercise_id:40} {row['seconds']:6.2f} s")
    if times:
        over = sum(t > 2.0 for t in times)
        print(f"median {statistics.median(times):.2f} s, max {max(times):.2f} s, "
              f"{over} of {len(times)} over 2 s")
    return 0 if all(r["passed"] for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
