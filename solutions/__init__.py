"""Reference implementations of every exercise in the course.

One module per topic: ``solutions/<topic>.py`` holds the reference functions
of the exercises whose ids start with ``<topic>.`` (e.g. ``mlp.relu`` lives in
:mod:`solutions.mlp`) and registers their checker specs with
:func:`jaxcourse.exercises.register` when imported. The solution notebooks
(``*_exercises.ipynb``, executed) are the masters from which
``python -m jaxcourse.exercises.authoring`` generates the student notebooks in
``exercises/``. See ``book/for_teachers.md``.
"""
