"""How this process runs the exercises: switches read from the environment.

The classroom grader sets :data:`GRADING_ENV` in each submission's process,
so panels and explorers skip their work there (:func:`grading_mode`);
:data:`WARM_UP_ENV` set to ``0`` starts nothing ahead of a Check
(:func:`jaxcourse.exercises.checking.warming.warm_up`). Both are read at each use, so
a test or a notebook may set them at any time.
"""

from __future__ import annotations

import os

__all__ = ["GRADING_ENV", "WARM_UP_ENV", "grading_mode"]

#: Set to ``1`` by the grader: panels and explorers then skip their work.
GRADING_ENV = "JAXCOURSE_GRADING"

#: Set it to ``0`` to start nothing ahead of a Check
#: (:func:`jaxcourse.exercises.checking.warming.warm_up`).
WARM_UP_ENV = "JAX_COURSE_WARM_UP"


def grading_mode() -> bool:
    """Whether the classroom grader is running this process."""
    return os.environ.get(GRADING_ENV) == "1"
