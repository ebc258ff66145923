"""A class release: the course without its reference answers.

``python -m jaxcourse.exercises.release`` (:mod:`.cli`) writes one; what a
release turns off at check time is
:mod:`jaxcourse.exercises.checking.class_release`, and the answerless code is written by
:mod:`jaxcourse.exercises.authoring`'s :mod:`~.authoring.answerless`.
"""
