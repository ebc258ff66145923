"""Rules over many random calls: each output keyed by the call that gave it.

A rule that fits the cases an exercise shows (a fixed threshold, the wrong
quantity compared) passes them and is wrong in general. A case built here
tries a rule on many random argument tuples in one go: :func:`random_calls`
builds the inputs, each tuple labelled by the call a learner can paste
(``remat_policy(Size(width=96, layers=3), batch=64, budget_bytes=1500000)``),
and :func:`each_call` is the runner that calls the function on every tuple
and returns ``{label: output}``. A wrong output is then reported with its
label (:func:`jaxcourse.exercises.checking.comparison.where`), which names the case
that broke the rule in any language; a known mistake is named there only
when it gives every output (``Mistake.cases``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["each_call", "random_calls"]


#: What a Case's ``inputs`` is: the arguments, from a seeded generator.
Inputs = Callable[[np.random.Generator], tuple]


def random_calls(name: str, make: Callable[[np.random.Generator, int], tuple],
                 show: Callable[..., str], count: int = 24) -> Inputs:
    """Build inputs: ``count`` random argument tuples, each labelled as a call.

    ``make(rng, k)`` draws the ``k``-th tuple (``k`` lets a builder take
    turns between kinds of case). The label is the call a learner can paste,
    ``name(args shown by show)``: it names the case that broke a rule, in any
    language. Tuples whose label repeats are drawn again.
    """
    def build(rng: np.random.Generator) -> tuple:
        calls: dict[str, tuple] = {}
        while len(calls) < count:
            args = make(rng, len(calls))
            calls.setdefault(f"{name}({show(*args)})", args)
        return (list(calls.items()),)

    return build


def each_call(extract: Callable[[Any], Any] | None = None) -> Callable[..., dict]:
    """Return a runner: call the function on each labelled case of :func:`random_calls`.

    It returns ``{label: output}`` (``extract(output)`` if given), so that a
    wrong output is reported with the call that gave it. An exception names
    the call too.
    """
    def run(function: Callable, calls: list[tuple[str, tuple]]) -> dict[str, Any]:
        found = {}
        for label, args in calls:
            try:
                out = function(*args)
                found[label] = extract(out) if extract is not None else out
            except NotImplementedError:
                raise
            except Exception as error:
                raise RuntimeError(f"{label} raised {type(error).__name__}: "
                                   f"{error}") from error
        return found

    # It calls the function here, in this process: what checking.relations
    # may run a reference's variants through.
    run.in_process = True  # type: ignore[attr-defined]
    return run
