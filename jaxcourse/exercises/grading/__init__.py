"""Grading a class: each submission in its own walled process, then the tables.

``python -m jaxcourse.exercises.grading`` (:mod:`.cli`) grades locally
(:mod:`.local`) or as a Slurm job array (:mod:`.slurm`); each submission
runs in :mod:`.sandbox` behind :mod:`.isolation`'s wall, started by
:mod:`.runner`; :mod:`.borrowing` sees an answer that borrows a reference;
:mod:`.rows` and :mod:`.tables` hold the results and the class's flags;
:mod:`.nbgrader_scores` and :mod:`.nbgrader_kernel` are nbgrader's way in.
"""
