"""A notebook's answers as code: each learner's function, normalised, and a digest.

Two answers that differ only in their names, comments, docstrings, type
annotations, decorators or layout have the same *digest*: the SHA-256 of their
abstract syntax tree (:mod:`ast`) once every name is replaced by its order of
first appearance, docstrings, annotations and the top function's decorators
dropped. The grader uses it to list, for the teacher, the answers that equal the
reference answer (pasted from the Show-solution button) and the answers that
two submissions share (:func:`jaxcourse.exercises.grading.tables.class_flags`).
These are flags for a look, never a score: a short answer is often written
the same way by learners who never saw each other's.

What a notebook holds is read from its file, in the grading process, without
running it: :func:`notebook_answers`. The submission's own process uses
:func:`python_sources` too (:mod:`jaxcourse.exercises.grading.borrowing`).
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import textwrap
import tokenize
from collections.abc import Iterator, Mapping, Sequence

__all__ = [
    "answer_digests",
    "answer_marks",
    "digest",
    "notebook_answers",
    "python_sources",
    "reference_digest",
    "reference_marks",
    "reference_size",
]

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def python_sources(sources: Sequence[str]) -> list[str]:
    """Return the code cells as plain Python, IPython's syntax turned into calls.

    A cell with ``%timeit`` or ``!pip`` is not Python; IPython turns those
    lines into calls (``get_ipython().run_line_magic(...)``) before it runs a
    cell, and so does this, so that such a cell's definitions are read too.
    """
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()
    plain = []
    for source in sources:
        try:
            plain.append(manager.transform_cell(source))
        except Exception:  # IPython's own error at run time: keep the text
            plain.append(source)
    return plain


def _trees(sources: Sequence[str]) -> Iterator[ast.Module]:
    for source in python_sources(sources):
        try:
            yield ast.parse(source)
        except (SyntaxError, ValueError):
            continue  # a cell that does not run defines nothing


class _Canonical(ast.NodeTransformer):
    """Rename every name by its order of first appearance; drop what is not code."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def rename(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.rename(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg, node.annotation = self.rename(node.arg), None
        return node

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> ast.AST:
        node.names = [self.rename(n) for n in node.names]
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        return self.visit_Global(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name:
            node.name = self.rename(node.name)
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        # ``x: int = 1`` is ``x = 1``; a bare ``x: int`` does nothing.
        if node.value is None:
            return ast.Pass()
        return self.generic_visit(ast.Assign(targets=[node.target], value=node.value))

    def _body(self, node: ast.AST) -> ast.AST:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(
                body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]  # the docstring
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name, node.returns = self.rename(node.name), None
        return self._body(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        node.name, node.returns = self.rename(node.name), None
        return self._body(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.rename(node.name)
        return self._body(node)


def digest(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """Return the digest of one function's definition, normalised.

    The function's own name and decorators are left out, so an answer pasted
    under another name, or with ``@jax.jit`` added, has the digest of the
    original. The tree is copied first: ``definition`` is left as it was.
    """
    tree = ast.parse(ast.unparse(definition)).body[0]
    tree.decorator_list = []
    tree.name = "_"
    canonical = _Canonical().visit(tree)
    text = ast.dump(canonical, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# A docstring or comment line shorter than this many words is one that many
# learners write alike ("# the prior"): it is no sign of a paste.
_MARK_WORDS = 4


def _marks_of(text: str) -> set[str]:
    """Return the fingerprints of the prose in a definition's text.

    Its docstring's and comments' lines of :data:`_MARK_WORDS` words or
    more, lower-cased, spaces collapsed, each hashed: what a function pasted
    from the Show-solution button carries, and one written afresh does not.
    """
    lines: list[str] = []
    try:
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, _DEFINITIONS):
                lines += (ast.get_docstring(node) or "").splitlines()
    except (SyntaxError, ValueError):
        return set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                lines.append(token.string.lstrip("#"))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    found = set()
    for line in lines:
        words = line.lower().split()
        if len(words) >= _MARK_WORDS:
            found.add(hashlib.sha256(" ".join(words).encode()).hexdigest()[:8])
    return found


def answer_marks(answer: str) -> tuple[str, set[str]]:
    """Split an answer as :func:`answer_digests` writes it: digest, prose marks."""
    digest_part, _, marks = answer.partition(":")
    return digest_part, {m for m in marks.split(",") if m}


def reference_size(solution: str) -> int:
    """Return the size of a shown solution's first function: its code's AST nodes.

    Docstrings, names and layout do not count (its digest's tree). A short
    solution is written the same way by many learners who never saw it.
    """
    for tree in _trees([solution]):
        for statement in tree.body:
            if isinstance(statement, _DEFINITIONS):
                copy = ast.parse(ast.unparse(statement)).body[0]
                canonical = _Canonical().visit(copy)
                return sum(1 for _ in ast.walk(canonical))
    return 0


def answer_digests(sources: Sequence[str], names: Mapping[str, str]) -> dict[str, str]:
    """Return each exercise's answer digest: its function's last definition.

    The digest is followed by ``:`` and the fingerprints of the prose the
    definition carries (its docstring's and comments' longer lines), where it
    carries any: two answers are the same when their digests are, and one is
    pasted when it also carries the shown solution's prose
    (:func:`jaxcourse.exercises.grading.tables.class_flags`).

    Parameters
    ----------
    sources : sequence of str
        The notebook's code cells, in order.
    names : mapping of str to str
        Exercise id -> the name of the learner's function.

    Returns
    -------
    dict of str to str
        Exercise id -> the digest of the last top-level ``def`` of that name
        (the one the notebook leaves bound when it has run), ``""`` when the
        notebook defines none (an import, an assignment, nothing).
    """
    last: dict[str, tuple[ast.AST, str]] = {}
    for source in python_sources(sources):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue  # a cell that does not run defines nothing
        for statement in tree.body:
            if isinstance(statement, _DEFINITIONS):
                text = ast.get_source_segment(source, statement, padded=True) or ""
                last[statement.name] = (statement, text)
    found = {}
    for exercise_id, name in names.items():
        if name not in last:
            found[exercise_id] = ""
            continue
        statement, text = last[name]
        marks = ",".join(sorted(_marks_of(textwrap.dedent(text))))
        found[exercise_id] = digest(statement) + (f":{marks}" if marks else "")
    return found


def reference_marks(solution: str) -> set[str]:
    """Return the fingerprints of a shown solution's prose (:func:`answer_digests`)."""
    return _marks_of(solution)


def reference_digest(solution: str) -> str:
    """Return the digest of a shown solution's first function (``""`` if none)."""
    for tree in _trees([solution]):
        for statement in tree.body:
            if isinstance(statement, _DEFINITIONS):
                return digest(statement)
    return ""


def notebook_answers(path: str | os.PathLike[str],
                     names: Mapping[str, str]) -> dict[str, str]:
    """Return :func:`answer_digests` of a notebook file; ``{}`` if it cannot be read."""
    import nbformat

    try:
        nb = nbformat.read(os.fspath(path), as_version=4)
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
    except Exception:  # unreadable: its row already says so
        return {}
    return answer_digests(sources, names)
