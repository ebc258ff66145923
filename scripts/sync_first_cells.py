"""Keep every notebook's Colab bootstrap in step with ``_config.yml``.

Usage: ``python scripts/sync_first_cells.py [--check]``

A notebook opened in Colab (or any fresh Jupyter) has no course package. The
first lines of its first code cell install it from the repository named in
``_config.yml`` (the one place the address lives); where the course is
installed they do nothing and print nothing, so stored outputs stay valid.
This script writes those lines into every notebook of ``book/`` and
``solutions/`` (the student notebooks inherit them when generated); with
``--check`` it only reports notebooks that are out of step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
# ruff: noqa: E501 (the template's install line is long by nature)
MARK = "# Colab or a fresh Jupyter: install the course first (does nothing here)."
# One line per statement reads best in a notebook; the long one is the install.
TEMPLATE = """{mark}
import importlib, importlib.util, subprocess, sys  # noqa: E401
if importlib.util.find_spec("jaxcourse") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "jaxcourse @ git+{url}@{branch}"], check=True)
    importlib.invalidate_caches()
"""


def bootstrap() -> str:
    """Return the bootstrap lines for the repository named in ``_config.yml``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]
    return TEMPLATE.format(
        mark=MARK, url=repo["url"], branch=repo.get("branch", "main")
    )


def with_bootstrap(source: str, block: str) -> str:
    """Return ``source`` with ``block`` at its top, replacing an older one."""
    if source.startswith(MARK):
        # The old block ends at its first blank line.
        source = source.split("\n\n", 1)[1] if "\n\n" in source else ""
    return block + "\n" + source.lstrip("\n")


def notebooks() -> list[Path]:
    """Return the executed notebooks whose first cell carries the bootstrap."""
    return sorted(
        p for folder in ("book", "solutions") for p in (ROOT / folder).glob("*.ipynb")
    )


def main() -> int:
    """Write (or with ``--check`` verify) the bootstrap in every notebook."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="only report stale notebooks"
    )
    args = parser.parse_args()
    block = bootstrap()
    stale = []
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        wanted = with_bootstrap(first.source, block)
        if first.source != wanted:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                first.source = wanted
                nbformat.write(nb, path)
    verb = "out of step" if args.check else "updated"
    for path in stale:
        print(f"{verb}: {path}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
