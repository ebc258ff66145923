"""Relations of shape, order and type: a wrong array read against the right one.

:mod:`~jaxcourse.exercises.checking.patterns` names a wrong array of the
right shape by how its numbers relate to the expected ones (a factor, an
offset, a roll). This module reads the relations that are left, the ones a
learner's slip leaves in an array's *form*:

- another shape holding the expected values: transposed, reshaped, with an
  axis of length 1 too many or too few (:func:`shape_relation`);
- the expected values reduced over an axis that should stay (a ``max``
  where ``maximum`` was meant, a batch summed), or an expected reduction
  left out (a mean never taken);
- a part of the expected values along one axis, or more than them (the
  last, smaller batch dropped; an extra one), or an axis a whole number of
  times too long;
- the same values in another order: reversed, sorted, rows shuffled
  (:func:`order_relation`);
- the right numbers in another type: fractions cut off by an integer
  division, whole numbers turned into floats (:func:`dtype_relation`).

Every relation is checked on the values, never guessed from the shapes
alone: a shape of ``()`` for ``(5,)`` is named a maximum only when it *is*
the maximum of the expected values. Expected values that are all the same
relate to anything, so they are never read. What is said comes from the
message catalogue, in the exercise's language; "" when no relation holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from ...messages import message
from .spec import Case

__all__ = ["dtype_relation", "order_relation", "shape_relation"]

#: The reductions a slip applies or leaves out, by the word the message uses.
_REDUCTIONS: tuple[tuple[str, Callable[..., np.ndarray]], ...] = (
    ("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min),
)


def _numbers(array: np.ndarray) -> np.ndarray | None:
    """``array`` as float64, or None when it holds no real, finite numbers."""
    if array.dtype.kind not in "biuf" and array.dtype.name != "bfloat16":
        return None
    values = array.astype(np.float64)
    return values if np.isfinite(values).all() else None


def _varied(values: np.ndarray) -> bool:
    """Whether ``values`` hold at least two different numbers (else anything fits)."""
    return values.size >= 2 and float(values.max()) != float(values.min())


def _close(a: np.ndarray, b: np.ndarray, case: Case) -> bool:
    return a.shape == b.shape and bool(
        np.allclose(a, b, rtol=max(case.rtol, 1e-6), atol=case.atol))


def _axes(axes: tuple[int, ...], language: str) -> str:
    joiner = message("list_joiner", language)
    return joiner.join(str(a) for a in axes)


def shape_relation(exp: np.ndarray, got: np.ndarray, case: Case, language: str) -> str:
    """Say how ``got``, of another shape than ``exp``, relates to it ("" if not).

    Tried in order: the same values transposed or in another shape; the
    expected values reduced (a sum, mean, max or min over some axes); the
    answer's values needing a reduction to be the expected ones; a part of
    the expected values along one axis, or more than them; one axis a whole
    number of times too long or too short.
    """
    e, g = _numbers(exp), _numbers(got)
    if e is None or g is None or exp.shape == got.shape:
        return ""
    if e.size == g.size and _varied(e):
        if g.ndim == 2 and _close(g.T, e, case):
            return message("rel_transposed", language)
        if _close(g.reshape(e.shape), e, case):
            ones_g = tuple(d for d in g.shape if d != 1)
            if ones_g == tuple(d for d in e.shape if d != 1):
                return message("rel_unit_axis_extra" if g.ndim > e.ndim
                               else "rel_unit_axis_missing", language)
            return message("rel_reshaped", language, got=got.shape)
    for big, small, key in ((e, g, "rel_reduced"), (g, e, "rel_not_reduced")):
        # Both sides must say something: many values all alike, or one
        # number that only one reduction gives (and not 0, which a maximum
        # or a minimum of many arrays is), fit a reduction by chance.
        if small.ndim >= big.ndim or not _varied(big) or (
                small.size > 1 and not _varied(small)) or (
                small.size == 1 and float(small.ravel()[0]) == 0.0):
            continue
        for axes in itertools.combinations(range(big.ndim), big.ndim - small.ndim):
            fits = [word for word, reduce in _REDUCTIONS
                    if _close(reduce(big, axis=axes), small, case)]
            if len(fits) == 1:
                op = message(f"op_{fits[0]}", language)
                if key == "rel_reduced" and small.ndim == 0:
                    return message("rel_reduced_all", language, op=op)
                return message(key, language, op=op, axes=_axes(axes, language))
    if e.ndim != g.ndim:
        return ""
    differ = [k for k in range(e.ndim) if e.shape[k] != g.shape[k]]
    if len(differ) != 1:
        return ""
    axis = differ[0]
    n, m = e.shape[axis], g.shape[axis]
    short, long_ = (g, e) if m < n else (e, g)
    length = min(n, m)
    first = np.take(long_, range(length), axis=axis)
    end = long_.shape[axis]
    last = np.take(long_, range(end - length, end), axis=axis)
    if _varied(short):
        if m > n and m % n == 0 and _close(
                np.concatenate([short] * (m // n), axis=axis), long_, case):
            return message("rel_repeated", language, k=m // n, axis=axis)
        if _close(first, short, case):
            key = "rel_first_part" if m < n else "rel_more_after"
            return message(key, language, m=m, n=n, rest=abs(n - m), axis=axis)
        if _close(last, short, case):
            key = "rel_last_part" if m < n else "rel_more_before"
            return message(key, language, m=m, n=n, rest=abs(n - m), axis=axis)
    if m and n and max(m, n) % min(m, n) == 0:
        key = "rel_axis_times" if m > n else "rel_axis_part"
        return message(key, language, axis=axis, got=m, expected=n,
                       k=max(m, n) // min(m, n))
    return ""


def order_relation(exp: np.ndarray, got: np.ndarray, case: Case, language: str) -> str:
    """Say how ``got`` holds the values of ``exp`` in another order ("" if it does not).

    Both have the same shape and differ. Tried in order: transposed (a
    square matrix), the same slice along axis 0 repeated where the expected
    ones differ, reversed along an axis, sorted, the rows (along axis 0)
    in another order, each row's values in another order, and any other
    order of the same values.
    """
    e, g = _numbers(exp), _numbers(got)
    if e is None or g is None or e.shape != g.shape or e.size < 3 or not _varied(e):
        return ""
    if _close(g, e, case):
        return ""
    if e.ndim == 2 and e.shape[0] == e.shape[1] and _close(g, e.T, case):
        return message("rel_transposed", language)
    if e.ndim >= 2 and _varied(g) and _close(g, np.broadcast_to(g[:1], g.shape), case) \
            and not _close(e, np.broadcast_to(e[:1], e.shape), case):
        # One slice repeated where each was to differ (one draw of noise
        # reused for every sample, say).
        return message("rel_same_slices", language, n=e.shape[0])
    for axis in range(e.ndim):
        if e.shape[axis] > 1 and _close(g, np.flip(e, axis=axis), case):
            return message("rel_reversed", language, axis=axis)
    if not _close(np.sort(g, axis=None), np.sort(e, axis=None), case):
        return ""
    flat = g.ravel()
    if e.ndim == 1 and (np.all(np.diff(flat) >= 0) or np.all(np.diff(flat) <= 0)):
        return message("rel_sorted", language)
    if e.ndim >= 2:
        rows_e = sorted(map(tuple, e.reshape(e.shape[0], -1).round(6)))
        rows_g = sorted(map(tuple, g.reshape(g.shape[0], -1).round(6)))
        if rows_e == rows_g:
            return message("rel_rows_reordered", language)
        if _close(np.sort(g.reshape(g.shape[0], -1), axis=1),
                  np.sort(e.reshape(e.shape[0], -1), axis=1), case):
            return message("rel_within_rows", language)
    return message("rel_reordered", language)


def dtype_relation(exp: np.ndarray, got: np.ndarray, case: Case, language: str) -> str:
    """Say how ``got``'s numbers, of another type than ``exp``'s, relate ("" if not).

    Integers that are the expected fractions cut off (an integer division,
    a cast to ``int``); the expected whole numbers as floats; the expected
    values in another float precision.
    """
    e, g = _numbers(exp), _numbers(got)
    if e is None or g is None or e.shape != g.shape or got.dtype.kind == "b":
        return ""
    float_e = exp.dtype.kind == "f" or exp.dtype.name == "bfloat16"
    float_g = got.dtype.kind == "f" or got.dtype.name == "bfloat16"
    if float_e and got.dtype.kind in "iu":
        if not np.allclose(e, np.round(e)) and (
                np.array_equal(g, np.trunc(e)) or np.array_equal(g, np.floor(e))):
            return message("rel_truncated", language)
        return ""
    if exp.dtype.kind in "iu" and float_g:
        if _close(g, e, case):
            return message("rel_float_for_int", language, got=got.dtype.name,
                           expected=exp.dtype.name)
        return ""
    if float_e and float_g and _close(g, e, case):
        return message("rel_other_float", language, got=got.dtype.name,
                       expected=exp.dtype.name)
    return ""
