"""Launched checks on a busy machine: right answers accepted, wrong ones named.

Usage: ``python benchmarks/launched_under_load.py [--runs 10] [--loops 8]
[--wrong-runs 1]``

Chapter 8's ``run_epoch`` and ``global_batch`` are checked by launching the
learner's function in two real processes. On a machine whose cores other
programs hold, a launch's processes wait for a core, and a limit counted on
the wall clock called right answers hung (issue #65: ``run_epoch`` once and
``global_batch`` twice at a load of 8). This starts ``--loops`` busy loops
(one process each, as other people's work would be) and, with the
compilation cache off as the grader runs, checks in a fresh process each
time: the reference and the right alternatives of the exercise contracts
(``tests/exercise_answers/multiprocess.toml``) ``--runs`` times, and every
wrong answer there ``--wrong-runs`` times, each against its table: a right
answer must pass, a wrong one fail with every fragment its table gives.

Printed: one line per answer (how many runs gave the table's verdict), the
load average seen, and the total; the exit status is 1 if any run did not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUNCHED = ("multiprocess.run_epoch", "multiprocess.global_batch")
MARK = "LAUNCHED-JSON:"

BUSY = """
import os, sys, time
parent, end = int(sys.argv[1]), time.monotonic() + 7200
while os.getppid() == parent and time.monotonic() < end:
    for _ in range(100_000):
        pass
"""

JUDGE = """
import json, sys
sys.path.insert(0, {tests!r})
import exercise_answers
from jaxcourse.exercises import get

found = {{}}
for key in {keys!r}:
    exercise_id, name = key.split(":")
    function = (get(exercise_id).reference if name == "reference"
                else exercise_answers.answer(exercise_id, name))
    found[key] = exercise_answers.judge(exercise_id, function)
print({mark!r} + json.dumps(found))
"""


def _tables() -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """The right answers' keys, and the wrong ones' fragments, by ``id:name``."""
    sys.path.insert(0, str(ROOT / "tests"))
    import exercise_answers

    right = [f"{e}:reference" for e in LAUNCHED]
    right += [f"{r.exercise_id}:{r.name}"
              for r in exercise_answers.right("multiprocess")
              if r.exercise_id in LAUNCHED]
    wrong = {f"{r.exercise_id}:{r.name}": r.fragments
             for r in exercise_answers.wrong("multiprocess")
             if r.exercise_id in LAUNCHED}
    return right, wrong


def _judge(keys: list[str]) -> dict:
    """Check the answers ``keys`` in a fresh process, compilation cache off."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COURSE_COMPILE_CACHE="off",
               JAX_COURSE_CHECK_LAUNCHER="course", PYTHONPATH=str(ROOT))
    env.pop("XLA_FLAGS", None)
    code = JUDGE.format(tests=str(ROOT / "tests"), keys=keys, mark=MARK)
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=3600, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith(MARK)), None)
    if line is None:
        raise RuntimeError(f"the judging process ended with {done.returncode}: "
                           f"{done.stderr[-2000:]}")
    return json.loads(line[len(MARK):])


def main() -> int:
    """Run the benchmark; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--wrong-runs", type=int, default=1)
    parser.add_argument("--loops", type=int, default=8)
    args = parser.parse_args()
    right, wrong = _tables()
    held: dict[str, int] = {key: 0 for key in [*right, *wrong]}
    tries: dict[str, int] = dict.fromkeys(held, 0)
    failures: list[str] = []
    loads: list[float] = []
    loops = [subprocess.Popen([sys.executable, "-c", BUSY, str(os.getpid())],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
             for _ in range(args.loops)]
    started = time.monotonic()
    try:
        for run in range(max(args.runs, args.wrong_runs)):
            keys = (right if run < args.runs else []) + (
                list(wrong) if run < args.wrong_runs else [])
            found = _judge(keys)
            loads.append(os.getloadavg()[0])
            for key in keys:
                verdict, tries[key] = found[key], tries[key] + 1
                fragments = wrong.get(key)
                ok = verdict["status"] == "passed" if fragments is None else (
                    verdict["status"] == "failed"
                    and all(f in verdict["report"] for f in fragments))
                held[key] += ok
                if not ok:
                    failures.append(f"run {run + 1}, {key}:\n{verdict['report']}")
            print(f"run {run + 1}: {sum(held.values())} of {sum(tries.values())} "
                  f"verdicts as the tables say; load {loads[-1]:.1f}; "
                  f"{time.monotonic() - started:.0f} s", flush=True)
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()
    print(f"\n{args.loops} busy loops, compilation cache off; load average "
          f"{min(loads):.1f}-{max(loads):.1f} after each run")
    for key in held:
        kind = "right" if key in right else "wrong"
        print(f"  {kind:5} {key:55} {held[key]}/{tries[key]}")
    for failure in failures:
        print("\n" + failure)
    total, of = sum(held.values()), sum(tries.values())
    print(f"\n{total} of {of} verdicts as the tables say")
    return 0 if total == of else 1


if __name__ == "__main__":
    sys.exit(main())
