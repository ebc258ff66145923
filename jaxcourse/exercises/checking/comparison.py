"""Comparing values: what is wrong with a returned value, in words.

:func:`compare` puts a value a learner's function returned (a tree of
arrays, see :mod:`jaxcourse.exercises.checking.observation`) beside the reference's
and says what differs: its structure, a type, a shape, a dtype, NaNs, or its
values (with the largest difference and where it is), in the exercise's
language; :func:`where` says which part of a returned value that is. A
categorical answer (a :class:`~jaxcourse.exercises.checking.observation.Choice`: a
policy, an ending, None) is compared by its name, and a ``PartitionSpec`` (a
:class:`~jaxcourse.exercises.checking.observation.Spec`) dimension by dimension, by
the names of its mesh axes: never as a number, so no pattern of numbers is
read into them. A
measurement is said in words (:mod:`~jaxcourse.exercises.checking.measures`), and a
wrong value's pattern is named (:mod:`~jaxcourse.exercises.checking.patterns`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...messages import message, ordinal
from .measures import MEASURES, _measured
from .observation import Bad, Choice, Node, Spec
from .patterns import _pattern
from .shapes import dtype_relation, order_relation, shape_relation
from .spec import Case

__all__ = ["compare", "where"]


def _fmt(array: np.ndarray) -> str:
    if array.size > 12 or array.ndim > 2:
        return f"an array of shape {array.shape}"
    text = np.array2string(
        array, precision=4, separator=", ", suppress_small=True,
        max_line_width=10_000,
    )
    return " ".join(text.split())


def _structure(value: Any, language: str = "en") -> str:
    if isinstance(value, np.ndarray):
        return message("structure_array", language)
    if isinstance(value, Bad):
        return value.type
    if isinstance(value, Choice):
        return value.name
    if isinstance(value, Spec):
        return f"P({', '.join(value.axes)})"
    inner = ", ".join(_structure(v, language) for v in value.items)
    if value.kind == "list":
        return f"[{inner}]"
    if value.kind == "tuple":
        return f"({inner}{',' if len(value.items) == 1 else ''})"
    return "{" + ", ".join(
        f"{k!r}: {_structure(v, language)}"
        for k, v in zip(value.keys, value.items, strict=True)
    ) + "}"


_SEQUENCES = frozenset({"list", "tuple"})


def _same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, (Choice, Spec)) or isinstance(b, (Choice, Spec)):
        # Choices of any name compare, and with a number (None where a count
        # was expected, or the reverse); a spec against a spec of any rank.
        leaves = {type(a), type(b)}
        return type(a) is type(b) or leaves == {Choice, np.ndarray}
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    if isinstance(a, Bad) or isinstance(b, Bad):
        return False
    # A list where the reference returns a tuple (or the reverse) is not what
    # an exercise teaches: compare sequences by their items, not their type.
    # An exercise that does ask for one type checks it with ``extract``.
    same_kind = a.kind == b.kind or {a.kind, b.kind} <= _SEQUENCES
    return (
        same_kind and a.keys == b.keys and len(a.items) == len(b.items)
        and all(_same_structure(x, y) for x, y in zip(a.items, b.items, strict=True))
    )


def _leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every array of ``value`` with its path: a tuple of indices and dict keys."""
    if isinstance(value, Node):
        out = []
        labels = value.keys or range(len(value.items))
        for label, item in zip(labels, value.items, strict=True):
            out += _leaves(item, (*path, label))
        return out
    return [(path, value)]


def where(path: tuple, language: str = "en") -> str:
    """Say in words which part of a returned value ``path`` points to.

    ``(0,)`` is "the first returned value" (「第 1 個回傳值」); ``(1, "w")`` is
    "entry 'w' of the second returned value": a learner reads words, not
    ``[1]['w']``.
    """
    text = ""
    for depth, label in enumerate(path):
        if isinstance(label, str):
            key = "path_first_key" if depth == 0 else "path_key"
            text = message(key, language, key=repr(label), whole=text)
        else:
            key = "path_first_item" if depth == 0 else "path_item"
            text = message(key, language, n=label + 1, ordinal=ordinal(label + 1),
                           whole=text)
    return text


def _kind(dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "int_kind"
    if dtype.kind in "fc" or dtype.name == "bfloat16":
        return "float_kind"
    return dtype.name


def _named(value: Choice | np.ndarray) -> Choice:
    # A number beside a choice (a count where None was expected) reads as it
    # is written.
    return value if isinstance(value, Choice) else Choice(_fmt(value))


def _compare_choices(exp: Choice, got: Choice, language: str) -> str:
    if exp.name == got.name:
        return ""
    said = message("wrong_choice", language, expected=exp.name, got=got.name)
    if got.outside:
        return said + " — " + message("choice_outside", language, got=got.name,
                                      among=got.outside)
    if exp.name == "None" and got.name.strip("'\"").lower() in ("none", "null", ""):
        # The word for nothing, written as text: Python's None is no string.
        said += " — " + message("none_as_text", language)
    return said


def _axis(name: str, language: str) -> str:
    return message("spec_whole", language) if name == "None" else message(
        "spec_over", language, axis=name)


def _compare_specs(exp: Spec, got: Spec, language: str, patterns: bool = True) -> str:
    """Say which dimensions of a spec are split otherwise than expected."""
    if len(exp.axes) != len(got.axes):
        return message("spec_rank", language, got=len(got.axes),
                       expected=len(exp.axes), spec=_structure(got, language))
    said = [message("spec_dimension", language, dim=dim, got=_axis(g, language),
                    expected=message("spec_none", language) if e == "None" else e)
            for dim, (e, g) in enumerate(zip(exp.axes, got.axes, strict=True))
            if e != g]
    said = message("list_joiner", language).join(said)
    if said and patterns and sorted(exp.axes) == sorted(got.axes):
        # The same mesh axes, each on another dimension: a transpose of the
        # spec (the rows' axis given to the columns, say).
        said += " — " + message("spec_swapped", language,
                                got=_structure(got, language),
                                expected=_structure(exp, language))
    return said


def compare(expected: Any, got: Any, case: Case, language: str = "en",
            patterns: bool = True, devices: int | None = None) -> str:
    """Return what is wrong with ``got`` against ``expected`` ("" if nothing).

    With ``patterns``, a difference of values is followed by what the wrong
    value has in common with the expected one, where it has something
    (:func:`_pattern`: a constant factor, an offset, a shift). ``devices``
    is how many devices the exercise's cases use (None: unknown): with one,
    no pattern speaks of devices' blocks.
    """
    if isinstance(expected, Choice) and isinstance(got, (Choice, np.ndarray)) or \
            isinstance(got, Choice) and isinstance(expected, np.ndarray):
        return _compare_choices(_named(expected), _named(got), language)
    if isinstance(got, Bad):
        if got.type == "NoneType":
            return message("returned_none", language)
        if got.type == "tracer":
            return message("returned_tracer", language)
        return message(
            "returned_type", language, type=got.type,
            expected=message("array", language),
        )
    if not _same_structure(expected, got):
        bad = next((leaf for _, leaf in _leaves(got) if isinstance(leaf, Bad)), None)
        if isinstance(expected, np.ndarray) and isinstance(got, Node) or bad is None:
            said = message(
                "wrong_structure", language, expected=_structure(expected, language),
                got=_structure(got, language),
            )
            relation = _structure_relation(expected, got, case, language) \
                if patterns else ""
            return f"{said} — {relation}" if relation else said
        return message("returned_type", language, type=bad.type,
                       expected=message("array", language))
    for (path, exp), (_, out) in zip(_leaves(expected), _leaves(got), strict=True):
        if isinstance(exp, (Choice, Spec)) or isinstance(out, Choice):
            problem = _compare_specs(exp, out, language, patterns) if isinstance(
                exp, Spec) else _compare_choices(_named(exp), _named(out), language)
            if problem:
                return message("at_path", language, where=where(path, language),
                               problem=problem) if path else problem
            continue
        problem = _compare_arrays(exp, out, case, language)
        measure = next((label for label in path if label in MEASURES), None)
        if problem and measure and exp.shape == out.shape and (
                measure != "layout" or exp.ndim == 3):
            # A measurement (of the compiled program, of where the pieces of
            # an array live), not a value the learner returned: say in words
            # what was measured.
            rest = tuple(label for label in path if label != measure)
            said = _measured(measure, exp, out, language)
            return message("at_path", language, where=where(rest, language),
                           problem=said) if rest else said
        if problem and patterns:
            relation = _array_relation(exp, out, case, language, devices)
            if relation:
                # The relation says what a hint in brackets would only guess.
                problem = _compare_arrays(exp, out, case, language, hints=False) + \
                    f" — {relation}"
        if problem:
            return message("at_path", language, where=where(path, language),
                           problem=problem) if path else problem
    return ""


def _array_relation(exp: np.ndarray, got: np.ndarray, case: Case, language: str,
                    devices: int | None) -> str:
    """How a wrong array relates to the expected one, whatever differs ("" if not)."""
    if exp.shape != got.shape:
        return shape_relation(exp, got, case, language)
    if exp.dtype != got.dtype:
        relation = dtype_relation(exp, got, case, language)
        if relation:
            return relation
    return _pattern(exp, got, case, language, devices) or order_relation(
        exp, got, case, language)


def _items(node: Node) -> tuple:
    return node.items if node.kind in _SEQUENCES else ()


def _equal(expected: Any, got: Any, case: Case) -> bool:
    return _same_structure(expected, got) and not compare(
        expected, got, case, patterns=False)


def _structure_relation(expected: Any, got: Any, case: Case, language: str) -> str:
    """Say how a returned value of another structure holds the expected one ("" if not).

    The expected value returned with other items beside it; only one item
    of the expected value; the expected items, with some more or some
    missing at the end (checked item by item); or a list of trees where one
    tree of stacked arrays was expected.
    """
    if isinstance(got, Node):
        for number, item in enumerate(_items(got)):
            if _equal(expected, item, case):
                return message("rel_extra_items", language, n=number + 1,
                               ordinal=ordinal(number + 1), count=len(got.items))
    if isinstance(expected, Node):
        for number, item in enumerate(expected.items):
            if _equal(item, got, case):
                part = where((expected.keys[number] if expected.keys else number,),
                             language)
                return message("rel_only_part", language, part=part,
                               structure=_structure(expected, language))
    if not (isinstance(expected, Node) and isinstance(got, Node)):
        return ""
    wanted, given = _items(expected), _items(got)
    if wanted and given and len(wanted) != len(given):
        common = min(len(wanted), len(given))
        if all(_equal(w, g, case) for w, g in zip(wanted, given, strict=False)):
            if len(given) > len(wanted):
                empty = any(leaf.size == 0 for _, leaf in _leaves(given[-1])
                            if isinstance(leaf, np.ndarray))
                return message("rel_items_more_empty" if empty else "rel_items_more",
                               language, got=len(given), expected=common,
                               extra=len(given) - common)
            return message("rel_items_fewer", language, got=common,
                           expected=len(wanted), missing=len(wanted) - common)
    leaves = [leaf for _, leaf in _leaves(expected)]
    # Item i holds, leaf by leaf, row i of every expected array.
    items = [[leaf for _, leaf in _leaves(item)] for item in given]
    if len(given) >= 2 and all(
            isinstance(leaf, np.ndarray) and leaf.shape[:1] == (len(given),)
            for leaf in leaves) and all(len(item) == len(leaves) for item in items) \
            and all(isinstance(b, np.ndarray) and a[i].shape == b.shape
                    and not _compare_arrays(a[i], b, case, language)
                    for i, item in enumerate(items)
                    for a, b in zip(leaves, item, strict=True)):
        return message("rel_unstacked", language, n=len(given))
    return ""


def _compare_arrays(
    exp: np.ndarray, got: np.ndarray, case: Case, language: str, hints: bool = True
) -> str:
    if exp.shape != got.shape:
        text = message("wrong_shape", language, expected=exp.shape, got=got.shape)
        if not hints:
            return text
        if exp.ndim >= 2 and got.shape == exp.shape[::-1]:
            text += " (" + message("transposed", language) + ")"
        elif exp.ndim == 0:
            text += " (" + message("array_for_number", language) + ")"
        return text
    # True/False where a number was expected: a comparison, not a count.
    bool_for_number = got.dtype.kind == "b" and exp.dtype.kind != "b"
    if case.dtype == "exact" and exp.dtype != got.dtype:
        return message("wrong_dtype", language, expected=exp.dtype.name,
                       got=got.dtype.name) + (
            " (" + message("bool_for_number", language) + ")"
            if bool_for_number and hints else "")
    if case.dtype == "kind" and _kind(exp.dtype) != _kind(got.dtype):
        return message("wrong_kind", language,
                       expected=message(_kind(exp.dtype), language)
                       if _kind(exp.dtype).endswith("_kind") else _kind(exp.dtype),
                       got=got.dtype.name) + (
            " (" + message("bool_for_number", language) + ")"
            if bool_for_number and hints else "")
    e = exp.astype(np.float64) if exp.dtype.kind == "b" else exp
    g = got.astype(np.float64) if got.dtype.kind in "biu" or got.dtype.name == \
        "bfloat16" else got
    e = e.astype(np.float64) if e.dtype.kind in "iu" or e.dtype.name == "bfloat16" \
        else e
    if g.dtype.kind in "fc":
        nans = np.isnan(g) & ~np.isnan(e)
        if nans.any():
            return message("has_nan", language, count=int(nans.sum()), size=g.size)
    if not np.allclose(g, e, rtol=case.rtol, atol=case.atol, equal_nan=True):
        diff = np.abs(np.asarray(g, np.complex128) - np.asarray(e, np.complex128))
        diff = np.where(np.isnan(diff), np.inf, diff)
        where = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
        # A 1-D position reads as a number, not as the tuple (3,).
        index = tuple(int(i) for i in where)
        index = index[0] if len(index) == 1 else index
        if exp.size > 12 or exp.ndim > 2:
            wrong = ~np.isclose(g, e, rtol=case.rtol, atol=case.atol, equal_nan=True)
            return message(
                "wrong_values_large", language, count=int(wrong.sum()), size=exp.size,
                diff=float(diff.max()), index=index, expected=float(np.real(e[where])),
                got=float(np.real(g[where])),
            )
        if not where:  # one number: no position to give
            return message("wrong_values_one", language, expected=_fmt(exp),
                           got=_fmt(got), diff=float(diff.max()))
        return message(
            "wrong_values", language, expected=_fmt(exp), got=_fmt(got),
            diff=float(diff.max()), index=index,
        )
    return ""
