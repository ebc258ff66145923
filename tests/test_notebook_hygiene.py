"""Stored notebooks: executed, portable, and free of this machine's paths."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = sorted(
    p for folder in ("book", "solutions") for p in (ROOT / folder).glob("*.ipynb")
)
MACHINE_PATH = re.compile(r"/(root|home|tmp|work|Users)/[A-Za-z0-9_.-]+")


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_stored_notebook_is_executed_and_portable(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code, "a chapter without code"
    unexecuted = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not unexecuted, f"code cells never executed: {unexecuted}"
    leaks = MACHINE_PATH.findall(nbformat.writes(nb))
    assert not leaks, f"absolute paths of a machine in the notebook: {leaks[:3]}"


def test_every_notebook_starts_with_the_current_colab_bootstrap() -> None:
    # The repository's address lives in _config.yml only; the notebooks carry
    # a generated copy, which must follow it.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sync_first_cells.py"), "--check"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
