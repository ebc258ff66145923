"""Run a module of test cases in a pytest process of its own.

Cases that need a mesh of eight CPU devices cannot be imported by the suite's
workers: JAX fixes its device count when it starts, and pytest imports every
test module in every worker, so the exercise checks judged in the same worker
would then see eight devices where a learner's kernel has one. The test
modules that own such cases (``tests/test_transformer.py``,
``tests/test_pipeline.py``) run them through :func:`run_cases`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cases(cases: Path) -> None:
    """Run ``cases`` in a fresh pytest process; fail with its output if it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--durations=5", str(cases)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
