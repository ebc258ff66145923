"""Run notebooks as Colab would: the first cell installs the course.

Usage: ``python scripts/colab_sim.py [NOTEBOOK ...]`` (run by ``scripts/light_job.sh``
with its Python 3.12 environment; by default chapter 3 and its exercise notebook).

Each notebook is copied into an empty folder outside any checkout, so nothing of
the course can be imported from the working directory. The one change made to
it is the install address in its first cell: the public repository of
``_config.yml`` becomes a ``git+file://`` address of this repository (its
committed state, as the public repository would serve it). The notebook then
runs top to bottom in a fresh kernel of this interpreter; the run fails if the
course was importable before the first cell, if the first cell did not install
it into the environment, or if any cell raised.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import yaml
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["book/03_bayes.ipynb", "solutions/03_bayes_exercises.ipynb"]
# Asked in the kernel after the run: where the course came from.
WHERE = ("import jaxcourse, solutions\n"
         "print(jaxcourse.__file__)\nprint(solutions.__file__)")


def public_address() -> str:
    """Return the install address the first cells carry, from ``_config.yml``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]
    return f"git+{repo['url']}@{repo.get('branch', 'main')}"


def local_address() -> str:
    """Return a ``git+file://`` address of this repository's current commit."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    return f"git+file://{ROOT}@{commit}"


def simulate(notebook: Path, workdir: Path) -> float:
    """Run ``notebook`` the Colab way in ``workdir``; return the seconds it took."""
    nb = nbformat.read(notebook, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    public = public_address()
    if public not in first.source:
        raise SystemExit(f"{notebook}: its first cell does not install from {public}; "
                         "run scripts/sync_first_cells.py")
    first.source = first.source.replace(public, local_address())
    nb.cells.append(nbformat.v4.new_code_cell(WHERE))
    folder = workdir / notebook.stem
    folder.mkdir()
    started = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    seconds = time.perf_counter() - started
    # A cell tagged raises-exception shows an error on purpose.
    errors = [o for c in nb.cells if c.cell_type == "code"
              and "raises-exception" not in c.metadata.get("tags", [])
              for o in c.outputs if o.output_type == "error"]
    if errors:
        first_error = errors[0]
        raise SystemExit(f"{notebook}: a cell raised: {first_error.ename}: "
                         f"{first_error.evalue}")
    where = nb.cells[-1].outputs[0]["text"].split()
    site = Path(sys.prefix).resolve()
    outside = [w for w in where if site not in Path(w).resolve().parents]
    if outside:
        raise SystemExit(f"{notebook}: the course was imported from {outside}, not "
                         "from the package the first cell installed")
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Simulate Colab for each notebook named (default: chapter 3 and its exercises)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=DEFAULT)
    args = parser.parse_args(argv)
    if importlib.util.find_spec("jaxcourse") is not None:
        raise SystemExit("the course is already installed here: a Colab runtime has "
                         "none (scripts/light_job.sh uninstalls it first)")
    with tempfile.TemporaryDirectory(prefix="colab-sim-") as tmp:
        for index, name in enumerate(args.notebooks):
            seconds = simulate(ROOT / name, Path(tmp))
            note = " (its first cell installed the course)" if index == 0 else ""
            print(f"colab simulation: {name} ran in {seconds:.0f} s{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
