"""Chapter 8's checks that run in this one process: simulated processes.

The part of :mod:`solutions.multiprocess`'s checks that starts no process;
it holds no exercise. :func:`every_process` calls a ``process_rows``-like
answer once per process index. :func:`simulate_processes` runs a
``sum_metrics``-like answer once per simulated process, in this process,
with a stand-in collective that is matched by call order, as real
collectives are, and with string hashing salted per process, as on separate
machines (:class:`SaltedName`, :class:`Metrics`). :func:`in_one_process`
(with :func:`local_step`) and :func:`global_values` (on
:func:`one_device_rows`, which the exercise notebook uses too) check the
launched exercises' answers here first, where a mistake is cheap to name.

Every failure of the processes to stay in step is a
:class:`ProcessesOutOfStepError`, whose message the learner reads; the
launched checks (:mod:`exercise_kit.multiprocess_harness`) raise it too.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import CourseError


class ProcessesOutOfStepError(CourseError):
    """The (simulated or launched) processes did not stay in step.

    ``result`` is the launch's :class:`jaxcourse.launch.LaunchResult` when
    launched processes were ended early, else ``None``.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


# ---- simulated processes -----------------------------------------------------


def every_process(function: Callable, num_records: int, process_count: int) -> tuple:
    """Call ``process_rows``-like ``function`` once per process index.

    A list of indices, or a JAX array, holds the same records as the NumPy
    array the text asks for, so lists are turned into arrays first.
    """
    return tuple(_indices(function(num_records, p, process_count))
                 for p in range(process_count))


#: The failures of chapter 8's ``ending.py``, with or without the course's
#: exception hook and srun's ``--kill-on-bad-exit``, in the order
#: :func:`every_failure` asks about them.
#: Slurm's default ``KillWait`` (slurm.conf's manual), in seconds: how long
#: srun's SIGKILL follows its SIGTERM when ``--kill-on-bad-exit`` ends a step.
#: Exercise 7 takes the default; the course's cluster sets 5 s.
KILL_WAIT = 30.0

FAILURES = tuple((how, hook, kill) for how in ("raise", "crash", "finish")
                 for hook in (False, True) for kill in (False, True))


def every_failure(function: Callable, heartbeat_timeout: float,
                  shutdown_timeout: float) -> dict:
    """Call ``seconds_to_end``-like ``function`` for every failure of :data:`FAILURES`.

    Returns a dict keyed by the failure in words (``"raise, hook,
    kill-on-bad-exit"``), so that the feedback says which one is wrong.
    """
    out = {}
    for how, hook, kill in FAILURES:
        key = ", ".join([how, "hook" if hook else "no hook",
                         "kill-on-bad-exit" if kill else "no kill-on-bad-exit"])
        out[key] = float(function(how, hook, kill, heartbeat_timeout, shutdown_timeout))
    return out


def every_failure_of(function: Callable, settings: list[tuple[float, float]]) -> dict:
    """Call ``function`` for every failure under each pair of timeouts in ``settings``.

    Like :func:`every_failure`, with the pair in each key, so that a rule
    that fits only some timeouts (JAX's defaults, the chapter's) is named by
    the pair it gets wrong.
    """
    return {f"{key}, heartbeat_timeout={heartbeat:g}, "
            f"shutdown_timeout={shutdown:g}": value
            for heartbeat, shutdown in settings
            for key, value in every_failure(function, heartbeat, shutdown).items()}


def random_timeouts(count: int = 16) -> Callable[[np.random.Generator], tuple]:
    """Build inputs: ``count`` random (heartbeat, shutdown) timeouts, never equal."""
    def build(rng: np.random.Generator) -> tuple:
        settings: list[tuple[float, float]] = []
        while len(settings) < count:
            heartbeat, shutdown = (float(v) for v in rng.integers(1, 901, 2) / 2)
            if heartbeat != shutdown and (heartbeat, shutdown) not in settings:
                settings.append((heartbeat, shutdown))
        return (settings,)

    return build


def _indices(out: Any) -> Any:
    if isinstance(out, (list, tuple)):
        # An empty list has no dtype of its own: it holds no index, of any type.
        return np.asarray(out, dtype=np.int64 if not out else None)
    return out


class SaltedName(str):
    """A metric name whose hash depends on the process, as on another machine.

    Python salts string hashes per interpreter (``PYTHONHASHSEED``), so a
    ``set`` of names iterates in a different order on each machine. In one
    checking process we imitate that with a deterministic, per-process hash.
    Equality and sorting are those of ``str``.
    """

    salt: int

    def __new__(cls, name: str, salt: int) -> SaltedName:  # noqa: D102
        obj = super().__new__(cls, name)
        obj.salt = salt
        return obj

    def __hash__(self) -> int:
        return zlib.crc32(f"{self.salt}:{str.__str__(self)}".encode())

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return str.__ne__(self, other)


class Metrics(dict):
    """A dict keyed by :class:`SaltedName` that also answers to plain strings."""

    def __missing__(self, key: Any) -> Any:
        for name, value in self.items():
            if name == key:
                return value
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return any(name == key for name in self.keys())

    def get(self, key: Any, default: Any = None) -> Any:
        """Like :meth:`dict.get`, for plain-string keys too."""
        try:
            return self[key]
        except KeyError:
            return default


def metrics_of(process: int, items: Sequence[tuple[str, float]]) -> Metrics:
    """Return process ``process``'s metrics: its names salted as on its machine."""
    return Metrics((SaltedName(name, process), value) for name, value in items)


def simulate_processes(function: Callable, per_process: Sequence) -> tuple:
    """Run ``function(local_metrics, allreduce)`` as each process would.

    Collectives are matched by the order in which each process calls them,
    as in JAX: the k-th ``allreduce`` of every process is summed with the k-th
    of the others. A first pass records what each process passes to its
    collectives; a second pass runs each process again, with every collective
    returning its sum.

    Raises
    ------
    ProcessesOutOfStepError
        If the processes call ``allreduce`` different numbers of times, or
        with different shapes (on a cluster: a hang or a crash).
    """
    def record(calls: list) -> Callable:
        def allreduce(value: Any) -> Any:
            calls.append(np.asarray(value, dtype=np.float64))
            return value
        return allreduce

    calls: list[list[np.ndarray]] = []
    for p, items in enumerate(per_process):
        calls.append([])
        function(metrics_of(p, items), record(calls[-1]))
    counts = [len(c) for c in calls]
    if len(set(counts)) > 1:
        raise ProcessesOutOfStepError(
            f"the processes called allreduce different numbers of times {counts}: "
            "on a cluster the ones with more calls would wait forever"
        )
    sums = []
    for k, values in enumerate(zip(*calls, strict=True)):
        shapes = {v.shape for v in values}
        if len(shapes) > 1:
            raise ProcessesOutOfStepError(
                f"collective number {k + 1} got arrays of different shapes "
                f"{[v.shape for v in values]} in different processes: on a "
                "cluster this hangs or crashes"
            )
        sums.append(np.sum(values, axis=0))

    def replay(next_sum: list[int]) -> Callable:
        def allreduce(value: Any) -> np.ndarray:
            k = next_sum[0]
            next_sum[0] += 1
            return sums[k] if k < len(sums) else np.asarray(value, np.float64)
        return allreduce

    results = []
    for p, items in enumerate(per_process):
        out = function(metrics_of(p, items), replay([0]))
        if isinstance(out, dict):
            out = {str.__str__(k) if isinstance(k, str) else k: v
                   for k, v in out.items()}
        results.append(out)
    return tuple(results)


# ---- the same answers, in this one process -------------------------------------


def one_device_rows() -> NamedSharding:
    """Rows split over a one-device mesh: one process with one device."""
    mesh = jax.make_mesh((1,), ("batch",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:1])
    return NamedSharding(mesh, P("batch"))


def global_values(out: Any) -> np.ndarray:
    """Extract: the values of a global jax.Array (anything else is an error)."""
    if not isinstance(out, jax.Array):
        raise TypeError(f"got a {type(out).__name__}, not a global jax.Array: build "
                        "it with jax.make_array_from_process_local_data")
    return np.asarray(out)


def local_step(batch_size: int) -> Callable:
    """Return a one-process ``step``: the mean of a full batch."""
    def step(batch):
        batch = np.asarray(batch, dtype=np.float32)
        if batch.shape != (batch_size,):
            raise ValueError(f"step() got a batch of shape {batch.shape}, not "
                             f"({batch_size},): pass full batches only")
        return float(np.mean(batch))
    return step


def in_one_process(function: Callable, size: int, batch_size: int) -> np.ndarray:
    """Run ``run_epoch``-like ``function`` on ``size`` records in one process.

    Returns
    -------
    numpy.ndarray
        The results of its steps (:func:`local_step`), as floats.
    """
    data = np.arange(size, dtype=np.float32)
    return np.array([float(v) for v in function(data, batch_size,
                                                local_step(batch_size))])

