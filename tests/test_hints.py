"""No hint gives the reference solution away.

A hint should lead a learner towards the answer; the last step is the Show
solution button. This test compares every hint of every registered exercise
with the statements of its reference function and fails when a hint contains
one of them.

How a match is found:

* The reference's source is parsed with :mod:`ast`. Every simple statement of
  its body is collected, recursively (so the bodies of nested functions,
  loops and ``with`` blocks count), and so is the expression it computes
  (``return EXPR``, ``name = EXPR``, a bare call), because a hint that says
  "return EXPR" gives the statement away without writing ``return``. Each is
  unparsed, which normalizes spacing, parentheses and quotes.
* Code in a hint is found two ways. Fragments that parse as Python (text in
  backticks, the whole hint, and the hint's clauses split at ": ", "; ",
  ". " and ", then ") are parsed and unparsed the same way, every statement and
  sub-expression of them. And, for code written inline in prose, the hint's
  text with all whitespace removed and double quotes turned into single ones
  is searched for each statement normalized the same way.

Threshold: a statement is compared only when the expression it computes has at
least ``MIN_NODES`` expression nodes of the syntax tree. ``return x``,
``x.size`` or ``a @ b`` (one to three nodes) are the vocabulary of any hint,
not a solution; ``P('b', 'a')`` (four: the call, the name and two strings) is
the whole answer to an exercise, so four is the smallest size that matters.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

import pytest

from jaxcourse.exercises import by_chapter, get

#: The smallest statement (in expression nodes) that a hint may not contain.
MIN_NODES = 4

#: Simple statements whose computed expression is compared too.
_WITH_VALUE = (ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For,
             ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try,
             ast.Match)


def _size(node: ast.AST) -> int:
    """Number of expression nodes in ``node`` (contexts and operators excluded)."""
    return sum(isinstance(n, ast.expr) for n in ast.walk(node))


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def reference_statements(function) -> set[str]:
    """The reference's statements and their expressions, unparsed (big enough)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, _COMPOUND) \
                or _is_docstring(node):
            continue
        value = getattr(node, "value", None) if isinstance(node, _WITH_VALUE) else None
        if _size(value if value is not None else node) < MIN_NODES:
            continue
        found.add(ast.unparse(node))
        if value is not None:
            found.add(ast.unparse(value))
    return found


def _fragments(hint: str) -> list[str]:
    """Pieces of a hint that may be code: backticks, the hint, its clauses."""
    pieces = re.findall(r"`([^`]+)`", hint) + [hint]
    pieces += [p.strip(" .,") for p in re.split(r": |; |\. |, then ", hint)]
    return pieces


def hint_code(hint: str) -> set[str]:
    """Every statement and sub-expression of the hint's parseable fragments."""
    found: set[str] = set()
    for piece in _fragments(hint):
        try:
            tree = ast.parse(piece)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.stmt, ast.expr)):
                found.add(ast.unparse(node))
    return found


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text).replace('"', "'")


def leaked_statements(hint: str, statements: set[str]) -> list[str]:
    """The reference statements that ``hint`` contains."""
    code = hint_code(hint)
    squeezed = _squeeze(hint)
    return sorted(s for s in statements if s in code or _squeeze(s) in squeezed)


EXERCISES = [eid for ids in by_chapter().values() for eid in ids]


def test_the_matcher_finds_code_in_prose_and_ignores_short_statements() -> None:
    def reference(params, batch, mesh):
        params = jax.device_put(params, NamedSharding(mesh, P()))  # noqa: F821
        x = batch
        return params, x

    statements = reference_statements(reference)
    assert "jax.device_put(params, NamedSharding(mesh, P()))" in statements
    assert not any(s in ("x = batch", "return (params, x)") for s in statements)
    inline = "Return jax.device_put(params,  NamedSharding(mesh, P( )))."
    assert leaked_statements(inline, statements)
    quoted = "Try `jax.device_put( params, NamedSharding(mesh, P()) )` first"
    assert leaked_statements(quoted, statements)
    assert not leaked_statements("jax.device_put replicates with P().", statements)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_no_hint_states_the_reference(exercise_id: str) -> None:
    exercise = get(exercise_id)
    statements = reference_statements(exercise.reference)
    leaks = {
        number: leaked
        for number, hint in enumerate(exercise.hints, start=1)
        if (leaked := leaked_statements(hint, statements))
    }
    assert not leaks, (
        f"{exercise_id}: hints give the reference's statements away "
        f"(hint number: statements): {leaks}"
    )
