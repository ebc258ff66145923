"""What the course's exercises use besides their reference answers.

Per chapter ``<key>``: ``<key>_checks`` (meshes, placement, constants and
measurements that the checks and the exercise notebooks use),
``<key>_mistakes`` (the named wrong answers a check recognises), and where a
chapter needs them its cases (``<key>_cases``), harness, workers and log
generators. The reference answers live in :mod:`solutions`, one module per
chapter, which imports from here; nothing here imports :mod:`solutions`, so a
class release ships this package (each named mistake's body withheld) and a
student notebook imports from it, never from :mod:`solutions`.
"""
