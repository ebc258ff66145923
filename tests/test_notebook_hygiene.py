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


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_stored_errors_show_no_library_frames(path: Path) -> None:
    # A reader needs the exception, its message and their own line, not thirty
    # frames of JAX internals: the chapters call jaxcourse.tracebacks's
    # short_tracebacks() first. Every cell tagged raises-exception keeps its error.
    from jaxcourse.tracebacks import library_frame

    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if "raises-exception" in cell.metadata.get("tags", []):
            assert errors, f"cell {i} is tagged raises-exception but stores no error"
        for error in errors:
            frames = [e for e in error.traceback if library_frame(e)]
            assert not frames, (f"cell {i} stores {len(frames)} library frames of its "
                                f"{error.ename}; call short_tracebacks() first")
            assert not any("site-packages" in e for e in error.traceback), i


def test_library_frames_are_recognised() -> None:
    from jaxcourse.tracebacks import library_frame

    frame = ("\x1b[36mFile \x1b[39m\x1b[32m~/.venv/lib/python3.11/site-packages/jax/"
             "_src/api.py:2116\x1b[39m, in \x1b[36mdevice_put\x1b[39m\n  2114 ...")
    assert library_frame(frame)
    assert not library_frame("\x1b[36mCell\x1b[39m In[12], line 1\n----> 1 f(x)")
    assert not library_frame("ValueError: site-packages/ named in a message")


def test_a_chain_raised_inside_libraries_is_cut_to_the_reader_s_exception() -> None:
    from jaxcourse.tracebacks import _shortened

    lib = "File ~/venv/lib/python3.11/site-packages/jax/_src/numpy/util.py:20, in f()\n"
    joining = "\nThe above exception was the direct cause of the following exception:\n"
    entries = ["---\nTypeError  Traceback (most recent call last)", lib,
               "TypeError: inside", joining, "ValueError  Traceback",
               "Cell In[5], line 3\n", lib, lib,
               "ValueError: shapes (100,) and (100, 10)"]
    short = _shortened(lambda: entries)()
    assert short[0] == "ValueError  Traceback" and short[1] == "Cell In[5], line 3\n"
    assert short[-1] == "ValueError: shapes (100,) and (100, 10)"
    assert "2 frames inside JAX and other libraries and 1 earlier" in short[-2]
    assert not any("site-packages" in e for e in short)
    # Nothing of the reader's own: the whole traceback, never an empty one.
    assert _shortened(lambda: [lib])() == [lib]
