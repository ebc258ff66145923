"""Helpers shared by every chapter, exercise and test of the JAX course.

The package holds what a chapter needs but does not teach: offline data
provisioning (:mod:`jaxcourse.data`), simulated CPU devices
(:mod:`jaxcourse.devices`), chapter 1's model for the chapters after it
(:mod:`jaxcourse.mlp`), matplotlib set-up (:mod:`jaxcourse.plotting`), the
multi-process launcher (:mod:`jaxcourse.launch`) and the exercise system
(:mod:`jaxcourse.exercises`). Chapters import the submodule they need, e.g.
``from jaxcourse import data``.
"""

from __future__ import annotations

import importlib.util
import sys

from .version import __version__

__all__ = ["CourseError", "__version__"]


class CourseError(Exception):
    """An error whose message tells the learner what to do next.

    The course's helpers raise it (or a subclass) instead of letting a
    library's traceback surface, so that a missing dataset or a JAX that
    started too early reads as a one-line instruction.
    """

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing a traceback: the learner sees
        # the problem and its fix, not the helper's internals (or its paths).
        return [f"{type(self).__name__}: {self}"]


def _preload_triton() -> None:
    """Load Triton before TensorFlow can be imported.

    With the CUDA build of torch 2.14.1 beside tensorflow-cpu 2.21, importing
    ``torchvision`` *after* ``tensorflow`` segfaults while Triton loads its
    LLVM. Loading Triton first (about 0.1 s) avoids the clash, so a learner
    may import the two libraries in any order once this package is imported.
    """
    if "tensorflow" in sys.modules or importlib.util.find_spec("triton") is None:
        return
    try:
        import triton  # noqa: F401
    except ImportError:  # a broken Triton only matters to torch's compiler
        pass


_preload_triton()
