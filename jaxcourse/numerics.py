"""How close two floating-point results must be, derived rather than guessed.

A matrix product in float32 is exact only up to rounding, and the rounding
depends on the order of the sums: how many devices split the contracted
dimension, how XLA and Eigen tile the loops, how many threads run them. Two
correct programs can then differ by more than a fixed ``rtol=1e-4`` on one CPU
and not on another. The course compares a float32 product with the exact
(float64) product instead, within the classical worst-case bound for a sum of
``n`` products (Higham, *Accuracy and Stability of Numerical Algorithms*,
section 3.5):

    |fl(A @ B) - A @ B|  <=  gamma_n * (|A| @ |B|),   gamma_n = n u / (1 - n u)

with ``u = 2**-24`` the unit roundoff of float32. The bound holds for every
order of summation, so it holds on every machine; a layout that drops or
double-counts a term misses it by many orders of magnitude.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT32_ROUNDOFF", "assert_product_close", "decade_above",
           "product_error_bound", "sum_tolerance", "within_rounding"]

#: The unit roundoff of float32: half the distance from 1 to the next float.
FLOAT32_ROUNDOFF = float(np.finfo(np.float32).eps) / 2


def sum_tolerance(n: int) -> float:
    """Return ``gamma_n``: the relative error of a float32 sum of ``n`` terms.

    Any order of summation is within ``gamma_n = n u / (1 - n u)`` of the
    exact sum, relative to the sum of the terms' absolute values. For a
    computation that chains several sums (a layer's product, then the next),
    add their lengths: to first order, their errors add. Two float32 results
    of the same computation are then within ``2 gamma_n`` of each other.
    """
    if n * FLOAT32_ROUNDOFF >= 1:
        raise ValueError(f"a float32 sum of {n} terms has no useful error bound")
    return n * FLOAT32_ROUNDOFF / (1 - n * FLOAT32_ROUNDOFF)


def decade_above(value: float) -> str:
    """Return the smallest power of ten above ``value``, as a chapter prints it.

    A rounding error's own digits are not reproducible: XLA's CPU backend
    compiles for the instruction set it finds (AVX-512, AVX2, SSE4.2), and
    each rounds the same program's sums in another order, so an error of
    ``4.8e-07`` on one machine is ``5.8e-07`` on another. What a chapter means
    to show is its size against a bound, which those orders do not move: it
    prints "under" this power of ten, ``0.01`` or ``1e-06``.

    Parameters
    ----------
    value : float
        A non-negative error, or an error's ratio to its bound.

    Returns
    -------
    str
        The power of ten, formatted with ``g`` (``"0.01"``, ``"1e-06"``); for
        0, ``"0"``.
    """
    if value < 0 or not np.isfinite(value):
        raise ValueError(f"an error's size is finite and not negative, not {value}")
    if value == 0:
        return "0"
    # The power strictly above: an error of exactly 0.01 prints "under 0.1".
    return f"{10.0 ** (np.floor(np.log10(value)) + 1):g}"


def product_error_bound(lhs, rhs) -> tuple[np.ndarray, np.ndarray]:
    """Return the exact product of ``lhs @ rhs`` and its float32 error bound.

    Parameters
    ----------
    lhs, rhs : array_like
        The float32 operands, of shapes ``(..., n)`` and ``(n, ...)``; JAX
        arrays are fetched to the host.

    Returns
    -------
    exact : numpy.ndarray
        ``lhs @ rhs`` computed in float64 (exact enough to serve as truth).
    bound : numpy.ndarray
        Entry by entry, ``gamma_n * (|lhs| @ |rhs|)``: how far any float32
        evaluation of the product may be from ``exact``.
    """
    a = np.asarray(lhs, dtype=np.float64)
    b = np.asarray(rhs, dtype=np.float64)
    return a @ b, sum_tolerance(a.shape[-1]) * (np.abs(a) @ np.abs(b))


def within_rounding(value, lhs, rhs) -> bool:
    """Return whether ``value`` is ``lhs @ rhs`` up to float32 rounding.

    Parameters
    ----------
    value : array_like
        A computed product (any layout; a JAX array is fetched whole).
    lhs, rhs : array_like
        The operands it was computed from.

    Returns
    -------
    bool
        True when every entry lies within :func:`product_error_bound`.
    """
    exact, bound = product_error_bound(lhs, rhs)
    return bool(np.all(np.abs(np.asarray(value, dtype=np.float64) - exact) <= bound))


def assert_product_close(value, lhs, rhs) -> None:
    """Fail, naming the worst entry, unless ``value`` is ``lhs @ rhs`` up to rounding.

    Parameters
    ----------
    value : array_like
        A computed product.
    lhs, rhs : array_like
        The operands it was computed from.

    Raises
    ------
    AssertionError
        When some entry is further from the exact product than float32
        rounding allows; the message gives the entry, its error and its bound.
    """
    exact, bound = product_error_bound(lhs, rhs)
    got = np.asarray(value, dtype=np.float64)
    if got.shape != exact.shape:
        raise AssertionError(f"shape {got.shape}, expected {exact.shape}")
    excess = np.abs(got - exact) - bound
    if np.all(excess <= 0):
        return
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    raise AssertionError(
        f"entry {tuple(int(i) for i in worst)} is {got[worst]:.6g}, the exact product "
        f"is {exact[worst]:.6g}: off by {abs(got[worst] - exact[worst]):.3g}, more "
        f"than float32 rounding allows ({bound[worst]:.3g})"
    )
