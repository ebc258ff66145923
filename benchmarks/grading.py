"""How fast does the grader get through a class, and where does the time go?

Run: ``python benchmarks/grading.py`` (``--submissions 20 --chapter 03_bayes``).

Builds a class of generated submissions of one chapter (a third solved, a
third half solved, a third untouched, from the chapter's master and student
notebooks), grades it with ``--jobs 1`` and then with ``--jobs 2`` against
a private copy of the course, and prints:

* the wall-clock time of each run, seconds per submission, and the speed-up
  of ``--jobs 2`` over ``--jobs 1`` (a ratio computed here, from this run);
* the median time of one submission, split into start-up (from the process
  being started to its first line: the interpreter and the sandbox module),
  imports (JAX, NumPy, IPython, nbformat, the topic's reference module), the
  notebook's cells (those that run: see ``sandbox.plan_cells``) and the
  checks (calling the learner's functions on every test's inputs).

This is a measurement, not a test: on a busy two-core machine the figures
move from one run to the next. The two runs are measured one after the
other, so a change in the machine's load between them shows in the ratio
too (it can even come out a little above 2).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from jaxcourse.exercises import exercise_ids, get
from jaxcourse.exercises.grading import cli as grading

ROOT = Path(__file__).resolve().parents[1]


def make_class(folder: Path, chapter: str, count: int) -> None:
    """Write ``count`` submissions of ``chapter`` into ``folder``."""
    master = nbformat.read(ROOT / "solutions" / f"{chapter}_exercises.ipynb", 4)
    names = [get(i).function_name for i in exercise_ids(chapter)]
    solved = {}
    for cell in master.cells:
        for name in names:
            if cell.cell_type == "code" and cell.source.startswith(f"def {name}("):
                solved[name] = cell.source
    for number in range(count):
        nb = nbformat.read(ROOT / "exercises" / f"{chapter}_exercises.ipynb", 4)
        share = [names, names[: len(names) // 2], []][number % 3]
        for cell in nb.cells:
            for name in share:
                if cell.cell_type == "code" and cell.source.startswith(f"def {name}("):
                    cell.source = solved[name]
        nbformat.write(nb, folder / f"learner_{number:03d}.ipynb")


def run(chapter: str, count: int, timeout: float) -> None:
    """Grade the same class with one job and with two; print the figures."""
    with tempfile.TemporaryDirectory(prefix="jaxcourse-bench-") as tmp:
        base = Path(tmp)
        course = [base / "course" / n for n in ("jaxcourse", "solutions")]
        for folder in course:
            shutil.copytree(ROOT / folder.name, folder,
                            ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
        submissions = base / "submissions"
        submissions.mkdir()
        make_class(submissions, chapter, count)
        walls, rows = {}, {}
        for jobs in (1, 2):
            started = time.perf_counter()
            rows[jobs] = grading.grade([submissions], chapter=chapter, jobs=jobs,
                                       timeout=timeout, course=course)
            walls[jobs] = time.perf_counter() - started
    statuses = sorted({r.status for rs in rows.values() for r in rs})
    print(f"{count} submissions of {chapter} (statuses: {', '.join(statuses)})")
    for jobs in (1, 2):
        print(f"  --jobs {jobs}: {walls[jobs]:6.1f} s in all, "
              f"{walls[jobs] / count:5.2f} s per submission")
    print(f"  speed-up of --jobs 2 over --jobs 1: {walls[1] / walls[2]:.2f}x")
    for jobs in (1, 2):
        parts = ["start-up", "imports", "cells", "checks"]
        medians = {p: statistics.median(r.timings.get(p, 0.0) for r in rows[jobs])
                   for p in parts}
        total = statistics.median(r.seconds for r in rows[jobs])
        split = ", ".join(f"{p} {medians[p]:.2f}" for p in parts)
        print(f"  one submission (median, --jobs {jobs}): {total:.2f} s = {split} s")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", default="03_bayes")
    parser.add_argument("--submissions", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    run(args.chapter, args.submissions, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
