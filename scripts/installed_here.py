"""Exit 0 when the environment can run this checkout's code; else say why.

``make self`` (every target that runs the course) calls it. The Makefile puts
this checkout first on ``PYTHONPATH``, so ``import jaxcourse`` finds it there,
whichever clone the shared environment's editable install points at; what
the checkout cannot provide itself is the distribution's metadata, in
particular the entry point through which the engine finds the course. So it
checks that ``jaxcourse`` is imported from here and that the installed entry
points are the ones this ``pyproject.toml`` declares. It never re-installs:
that would re-point every other clone's ``import jaxcourse`` too. ``make
setup`` (the only thing that re-installs) calls it with ``--stamp``, which
records the digest of ``pyproject.toml`` it installed from.
"""

import hashlib
import importlib.metadata
import json
import sys
import tomllib
from pathlib import Path

here = Path(__file__).resolve().parents[1]
stamp = Path(sys.prefix) / ".jaxcourse-pyproject.json"
pyproject = here / "pyproject.toml"
if sys.argv[1:] == ["--stamp"]:
    digest = hashlib.sha256(pyproject.read_bytes()).hexdigest()
    stamp.write_text(json.dumps({"sha256": digest, "from": str(here)}) + "\n")
    sys.exit(0)


def fail(why: str) -> None:
    """Say why, and what to run; exit 1."""
    print(f"error: {why}. Run `make setup` in this checkout: it installs the "
          "course into the shared environment from here (and so re-points "
          "every other clone's editable install at this one).", file=sys.stderr)
    sys.exit(1)


try:
    import jaxcourse
except ImportError as err:
    fail(f"jaxcourse cannot be imported ({err})")
if Path(jaxcourse.__file__).resolve().parents[1] != here:
    fail(f"jaxcourse is imported from {Path(jaxcourse.__file__).parent}, not from "
         f"this checkout (is {here} first on PYTHONPATH? the Makefile puts it there)")
project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
declared = {(group, name, value)
            for group, points in project.get("entry-points", {}).items()
            for name, value in points.items()}
declared |= {("console_scripts", name, value)
             for name, value in project.get("scripts", {}).items()}
try:
    installed = {(p.group, p.name, p.value)
                 for p in importlib.metadata.distribution("jaxcourse").entry_points}
except importlib.metadata.PackageNotFoundError:
    fail("the course is not installed in this environment (no jaxcourse metadata)")
if declared != installed:
    fail("the installed course's entry points differ from this checkout's "
         f"pyproject.toml (missing: {sorted(declared - installed)}, "
         f"extra: {sorted(installed - declared)})")
