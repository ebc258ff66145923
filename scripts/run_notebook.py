"""Execute notebooks in place and store their outputs, the way nbval re-runs them.

Usage: ``python scripts/run_notebook.py book/03_bayes.ipynb [...]``

Each notebook runs in a fresh kernel from its own folder, with the widget
state stored (so the book can show live widgets), and a fixed hash seed.
Outputs are then checked for absolute paths of this machine, which must
never be committed.

Each figure is stored with an SVG of itself in its output's metadata
(``jaxcourse.plotting.export_figure_text``): the Chinese editions, which are
not executed, translate its labels (``python -m jaxcourse.i18n``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from jaxcourse.plotting import FIGURE_TEXT_KEY, FIGURE_TEXT_MIME

# A path under a home, temp or work folder, printed by an error or a repr.
MACHINE_PATH = re.compile(r"/(root|home|tmp|work|Users)/[A-Za-z0-9_.-]+")


def execute(path: Path, timeout: int) -> list[str]:
    """Run ``path`` in place; return the machine paths found in its outputs."""
    nb = nbformat.read(path, as_version=4)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
        # Before the first cell: figures are displayed with their SVG too.
        extra_arguments=["--IPKernelApp.exec_lines=from jaxcourse.plotting import "
                         "export_figure_text; export_figure_text()"],
    )
    client.execute()
    keep_figure_text(nb)
    # nbclient stores the kernel's language_info; store its kernelspec as
    # JupyterLab does too (its display name included), so that opening the
    # notebook in JupyterLab changes nothing and no save prompt appears.
    spec = KernelSpecManager().get_kernel_spec("python3")
    nb.metadata["kernelspec"] = {"display_name": spec.display_name,
                                 "language": spec.language, "name": "python3"}
    nbformat.write(nb, path)
    leaks = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = nbformat.writes(nbformat.from_dict({"o": output}))
            leaks += [
                f"cell {index}: {m.group(0)}" for m in MACHINE_PATH.finditer(text)
            ]
    return leaks


def keep_figure_text(nb: nbformat.NotebookNode) -> int:
    """Move each figure's SVG from its output's data to its metadata.

    No front end shows it there, and nbval does not compare metadata.
    Returns how many figures had one.
    """
    count = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            packed = output.get("data", {}).pop(FIGURE_TEXT_MIME, None)
            if packed is not None:
                output.setdefault("metadata", {})[FIGURE_TEXT_KEY] = packed
                count += 1
    return count


def main() -> int:
    """Execute every notebook named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = parser.parse_args()
    status = 0
    for path in args.notebooks:
        started = time.perf_counter()
        leaks = execute(path, args.timeout)
        print(f"{path}: executed in {time.perf_counter() - started:.0f} s")
        if leaks:
            status = 1
            print(
                f"  outputs mention paths of this machine: {leaks[:5]}", file=sys.stderr
            )
    return status


if __name__ == "__main__":
    sys.exit(main())
