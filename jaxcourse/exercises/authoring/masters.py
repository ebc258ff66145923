"""The masters' nbgrader side: hidden tests and cell metadata, written and checked.

Every ``solutions/*.ipynb`` master carries nbgrader's cell metadata, which
this module writes (:func:`update_masters`) and checks
(:func:`masters_out_of_date`): each ``check_panel(...)`` cell is an
autograded test cell worth :data:`TEST_POINTS` that ends with a hidden
:func:`~jaxcourse.exercises.autograde` call scoring partial credit, a cell
with a solution region is a solution cell, and every other cell is
read-only (:func:`with_nbgrader`). It also says where the masters are
(:data:`MASTERS`, from the course's manifest).
"""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import nbformat

from ... import course
from .markers import (
    BEGIN_HIDDEN,
    END_HIDDEN,
    AuthoringError,
    has_solution,
    strip_hidden_tests,
)

__all__ = [
    "MASTERS",
    "TEST_POINTS",
    "hidden_tests",
    "masters_out_of_date",
    "update_masters",
    "with_nbgrader",
]

#: nbgrader points of each autograded test cell (one per exercise), and of a
#: Markdown answer, which a teacher grades by hand.
TEST_POINTS = 1
ANSWER_POINTS = 1
NBGRADER_SCHEMA = 3
ROOT = Path(__file__).resolve().parents[3]
# Where the masters are comes from the course's manifest (the engine never
# names the content package); every topic's master shares one folder.
MASTERS = ROOT / Path(course.topics()[0].exercises).parent
_GRADE_ID = re.compile(r"[^A-Za-z0-9_-]")


def _panel(source: str) -> tuple[str, str | None] | None:
    """Return the exercise id and answer of a cell that only calls ``check_panel``.

    Returns ``None`` for any other cell; refuses a ``check_panel`` call that
    shares its cell with other code, which nbgrader could not score alone.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    calls = [s for s in tree.body if isinstance(s, ast.Expr)
             and isinstance(s.value, ast.Call)
             and isinstance(s.value.func, ast.Name)
             and s.value.func.id == "check_panel"]
    if not calls:
        return None
    call = calls[0].value
    if len(tree.body) != 1 or not call.args or not isinstance(
            call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        raise AuthoringError(
            f"{source.strip()!r}: a check cell holds one call, "
            "check_panel(\"<topic>.<name>\", <function>), and nothing else "
            "(nbgrader scores the cell as a whole)")
    answer = ast.get_source_segment(source, call.args[1]) \
        if len(call.args) > 1 else None
    return call.args[0].value, answer


def hidden_tests(exercise_id: str, answer: str | None,
                 points: float = TEST_POINTS) -> str:
    """Return the hidden region that scores one check cell for nbgrader."""
    arguments = [json.dumps(exercise_id), *([answer] if answer else []),
                 f"points={points}"]
    return "\n".join([
        BEGIN_HIDDEN,
        "from jaxcourse.exercises import autograde",
        f"autograde({', '.join(arguments)})",
        END_HIDDEN,
    ])


def _grade_id(text: str) -> str:
    return _GRADE_ID.sub("-", text)


def _exercise_name(exercise_id: str) -> str:
    # A notebook's exercises share their topic, and the two editions of
    # chapter 9 differ only in it (dp_zh, dp_zh_hans): without it, the
    # generated edition carries the right grade ids already.
    return exercise_id.rsplit(".", 1)[-1]


def _defined_names(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef
                      | ast.ClassDef):
            names.append(statement.name)
        elif isinstance(statement, ast.Assign):
            names += [t.id for t in statement.targets if isinstance(t, ast.Name)]
    return names


def _metadata(grade_id: str, *, grade: bool = False, solution: bool = False,
              locked: bool = False, points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked,
            "schema_version": NBGRADER_SCHEMA, "solution": solution}
    if points is not None:
        meta["points"] = points
    return meta


def with_nbgrader(master: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return a copy of ``master`` with its hidden tests and nbgrader metadata.

    Idempotent. Each ``check_panel("<topic>.<name>", f)`` cell becomes an
    autograded test cell (``grade_id`` ``<name>``) with a hidden region that
    scores it (:func:`hidden_tests`); a code cell with a solution region
    becomes a solution cell (``<name>-solution`` when it defines the function
    a check cell checks); a Markdown cell with one becomes a manually graded
    answer (nbgrader grades Markdown solutions only by hand); every other
    cell is locked. The other grade ids come from the cells' ids.
    """
    nb = copy.deepcopy(master)
    panels = {}
    for cell in nb.cells:
        found = _panel(strip_hidden_tests(cell.source)) \
            if cell.cell_type == "code" else None
        if found and found[1]:
            panels.setdefault(found[1], _exercise_name(found[0]))
    used: set[str] = set()
    for index, cell in enumerate(nb.cells):
        own = cell.get("id") or f"{index}"
        visible = strip_hidden_tests(cell.source)
        found = _panel(visible) if cell.cell_type == "code" else None
        if found:
            visible = visible.rstrip()
            cell.source = f"{visible}\n{hidden_tests(*found)}"
            meta = _metadata(_grade_id(_exercise_name(found[0])), grade=True,
                             locked=True, points=TEST_POINTS)
        elif has_solution(cell.source) and cell.cell_type == "code":
            checked = [panels[n] for n in _defined_names(cell.source) if n in panels]
            name = f"{checked[0]}-solution" if checked else f"solution-{own}"
            meta = _metadata(_grade_id(name), solution=True)
        elif has_solution(cell.source):
            meta = _metadata(_grade_id(f"answer-{own}"), grade=True, solution=True,
                             points=ANSWER_POINTS)
        else:
            meta = _metadata(_grade_id(f"cell-{own}"), locked=True)
        base, number = meta["grade_id"], 1
        while meta["grade_id"] in used:
            number += 1
            meta["grade_id"] = f"{base}-{number}"
        used.add(meta["grade_id"])
        cell.metadata["nbgrader"] = meta
    return nb


def _nbgrader_state(nb: nbformat.NotebookNode) -> list[tuple]:
    return [(c.cell_type, c.source, c.get("metadata", {}).get("nbgrader"))
            for c in nb.cells]


def masters_out_of_date(source_dir: Path = MASTERS) -> list[str]:
    """Names of the masters whose hidden tests or nbgrader metadata are stale."""
    stale = []
    for path in sorted(source_dir.glob("*.ipynb")):
        master = nbformat.read(path, as_version=4)
        if _nbgrader_state(master) != _nbgrader_state(with_nbgrader(master)):
            stale.append(path.name)
    return stale


def update_masters(source_dir: Path = MASTERS) -> list[Path]:
    """Write the hidden tests and nbgrader metadata into every stale master.

    A cell whose source changes loses its outputs, so the master must be
    executed again (``python scripts/run_notebook.py``). Returns those
    masters; a master whose metadata alone changed keeps its outputs.
    """
    to_run = []
    for path in sorted(source_dir.glob("*.ipynb")):
        master = nbformat.read(path, as_version=4)
        new = with_nbgrader(master)
        if _nbgrader_state(master) == _nbgrader_state(new):
            continue
        changed = False
        for old, cell in zip(master.cells, new.cells, strict=True):
            if cell.source != old.source and cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
                changed = True
        nbformat.write(new, path)
        if changed:
            to_run.append(path)
    return to_run
