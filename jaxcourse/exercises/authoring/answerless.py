"""The course without its answers: what a submission runs against, and a release.

A reference answer, and a named mistake (a wrong answer derived from the
right one: its helpers compute the right one first), are *answer functions*.
Where a learner's code runs for a grade, none of them may run: then a
borrowed answer, however it is reached (an import, a course helper that
calls its argument, a replaced detector, the source read and ``exec``'d),
computes nothing, and no grade depends on a tripwire inside the learner's
own process (:mod:`jaxcourse.exercises.grading.borrowing` stays, for the reason it
shows).

- :func:`answer_functions` names them, from the registry: every exercise's
  reference and every mistake's function that is a top-level function of
  the content package.
- :func:`withhold` turns a module's source into one whose answer functions
  keep their names, signatures and docstrings, and raise
  :func:`~jaxcourse.exercises.checking.class_release.withheld` instead
  (:func:`~jaxcourse.exercises.authoring.release_stubs.stub_source`; the private
  helpers only they used go too). A class release
  (:mod:`jaxcourse.exercises.release`) writes its modules through it.
- :func:`write_graded_copy` writes the course copy that a submission's
  process imports (:mod:`jaxcourse.exercises.grading.runner`): the engine, and the
  content package with every answer function withheld, the editions' texts
  without the solutions they translate, no notebook, no published solution,
  and stores that hold each case's time limit but no output (the grader
  judges outside, from the full stores).
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

from jaxcourse.course import content_packages

from ..checking import references
from ..checking.references import writer
from ..checking.registry import _REGISTRY, exercise_ids
from .release_stubs import functions_in, stub_source

__all__ = [
    "answer_functions",
    "imported_names",
    "store_text",
    "texts_without_solutions",
    "withhold",
    "write_graded_copy",
]

# What never goes into a graded copy: notebooks (the masters hold the
# answers), published solutions, the stores (written again, without outputs)
# and the editions' texts (written again, without the solutions).
_LEFT_OUT = ("*.ipynb", ".ipynb_checkpoints", "__pycache__", "*.pyc",
             "*_solutions.json", "*" + references.SUFFIX, "*_texts.json",
             "class_release.json")


def _origin(function: object) -> tuple[str, str] | None:
    """Return ``(module, name)`` of the top-level function behind ``function``."""
    for _ in range(20):  # a partial of a partial, a wrapper of a wrapper
        if isinstance(function, functools.partial):
            function = function.func
            continue
        try:
            inner = inspect.unwrap(function)  # type: ignore[arg-type]
        except ValueError:
            return None
        if inner is function:
            break
        function = inner
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None)
    if isinstance(module, str) and isinstance(name, str) and name.isidentifier():
        return module, name
    return None  # a lambda or a nested function: inside one that is withheld


def answer_functions(package: str | None = None) -> dict[str, set[str]]:
    """Return, by module of ``package``, the answer functions it defines.

    ``package`` is by default every package that holds the course's topics
    (:func:`jaxcourse.course.content_packages`).

    Every registered exercise's reference and every named mistake's function
    (every topic imported first), where it is a top-level function of a
    module of ``package``. A library function of the engine that a mistake
    calls is not one: the chapters use it.
    """
    exercise_ids()
    packages = (package,) if package else content_packages()
    found: dict[str, set[str]] = {}
    for exercise in _REGISTRY.values():
        for function in (exercise.reference, *(m.function for m in exercise.mistakes)):
            origin = _origin(function)
            if origin and origin[0].split(".", 1)[0] in packages:
                found.setdefault(origin[0], set()).add(origin[1])
    return found


def withhold(source: str, names: set[str] | frozenset[str],
             keep: set[str] | frozenset[str] = frozenset()) -> str:
    """Return ``source`` with the top-level functions ``names`` withheld.

    Names it does not define at its top level are ignored; a source that
    defines none of them is returned as it is. The private helpers only
    they used go too, but not those in ``keep`` (:func:`imported_names`).
    """
    tree = ast.parse(source)
    present = {n.name for n in tree.body
               if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)} & set(names)
    return stub_source(source, sorted(present), keep) if present else source


def imported_names(folder: Path) -> set[str]:
    """Return every name that a module under ``folder`` takes from another.

    ``from m import a`` gives ``a``; ``m.a`` gives ``a`` too (a module
    imported whole): a private helper that another module uses is kept.
    """
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
    return names


def texts_without_solutions(path: Path) -> str:
    """Return an edition's table of texts without the solutions it translates.

    The table maps each text a learner reads to its translation, the shown
    solution (the reference's source) included: those entries stay behind,
    and so does any entry that holds a function.
    """
    solutions = {e.solution_source() for e in _REGISTRY.values()}
    table = json.loads(path.read_text(encoding="utf-8"))
    kept = {text: translation for text, translation in table.items()
            if text not in solutions and not functions_in(text)
            and not functions_in(translation)}
    return json.dumps(kept, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def store_text(name: str, module_file: Path, entries: dict) -> str:
    """Return a store of ``entries`` under the fingerprint of ``module_file``'s copy.

    The fingerprint is that of module ``name`` as it is in the copy (its
    digest, and those of the copy's modules it imports), so a lookup there
    finds the store fresh; write it once every file it covers is in place.

    Raises
    ------
    FileNotFoundError
        If a module the fingerprint covers is not in the copy.
    """
    fingerprint = references.fingerprint(
        SimpleNamespace(__name__=name, __file__=str(module_file)))
    # Each digest from the copy itself: the engine may have changed since.
    out = module_file.parents[name.count(".")]
    roots = {top: out for top in {n.split(".", 1)[0] for n in fingerprint["sources"]}}
    for source in fingerprint["sources"]:
        found = references._module_file(source, roots)
        if found is None:
            raise FileNotFoundError(f"{source} is not in {out}")
        fingerprint["sources"][source] = references._digest(found)
    return writer.serialize(entries, fingerprint)


def _limits_only(entries: dict) -> dict:
    """Return store entries with every output left out, the time limits kept."""
    kept = copy.deepcopy(entries)
    for entry in kept.values():
        if not isinstance(entry, dict) or "same_as" in entry:
            continue
        entry["reference"] = [None] * len(entry.get("reference", []))
        entry["mistakes"] = [[None] * len(row) for row in entry.get("mistakes", [])]
    return kept


def _module_name(folder: Path, path: Path) -> str:
    parts = [folder.name, *path.relative_to(folder).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def write_graded_copy(folders: list[Path], target: Path) -> None:
    """Write the course copy a submission runs against into ``target``.

    Parameters
    ----------
    folders : list of Path
        The course's folders (the engine's and the content package's), as
        the grader fingerprints them; each is written as ``target / name``.
    target : Path
        An empty or missing folder.
    """
    answers = answer_functions()
    stores = []
    for folder in folders:
        shutil.copytree(folder, target / folder.name,
                        ignore=shutil.ignore_patterns(*_LEFT_OUT))
    # A private helper that another content package imports stays too.
    content = content_packages()
    shared = set().union(*(imported_names(target / folder.name) for folder in folders
                           if folder.name in content))
    for folder in folders:
        destination = target / folder.name
        keep = imported_names(destination)
        if folder.name in content:
            keep |= shared
        for path in sorted(destination.rglob("*.py")):
            name = _module_name(destination, path)
            if answers.get(name):
                source = path.read_text(encoding="utf-8")
                path.write_text(withhold(source, answers[name], keep),
                                encoding="utf-8")
            store = references.store_path(folder / path.relative_to(destination))
            parsed = references._read(store) if store.is_file() else None
            if parsed is not None:
                stores.append((name, path, parsed.entries))
        for texts in folder.glob("*_texts.json"):
            (destination / texts.name).write_text(texts_without_solutions(texts),
                                                  encoding="utf-8")
    for name, path, entries in stores:  # every file they cover written
        try:
            text = store_text(name, path, _limits_only(entries))
        except (FileNotFoundError, OSError, ValueError):
            continue  # no limits stored: each case's default limit applies
        references.store_path(path).write_text(text, encoding="utf-8")
