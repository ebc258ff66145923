"""Each case's time limit: how long a learner's function may run on it.

:func:`case_time_limits` gives every case of an exercise its limit: the
exercise's own, else the one stored with the reference outputs
(:mod:`jaxcourse.exercises.checking.references`), which :func:`limit_from_reference`
computed from the reference's measured time when the store was written, else
:data:`DEFAULT_TIME_LIMIT`. Enforcing a limit is
:mod:`jaxcourse.exercises.checking.time_limit`'s part.
"""

from __future__ import annotations

import math

from . import references
from .spec import Exercise

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "LIMIT_BASE",
    "LIMIT_MARGIN",
    "case_time_limits",
    "limit_from_reference",
]

#: Seconds a case may run when neither the exercise nor the stored reference
#: outputs say otherwise (see :func:`case_time_limits`): a learner waits at
#: most this long for an answer that never ends.
DEFAULT_TIME_LIMIT = 10.0

#: A case may run this many times the reference's measured time...
LIMIT_MARGIN = 4.0
#: ...plus this many seconds (start-up, a slower or busier machine).
LIMIT_BASE = 4.0


def limit_from_reference(seconds: float) -> float:
    """Return a case's time limit from the reference's measured time on it.

    ``LIMIT_BASE + LIMIT_MARGIN * seconds``, rounded up to whole seconds: 5 s
    for a reference that takes a tenth of a second, 10 s for one that takes
    1.5 s (a first call that compiles a model, say). Only a reference that
    itself takes longer (launching processes) gets more, so a learner waits
    about 10 s at most for an answer that never ends.
    """
    return float(math.ceil(LIMIT_BASE + LIMIT_MARGIN * max(0.0, seconds)))


def case_time_limits(exercise: Exercise) -> list[float]:
    """Return the time limit of each case of ``exercise``, in seconds.

    The exercise's own ``time_limit`` if it sets one; else each case's limit
    stored with the reference outputs
    (:mod:`jaxcourse.exercises.checking.references`, computed by
    :func:`limit_from_reference` from the reference's measured time when the
    outputs were written); where none is stored (no fresh store), the case's
    ``time_limit`` or :data:`DEFAULT_TIME_LIMIT`.
    """
    if exercise.time_limit is not None:
        return [float(exercise.time_limit)] * len(exercise.cases)
    fallback = [DEFAULT_TIME_LIMIT if c.time_limit is None else float(c.time_limit)
                for c in exercise.cases]
    try:
        # Looked up on the package at each call, so a replaced reader (the
        # first-Check benchmark's live mode) takes effect here too.
        stored = references.stored_outputs(exercise)
    except Exception:  # a store must never stop a Check
        stored = None
    limits = getattr(stored, "limits", None)
    if not limits or len(limits) != len(fallback):
        return fallback
    return [float(s) if s else f for s, f in zip(limits, fallback, strict=True)]
