"""Generating the notebooks: students' from the masters, nbgrader's, answerless code.

``python -m jaxcourse.exercises.authoring`` (:mod:`.cli`) regenerates the
student notebooks and the stored reference outputs; :mod:`.release_stubs`
and :mod:`.answerless` write the course's code without its answers (for the
grader's copy and a class release); :mod:`.warm_cache` fills JAX's cache.
"""
