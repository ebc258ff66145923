"""The chapters' stored outputs hold under a second CPU instruction set.

XLA's CPU backend compiles for the instruction set it finds: the same
program rounds its sums in another order under AVX-512, AVX2 or SSE4.2, so a
float32 result printed to its last digits on the machine that stored a
chapter is one ulp off on a learner's laptop. The stored outputs are written
under the default instruction set (``scripts/run_notebook.py``) and nbval
proves them under it in the rest of the suite; here every chapter runs once
more, in nbval, with XLA held to another one (``--xla_cpu_max_isa``), so an
output that depends on the CPU fails on this machine, not on the reader's.

SSE4.2 by default: the oldest that x86-64 machines still run JAX on, and so
the farthest from the AVX-512 or AVX2 that a developer's machine has.
``JAX_COURSE_SECOND_ISA`` picks another (``AVX2`` stands in for a machine
without AVX-512, such as most laptops).

The Simplified edition of chapter 9 is generated from the Traditional one,
outputs included (``jaxcourse.zh_hans``): its code runs here once, as
``09_dp_zh``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxcourse.numerics import decade_above

ROOT = Path(__file__).resolve().parents[1]
ISA = os.environ.get("JAX_COURSE_SECOND_ISA", "SSE4_2")
CHAPTERS = sorted(p.relative_to(ROOT).as_posix()
                  for p in (ROOT / "book").glob("[0-9]*.ipynb")
                  if not p.stem.endswith("_zh_hans"))
# pytest's own lines: what the failure message keeps of the run.
_TAIL = 12_000
# The session's environment, read when pytest imports this module: the
# notebooks run in it, as nbval runs them in the rest of the suite, not in a
# test's (conftest's hermetic_data points each test at an empty data folder).
_SESSION_ENV = dict(os.environ)


def isa_flags(flags: str, isa: str) -> str:
    """Return ``flags`` (``XLA_FLAGS``) holding XLA's CPU backend to ``isa``."""
    kept = [f for f in flags.split() if not f.startswith("--xla_cpu_max_isa=")]
    return " ".join([*kept, f"--xla_cpu_max_isa={isa}"])


def test_isa_flags_replace_an_earlier_choice() -> None:
    assert isa_flags("", "AVX2") == "--xla_cpu_max_isa=AVX2"
    assert isa_flags("--xla_force_host_platform_device_count=8 --xla_cpu_max_isa=AVX2",
                     "SSE4_2") == ("--xla_force_host_platform_device_count=8 "
                                   "--xla_cpu_max_isa=SSE4_2")


def test_every_chapter_is_run() -> None:
    # Every chapter of the manifest but the generated Simplified edition of
    # chapter 9 (its outputs are chapter 9's own).
    from jaxcourse import course

    chapters = {topic.chapter for topic in course.topics()}
    assert set(CHAPTERS) == chapters - {"book/09_dp_zh_hans.ipynb"}, CHAPTERS


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_stored_outputs_under_a_second_instruction_set(chapter: str) -> None:
    env = dict(_SESSION_ENV)
    env["XLA_FLAGS"] = isa_flags(env.get("XLA_FLAGS", ""), ISA)
    # The suite's conftest, loaded as a plugin: pytest finds it only for a
    # path under tests/, and its hooks put another clone's job in the queue
    # while chapter 8 runs (tests/foreign_job.py).
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "tests"), *filter(None, [env.get("PYTHONPATH")])])
    result = subprocess.run(
        [sys.executable, "-m", "pytest", chapter, "-p", "conftest",
         "-p", "no:cacheprovider", "-q", "--no-header", "-rf"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert result.returncode == 0, (
        f"{chapter} under --xla_cpu_max_isa={ISA}: its stored outputs do not hold "
        f"(pytest exit status {result.returncode}); print what the cell means to show "
        f"(jaxcourse.numerics.decade_above), not rounding's last digits\n"
        + (result.stdout + result.stderr)[-_TAIL:])


def test_an_error_is_shown_by_its_decade() -> None:
    # The digits that differ from one instruction set to another (chapter 7's
    # 4.8e-07 and 5.8e-07, 0.004 and 0.006) print alike; another decade does not.
    assert decade_above(4.8e-07) == decade_above(5.8e-07) == "1e-06"
    assert decade_above(0.004) == decade_above(0.006) == "0.01"
    assert decade_above(0.01) == "0.1" and decade_above(0.0099) == "0.01"
    assert decade_above(0.0) == "0"
    for wrong in (-1e-7, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite and not negative"):
            decade_above(wrong)
