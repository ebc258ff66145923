"""A class release's sources: the references' bodies withheld, notebooks sent home.

Pure transformations of text, which :mod:`jaxcourse.exercises.release` applies
while it writes a release:

- :func:`stub_source` turns a module that defines exercises into its release
  version: every reference function keeps its name, signature, decorators and
  docstring, so the exercises register exactly as before (the stored outputs'
  signatures name the same functions), but its body becomes
  ``raise withheld(__name__, "<name>")``; the private helpers that only the
  references used go too (:func:`prune`).
- :func:`release_install_cell` rewrites a student notebook's first cell, which
  installs the public course (with its answers) where none is installed, to
  put the release's own package first on the path instead.
- :func:`body_key` is the normalised form of a function's body that the tests
  compare, so that "the release holds no reference's body" is checked, not
  assumed.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "INSTALL_BLOCK",
    "STUB_HEADER",
    "body_key",
    "functions_in",
    "prune",
    "release_cells",
    "release_install_cell",
    "stub_source",
]

#: The first lines of a module made by :func:`stub_source`.
STUB_HEADER = (
    "# A class release's version of this module, written by\n"
    "# `python -m jaxcourse.exercises.release`: the exercises are the course's,\n"
    "# but every reference answer's body is withheld. A Check judges from the\n"
    "# reference outputs stored beside this file.\n"
)
_IMPORT = "from jaxcourse.exercises.checking.class_release import withheld\n"

#: The public course's install block of a student notebook's first cell.
INSTALL_BLOCK = re.compile(
    r'if importlib\.util\.find_spec\("jaxcourse"\) is None:\n'
    r'    subprocess\.run\(\[sys\.executable, "-m", "pip", "install"[^\n]*\n'
    r"    importlib\.invalidate_caches\(\)\n"
)
_RELEASE_BLOCK = '''\
# A class release: its own course package, without the reference answers, is
# in the folder above this one (or installed from it with `pip install`).
from pathlib import Path  # noqa: E402
for _up in Path.cwd().parents[:2]:
    if (_up / "jaxcourse" / "exercises" / "class_release.json").is_file():
        sys.path.insert(0, str(_up))
        importlib.invalidate_caches()
        break
'''


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def _start(node: ast.stmt) -> int:
    """Return the first line of a statement, its decorators included (1-based)."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _replace_lines(source: str, edits: list[tuple[int, int, str]]) -> str:
    """Replace lines ``first..last`` (1-based, inclusive) by text, bottom up."""
    lines = source.splitlines(keepends=True)
    for first, last, text in sorted(edits, reverse=True):
        lines[first - 1:last] = [text] if text else []
    return "".join(lines)


def stub_source(source: str, names: Iterable[str],
                keep: Iterable[str] = ()) -> str:
    """Return ``source`` with the bodies of the top-level functions ``names`` withheld.

    Parameters
    ----------
    source : str
        A module that defines exercises (``solutions/bayes.py``).
    names : iterable of str
        Its reference functions (or other answer functions), all defined at
        the module's top level; they are never pruned, being its interface.
    keep : iterable of str
        More private names not to prune: those other modules import.

    Returns
    -------
    str
        The release's version: :data:`STUB_HEADER`, the import of
        :func:`~jaxcourse.exercises.checking.class_release.withheld`, each reference
        reduced to its decorators, signature and docstring and a ``raise``,
        and the private helpers left unused :func:`prune` d away.

    Raises
    ------
    ValueError
        If a name is not a function defined at the top level.
    """
    wanted = set(names)
    tree = ast.parse(source)
    edits: list[tuple[int, int, str]] = []
    found = set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or \
                node.name not in wanted:
            continue
        found.add(node.name)
        body = node.body
        kept = 1 if _is_docstring(body[0]) else 0
        indent = " " * body[0].col_offset
        stub = f'{indent}raise withheld(__name__, "{node.name}")\n'
        if body[0].lineno == node.lineno:  # "def f(x): return x": no lines to keep
            bare = copy.deepcopy(node)
            bare.body = [ast.Pass()]
            header = ast.unparse(ast.fix_missing_locations(bare)).rsplit("\n", 1)[0]
            edits.append((_start(node), node.end_lineno or node.lineno,
                          f"{header}\n    raise withheld(__name__, \"{node.name}\")\n"))
            continue
        first = body[kept - 1].end_lineno + 1 if kept else body[0].lineno
        edits.append((first, node.end_lineno or first, stub))
    missing = wanted - found
    if missing:
        raise ValueError(f"not functions at the module's top level: {sorted(missing)}")
    stubbed = _replace_lines(source, edits)
    return prune(_with_import(stubbed), keep={*wanted, *keep})


def _with_import(source: str) -> str:
    """Insert the header and the import of ``withheld`` where imports may go."""
    tree = ast.parse(source)
    after = 0
    for node in tree.body:
        if _is_docstring(node) and after == 0 and node is tree.body[0]:
            after = node.end_lineno or 0
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            after = node.end_lineno or after
    lines = source.splitlines(keepends=True)
    lines.insert(after, _IMPORT)
    return STUB_HEADER + "".join(lines)


def _used_names(tree: ast.Module) -> set[str]:
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):  # names exported by __all__ are used
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            used |= {c.value for c in ast.walk(node.value)
                     if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return used


def prune(source: str, keep: Iterable[str] = ()) -> str:
    """Remove the private top-level definitions that nothing in ``source`` uses.

    Once the references' bodies are gone, a helper only they called (part
    of an answer) is unused: it goes, then what only it used, until nothing
    changes. Only names starting with ``_``, which no other module imports
    by convention, and only functions, classes and single-name assignments;
    never the names in ``keep``.
    """
    while True:
        tree = ast.parse(source)
        used = _used_names(tree) | set(keep)
        edits = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef |
                          ast.ClassDef):
                name = node.name
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) \
                    else [node.target]
                if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                    continue
                name = targets[0].id
            else:
                continue
            if name.startswith("_") and not name.startswith("__") and \
                    name not in used:
                edits.append((_start(node), node.end_lineno or node.lineno, ""))
        if not edits:
            return source
        source = _replace_lines(source, edits)


def release_install_cell(source: str) -> str | None:
    """Return a first cell that uses the release's package, or None if it has none.

    The student notebooks' first cell installs the public course (which holds
    the answers) where no course is installed. In a release it puts the
    release's folder first on the path instead, when the notebook sits in it,
    and never reaches the internet.
    """
    if not INSTALL_BLOCK.search(source):
        return None
    rewritten = INSTALL_BLOCK.sub(lambda _: _RELEASE_BLOCK, source, count=1)
    # The cell's first comment says that it installs the course: not here.
    first, _, rest = rewritten.partition("\n")
    return rest if first.startswith("#") else rewritten


def release_cells(notebook: Any) -> None:
    """Make a student notebook's cells those a class hands out, in place.

    Its first cell uses the release's package instead of installing the
    public course (:func:`release_install_cell`), and the first Markdown cell
    that names the Show-solution button says that it stays off until the
    teacher publishes the solutions (in the notebook's language). The class
    release's notebooks and the nbgrader course folder's sources
    (:mod:`jaxcourse.exercises.authoring.nbgrader`) both go through here, so
    that a notebook from either matches nbgrader's read-only cells.
    """
    from ...messages import LANGUAGES, message

    for cell in notebook.cells:
        if cell.cell_type == "code":
            rewritten = release_install_cell(cell.source)
            if rewritten is not None:
                cell.source = rewritten
                break
    # The notebook's language, else the one whose button name it uses (a
    # chapter written in one language carries no language of its own).
    said = notebook.metadata.get("jaxcourse", {}).get("language")
    for language in [said] if said in LANGUAGES else LANGUAGES:
        button = message("show_solution", language)
        for cell in notebook.cells:
            if cell.cell_type == "markdown" and button in cell.source:
                note = message("release_solution_note", language)
                if note not in cell.source:
                    cell.source = f"{cell.source.rstrip()}\n\n{note}"
                return


class _Names(ast.NodeTransformer):
    """Rename a function's own names to ``_0``, ``_1``, ... by first use.

    Only its own: arguments, what it assigns, its inner functions. Global and
    built-in names (``jnp``, ``sorted`` against ``set``) keep theirs, as they
    change what the code does.
    """

    def __init__(self, own: set[str]) -> None:
        self.own = own
        self.names: dict[str, str] = {}

    def rename(self, name: str) -> str:
        if name not in self.own:
            return name
        return self.names.setdefault(name, f"_{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(id=self.rename(node.id), ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.rename(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.rename(node.name)
        node.returns = None
        self.generic_visit(node)
        return node


def _own_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Return the names a function binds: arguments, assignments, definitions."""
    own = set()
    for node in ast.walk(function):
        if isinstance(node, ast.arg):
            own.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            own.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef |
                        ast.ClassDef) and node is not function:
            own.add(node.name)
    return own


def body_key(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """Return a function's body, normalised: its names, comments and layout gone.

    The docstring is left out, and every name the function binds (arguments
    first, then the others by first use) becomes ``_0``, ``_1``, ...: two
    bodies that differ only in those names, comments and formatting give the
    same key. None for a body that is only a docstring.
    """
    body = function.body[1:] if _is_docstring(function.body[0]) else function.body
    if not body:
        return None
    names = _Names(_own_names(function))
    arguments = function.args
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        names.rename(arg.arg)
    # Parsed afresh from its text, so that renaming leaves the tree given intact.
    copy = ast.parse("\n".join(ast.unparse(statement) for statement in body))
    return ast.dump(names.visit(copy), annotate_fields=False)


def functions_in(source: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function defined in ``source``, at any depth, and in its strings.

    A string constant that parses as Python with a function in it (a worker
    script that a harness launches) counts too. A source that does not parse
    has none.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                "def " in node.value:
            found += functions_in(node.value)
    return found
