"""How a wrong number relates to the right one: the slip it takes to get there.

A wrong answer to a formula exercise is most often the right computation
with one slip in it: a maximum taken as a sum, ``<`` for ``<=``, ``round``
for ``ceil``, ``n`` for ``n - 1``, a division left out. This module finds
the slip without a list of wrong answers. It makes, from the reference's
own source, each variant that differs from it by one such slip
(:func:`variants`), runs them on the failing test, and names the slip of
the variant whose value is the answer's (:func:`relate`). The names say
what kind of slip it is, in the exercise's terms (a parameter's name where
the slip concerns one), never the reference's code.

Beside the variants, two relations need no source: the answer's value is
the right one scaled by an input of the test or its inverse (a mesh axis
multiplied in once too often, or divided out), or it is the right value of
another test (a constant that fits only that one).

Variants are made of formulas: a reference that uses JAX, TensorFlow or
PyTorch has none (an array's slips are said by :func:`~.patterns._pattern`).
A variant that raises, or runs past its small time limit, is skipped; so is
a reference whose source cannot be read (a class release ships none).
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools
import math
import textwrap
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...messages import message
from .comparison import _compare_arrays, _leaves, _same_structure, compare
from .observation import Observation
from .observe import observe
from .spec import Exercise

__all__ = ["Variant", "relate", "variants"]

#: Seconds all the variants of one test may take together, and one call of
#: one variant (a slip may loop forever): a relation is a help, and the
#: check must answer at once.
BUDGET = 2.0
CALL = 0.1

#: The order variants are tried in: the slips learners make most often
#: first, and those that most often never end (a loop whose bound a slip
#: removes) last, where the budget may run out before them.
_ORDER = ("off_by_one_named", "off_by_one", "boundary", "rounding", "ring",
          "not_divided", "not_multiplied", "multiplied_for_divided", "factor_left_out",
          "byte_width", "sum_for_max", "sum_for_min", "max_for_sum",
          "part_twice", "part_left_out")

#: Names whose use makes a reference too heavy to run in variants.
_HEAVY = {"jax", "jnp", "lax", "tf", "tfds", "torch", "DataLoader", "shard_map"}

_ROUNDING = {"ceil": "ceil", "floor": "floor", "round": "round"}
_SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_OTHER_SIDE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


@dataclass(frozen=True)
class Variant:
    """The reference with one slip: what to call, and how the slip is said.

    ``key`` is a message key (``relation_<key>``), ``fields`` its fields.
    """

    key: str
    fields: dict[str, Any] = field(default_factory=dict)
    function: Callable[..., Any] | None = None


def _said(node: ast.AST, parameters: set[str]) -> str | None:
    """Return the text a learner knows ``node`` by: a parameter, or its attribute."""
    if isinstance(node, ast.Name) and node.id in parameters:
        return node.id
    if isinstance(node, ast.Attribute) and _said(node.value, parameters):
        return ast.unparse(node)
    return None


def _rounding(call: ast.Call) -> str | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return _ROUNDING.get(name) if len(call.args) == 1 else None


def _rounded(rule: str, value: ast.expr) -> ast.expr:
    """``value`` rounded by ``rule``, written so any module can run it."""
    if rule == "round":
        return ast.Call(ast.Name("round", ast.Load()), [value], [])
    module = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant("math")], [])
    return ast.Call(ast.Attribute(module, rule, ast.Load()), [value], [])


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 1 and \
        not isinstance(node.value, bool)


def _ceil_division(node: ast.AST) -> ast.BinOp | None:
    """Return ``a // b`` inside ``-(-a // b)`` (ceil division), or None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.BinOp) and \
            isinstance(node.operand.op, ast.FloorDiv) and \
            isinstance(node.operand.left, ast.UnaryOp) and \
            isinstance(node.operand.left.op, ast.USub):
        return node.operand
    return None


def _divides_by(statement: ast.AST, name: str) -> bool:
    """Whether ``statement`` divides by ``name`` somewhere (a ring's ``/ n``)."""
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
               and isinstance(n.right, ast.Name) and n.right.id == name
               for n in ast.walk(statement))


def _changes(node: ast.AST, statement: ast.AST, parameters: set[str]
             ) -> Iterator[tuple[ast.AST, str, dict[str, Any]]]:
    """Yield ``(replacement, key, fields)``: each one slip ``node`` allows."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("max", "min") \
            and len(node.args) == 2 and not node.keywords:
        a, b = node.args
        yield ast.BinOp(a, ast.Add(), b), f"sum_for_{node.func.id}", {}
    elif isinstance(node, ast.Call) and _rounding(node):
        want = _rounding(node)
        for rule in _ROUNDING:
            if rule != want:
                yield _rounded(rule, node.args[0]), "rounding", {"want": want,
                                                                  "got": rule}
    elif _ceil_division(node) is not None:
        inner = _ceil_division(node)
        floor = ast.BinOp(inner.left.operand, ast.FloorDiv(), inner.right)
        yield floor, "rounding", {"want": "ceil", "got": "floor"}
        true = ast.BinOp(inner.left.operand, ast.Div(), inner.right)
        yield _rounded("round", true), "rounding", {"want": "ceil", "got": "round"}
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and \
            type(node.ops[0]) in _OTHER_SIDE:
        op = type(node.ops[0])
        other = _OTHER_SIDE[op]
        yield (ast.Compare(node.left, [other()], node.comparators), "boundary",
               {"want": _SYMBOLS[op], "got": _SYMBOLS[other]})
    elif isinstance(node, ast.BinOp):
        yield from _binop_changes(node, statement, parameters)
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        # total += part: the part overlapped with the total, left out, twice.
        total = ast.Name(node.target.id, ast.Load()) if isinstance(
            node.target, ast.Name) else None
        if total is not None:
            stored = ast.Name(node.target.id, ast.Store())
            yield ast.Assign([stored], ast.Call(ast.Name("max", ast.Load()),
                                                [total, node.value], [])), \
                "max_for_sum", {}
            yield ast.Pass(), "part_left_out", {}
            yield ast.AugAssign(node.target, ast.Add(),
                                ast.BinOp(ast.Constant(2), ast.Mult(), node.value)), \
                "part_twice", {}


def _binop_changes(node: ast.BinOp, statement: ast.AST, parameters: set[str]
                   ) -> Iterator[tuple[ast.expr, str, dict[str, Any]]]:
    left, right, op = node.left, node.right, node.op
    if isinstance(op, ast.FloorDiv):
        true = ast.BinOp(left, ast.Div(), right)
        yield _rounded("ceil", true), "rounding", {"want": "floor", "got": "ceil"}
        yield _rounded("round", true), "rounding", {"want": "floor", "got": "round"}
    if isinstance(op, (ast.Add, ast.Sub)) and (_is_one(right) or _is_one(left)):
        kept = left if _is_one(right) else right
        name = kept.id if isinstance(kept, ast.Name) else None
        if isinstance(op, ast.Sub) and name and _divides_by(statement, name):
            # n - 1 of n pieces: each device of a ring sends n - 1 of them.
            yield kept, "ring", {"n": name}
        elif _said(kept, parameters):
            # In the learner's own terms: "stages where stages - 1 is meant".
            yield kept, "off_by_one_named", {"got": _said(kept, parameters),
                                             "want": ast.unparse(node)}
        else:
            yield kept, "off_by_one", {}
        return
    if isinstance(op, ast.Add):
        yield ast.Call(ast.Name("max", ast.Load()), [left, right], []), \
            "max_for_sum", {}
        yield left, "part_left_out", {}
        yield right, "part_left_out", {}
        two = ast.Constant(2)
        yield ast.BinOp(ast.BinOp(two, ast.Mult(), left), ast.Add(), right), \
            "part_twice", {}
        yield ast.BinOp(left, ast.Add(), ast.BinOp(two, ast.Mult(), right)), \
            "part_twice", {}
    if isinstance(op, (ast.Mult, ast.Div)):
        for kept, dropped in ((left, right), (right, left)):
            if isinstance(op, ast.Div) and dropped is left:
                continue
            name = _said(dropped, parameters)
            if name:
                key = "not_divided" if isinstance(op, ast.Div) else "not_multiplied"
                yield kept, key, {"name": name}
            elif isinstance(dropped, ast.Constant) and isinstance(
                    dropped.value, int | float) and dropped.value not in (0, 1):
                yield kept, "factor_left_out", {"k": dropped.value}
        if isinstance(op, ast.Div) and _said(right, parameters):
            yield (ast.BinOp(left, ast.Mult(), right), "multiplied_for_divided",
                   {"name": _said(right, parameters)})
        for side in (left, right):
            if isinstance(side, ast.Constant) and side.value in (2, 4):
                width = 6 - side.value      # a byte width: 2 for 4, 4 for 2
                replaced = ast.BinOp(ast.Constant(width), op, right) if side is left \
                    else ast.BinOp(left, op, ast.Constant(width))
                yield replaced, "byte_width", {"want": side.value, "got": width}


def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    """Each node's parent, the field holding it, and its index in a list field."""
    found = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for i, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        found[id(child)] = (parent, name, i)
            elif isinstance(value, ast.AST):
                found[id(value)] = (parent, name, None)
    return found


def _statement_of(node: ast.AST, parents: dict[int, tuple[ast.AST, str, int | None]]
                  ) -> ast.AST:
    while not isinstance(node, ast.stmt) and id(node) in parents:
        node = parents[id(node)][0]
    return node


_VARIANTS: dict[int, list[Variant]] = {}


def variants(reference: Callable[..., Any]) -> list[Variant]:
    """Return the reference's variants with one slip each (cached; [] if none).

    Every node of the reference's own body (not its helpers') that allows a
    slip gives one variant per slip (:func:`_changes`). Each is compiled in
    the reference's module, so it calls the same helpers.
    """
    key = id(reference)
    if key not in _VARIANTS:
        try:
            _VARIANTS[key] = _made(reference)
        except Exception:
            # A help: a reference it cannot take apart has no variants.
            _VARIANTS[key] = []
    return _VARIANTS[key]


def _made(reference: Callable[..., Any]) -> list[Variant]:
    # A jitted or decorated reference: its Python function, run undecorated
    # (the values are the same; a variant is only compared).
    reference = inspect.unwrap(reference)
    found: list[Variant] = []
    if not isinstance(reference, types.FunctionType):
        return found
    try:
        source = textwrap.dedent(inspect.getsource(reference))
        tree = ast.parse(source)
        parameters = set(inspect.signature(reference).parameters)
    except (OSError, TypeError, SyntaxError, ValueError):
        return found
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        return found
    names = {n.id for n in ast.walk(definition) if isinstance(n, ast.Name)}
    if names & _HEAVY:
        # A program that compiles, or loads data: each variant would cost a
        # compile or a pipeline, and stopping TensorFlow or PyTorch in the
        # middle of a call is not safe. Their arrays' slips are said by
        # patterns (a factor, an offset, an axis); a formula's are here.
        return found
    definition.decorator_list = []
    nodes = list(ast.walk(definition))
    parents = _parents(definition)
    for position, node in enumerate(nodes):
        statement = _statement_of(node, parents)
        for replacement, slip, fields in _changes(node, statement, parameters):
            changed = copy.deepcopy(tree)
            target = list(ast.walk(changed.body[0]))[position]
            parent, name, index = _parents(changed.body[0])[id(target)]
            if index is None:
                setattr(parent, name, copy.deepcopy(replacement))
            else:
                getattr(parent, name)[index] = copy.deepcopy(replacement)
            ast.fix_missing_locations(changed)
            namespace = dict(reference.__globals__)
            try:
                exec(compile(changed, f"<variant of {reference.__name__}>", "exec"),
                     namespace)
            except Exception:
                continue  # a variant that does not compile is none
            found.append(Variant(slip, fields, namespace[definition.name]))
    found.sort(key=lambda variant: _ORDER.index(variant.key))
    return found


def _number(value: Any) -> float | None:
    """Return the single real number ``value`` holds, or None."""
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "fiu":
        number = float(value.reshape(()))
        return number if math.isfinite(number) else None
    return None


def _integers(value: Any, name: str) -> Iterator[tuple[str, int]]:
    """Yield the whole numbers above 1 an argument holds: itself, or its fields."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | np.integer) and value > 1:
        yield name, int(value)
    elif hasattr(value, "_asdict"):
        for field_name, inner in value._asdict().items():
            yield from _integers(inner, f"{name}.{field_name}")
    elif hasattr(value, "__dataclass_fields__"):
        for field_name in value.__dataclass_fields__:
            inner = getattr(value, field_name, None)
            yield from _integers(inner, f"{name}.{field_name}")


def _input_relations(exercise: Exercise, index: int, exp: float, got: float
                     ) -> list[tuple[str, dict[str, Any]]]:
    """Return what ties ``got`` to ``exp`` through one whole-number input.

    Each ``(message key, fields)``: the value is the right one times or over
    an input ``n`` (a mesh axis multiplied in once too often, or divided
    out), or an input, or an input minus one, more or less than it (the
    ticks of a pipeline for its micro-batches).
    """
    try:
        names = list(inspect.signature(exercise.reference).parameters)
    except (TypeError, ValueError):
        return []
    args = exercise.cases[index].make_inputs()
    found = []
    whole = float(exp).is_integer() and float(got).is_integer()
    for name, value in itertools.chain.from_iterable(
            _integers(a, n) for n, a in zip(names, args, strict=False)):
        if exp and math.isclose(got / exp, value, rel_tol=1e-6):
            found.append(("relation_times_input", {"name": name, "n": value}))
        if exp and math.isclose(got / exp, 1 / value, rel_tol=1e-6):
            found.append(("relation_over_input", {"name": name, "n": value}))
        for shown, amount in ((name, value), (f"{name} - 1", value - 1)):
            if whole and amount > 1 and abs(got - exp) == amount:
                key = "relation_plus_input" if got > exp else "relation_minus_input"
                found.append((key, {"amount": shown}))
    return found


def _through_inputs(exercise: Exercise, index: int, expected: list[Observation],
                    observations: list[Observation]) -> str:
    """Name a relation through an input that holds on every wrong single number.

    One test's numbers can be tied to its inputs by chance (10 more, and
    one input is 10); the relation is said only where every plain test that
    the answer got wrong, with a single number, shows the same one.
    """
    shared = None
    for i, (case, want, got) in enumerate(zip(exercise.cases, expected, observations,
                                              strict=True)):
        if not _plain(case) or got.kind != "value" or want is None:
            continue
        exp, value = _number(want.value), _number(got.value)
        if exp is None or value is None or not compare(want.value, got.value, case):
            continue
        found = {(key, tuple(sorted(fields.items())))
                 for key, fields in _input_relations(exercise, i, exp, value)}
        shared = found if shared is None else shared & found
    if not shared:
        return ""
    exp, value = _number(expected[index].value), _number(observations[index].value)
    for key, fields in _input_relations(exercise, index, exp, value):
        if (key, tuple(sorted(fields.items()))) in shared:
            return message(key, exercise.language, **fields)
    return ""


def _first_wrong_numbers(expected: Any, got: Any, case: Any
                         ) -> tuple[float, float] | None:
    """Return the first single numbers of two structures that differ, or None."""
    if not _same_structure(expected, got):
        return None
    for (_, exp), (_, out) in zip(_leaves(expected), _leaves(got), strict=True):
        if isinstance(exp, np.ndarray) and isinstance(out, np.ndarray) and \
                _compare_arrays(exp, out, case, "en"):
            a, b = _number(exp), _number(out)
            return (a, b) if a is not None and b is not None else None
    return None


def _off_by_one(exp: float, got: float, language: str) -> str:
    if float(exp).is_integer() and float(got).is_integer() and abs(got - exp) == 1:
        return message("relation_one_more" if got > exp else "relation_one_less",
                       language)
    return ""


def _another_test(exercise: Exercise, index: int, got: Observation,
                  expected: list[Observation]) -> str:
    case = exercise.cases[index]
    for other, (their_case, theirs) in enumerate(zip(exercise.cases, expected,
                                                     strict=True)):
        if other == index or theirs is None or theirs.kind != "value":
            continue
        if not compare(theirs.value, got.value, case) and \
                compare(theirs.value, expected[index].value, case):
            return message("relation_other_test", exercise.language,
                           test=their_case.description)
    return ""


#: Ratios of two units a learner may take one for the other: GiB for GB,
#: and a thousand for a 1,024 (KiB for kB), each way.
_UNITS = {2**30 / 1e9: "relation_gib", 1024 / 1000: "relation_kib"}


def _unit(exp: float, got: float, language: str) -> str:
    if exp == 0 or got == 0:
        return ""
    ratio = got / exp
    for factor, key in _UNITS.items():
        if math.isclose(ratio, factor, rel_tol=1e-6) or \
                math.isclose(ratio, 1 / factor, rel_tol=1e-6):
            return message(key, language)
    return ""


def _plain(case: Any) -> bool:
    """Whether a test calls the function here: not launched, not traced.

    A runner that calls it in this process says so (``in_process``: the
    random calls of :func:`~.sweeps.each_call`); any other (launched
    processes, a mesh) is not tried.
    """
    return case.transform == "call" and (
        case.runner is None or getattr(case.runner, "in_process", False))


def _agrees(variant: Variant, exercise: Exercise, observations: list[Observation],
            deadline: float, first: Any = None) -> bool | None:
    """Whether ``variant`` gives the answer's value on every plain test.

    ``first`` (a test) is tried first: the failing one, where a variant that
    does not agree is most often seen at once. None when time ran out
    first. A variant that raises, runs past
    :data:`CALL` seconds, or gives another value on any test the answer
    returned a value for, does not agree: the slip must explain the answer
    everywhere, not on one test by chance.
    """
    compared = 0
    tests = sorted(zip(exercise.cases, observations, strict=True),
                   key=lambda pair: pair[0] is not first)
    for case, got in tests:
        if not _plain(case) or got.kind != "value":
            continue
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        seen = observe(variant.function, case, min(left, CALL))
        if seen.kind != "value" or compare(seen.value, got.value, case):
            return False
        compared += 1
    return compared > 0


def relate(exercise: Exercise, index: int, expected: list[Observation],
           observations: list[Observation]) -> str:
    """Name how test ``index``'s wrong value relates to the right one; never raises.

    :func:`_relate`'s answer, or "" if it fails: a relation is a help, and a
    check must answer whatever the reference's variants do.
    """
    try:
        return _relate(exercise, index, expected, observations)
    except Exception:
        return ""


def _relate(exercise: Exercise, index: int, expected: list[Observation],
            observations: list[Observation]) -> str:
    """Name how test ``index``'s wrong value relates to the right one.

    Returns "" when nothing relates them. In order: a variant of the
    reference with one slip gives the answer's value on every plain test
    (:func:`variants`, the first that does, within :data:`BUDGET` seconds);
    for a single number, the value is the right one in another unit; times or over a
    whole-number input; one more or less than it, or an input (minus one)
    more or less; the right value of another test. ``expected`` and
    ``observations`` hold the reference's and the answer's observations of
    every test.
    """
    case, got = exercise.cases[index], observations[index]
    if not _plain(case) or got.kind != "value":
        return ""
    deadline = time.perf_counter() + BUDGET
    for variant in variants(exercise.reference):
        agrees = _agrees(variant, exercise, observations, deadline, case)
        if agrees is None:
            break
        if agrees:
            fields = dict(variant.fields)
            if variant.key in ("rounding",):
                fields = {k: message(f"rule_{v}", exercise.language)
                          for k, v in fields.items()}
            return message(f"relation_{variant.key}", exercise.language, **fields)
    exp, value = _number(expected[index].value), _number(got.value)
    if exp is None or value is None:
        # A structure (a random test's calls, by name): its first wrong
        # number, related to the right one by itself.
        pair = _first_wrong_numbers(expected[index].value, got.value, case)
        return (_unit(*pair, exercise.language)
                or _off_by_one(*pair, exercise.language)) if pair else ""
    return _unit(exp, value, exercise.language) or \
        _through_inputs(exercise, index, expected, observations) or \
        _off_by_one(exp, value, exercise.language) or \
        _another_test(exercise, index, got, expected)
