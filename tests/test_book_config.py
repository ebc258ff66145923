"""The book's sources are the toc's files and nothing else, whatever the checkout holds.

`make book` builds in the checkout itself with ``-W``, so any Markdown or notebook
file outside the toc that Sphinx picks up (a README.md in ``.pytest_cache``, a
JupyterLab checkpoint, a screenshot folder's notes) becomes an orphan page and
fails the build. These tests read ``exclude_patterns`` the way Sphinx does and
check every document-like file, in the checkout as it is now (after pytest has
run: the cache exists) and in the folders the README's commands create.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sphinx.util.matching import Matcher
from toc import book_config, toc_files

REPO = Path(__file__).resolve().parents[1]
# The suffixes Jupyter Book 1 reads as pages.
DOC_SUFFIXES = {".md", ".ipynb", ".rst", ".myst"}

# Paths that `make test`, `make bench`, `make lab`, `make book`, running a notebook
# in place or `pip install -e .` leave in a checkout.
LEFT_BY_COMMANDS = [
    ".pytest_cache/README.md",
    ".ruff_cache/README.md",
    ".ipynb_checkpoints/README-checkpoint.md",
    "book/.ipynb_checkpoints/01_mlp-checkpoint.ipynb",
    "solutions/.ipynb_checkpoints/01_mlp_exercises-checkpoint.ipynb",
    ".benchmarks/README.md",
    "_build/html/_sources/book/index.md",
    "_build/jupyter_execute/book/01_mlp.ipynb",
    "_widget_js/widgets/README.md",
    "_widget_js/mathjax/README.md",
    "jaxcourse.egg-info/README.md",
    "tests/_artifacts/screenshots/notes.md",
    "benchmarks/README.md",
    ".github/workflows/README.md",
]


def _excluded() -> Matcher:
    return Matcher(book_config()["exclude_patterns"])


def _is_page(relative: str, toc: set[str]) -> bool:
    return str(Path(relative).with_suffix("")) in toc


@pytest.mark.parametrize("relative", LEFT_BY_COMMANDS)
def test_folders_left_by_commands_are_not_pages(relative: str) -> None:
    excluded = _excluded()
    # Sphinx prunes an excluded folder, so a match on any parent excludes it too.
    parents = [str(p) for p in reversed(Path(relative).parents) if str(p) != "."]
    assert excluded(relative) or any(excluded(p) for p in parents), (
        f"{relative} would become an orphan page of the book: add its folder to "
        "exclude_patterns in _config.yml"
    )


def test_every_document_in_the_checkout_is_in_the_toc_or_excluded() -> None:
    excluded, toc = _excluded(), set(toc_files())
    orphans = []
    for folder, dirs, files in os.walk(REPO):
        rel_folder = os.path.relpath(folder, REPO)
        rel_folder = "" if rel_folder == "." else rel_folder
        # Prune as Sphinx does; .git is never a source.
        dirs[:] = [d for d in dirs if d != ".git"
                   and not excluded(os.path.join(rel_folder, d))]
        for name in files:
            relative = os.path.join(rel_folder, name)
            if Path(name).suffix in DOC_SUFFIXES and not excluded(relative) \
                    and not _is_page(relative, toc):
                orphans.append(relative)
    assert orphans == [], (
        f"documents neither in _toc.yml nor excluded in _config.yml: {orphans}"
    )


def test_the_pytest_cache_exists_and_is_excluded(
    request: pytest.FixtureRequest,
) -> None:
    # The state the issue was found in: pytest has written its cache folder.
    request.config.cache.set("jaxcourse/book-config", True)
    readme = REPO / ".pytest_cache" / "README.md"
    assert readme.is_file()
    assert _excluded()(".pytest_cache")


def test_solution_and_exercise_pages_have_their_own_titles() -> None:
    # Search results and the table of contents list both pages of a chapter:
    # "Solutions 3: ..." (第 9 章解答) beside "Chapter 3 exercises: ..." (第 9 章練習).
    import nbformat

    from jaxcourse.course import topics

    root = Path(__file__).resolve().parents[1]
    titles = {}
    for item in topics():
        for path in (item.exercises, item.student):
            cell = nbformat.read(root / path, as_version=4).cells[0]
            titles[path] = cell.source.splitlines()[0]
        solved, student = titles[item.exercises], titles[item.student]
        assert solved != student, (item.key, solved)
        assert solved.startswith("# Solutions ") or "章解答" in solved, solved
    assert len(set(titles.values())) == len(titles), titles
