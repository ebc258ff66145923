"""The package's declared dependencies are what its chapters' modules import.

A learner on Colab or Kaggle gets ``jaxcourse`` by ``pip install``, which
brings exactly the dependencies ``pyproject.toml`` declares (and theirs). A
module a chapter imports that needs anything else fails there with
``ModuleNotFoundError`` (optax once did). This test builds such an
environment from the installed distributions, without the network: a folder
that holds only the declared distributions and their own dependencies (the
files each one's ``RECORD`` lists), and a Python started with ``-S -I`` that
sees nothing but that folder, the standard library and this checkout. Every
``jaxcourse`` module the chapters import must import there.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The chapters' imports of chapter-specific libraries (TensorFlow Datasets in
# chapter 1, PyTorch in chapter 2) come with the optional extras that name them.
EXTRAS = ("tensorflow", "torch")


def _name(requirement: str) -> str:
    name = re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]
    return name.lower().replace("_", "-")


def _closure(names: list[str]) -> set[str]:
    """The distributions ``names`` need, theirs included (installed ones only)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        for req in dist.requires or ():
            if "extra ==" not in req:
                todo.append(_name(req))
    return seen


def _declared() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = project["project"].get("optional-dependencies", {})
    wanted = list(project["project"]["dependencies"])
    for extra in EXTRAS:
        wanted += extras.get(extra, [])
    return [_name(r) for r in wanted]


def _chapter_modules() -> set[str]:
    """Every ``jaxcourse`` module the chapters (book/*.ipynb) import."""
    found: set[str] = set()
    for notebook in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            if source.startswith("%%"):  # a cell magic: a shell script, a file
                continue
            code = "\n".join(line for line in source.splitlines()
                             if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.ImportFrom) and node.module and \
                        node.module.startswith("jaxcourse"):
                    found.add(node.module)
                    found.update(f"{node.module}.{a.name}" for a in node.names)
                elif isinstance(node, ast.Import):
                    found.update(a.name for a in node.names
                                 if a.name.startswith("jaxcourse"))
    return found


def test_optax_and_the_engine_are_declared():
    declared = _declared()
    assert "optax" in declared and "nbformat" in declared and "ipython" in declared


def test_the_chapters_modules_import_with_only_the_declared_dependencies(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for name in sorted(_closure(_declared())):
        dist = md.distribution(name)
        for file in dist.files or ():
            source = Path(dist.locate_file(file))
            if ".." in file.parts or not source.is_file():
                continue
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.symlink_to(source)
    modules = sorted(_chapter_modules())
    assert "jaxcourse.devices" in modules and "jaxcourse.transformer" in modules
    code = (
        "import importlib, sys\n"
        f"sys.path[:0] = [{str(site)!r}, {str(ROOT)!r}]\n"
        "failed = {}\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError as error:\n"
        "        if error.name != name:\n"
        "            failed[name] = error.name\n"
        "    except ImportError:\n"
        "        pass  # a name imported from a module, not a module\n"
        "print(failed)\n")
    done = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "{}", (
        "modules the chapters import need undeclared packages: " + done.stdout)
