"""What an exercise is: its cases, its known mistakes, its reference.

An :class:`Exercise` pairs a reference implementation with :class:`Case` s,
each a seeded input and a way to call the function on it (plainly, under
``jax.jit``, ``jax.grad``, ``jax.vmap``, or traced to count its operations),
and :class:`Mistake` s, known wrong answers that name a learner's slip. A
topic's module defines them and hands them to
:func:`jaxcourse.exercises.checking.registry.register`; nothing here runs them.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...messages import message

__all__ = [
    "Case",
    "DTYPE_POLICIES",
    "ENDLESS",
    "Exercise",
    "Mistake",
    "TRANSFORMS",
]

TRANSFORMS = ("call", "jit", "grad", "vmap", "vectorized")
DTYPE_POLICIES = ("exact", "kind", "any")
#: What typically never ends in a case, named when it runs out of time:
#: a Python loop, a dataset that repeats for ever, a collective that waits for
#: a process that has left.
ENDLESS = ("loop", "repeat", "collective")


# --------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One test of an exercise: a seeded input and how the function is called.

    Parameters
    ----------
    description : str
        What is tried, in the exercise's language, e.g.
        ``"relu(x) for x = [-2, -0.5, 0, 0.5, 2]"``.
    inputs : callable
        ``inputs(rng)`` returns the positional arguments as a tuple, from a
        ``numpy.random.Generator`` seeded with ``seed``. For the
        ``"vectorized"`` transform it is called as ``inputs(rng, n)`` for each
        batch size ``n`` in ``sizes``. Arguments that are arrays, or pytrees of
        arrays, are traced by the transforms; the others (ints, dtypes, floats)
        stay static.
    transform : {"call", "jit", "grad", "vmap", "vectorized"}
        ``"call"`` calls the function as is (and checks its inputs are left
        unchanged); ``"jit"``, ``"grad"`` (of the sum of the output, with
        respect to the traced argument ``argnums``) and ``"vmap"`` (over
        ``in_axes``) transform it first; ``"vectorized"`` traces it for two
        batch sizes and fails if the program grows with the batch (a Python
        loop over the examples).
    kwargs : dict
        Static keyword arguments.
    seed : int
        Seed of the generator handed to ``inputs``.
    rtol, atol : float
        Tolerances of the value comparison (``numpy.allclose``). The defaults
        suit values that are moved or computed exactly, or computed by a few
        elementwise operations: each rounds within ``u = 2**-24`` of its
        result in float32, so two correct answers agree within a few ``u``
        (``rtol=1e-5`` is about 168 ``u``), and ``atol=1e-6`` covers values that
        cancel to near zero from inputs of order one. They also hold for a sum
        of up to 80 terms of one sign (``2 gamma_80 < 1e-5``). A case whose
        values sum more terms, or terms of both signs (a matrix product, a
        gradient, a mean of normal draws), sets its own, derived from
        :mod:`jaxcourse.numerics`.
    dtype : {"exact", "kind", "any"}
        ``"exact"``: the dtype must equal the reference's; ``"kind"``: only the
        kind (floating, integer, bool) must match; ``"any"``: not checked.
    argnums : int
        For ``"grad"``: which traced argument to differentiate.
    in_axes : int or tuple
        For ``"vmap"``.
    sizes : tuple of int
        For ``"vectorized"``: the two batch sizes.
    extract : callable, optional
        Applied to the output before it is compared, to check a property
        rather than (or besides) the values, e.g. for a sharding exercise
        ``lambda out: (out, np.array(out.sharding.shard_shape(out.shape)))``.
        It runs beside the learner's code; an error in it fails the test.
    runner : callable, optional
        For ``"call"``: ``runner(function, *args, **kwargs)`` makes the call
        instead of ``function(*args, **kwargs)``, e.g. to run the function in
        several launched processes and return what each one returned. An
        exception it raises is reported like one of the function's.
    prepare : callable, optional
        Called before every run of the case, outside its time limit (an
        import the learner's code would otherwise pay inside it).
    warm_up : callable, optional
        ``warm_up(*args, **kwargs)`` with the case's arguments, when the
        exercise's panel is shown and after each of its Checks
        (:func:`jaxcourse.exercises.checking.warming.warm_up`): starts, in the
        background, what the case's next run would otherwise wait for (the
        processes of a launched case). It returns at once; its failure only
        means the next run starts from scratch.
    endless : {"loop", "repeat", "collective"}
        What typically never ends in this case, named when it runs out of time.
    time_limit : float, optional
        The case's time limit where no stored one applies.
    advice : bool
        The case checks a technique the text recommends rather than requires
        (``jax.shard_map``, ``jax.jit``): an answer that fails it still
        passes, and the feedback says what was found, as a note. It is not
        counted in the score (nor in "n/m tests passed").
    """

    description: str
    inputs: Callable[..., tuple]
    transform: str = "call"
    kwargs: dict = field(default_factory=dict)
    seed: int = 0
    rtol: float = 1e-5
    atol: float = 1e-6
    dtype: str = "exact"
    argnums: int = 0
    in_axes: Any = 0
    sizes: tuple[int, int] = (4, 32)
    extract: Callable[[Any], Any] | None = None
    runner: Callable[..., Any] | None = None
    prepare: Callable[[], Any] | None = None
    warm_up: Callable[..., Any] | None = None
    endless: str = "loop"
    time_limit: float | None = None
    advice: bool = False

    def __post_init__(self) -> None:
        if self.transform not in TRANSFORMS:
            raise ValueError(f"transform must be one of {TRANSFORMS}")
        if self.dtype not in DTYPE_POLICIES:
            raise ValueError(f"dtype must be one of {DTYPE_POLICIES}")
        if self.endless not in ENDLESS:
            raise ValueError(f"endless must be one of {ENDLESS}")

    def make_inputs(self, n: int | None = None) -> tuple:
        """Build this case's arguments afresh (same seed, same values)."""
        rng = np.random.default_rng(self.seed)
        args = self.inputs(rng) if n is None else self.inputs(rng, n)
        return tuple(args)


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer, recognised by its output or its error to name the problem.

    When a learner's output fails a case but equals what ``function`` returns
    on the same input, the feedback adds ``message`` (e.g. "did you take the
    argmax along axis 0?").

    ``raises``, when given, is a piece of the first line of the error that
    ``function`` raises (as "ValueError: ..." reads): a learner's call that
    raises an error whose first line holds it is named by ``message`` in place
    of that line. An error raised deep inside JAX is cut off at its first
    line, in English whatever the panel's language, and says what JAX could
    not do rather than what the code should do; the message says the latter.
    ``function`` stays the example of the slip, so a test can check that it
    still raises the error ``raises`` recognises.

    ``cases``, when given, are the indices of the cases (negative ones count
    from the end) on which the mistake may be named. A rule's answer on one
    shown case is a single choice that many different slips share; on a case
    of many random calls only the slip itself gives every answer, so a
    rule's mistakes are named there alone.
    """

    message: str
    function: Callable
    raises: str = ""
    cases: tuple[int, ...] = ()

    def applies_to(self, index: int, count: int) -> bool:
        """Whether the mistake may be named on case ``index`` of ``count``."""
        return not self.cases or index in {i % count for i in self.cases}


@dataclass(frozen=True)
class Exercise:
    """An exercise: its id, title, reference, cases, hints and language.

    Parameters
    ----------
    id : str
        Stable id ``"<topic>.<name>"``; the exercise is defined by its
        topic's module (see :mod:`jaxcourse.course`), which registers it on
        import.
    title : str
        Short title, in the exercise's language.
    reference : callable
        The reference implementation; its source is the shown solution.
    cases : sequence of Case
        The tests, in order.
    chapter : str
        The chapter it belongs to (the notebook stem, e.g. ``"01_mlp"``).
    hints : sequence of str
        Revealed one at a time, in order.
    mistakes : sequence of Mistake
        Known wrong answers, to name a learner's mistake.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of every message, button and summary.
    time_limit : float, optional
        Seconds every case may run before it counts as hanging. By default
        each case's limit is chosen from the reference's own measured time on
        it, with a margin (stored with the reference outputs, see
        :func:`jaxcourse.exercises.checking.case_limits.case_time_limits`): a few
        seconds for most cases, so an endless answer is stopped soon.
    function_name : str, optional
        The learner's function name; by default the reference's.
    devices : int
        How many JAX devices its cases need (e.g. 8 for a 4x2 mesh). The
        grader gives its processes that many simulated CPU devices, with
        :func:`jaxcourse.devices.use_cpu_devices`, before JAX starts.
    solution : str, optional
        The shown solution; by default the reference's source. An edition in
        another language (:mod:`jaxcourse.exercises.checking.editions`) shows the
        same code with its comments translated.
    compiled_calls : bool
        Run the learner's function under ``jax.jit`` in the ``"call"`` cases
        whose array arguments are all JAX arrays, and call it as is only if
        that fails. Called as is, JAX compiles every operation separately,
        for every new shape: seconds for the gradient of a batched model,
        against a fraction of a second for the whole function at once. The
        values agree within the cases' tolerances, and nothing a plain call
        would reveal is lost: a JAX array cannot be written into in place, a
        dict or list of them that the function changes sends it to a plain
        call, and so does a function that does not trace (Python control
        flow on values, NumPy on arrays, an error); that call is judged.
    """

    id: str
    title: str
    reference: Callable
    cases: Sequence[Case]
    chapter: str = ""
    hints: Sequence[str] = ()
    mistakes: Sequence[Mistake] = ()
    language: str = "en"
    time_limit: float | None = None
    function_name: str | None = None
    devices: int = 1
    solution: str = ""
    compiled_calls: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "cases", tuple(self.cases))
        object.__setattr__(self, "hints", tuple(self.hints))
        object.__setattr__(self, "mistakes", tuple(self.mistakes))
        if self.function_name is None:
            object.__setattr__(self, "function_name", self.reference.__name__)
        if "." not in self.id:
            raise ValueError(f"exercise id {self.id!r} must read '<topic>.<name>'")
        message("check", self.language)  # validates the language

    @property
    def topic(self) -> str:
        """The part of the id before the dot: the key of its topic."""
        return self.id.split(".", 1)[0]

    def solution_source(self) -> str:
        """Return the shown solution: by default the reference's source code."""
        if self.solution:
            return self.solution
        try:
            return textwrap.dedent(inspect.getsource(self.reference)).rstrip() + "\n"
        except (OSError, TypeError):
            return ""
