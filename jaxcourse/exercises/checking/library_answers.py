"""Library functions that return an exercise's answer: using one is borrowing.

The chapters' own tools compute what some exercises ask for (chapter 7's
``zero_bytes(...)["total"]`` is ``zero_bytes_per_device``'s answer; chapter
3's ``jax.value_and_grad(bayes.elbo, argnums=(0, 1))`` is
``elbo_value_and_grad``'s; chapter 1's ``jaxcourse.mlp.one_hot`` is
``one_hot``'s; chapter 6's ``scaling.state_bytes(...)["total"]`` is
``state_bytes_per_device``'s). Some are most of an answer, under a thin wrapper
of the learner's: chapter 6's ``scaling.predicted_collectives`` priced with
``ring_bytes`` is ``layout_bytes``'s, each policy's ``saved_residuals`` summed
is ``remat_policy``'s; chapter 7's ``param_specs("TP")``, with the weights
that do not divide kept whole, is ``tp_specs``'. A helper that does one small
step of an answer is not listed (``ring_bytes``; ``compiled_memory``, which
reads a program's ``memory_analysis()`` that ``step_memory`` must still
compile twice). A release ships those tools, since the chapters
call them, so the grader cannot take them away: it reads each submission's
notebook, in its own process (nothing the submission runs can change what it
finds), and an answer that uses one of :data:`LIBRARY_ANSWERS` for its
exercise is *borrowed*: zero, with the reason
(:func:`jaxcourse.exercises.grading.borrowing.verdicts`, ``how="library"``).

The table is kept complete by a test that searches each chapter's released
package for every function whose result equals an exercise's on its cases
(``tests/test_release_search.py``, which says what the search covers).

The check panel says so too, at once: :func:`function_library_answer` finds
the same use in a live function (its source, its helpers' and what its
globals name), and the panel adds "this is ``transformer.param_count``: write
the reasoning yourself" under the result (:func:`shown_name`), whether the
answer passes or not: the exercise asks for the reasoning, which the library
call skips.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping, Sequence

from .answers import python_sources

__all__ = ["LIBRARY_ANSWERS", "function_library_answer", "library_answer",
           "library_answers", "shown_name"]

#: Exercise id -> the library functions (``module.name``) whose result, as
#: called, is that exercise's answer. Keyed by id, as the engine names
#: exercises everywhere, never by the content package's module paths.
LIBRARY_ANSWERS: dict[str, tuple[str, ...]] = {
    "mlp.one_hot": ("jaxcourse.mlp.one_hot",),
    "bayes.elbo_value_and_grad": ("jaxcourse.bayes.elbo",),
    "scaling.state_bytes_per_device": ("jaxcourse.scaling.memory.state_bytes",),
    # The collectives the exercise asks to list; ring_bytes alone only prices
    # them (one rule of the chapter's table), and stays the learner's to use.
    "scaling.layout_bytes": ("jaxcourse.scaling.communication.predicted_collectives",),
    # Measured, not reasoned: each policy's residuals summed in the answer.
    "scaling.remat_policy": ("jaxcourse.scaling.memory.saved_residuals",),
    "transformer.count_params": ("jaxcourse.transformer.config.param_count",),
    "transformer.activation_bytes_per_token": (
        "jaxcourse.transformer.memory.residuals_per_token",),
    "transformer.flops_per_token": ("jaxcourse.transformer.config.flops_per_token",),
    # Megatron's splits, "TP"; the learner's wrapper adds only divisibility.
    "transformer.tp_specs": ("jaxcourse.transformer.layouts.param_specs",),
    "transformer.zero_bytes_per_device": ("jaxcourse.transformer.memory.zero_bytes",),
}


def _trees(sources: Sequence[str]) -> Iterator[ast.Module]:
    for source in python_sources(sources):
        try:
            yield ast.parse(source)
        except (SyntaxError, ValueError):
            continue


def _bound(statement: ast.stmt) -> set[str]:
    """Names a top-level statement binds (definitions, assignments, imports)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    return {n.id for n in ast.walk(statement)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _imports(trees: list[ast.Module]) -> dict[str, str]:
    """Return what each imported name stands for: ``alias`` -> ``module.name``."""
    found = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        found[alias.asname] = alias.name
                    else:
                        found[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _dotted(node: ast.AST, imports: Mapping[str, str]) -> str | None:
    """Return ``a.b.c`` with its first name resolved through ``imports``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([imports.get(node.id, node.id), *reversed(parts)])


def _closure(trees: list[ast.Module], name: str) -> list[ast.stmt]:
    """Return the top-level statements the learner's ``name`` reads, transitively."""
    definitions: dict[str, list[ast.stmt]] = {}
    for tree in trees:
        for statement in tree.body:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                continue  # resolved by _imports
            for bound in _bound(statement):
                definitions.setdefault(bound, []).append(statement)
    needed, todo, found = set(), [name], []
    while todo:
        current = todo.pop()
        if current in needed:
            continue
        needed.add(current)
        for statement in definitions.get(current, []):
            found.append(statement)
            todo += [n.id for n in ast.walk(statement) if isinstance(n, ast.Name)]
    return found


def _resolve(dotted: str) -> str | None:
    """Return ``module.qualname`` of the function ``dotted`` names, if any.

    Only names inside the course's packages are looked up (importing them
    is what the learner's notebook did anyway): a re-export such as
    ``jaxcourse.transformer.zero_bytes`` resolves to where it is defined.
    """
    from jaxcourse.course import content_packages

    packages = ("jaxcourse", *content_packages())
    if not dotted.startswith(tuple(f"{p}." for p in packages)):
        return None
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                value = getattr(value, part)
        except AttributeError:
            return None
        module = getattr(value, "__module__", None)
        qualname = getattr(value, "__qualname__", None)
        return f"{module}.{qualname}" if module and qualname else None
    return None


def _uses(statements: list[ast.stmt], imports: Mapping[str, str],
          target: str) -> bool:
    """Whether ``statements`` refer to the library function ``target``."""
    short = target.rpartition(".")[2]
    for statement in statements:
        for node in ast.walk(statement):
            dotted = None
            if isinstance(node, ast.Attribute) and node.attr == short:
                dotted = _dotted(node, imports)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                dotted = imports.get(node.id)
            elif isinstance(node, ast.Constant) and node.value == short:
                return True  # getattr(module, "zero_bytes"): named, not written
            if dotted is not None and dotted.rpartition(".")[2] == short and \
                    _resolve(dotted) == target:
                return True
    return False


def library_answer(sources: Sequence[str], exercise_id: str, name: str) -> str | None:
    """Return the library function that answers ``reference`` in these cells, if any.

    Parameters
    ----------
    sources : sequence of str
        The notebook's code cells.
    exercise_id : str
        The exercise's id, e.g. ``"mlp.one_hot"``.
    name : str
        The learner's function's name.

    Returns
    -------
    str or None
        The first function of :data:`LIBRARY_ANSWERS` that the learner's
        function, or what it reads of the notebook's definitions, refers to.
    """
    targets = LIBRARY_ANSWERS.get(exercise_id, ())
    if not targets:
        return None
    trees = list(_trees(sources))
    statements = _closure(trees, name)
    imports = _imports(trees)
    return next((t for t in targets if _uses(statements, imports, t)), None)


def library_answers(sources: Sequence[str],
                    exercises: Mapping[str, str]) -> dict[str, str]:
    """Return, by exercise id, the library function its answer uses (if any).

    ``exercises`` maps an id to the learner's function's name.
    """
    found = {}
    for exercise_id, name in exercises.items():
        hit = library_answer(sources, exercise_id, name)
        if hit is not None:
            found[exercise_id] = hit
    return found


def shown_name(target: str) -> str:
    """Return ``target`` as the chapters call it: its package and its name.

    ``jaxcourse.transformer.config.param_count`` is ``transformer.param_count``
    (the chapters import the package, which re-exports its modules' names).
    """
    parts = target.split(".")
    return f"{parts[1]}.{parts[-1]}" if len(parts) > 2 else target


def _names_read(code: types.CodeType) -> set[str]:
    """Return the global names ``code`` and the functions nested in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def _live_sources(function: Callable) -> tuple[list[str], dict[str, str]]:
    """Return the sources of ``function`` and of its helpers, and what names stand for.

    A helper is a plain function of the learner's that ``function`` reads
    from its globals (not one of the course's packages): its source joins
    the list, and so on. Every other global it reads that is a module, a
    function or a class is written ``name -> module.qualname``, as
    :func:`_imports` would have it from the notebook's import cells.
    """
    from jaxcourse.course import content_packages

    course = ("jaxcourse", *content_packages())
    sources: list[str] = []
    imports: dict[str, str] = {}
    todo, seen = [function], set()
    while todo:
        current = inspect.unwrap(todo.pop())
        if id(current) in seen or not isinstance(current, types.FunctionType):
            continue
        seen.add(id(current))
        try:
            sources.append(textwrap.dedent(inspect.getsource(current)))
        except (OSError, TypeError):
            continue  # no source to read (made by exec): nothing to say
        namespace = current.__globals__
        for name in _names_read(current.__code__):
            value = namespace.get(name)
            if isinstance(value, types.ModuleType):
                imports[name] = value.__name__
                continue
            module = getattr(value, "__module__", None) or ""
            qualname = getattr(value, "__qualname__", None)
            if isinstance(value, types.FunctionType) and \
                    module.split(".")[0] not in course:
                todo.append(value)  # the learner's own helper: read it too
            elif qualname:
                imports[name] = f"{module}.{qualname}"
    return sources, imports


def function_library_answer(exercise_id: str, function: Callable) -> str | None:
    """Return the library function of :data:`LIBRARY_ANSWERS` a live answer uses.

    The check panel's counterpart of :func:`library_answer`, which reads a
    notebook's cells: here the learner's function itself is read (its
    source, the helpers of the learner's that it calls, and what its
    globals are), so that the panel can name the call as soon as Check is
    pressed. None when the exercise has no such function, when the answer
    uses none, or when its source cannot be read.
    """
    targets = LIBRARY_ANSWERS.get(exercise_id, ())
    if not targets or not callable(function):
        return None
    own = inspect.unwrap(function)
    name = f"{getattr(own, '__module__', '')}.{getattr(own, '__qualname__', '')}"
    if name in targets:
        return name  # the library's function itself, under the exercise's name
    sources, imports = _live_sources(function)
    trees = list(_trees(sources))
    statements = _closure(trees, getattr(own, "__name__", ""))
    return next((t for t in targets if _uses(statements, imports, t)), None)
