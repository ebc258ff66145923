"""Checking a function: an exercise as data, and a learner's function judged.

An exercise's spec and its registry (:mod:`.spec`, :mod:`.registry`,
:mod:`.editions`), a call observed inside a time limit (:mod:`.observation`,
:mod:`.time_limit`, :mod:`.case_limits`, :mod:`.observe`, :mod:`.warming`),
the reference's stored outputs (:mod:`.references`), and the verdict
(:mod:`.comparison`, :mod:`.measures`, :mod:`.patterns`, :mod:`.judging`);
what a class release turns off at check time (:mod:`.class_release`). The
lowest of the engine's subpackages: it imports none of the others.
"""
