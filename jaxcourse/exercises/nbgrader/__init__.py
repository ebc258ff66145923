"""What nbgrader itself runs: the panel of a test cell and the preprocessor.

:mod:`.autograde` is the panel a test cell shows (its text is a score);
:mod:`.preprocessor` is loaded by nbgrader in its own environment and imports
no course module. The grader's side of nbgrader (the scores it starts, the
walled kernel) lives in :mod:`jaxcourse.exercises.grading`, and writing an
nbgrader course in :mod:`jaxcourse.exercises.authoring`.
"""
