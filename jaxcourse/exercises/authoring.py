"""Generate the student notebooks in ``exercises/`` from the solution notebooks.

Usage::

    python -m jaxcourse.exercises.authoring           # regenerate exercises/
    python -m jaxcourse.exercises.authoring --check   # exit 1 if out of date
    python -m jaxcourse.exercises.authoring --nbgrader DIR   # an nbgrader course

Every ``solutions/*.ipynb`` is a master: complete and executed. Its student
copy keeps every cell but replaces each region between ``### BEGIN SOLUTION``
and ``### END SOLUTION`` (nbgrader's markers) with ``# YOUR CODE HERE`` and
``raise NotImplementedError()`` (in Markdown: ``YOUR ANSWER HERE``), removes
each region between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``,
drops the cells tagged ``solution-only``, and clears every output, execution
count and stored widget state: what ``nbgrader generate_assignment`` makes of
the master, so the two never differ. Its cells keep their nbgrader metadata,
so that nbgrader grades this copy like its own.

The masters also carry nbgrader's cell metadata, which this module writes
(and ``--check`` verifies): a cell with a solution region is a solution cell,
each ``check_panel(...)`` cell an autograded test cell worth
:data:`TEST_POINTS`, ending with a hidden :func:`~jaxcourse.exercises.autograde`
call that scores partial credit, and every other cell is read-only. With
``--nbgrader DIR`` it writes a course folder for nbgrader: ``DIR/source/
<chapter>/<notebook>.ipynb``, ``DIR/nbgrader_config.py`` and a kernelspec
that runs this Python (see book/for_teachers.md).

Generating also writes the reference outputs stored beside each topic's module
(:mod:`jaxcourse.exercises.references`), those that are stale, so that a first
Check runs only the learner's function; ``--check`` reports stale ones too.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import sys
from pathlib import Path

import nbformat

from .. import course
from .references.writer import stale as stale_outputs
from .references.writer import write_all as write_outputs

__all__ = [
    "BEGIN",
    "BEGIN_HIDDEN",
    "END",
    "END_HIDDEN",
    "TEST_POINTS",
    "export_nbgrader",
    "generate",
    "main",
    "masters_out_of_date",
    "out_of_date",
    "strip_hidden_tests",
    "strip_solutions",
    "student_notebook",
    "update_masters",
    "with_nbgrader",
]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
SOLUTION_ONLY_TAG = "solution-only"
#: What a solution region becomes; nbgrader is configured with the same stubs.
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"
#: nbgrader points of each autograded test cell (one per exercise), and of a
#: Markdown answer, which a teacher grades by hand.
TEST_POINTS = 1
ANSWER_POINTS = 1
NBGRADER_SCHEMA = 3
COURSE_ID = "jax-hands-on"
ROOT = Path(__file__).resolve().parents[2]
# Where the masters are comes from the course's manifest (the engine never
# names the content package); every topic's master shares one folder.
MASTERS = ROOT / Path(course.topics()[0].exercises).parent
STUDENTS = ROOT / Path(course.topics()[0].student).parent
_MARKER = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>### (BEGIN|END) SOLUTION)\s*$")
_HIDDEN = re.compile(r"^[ \t]*(?P<marker>### (BEGIN|END) HIDDEN TESTS)\s*$")
# nbgrader takes any line containing these words for a marker, wherever they
# are in the line; the course only accepts them as lines of their own, so
# that both read a master the same way.
_NBGRADER_WORDS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS",
                   "END HIDDEN TESTS")
_GRADE_ID = re.compile(r"[^A-Za-z0-9_-]")


class AuthoringError(ValueError):
    """A master notebook's markers or check cells are malformed."""


def _refuse_loose_words(number: int, line: str) -> None:
    if any(word in line for word in _NBGRADER_WORDS):
        raise AuthoringError(
            f"line {number}: {line.strip()!r} would be read as a marker by "
            f"nbgrader; write {BEGIN!r}, {END!r}, {BEGIN_HIDDEN!r} and "
            f"{END_HIDDEN!r} on lines of their own, and nothing else like them")


def strip_solutions(source: str, cell_type: str = "code") -> str:
    """Replace every marked solution region of one cell's source.

    Parameters
    ----------
    source : str
        The cell's source.
    cell_type : {"code", "markdown"}
        Code regions become ``# YOUR CODE HERE`` + ``raise
        NotImplementedError()`` at the marker's indentation; Markdown regions
        become ``YOUR ANSWER HERE``.

    Returns
    -------
    str
        The student version of the source.
    """
    stub = CODE_STUB if cell_type == "code" else TEXT_STUB
    return _replace_regions(source, _MARKER, BEGIN, END, stub)


def strip_hidden_tests(source: str) -> str:
    """Remove every region between the hidden-tests markers, markers included.

    nbgrader removes them from the student's copy, and puts them back when it
    autogrades.
    """
    return _replace_regions(source, _HIDDEN, BEGIN_HIDDEN, END_HIDDEN, None)


def _replace_regions(source: str, marker: re.Pattern, begin: str, end: str,
                     stub: str | None) -> str:
    """Replace each region between ``begin`` and ``end`` lines by ``stub``.

    ``stub`` goes in at the begin marker's indentation; ``None`` removes the
    region. With a stub (solution regions), any other line that nbgrader
    would take for a marker is refused.
    """
    out: list[str] = []
    inside = False
    # split("\n"), as nbgrader does: the two agree on every line, the last
    # one included.
    for number, line in enumerate(source.split("\n"), start=1):
        match = marker.match(line)
        if match and match["marker"] == begin:
            if inside:
                raise AuthoringError(f"line {number}: nested {begin}")
            inside = True
            if stub is not None:
                indent = match["indent"] if "indent" in marker.groupindex else ""
                out += [indent + part for part in stub.split("\n")]
        elif match:
            if not inside:
                raise AuthoringError(f"line {number}: {end} without {begin}")
            inside = False
        else:
            if stub is not None and not _HIDDEN.match(line):
                _refuse_loose_words(number, line)
            if not inside:
                out.append(line)
    if inside:
        raise AuthoringError(f"{begin} is never closed")
    return "\n".join(out)


def _has_solution(source: str) -> bool:
    return any((m := _MARKER.match(line)) and m["marker"] == BEGIN
               for line in source.split("\n"))


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
    # chapter 8 differ only in it (dp_zh, dp_zh_hans): without it, the
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
        elif _has_solution(cell.source) and cell.cell_type == "code":
            checked = [panels[n] for n in _defined_names(cell.source) if n in panels]
            name = f"{checked[0]}-solution" if checked else f"solution-{own}"
            meta = _metadata(_grade_id(name), solution=True)
        elif _has_solution(cell.source):
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


#: A solution notebook's title and its student notebook's, so that the book's
#: search and table of contents tell the two pages apart: "Solutions 3: ..."
#: becomes "Chapter 3 exercises: ...", and "第 8 章解答" becomes "第 8 章練習"
#: (练习 in the Simplified-Chinese edition).
TITLES: tuple[tuple[re.Pattern, dict[str, str]], ...] = (
    (re.compile(r"^# Solutions (\d+): "), {"en": r"# Chapter \1 exercises: "}),
    (re.compile(r"^# 第 (\d+) 章解答"), {"zh-Hant": r"# 第 \1 章練習",
                                      "zh-Hans": r"# 第 \1 章练习"}),
)


def student_title(source: str, language: str = "en") -> str:
    """Return a master's first cell with its solutions title made the exercises'."""
    for pattern, replacements in TITLES:
        if pattern.match(source) and language in replacements:
            return pattern.sub(replacements[language], source, count=1)
    return source


def _language(source_name: str) -> str:
    for item in course.topics():
        if Path(item.exercises).name == source_name:
            return item.language
    return "en"


def student_notebook(
    master: nbformat.NotebookNode, source_name: str
) -> nbformat.NotebookNode:
    """Return the student version of an executed master notebook."""
    nb = nbformat.v4.new_notebook()
    # The master's kernel metadata, as its last execution stored it (see
    # scripts/run_notebook.py): what JupyterLab writes when it opens the notebook
    # with the course's kernel, so an untouched student notebook is not marked
    # modified. Copied, not asked of a kernel here, so generation is the same on
    # every machine.
    nb.metadata = {
        "kernelspec": master.metadata.get("kernelspec", {
            "display_name": "Python 3 (ipykernel)", "language": "python",
            "name": "python3"}),
        "language_info": master.metadata.get("language_info", {"name": "python"}),
    }
    nb.metadata["jaxcourse"] = {
        "generated_from": f"{MASTERS.name}/{source_name}",
        "note": "Generated by `python -m jaxcourse.exercises.authoring`; edit the "
        "solution notebook instead.",
    }
    # The cells keep their nbgrader metadata (as nbgrader's own release does):
    # nbgrader matches a submission's cells to the master's by their grade
    # ids, so a learner who got this copy rather than nbgrader's is graded
    # the same way.
    for index, cell in enumerate(with_nbgrader(master).cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if SOLUTION_ONLY_TAG in tags:
            continue
        source = strip_solutions(strip_hidden_tests(cell.source), cell.cell_type)
        if index == 0 and cell.cell_type == "markdown":
            source = student_title(source, _language(source_name))
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(source)
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(source)
        else:
            new = nbformat.v4.new_raw_cell(source)
        if tags:
            new.metadata["tags"] = list(tags)
        new.metadata["nbgrader"] = dict(cell.metadata["nbgrader"])
        new.id = cell.get("id", new.id)
        nb.cells.append(new)
    nbformat.validate(nb)
    return nb


def _render(master_path: Path) -> str:
    master = nbformat.read(master_path, as_version=4)
    return nbformat.writes(student_notebook(master, master_path.name)) + "\n"


def generate(
    source_dir: Path = MASTERS, dest_dir: Path = STUDENTS
) -> list[Path]:
    """Write the student notebook of every master in ``source_dir`` to ``dest_dir``.

    Student notebooks whose master is gone are deleted. Returns the written
    paths.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    written = []
    masters = sorted(source_dir.glob("*.ipynb"))
    for master in masters:
        target = dest_dir / master.name
        target.write_text(_render(master), encoding="utf-8")
        written.append(target)
    names = {m.name for m in masters}
    for stale in dest_dir.glob("*.ipynb"):
        if stale.name not in names:
            stale.unlink()
    return written


def out_of_date(
    source_dir: Path = MASTERS, dest_dir: Path = STUDENTS
) -> list[str]:
    """Names of the student notebooks that differ from a fresh generation."""
    stale = []
    masters = sorted(source_dir.glob("*.ipynb"))
    for master in masters:
        target = dest_dir / master.name
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current != _render(master):
            stale.append(master.name)
    names = {m.name for m in masters}
    stale += [p.name for p in dest_dir.glob("*.ipynb") if p.name not in names]
    return sorted(stale)


def assignment_name(master: Path) -> str:
    """Return a master's nbgrader assignment: its chapter (``03_bayes``)."""
    return master.stem.removesuffix("_exercises")


NBGRADER_CONFIG = '''\
"""nbgrader's settings for the JAX course's exercise notebooks.

Generated by `python -m jaxcourse.exercises.authoring --nbgrader`. Each chapter
is an assignment (source/<chapter>/); `nbgrader generate_assignment <chapter>`
releases the student notebook, which equals the course's exercises/ copy.
"""

c = get_config()  # noqa: F821 (nbgrader defines it)

c.CourseDirectory.course_id = {course_id!r}
# A check runs an exercise on several inputs (some in several processes):
# nbgrader's default of 30 s per cell is too short on a small machine.
c.Execute.timeout = {timeout}
# The stubs of the course's own student notebooks, so that both are the same.
c.ClearSolutions.code_stub = {{"python": {code_stub!r}}}
c.ClearSolutions.text_stub = {text_stub!r}
'''


def export_nbgrader(
    dest: Path,
    source_dir: Path = MASTERS,
    chapters: list[str] | None = None,
    *,
    course_id: str = COURSE_ID,
    timeout: int = 300,
) -> list[Path]:
    """Write an nbgrader course folder for the masters in ``source_dir``.

    ``dest/source/<chapter>/<master name>`` holds each master with its hidden
    tests and nbgrader metadata (:func:`with_nbgrader`), without outputs and
    without its ``solution-only`` cells (a tag nbgrader does not know);
    ``dest/nbgrader_config.py`` sets the stubs and the time limit; and
    ``dest/jupyter/kernels/python3`` is a kernelspec running this Python, for
    nbgrader installed in another environment (``JUPYTER_PATH=dest/jupyter``).

    Parameters
    ----------
    dest : Path
        The course folder (created if needed; existing sources are replaced).
    source_dir : Path
        The masters.
    chapters : list of str, optional
        Only these chapters (e.g. ``["03_bayes"]``); default: all.
    course_id : str
        nbgrader's course id (the exchange's name for the course).
    timeout : int
        Seconds per cell when nbgrader executes a notebook.

    Returns
    -------
    list of Path
        The source notebooks written.
    """
    from .nbgrader import write_kernelspec

    masters = {assignment_name(p): p for p in sorted(source_dir.glob("*.ipynb"))}
    unknown = sorted(set(chapters or ()) - set(masters))
    if unknown:
        raise AuthoringError(
            f"no master for chapter {', '.join(unknown)}; the chapters are: "
            f"{', '.join(masters)}")
    written = []
    for chapter, path in masters.items():
        if chapters and chapter not in chapters:
            continue
        nb = with_nbgrader(nbformat.read(path, as_version=4))
        nb.cells = [c for c in nb.cells
                    if SOLUTION_ONLY_TAG not in c.get("metadata", {}).get("tags", [])]
        for cell in nb.cells:
            cell.get("metadata", {}).pop("execution", None)
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        if nb.cells and nb.cells[0].cell_type == "markdown":
            # nbgrader releases this source to learners: the exercises' title.
            nb.cells[0].source = student_title(nb.cells[0].source, _language(path.name))
        nb.metadata.pop("widgets", None)
        target = dest / "source" / chapter / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    (dest / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(
        course_id=course_id, timeout=timeout, code_stub=CODE_STUB,
        text_stub=TEXT_STUB), encoding="utf-8")
    write_kernelspec(dest / "jupyter")
    return written


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=Path, default=MASTERS)
    parser.add_argument("--exercises", type=Path, default=STUDENTS)
    parser.add_argument("--check", action="store_true",
                        help="only report whether exercises/ and the masters' "
                        "nbgrader metadata are up to date")
    parser.add_argument("--nbgrader", type=Path, metavar="DIR",
                        help="write an nbgrader course folder to DIR instead")
    parser.add_argument("--chapter", action="append", metavar="NAME",
                        help="with --nbgrader: only this chapter (repeatable), "
                        "e.g. 03_bayes")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except AuthoringError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.nbgrader:
        for path in export_nbgrader(args.nbgrader, args.solutions, args.chapter):
            print(f"wrote {path}")
        print(f"wrote {args.nbgrader / 'nbgrader_config.py'}; next, in that "
              "folder: nbgrader generate_assignment <chapter>")
        return 0
    if args.chapter:
        print("error: --chapter goes with --nbgrader", file=sys.stderr)
        return 2
    if args.check:
        masters = masters_out_of_date(args.solutions)
        for name in masters:
            print(f"out of date: {MASTERS.name}/{name} (hidden tests or nbgrader "
                  "metadata)")
        stale = out_of_date(args.solutions, args.exercises)
        for name in stale:
            print(f"out of date: exercises/{name}")
        # The reference outputs stored beside each topic's module.
        outputs = stale_outputs()
        for path in outputs:
            print(f"out of date: {_shown(path)} (stored reference outputs)")
        if stale or masters or outputs:
            print("run `python -m jaxcourse.exercises.authoring` to regenerate")
        return 1 if stale or masters or outputs else 0
    for path in update_masters(args.solutions):
        print(f"execute it: python scripts/run_notebook.py {_shown(path)}")
    for path in generate(args.solutions, args.exercises):
        print(f"wrote {_shown(path)}")
    # The reference outputs, so that a first Check runs only the learner's
    # function; only the stale ones are computed again.
    write_outputs(echo=lambda line: print(f"reference outputs: {line}"))
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
