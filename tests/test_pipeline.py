"""The pipeline's cases, in a pytest process of their own.

``tests/pipeline_cases.py`` needs a mesh of eight CPU devices, and JAX fixes
its device count when it starts. Imported here, it would give every pytest
worker eight devices (pytest imports each test module in each worker), and the
exercise checks judged in the same worker would then see eight devices where a
learner's kernel has one. So the cases run in a fresh pytest process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "pipeline_cases.py"


def test_the_pipeline() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--durations=5", str(CASES)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
