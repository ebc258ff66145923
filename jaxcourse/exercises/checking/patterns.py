"""Patterns of a wrong value: what it has in common with the right one.

A wrong answer is often the right one slightly changed: scaled by a factor
(a sum for a mean), negated, off by a constant or along an axis, rolled along
an axis, right only in its first block, one of its own inputs unchanged, or
reduced along the other axis. :func:`_pattern` and :func:`_from_inputs` name
such a relation, in the exercise's language, so the feedback says more than
"wrong values"; a random difference matches none and nothing is named.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...messages import message
from .observation import Observation
from .spec import Case


def _factor(k: float, language: str) -> tuple[str, bool]:
    """Return ``k`` in words, and whether it is a whole number or its inverse."""
    n = round(k)
    if n >= 2 and abs(k - n) <= 1e-3 * n:
        return message("factor_times", language, n=n), True
    m = round(1 / k)
    if m >= 2 and abs(1 / k - m) <= 1e-3 * m:
        return message("factor_part", language, n=m), True
    return message("factor_other", language, k=k), False


#: Whole factors between one number and another that have a cause of their
#: own, said where the factor is met: 8 bits to a byte, 100 to a percent.
_SCALAR_CAUSES = {8: "cause_bits", 100: "cause_percent"}


def _one_number(k: float, factor: str, language: str) -> str:
    """Say a factor between two single numbers, and its cause where it has one.

    A single number has no mean to take: a sum for a mean, or the device
    count, are guesses that fit any factor. Only the factors whose cause is
    plain (:data:`_SCALAR_CAUSES`) are given one; any other is only said.
    """
    whole = round(k if k >= 1 else 1 / k)
    cause = _SCALAR_CAUSES.get(whole) if abs(
        (k if k >= 1 else 1 / k) - whole) <= 1e-3 * whole else None
    said = message("pattern_factor_one", language, factor=factor)
    return said + message(cause, language) if cause else said


def _pattern(exp: np.ndarray, got: np.ndarray, case: Case, language: str,
             devices: int | None = None) -> str:
    """Name what a wrong value has in common with the expected one ("" if nothing).

    Only for real numbers of the same shape that differ: every value scaled by
    one factor (a sum for a mean, a factor of the device count; for a single
    number, only bits for bytes or a percent have a cause said), with the
    wrong sign, off by one constant or by the same values along an axis (a
    bias or a location left out), or moved along an axis (a ring shifted the
    wrong way). A block of rows right and the rest wrong is a device's block
    only where the exercise has devices: ``devices`` (None: not known) is
    how many its cases use. Random differences match none of these, so
    nothing is named for them.
    """
    if exp.shape != got.shape or exp.size < 1 or exp.dtype.kind not in "fiu" \
            or got.dtype.kind not in "fiu":
        return ""
    e, g = exp.astype(np.float64), got.astype(np.float64)
    if not (np.isfinite(e).all() and np.isfinite(g).all()):
        return ""

    def close(a: np.ndarray, b: np.ndarray) -> bool:
        return bool(np.allclose(a, b, rtol=max(case.rtol, 1e-6), atol=case.atol))

    if close(g, e):
        return ""
    norm = float(np.vdot(e, e))
    if norm > 0:
        k = float(np.vdot(e, g)) / norm
        if abs(k) > 1e-9 and close(g, k * e):
            if abs(k + 1) <= 1e-3:
                return message("pattern_negated", language)
            factor, whole = _factor(k, language)
            # One number is always some multiple of another: only a whole
            # factor (or its inverse) says something there.
            if e.size == 1 and whole:
                return _one_number(k, factor, language)
            if e.size > 1:
                # A sum for a mean (or the reverse) is a slip along an axis of
                # many values; the device count, only where there are devices.
                key = "pattern_factor" if devices is None or devices > 1 else \
                    "pattern_factor_no_devices"
                return message(key, language, factor=factor)
    if e.size == 1:
        return ""
    if (e >= 0).all() and (g < 0).any() and close(np.maximum(g, 0), e):
        return message("pattern_negatives", language)
    if e.ndim >= 1 and e.shape[0] >= 2:
        rows = np.array([close(g[i], e[i]) for i in range(e.shape[0])])
        k = int(np.argmin(rows)) if not rows.all() else 0
        # Right up to row k, wrong from there on, in equal blocks: one
        # device's block (or a few) computed, the others' not.
        if k and not rows[k:].any() and e.shape[0] % k == 0 and (
                devices is None or devices > 1):
            return message("pattern_first_block", language, k=k, n=e.shape[0])
    diff = g - e
    if close(diff, np.full_like(diff, diff.mean())):
        return message("pattern_offset", language, offset=float(diff.mean()))
    for axis in range(e.ndim):
        if e.shape[axis] > 1 and close(diff, diff.mean(axis=axis, keepdims=True)):
            return message("pattern_offset_axis", language, axis=axis)
    for axis in range(e.ndim):
        n = e.shape[axis]
        # Two entries moved by one are just swapped: no ring to speak of.
        if 3 <= n <= 64:
            for shift in range(1, n):
                if close(g, np.roll(e, shift, axis=axis)):
                    return message("pattern_rolled", language, shift=shift,
                                   axis=axis, back=n - shift)
    return ""


def _from_inputs(expected: Any, got: Observation, language: str) -> str:
    """Say how a wrong output relates to the function's inputs ("" if it does not).

    The output is one of the arguments, unchanged; or its shape is an
    argument's with another axis reduced than the expected output's.
    """
    if got.echoed:
        return message("echoed_input", language, arg=got.echoed)
    value = got.value
    if not (isinstance(expected, np.ndarray) and isinstance(value, np.ndarray)) \
            or expected.shape == value.shape:
        return ""
    for shape in got.inputs:
        dropped = {axis: shape[:axis] + shape[axis + 1:] for axis in range(len(shape))}
        wanted = [a for a, rest in dropped.items() if rest == expected.shape]
        done = [a for a, rest in dropped.items() if rest == value.shape]
        if wanted and done and not set(wanted) & set(done):
            return message("reduced_axis", language, got=done[0], expected=wanted[0])
    return ""
