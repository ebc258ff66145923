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


@pytest.fixture(scope="module")
def kernel_metadata() -> dict:
    """The kernelspec and language_info JupyterLab writes with the course's kernel."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import start_new_kernel

    spec = KernelSpecManager().get_kernel_spec("python3")
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        reply = client.kernel_info(reply=True, timeout=60)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return {
        "kernelspec": {"display_name": spec.display_name, "language": spec.language,
                       "name": "python3"},
        "language_info": reply["content"]["language_info"],
    }


ALL_NOTEBOOKS = sorted(
    p for folder in ("book", "solutions", "exercises")
    for p in (ROOT / folder).glob("*.ipynb")
)


@pytest.mark.parametrize(
    "path", ALL_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_opening_a_notebook_changes_no_metadata(
    path: Path, kernel_metadata: dict
) -> None:
    # JupyterLab rewrites both on opening; stored as it writes them, an untouched
    # notebook is not marked modified and asks for no save.
    nb = nbformat.read(path, as_version=4)
    for key, wanted in kernel_metadata.items():
        assert nb.metadata.get(key) == wanted, (
            f"{key} differs from what the course's kernel reports: re-run "
            "scripts/run_notebook.py on the master (and regenerate exercises/)"
        )
