"""Search a chapter's released package for functions that answer its exercises.

Run as ``python tests/release_search.py TOPIC_KEY [TOPIC_KEY ...]``, the keys
of chapters with the same number of devices (one fresh process per device
count: JAX fixes its devices when it starts); prints one JSON object, each
key's list of hits, ``[exercise id, function, pattern]``, each a notebook made
only of calls into the released package that the grader's own judge
(:func:`judging.judge`, on every case of the exercise) scores 1.

What the search covers, so that a reader knows what it does not:

- the functions: every public function (``inspect.isfunction``, name not
  starting with ``_``) of the chapter tools a release ships (``jaxcourse``'s
  modules but the engine, the editions, the processes and the display:
  ``exercises``, ``hub``, ``i18n``, ``zh_hans``, ``launch``, ``slurm``,
  ``plotting``, ``fonts``, ``tracebacks``, ``cli``, ``messages``) and of the
  content package's modules, less the answer functions a release withholds
  (:func:`jaxcourse.exercises.authoring.answerless.answer_functions`);
- the patterns, on the exercise's own arguments: the call itself
  (``"call"``); one entry of a dictionary it returns (``"['total']"``); and
  ``jax.value_and_grad`` of it over its first one or two arguments
  (``"value_and_grad(argnums=(0, 1))"``);
- a function is tried only where its signature takes the reference's
  arguments (positional, by the reference's parameter names' count), and
  only if its call on the first plain case returns, within two seconds, a
  value equal to the reference's there (then every case is judged); a
  function that starts a process (``*subprocess*``) is not called.

Not covered: compositions of two library functions, other transforms
(``vmap``, ``grad``) and arguments rearranged; chapter 8, whose cases launch
processes.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from collections.abc import Callable, Iterator
from typing import Any

_SKIPPED = ("exercises", "hub", "i18n", "zh_hans", "launch", "slurm", "plotting",
            "fonts", "tracebacks", "cli", "messages", "course", "processes",
            "compile_cache", "progress", "version", "load_clock", "measure",
            "devices", "data")


def _modules() -> Iterator[Any]:
    import jaxcourse
    import solutions

    for package in (jaxcourse, solutions):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            parts = info.name.split(".")
            if parts[0] == "jaxcourse" and parts[1] in _SKIPPED:
                continue
            try:
                yield importlib.import_module(info.name)
            except Exception:
                continue


def candidates() -> dict[str, Callable]:
    """Return every public function the search tries, by qualified name."""
    from jaxcourse.exercises.authoring.answerless import answer_functions

    withheld = {f"{m}.{n}" for m, names in answer_functions().items() for n in names}
    found: dict[str, Callable] = {}
    for module in _modules():
        for name, value in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(value):
                continue
            key = f"{value.__module__}.{value.__qualname__}"
            if key in withheld or "subprocess" in name or not \
                    value.__module__.startswith(("jaxcourse.", "solutions.")):
                continue
            found.setdefault(key, value)
    return found


def _takes(function: Callable, count: int) -> bool:
    try:
        inspect.signature(function).bind(*range(count))
    except (TypeError, ValueError):
        return False
    return True


def _patterns(function: Callable, sample: Any, count: int) -> dict[str, Callable]:
    import jax
    import numpy as np

    found: dict[str, Callable] = {"call": function}
    if isinstance(sample, dict):
        for key in sample:
            found[f"[{key!r}]"] = (
                lambda k: lambda *a, **kw: function(*a, **kw)[k])(key)
    try:  # a differentiable scalar only
        scalar = np.ndim(sample) == 0 and np.issubdtype(np.asarray(sample).dtype,
                                                        np.floating)
    except Exception:  # a value NumPy cannot read
        scalar = False
    for argnums in ((0,), (0, 1))[:count] if scalar else ():
        found[f"value_and_grad(argnums={argnums})"] = jax.value_and_grad(
            function, argnums=argnums)
    return found


def search(topic_key: str) -> list[list[str]]:
    """Return the hits for one chapter (see the module's docstring)."""
    from jaxcourse import course
    from jaxcourse.devices import use_cpu_devices
    from jaxcourse.exercises.checking.comparison import compare
    from jaxcourse.exercises.checking.judging import judge, reference_observations
    from jaxcourse.exercises.checking.observe import observe, observe_all
    from jaxcourse.exercises.checking.registry import _REGISTRY
    from jaxcourse.exercises.checking.time_limit import call_with_time_limit

    topic = course.topic(topic_key)
    if topic.devices > 1:
        use_cpu_devices(topic.devices)
    module = course.load(topic_key)
    everything = candidates()
    hits = []
    seen = set()
    for exercise in list(_REGISTRY.values()):
        if exercise.reference.__module__ != module.__name__:
            continue
        if exercise.reference in seen:
            continue  # an edition: the same reference on the same cases
        seen.add(exercise.reference)
        parameters = inspect.signature(exercise.reference).parameters.values()
        count = len([p for p in parameters if p.default is inspect.Parameter.empty])
        expected = reference_observations(exercise)
        # A first case called plainly: a quick look before all of them.
        first = next((i for i, c in enumerate(exercise.cases)
                      if c.transform == "call"), None)
        if first is None:
            continue
        case = exercise.cases[first]
        for name, function in everything.items():
            if not _takes(function, count):
                continue
            print(f"trying {exercise.id} {name}", file=sys.stderr, flush=True)
            try:
                arguments = case.make_inputs()
                sample = call_with_time_limit(
                    lambda f=function, a=arguments, k=case.kwargs: f(*a, **k), 2.0)
            except BaseException:  # its error, or the time limit
                continue
            for pattern, learner in _patterns(function, sample, count).items():
                try:
                    quick = observe(learner, case, 2.0)
                    if quick.kind != "value" or compare(
                            expected[first].value, quick.value, case):
                        continue
                    observed = observe_all(exercise, learner, 10.0)
                    if judge(exercise, observed, expected).score >= 1.0:
                        hits.append([exercise.id, name, pattern])
                except Exception:  # a candidate that breaks the checks
                    continue
    return hits


if __name__ == "__main__":
    import resource

    # A function called with another's arguments may ask for a huge array:
    # a MemoryError then, not this process killed.
    limit = 6 * 2**30
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    print(json.dumps({key: search(key) for key in sys.argv[1:]}))
