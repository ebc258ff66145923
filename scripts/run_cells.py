"""Run a notebook's code cells in one Python process, without Jupyter.

For machines that have JAX but no Jupyter (a TPU VM lent for a measurement):
every code cell runs in order in one namespace, as a kernel would run them.
Line magics (``%config``) and shell lines (``!``) are skipped; figures go to
matplotlib's Agg backend; a cell tagged ``raises-exception`` may raise.
Prints one line per cell and, last, a JSON summary (cells run, seconds, the
first failure).

Usage: ``python scripts/run_cells.py book/03_bayes.ipynb [--stop-after N]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the cells; exit 1 at the first unexpected error."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--stop-after", type=int, default=None,
                        help="run only the first N code cells")
    args = parser.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    cells = json.loads(args.notebook.read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"][:args.stop_after]
    os.chdir(args.notebook.resolve().parent)
    namespace: dict = {"__name__": "__main__"}
    started = time.perf_counter()
    failure = None
    for number, cell in enumerate(code):
        source = "".join(cell["source"])
        if source.startswith("%%"):
            print(f"[{number}] skipped (cell magic)")
            continue
        lines = ["pass" if line.lstrip().startswith(("%", "!")) else line
                 for line in source.splitlines()]
        tags = cell.get("metadata", {}).get("tags", [])
        t0 = time.perf_counter()
        try:
            exec(compile("\n".join(lines), f"<cell {number}>", "exec"), namespace)
        except Exception as error:  # a cell's own error: report it and stop
            if "raises-exception" in tags:
                print(f"[{number}] raised as tagged: {type(error).__name__}")
                continue
            failure = f"cell {number}: {type(error).__name__}: {error}"
            traceback.print_exc()
            break
        print(f"[{number}] ok in {time.perf_counter() - t0:.1f} s", flush=True)
    summary = {"notebook": str(args.notebook), "cells": len(code),
               "seconds": round(time.perf_counter() - started, 1), "failure": failure}
    print(json.dumps(summary))
    return 0 if failure is None else 1


if __name__ == "__main__":
    sys.exit(main())
