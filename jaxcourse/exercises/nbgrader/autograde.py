"""Scores for nbgrader: an autograded test cell that awards partial credit.

nbgrader grades a test cell by its outputs: an error, or anything written to
stderr, scores zero; an ``execute_result`` whose ``text/plain`` parses as a
number scores that number (between 0 and the cell's points); anything else
scores full points. The solution notebooks' test cells therefore end with a
hidden region that nbgrader removes from the student's copy and puts back
when it autogrades::

    check_panel("bayes.batched_log_joint", batched_log_joint)
    ### BEGIN HIDDEN TESTS
    from jaxcourse.exercises import autograde
    autograde("bayes.batched_log_joint", batched_log_joint, points=1)
    ### END HIDDEN TESTS

:func:`autograde` checks the answer and shows the check panel, as
``check_panel`` does, but its plain-text form is the score in points: the
fraction of tests passed times ``points``. The authoring module
(:mod:`jaxcourse.exercises.authoring.cli`) writes these regions and the cells'
nbgrader metadata; see its ``--nbgrader`` option.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Autograded", "autograde", "write_kernelspec"]


class Autograded:
    """A checked answer, shown as its check panel, whose plain text is its score.

    Parameters
    ----------
    panel : CheckPanel
        The panel that checked the answer (its widget is what Jupyter shows).
    points : float
        What a fully correct answer is worth.
    """

    def __init__(self, panel: Any, points: float) -> None:
        self.panel = panel
        self.points = float(points)

    @property
    def score(self) -> float:
        """Points earned: the fraction of tests passed times ``points``.

        Zero when the check did not run (the classroom grader defers the
        panels' checks and checks the functions itself).
        """
        result = self.panel.result
        # Rounded so that the stored text is short and the same on every run
        # (nbval compares it); never above ``points``, which nbgrader refuses.
        return min(round(result.score * self.points, 6), self.points) \
            if result is not None else 0.0

    def __repr__(self) -> str:
        return repr(self.score)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        data = dict(self.panel._repr_mimebundle_(**kwargs))
        data["text/plain"] = repr(self.score)
        return data


def autograde(
    exercise_id: str, answer: Callable | None = None, *, points: float = 1
) -> Autograded:
    """Check ``answer`` for nbgrader: a panel whose plain text is the score.

    Parameters
    ----------
    exercise_id, answer
        As for :func:`~jaxcourse.exercises.widgets.panel.check_panel`.
    points : float
        The test cell's points in nbgrader: a fully correct answer earns all
        of them, a partly correct one its fraction of tests passed.

    Returns
    -------
    Autograded
        Shown as the check panel in Jupyter; its ``text/plain`` form is the
        score, e.g. ``0.833333``, which nbgrader reads as partial credit.
    """
    if points <= 0:
        raise ValueError(f"points must be positive, got {points!r}")
    from ..widgets.panel import CheckPanel, caller_namespace

    caller = caller_namespace()
    # nbgrader gives a cell that writes to stderr zero points, whatever its
    # score: a warning from a library during the check must not cost marks.
    # (The learner's own printing is already hidden by the check.)
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panel = CheckPanel(exercise_id, answer, namespace=caller)
    return Autograded(panel, points)


def write_kernelspec(
    folder: Path, name: str = "python3", python: str | None = None
) -> Path:
    """Write a kernelspec that runs ``python`` (default: this interpreter).

    nbgrader executes a notebook with the kernel its metadata names
    (``python3`` for the course's notebooks). When nbgrader lives in an
    environment of its own, put ``folder`` on ``JUPYTER_PATH`` and that name
    starts the course's environment instead, where JAX and the course are.

    Parameters
    ----------
    folder : Path
        A Jupyter data folder; the spec goes to ``folder/kernels/<name>/``.
    name : str
        The kernel's name, as the notebooks' ``kernelspec`` metadata gives it.
    python : str, optional
        The interpreter to run; by default the one running this function.

    Returns
    -------
    Path
        The written ``kernel.json``.
    """
    spec = {
        "argv": [python or sys.executable, "-m", "ipykernel_launcher",
                 "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    path = folder / "kernels" / name / "kernel.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    return path
