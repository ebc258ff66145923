"""Work started ahead of a Check, while the learner reads.

A first Check in a fresh kernel waits for much more than the learner's own
function: JAX importing its parts, tracing the library functions the answer
calls, loading their lowering rules; chapter 8's launched cases start whole
processes. :func:`warm_up`, called by the exercise's panel when it is shown
and after each Check, does that work in advance. It judges nothing and never
fails a Check: whatever fails here, the Check does itself.
"""

from __future__ import annotations

import os
from typing import Any

from .case_limits import case_time_limits
from .mode import WARM_UP_ENV, grading_mode
from .observe import observe
from .spec import Exercise

__all__ = ["WARM_UP_ENV", "warm_up"]


def warm_up(exercise: Exercise) -> list[Any]:
    """Do now, while the learner reads, what the next Check of ``exercise`` waits for.

    JAX pays once per process for much of what a first Check does besides
    compiling the learner's own function: importing the parts of itself a
    function uses, tracing the library functions it calls (``jnp.sum``,
    ``jax.nn.softplus``: JAX keeps their traces, per shape) and loading their
    lowering rules. So each case runs the reference once, unjudged, with the
    case's own inputs, shapes and transform; a learner's answer that calls the
    same library functions then finds them traced. A case with a ``warm_up``
    of its own calls that instead (chapter 8's launched cases start their
    processes, which then wait for the learner's function).

    The exercise's panel calls it when it is shown and after each Check.
    Never raises (but for the learner's interrupt): whatever fails here, the
    Check does itself. Nothing runs under the grader, or with
    :data:`WARM_UP_ENV` set to ``0``.

    Returns
    -------
    list
        What the cases' own ``warm_up`` returned (``None`` where it failed).
    """
    if grading_mode() or os.environ.get(WARM_UP_ENV, "1").strip() == "0":
        return []
    started = []
    limits = case_time_limits(exercise)
    for case, limit in zip(exercise.cases, limits, strict=True):
        if case.warm_up is None:
            observe(exercise.reference, case, limit, exercise.compiled_calls)
            continue
        try:
            started.append(case.warm_up(*case.make_inputs(), **case.kwargs))
        except Exception:  # only the next Check's speed is at stake
            started.append(None)
    return started
