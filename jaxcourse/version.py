"""The course's version: its one source.

``jaxcourse.__version__`` re-exports it; ``pyproject.toml`` reads it (a
dynamic version); every command line prints it with ``--version``
(:mod:`jaxcourse.cli`); ``_config.yml``'s ``repository: branch`` is its tag,
``v`` and this. A module of its own, which the stored reference outputs do
not fingerprint (:mod:`jaxcourse.exercises.checking.references`): a release changes
no output.
"""

__all__ = ["__version__"]

__version__ = "0.2.0"
